//! What `trend` writes: trend.csv, alarms.json and the stdout report.
//! Nothing here computes a statistic; it lays out what
//! [`super::watch::watch`] found.

use std::io::{self, Write};
use std::path::Path;

use anyhow::Result;

use super::watch::{SeriesNight, SetKey, Tested, Trended, Watched};
use crate::base::schema::{
    Alarm, GroupingSet, OutputFile, RepeatedSet, TrendNight, TrendRevision, TrendSettings,
    TrendSummary, ALARMS_FILE, BASELINE_ROLE, TREND, TREND_FILE, WATCHED_ROLE,
};
use crate::base::slices::ANY;
use crate::base::text::{p_value_text, plural};
use crate::io::location::shown;
use crate::output::cells::number_text;
use crate::output::openmetrics::{as_of_family, set_labels, Family};
use crate::output::staged::{self, stage, Staged};

/// A grouping set's names: run, stage, task, language, split (`*` for any).
pub(super) fn set_names(watched: &Watched, set: SetKey) -> [&str; 5] {
    let name = |id: Option<u32>| id.map_or(ANY, |id| watched.names.name(id));
    let (split, (task, language)) = set.slice;
    [
        watched.names.name(set.run),
        watched.names.name(set.stage),
        name(task),
        name(language),
        name(split),
    ]
}

/// trend.csv: one row per (night, run, stage, grouping set, metric).
///
/// # Errors
/// The file cannot be written.
pub fn write_trend(dir: &Path, trended: &Trended) -> Result<Staged> {
    let watched = &trended.watched;
    let mut wtr = csv::Writer::from_writer(stage(dir, TREND_FILE)?);
    wtr.write_record(TREND)?;
    for row in &watched.rows {
        let night = &watched.nights[row.night];
        let [run, stage, task, language, split] =
            set_names(watched, watched.sets[row.set as usize]);
        let role = if watched.baseline[row.night] {
            BASELINE_ROLE
        } else {
            WATCHED_ROLE
        };
        let tested = row.tested;
        wtr.write_record([
            night.as_of.to_string().as_str(),
            &shown(&night.given),
            &night.revision.to_string(),
            run,
            stage,
            task,
            language,
            split,
            &trended.settings.metrics[row.metric],
            &row.interval.n.to_string(),
            &number_text(Some(row.interval.mean)),
            &number_text(Some(row.interval.low)),
            &number_text(Some(row.interval.high)),
            role,
            &tested.map_or(String::new(), |t| t.paired.to_string()),
            &number_text(tested.map(|t| t.baseline - t.mean)),
            &number_text(tested.map(|t| t.p_value)),
            &number_text(tested.map(|t| t.level)),
            tested.map_or("", |t| if t.alarm { "true" } else { "false" }),
        ])?;
    }
    staged::finish_csv(wtr)
}

/// A grouping set's task, language and split.
fn grouping_set(watched: &Watched, set: u32) -> GroupingSet {
    let [_, _, task, language, split] = set_names(watched, watched.sets[set as usize]);
    GroupingSet {
        task: task.to_string(),
        language: language.to_string(),
        split: split.to_string(),
    }
}

/// Every alarm, in trend.csv's order (night first), once per distinct
/// series: the grouping sets that repeat its queries are named with it.
pub fn alarms(trended: &Trended) -> Vec<Alarm> {
    let watched = &trended.watched;
    let alarm = |row: &SeriesNight| {
        let tested = row.tested.filter(|t| t.alarm && row.is_distinct())?;
        let night = &watched.nights[row.night];
        let [run, stage, task, language, split] =
            set_names(watched, watched.sets[row.set as usize]);
        let also = (watched.rows.iter())
            .filter(|other| other.night == row.night && other.metric == row.metric)
            .filter(|other| other.tested_as == row.set && !other.is_distinct())
            .map(|other| grouping_set(watched, other.set))
            .collect();
        Some(Alarm {
            run: run.to_string(),
            stage: stage.to_string(),
            task: task.to_string(),
            language: language.to_string(),
            split: split.to_string(),
            metric: trended.settings.metrics[row.metric].clone(),
            night: shown(&night.given),
            as_of: night.as_of,
            paired: tested.paired,
            baseline: tested.baseline,
            mean: tested.mean,
            drop: tested.baseline - tested.mean,
            p_value: tested.p_value,
            level: tested.level,
            also,
        })
    };
    watched.rows.iter().filter_map(alarm).collect()
}

/// alarms.json's contents: the nights, how they were watched, the alarms
/// and every other output.
pub fn summarize(trended: &Trended, command: &[String], outputs: Vec<OutputFile>) -> TrendSummary {
    let watched = &trended.watched;
    let settings = &trended.settings;
    let coverage = watched.coverage();
    let revisions = (watched.revisions.iter().zip(1..))
        .map(|(watch, revision)| {
            let first = watched.nights.iter().find(|n| n.revision == revision);
            TrendRevision {
                revision,
                labels_hash: first
                    .map(|n| n.facts.labels_hash.clone())
                    .unwrap_or_default(),
                changed: first.and_then(|n| n.changed).map(|c| c.code().to_string()),
                nights: watched
                    .nights
                    .iter()
                    .filter(|n| n.revision == revision)
                    .count(),
                series: watch.map_or(0, |w| w.series),
                tested: coverage[revision as usize - 1].tested.len(),
                alpha: watch.map(|w| w.alpha),
                repeated_sets: repeated_sets(watched, revision),
            }
        })
        .collect();
    TrendSummary {
        tool: "rgrade".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        command: command.to_vec(),
        nights: (watched.nights.iter().zip(&watched.baseline))
            .map(|(night, &baseline)| TrendNight {
                night: shown(&night.given),
                as_of: night.as_of,
                revision: night.revision,
                baseline,
            })
            .collect(),
        settings: TrendSettings {
            baseline_nights: settings.baseline_nights,
            alpha: settings.alpha,
            metrics: settings.metrics.clone(),
        },
        revisions,
        alarms: alarms(trended),
        outputs,
    }
}

/// The grouping sets of `revision` tested as another, in trend.csv's
/// order, each once.
fn repeated_sets(watched: &Watched, revision: u32) -> Vec<RepeatedSet> {
    let mut seen = std::collections::BTreeSet::new();
    (watched.rows.iter())
        .filter(|row| watched.nights[row.night].revision == revision && !row.is_distinct())
        .filter(|row| seen.insert(row.set))
        .map(|row| {
            let [run, stage, ..] = set_names(watched, watched.sets[row.set as usize]);
            RepeatedSet {
                run: run.to_string(),
                stage: stage.to_string(),
                set: grouping_set(watched, row.set),
                same_as: grouping_set(watched, row.tested_as),
            }
        })
        .collect()
}

/// Each series' figures on the last night it has, for `--openmetrics`:
/// its mean, and once watched its p-value, the level an alarm needed and
/// whether it ever alarmed; with the number of alarms and the last
/// night's time.
pub fn openmetrics_families(trended: &Trended) -> Vec<Family> {
    let watched = &trended.watched;
    let metrics = trended.settings.metrics.len();
    let mut last: Vec<Option<(&SeriesNight, bool)>> = vec![None; watched.sets.len() * metrics];
    for row in &watched.rows {
        let slot = &mut last[row.set as usize * metrics + row.metric];
        let alarmed = slot.is_some_and(|(_, alarmed)| alarmed);
        *slot = Some((row, alarmed || row.tested.is_some_and(|t| t.alarm)));
    }
    let mut means = Family::new(
        "rgrade_trend_mean",
        "A series' mean on the last night it has (trend.csv).",
    );
    let mut p_values = Family::new(
        "rgrade_trend_p_value",
        "A watched series' p-value of no drop below its baseline nights, on its last night.",
    );
    let mut levels = Family::new(
        "rgrade_trend_alarm_level",
        "The p-value at or under which that night's test alarms.",
    );
    let mut alarmed = Family::new(
        "rgrade_trend_alarmed",
        "1 when a watched series alarmed on any night, else 0.",
    );
    for (row, ever) in last.into_iter().flatten() {
        let mut labels = set_labels(set_names(watched, watched.sets[row.set as usize]));
        labels.push(("metric", trended.settings.metrics[row.metric].clone()));
        means.add(labels.clone(), Some(row.interval.mean));
        p_values.add(labels.clone(), row.tested.map(|t| t.p_value));
        levels.add(labels.clone(), row.tested.map(|t| t.level));
        alarmed.add(labels, row.tested.map(|_| f64::from(u8::from(ever))));
    }
    let mut alarms = Family::new(
        "rgrade_trend_alarms",
        "Alarms raised over every distinct series and night.",
    );
    alarms.add(Vec::new(), Some(self::alarms(trended).len() as f64));
    let mut families = vec![means, p_values, levels, alarmed, alarms];
    if let Some(night) = watched.nights.last() {
        families.push(as_of_family("rgrade_trend_as_of_seconds", night.as_of));
    }
    families
}

/// alarms.json, written last.
///
/// # Errors
/// The file cannot be written.
pub fn write_alarms(dir: &Path, summary: &TrendSummary) -> Result<Staged> {
    let mut out = stage(dir, ALARMS_FILE)?;
    serde_json::to_writer_pretty(&mut out, summary)?;
    writeln!(out)?;
    staged::finish(out)
}

impl Trended {
    /// Print the nights read, every alarm, and per (run, stage) the
    /// overall series: baseline and last night's mean and the evidence of
    /// a drop.
    ///
    /// # Errors
    /// Writing to `out` fails (a closed pipe among others).
    pub fn print(&self, out: &mut impl Write) -> io::Result<()> {
        print_report(out, self)
    }
}

fn print_report(out: &mut impl Write, trended: &Trended) -> io::Result<()> {
    let watched = &trended.watched;
    let (Some(first), Some(last)) = (watched.nights.first(), watched.nights.last()) else {
        return Ok(());
    };
    let baseline = watched.baseline.iter().filter(|&&b| b).count();
    writeln!(
        out,
        "{} from {} to {}; {} baseline, {} watched; {}",
        plural(watched.nights.len() as u64, "night", "nights"),
        first.as_of,
        last.as_of,
        baseline,
        watched.nights.len() - baseline,
        plural(
            u64::from(last.revision),
            "labels revision",
            "labels revisions"
        ),
    )?;
    let summary = summarize(trended, &[], Vec::new());
    let family: usize = summary.revisions.iter().map(|r| r.series).sum();
    let repeated: usize = (summary.revisions.iter())
        .map(|r| r.repeated_sets.len())
        .sum();
    if family > 0 {
        let repeats = if repeated > 0 {
            format!(
                " ({} the same queries as another, tested once)",
                plural(repeated as u64, "grouping set holds", "grouping sets hold")
            )
        } else {
            String::new()
        };
        writeln!(
            out,
            "{} watched{repeats}",
            plural(family as u64, "distinct series", "distinct series")
        )?;
    }
    writeln!(out)?;
    if let Some(why) = summary.nothing_tested() {
        writeln!(out, "{why}")?;
    } else if summary.alarms.is_empty() {
        writeln!(
            out,
            "no alarm (α = {}): no series fell below its baseline by more than chance allows \
             at its night's level; a smaller drop is not ruled out",
            trended.settings.alpha
        )?;
    }
    for alarm in &summary.alarms {
        writeln!(
            out,
            "ALARM {} {} {} task={} language={}{}: {} {:.3} -> {:.3} \
             (drop {:.3} over {} queries, p {} <= {}){} in {}",
            alarm.as_of,
            run_name(&alarm.run),
            alarm.stage,
            alarm.task,
            alarm.language,
            split_name(&alarm.split),
            alarm.metric,
            alarm.baseline,
            alarm.mean,
            alarm.drop,
            alarm.paired,
            p_value_text(alarm.p_value),
            p_value_text(alarm.level),
            also_text(&alarm.also),
            alarm.night,
        )?;
    }
    if let Some((closest, tested)) = closest_to_alarm(watched) {
        let [run, stage, task, language, split] =
            set_names(watched, watched.sets[closest.set as usize]);
        writeln!(
            out,
            "closest to an alarm on the last night: {} {stage} task={task} language={language}{} \
             {}, p {} where an alarm needs {} or less",
            run_name(run),
            split_name(split),
            trended.settings.metrics[closest.metric],
            p_value_text(tested.p_value),
            p_value_text(tested.level),
        )?;
    }
    // The overall series of every (run, stage) on the last night.
    let last_night = watched.nights.len() - 1;
    let overall: Vec<&SeriesNight> = (watched.rows.iter())
        .filter(|row| row.night == last_night)
        .filter(|row| watched.sets[row.set as usize].slice == (None, (None, None)))
        .collect();
    if overall.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "the last night's mean over its queries; baseline, night and drop over those paired \
         with the baseline, the p-value of no drop and the level an alarm needs"
    )?;
    writeln!(
        out,
        "{:<24} {:<10} {:<14} {:>6} {:>7} {:>8} {:>6} {:>6} {:>8} {:>8}",
        "run", "stage", "metric", "mean", "paired", "baseline", "night", "drop", "p", "alarm at"
    )?;
    for row in overall {
        let [run, stage, ..] = set_names(watched, watched.sets[row.set as usize]);
        let cell = |value: Option<f64>, digits: usize| {
            value.map_or("-".to_string(), |v| format!("{v:.digits$}"))
        };
        let tested = row.tested;
        writeln!(
            out,
            "{:<24} {:<10} {:<14} {:>6.3} {:>7} {:>8} {:>6} {:>6} {:>8} {:>8}",
            run_name(run),
            stage,
            trended.settings.metrics[row.metric],
            row.interval.mean,
            tested.map_or("-".to_string(), |t| t.paired.to_string()),
            cell(tested.map(|t| t.baseline), 3),
            cell(tested.map(|t| t.mean), 3),
            cell(tested.map(|t| t.baseline - t.mean), 3),
            tested.map_or("-".to_string(), |t| p_value_text(t.p_value)),
            tested.map_or("-".to_string(), |t| p_value_text(t.level)),
        )?;
    }
    Ok(())
}

/// The distinct series nearest to an alarm on the last night, when it is
/// watched, and its test: the smallest p-value for its level.
fn closest_to_alarm(watched: &Watched) -> Option<(&SeriesNight, Tested)> {
    let last_night = watched.nights.len().checked_sub(1)?;
    (watched.rows.iter())
        .filter(|row| row.night == last_night && row.is_distinct())
        .filter_map(|row| Some((row, row.tested?)))
        .min_by(|(_, a), (_, b)| (a.p_value / a.level).total_cmp(&(b.p_value / b.level)))
}

/// The grouping sets an alarm also stands for, as stdout lists them.
pub(super) fn also_text(also: &[GroupingSet]) -> String {
    if also.is_empty() {
        return String::new();
    }
    let sets: Vec<String> = (also.iter())
        .map(|set| {
            format!(
                "task={} language={}{}",
                set.task,
                set.language,
                split_name(&set.split)
            )
        })
        .collect();
    format!(" [the same queries as {}]", sets.join("; "))
}

/// A run as stdout names it: `(unnamed)` for the empty name.
pub(super) fn run_name(run: &str) -> &str {
    if run.is_empty() {
        "(unnamed)"
    } else {
        run
    }
}

/// A split as stdout names it after a slice: nothing for any split.
pub(super) fn split_name(split: &str) -> String {
    if split == ANY {
        String::new()
    } else {
        format!(" split={split}")
    }
}
