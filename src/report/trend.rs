//! The trend page: the alarms first, then the nights and their labels
//! revisions, then every series as small multiples
//! ([`super::small_multiples`]), one figure per (run, stage, metric) with
//! a panel per grouping set. Drawn from alarms.json and trend.csv alone,
//! so `rgrade report DIR` draws the same bytes again; the two are checked
//! against each other, so a page never shows an alarm one of them lacks.
//!
//! However many series and nights, the page stays bounded: the panels
//! drawn share a budget of night-points, and the lists are cut, each cut
//! saying where the rest is.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use maud::{html, Markup};

use super::charts;
use super::page::{self, count, pair_name, slice_name};
use super::small_multiples::{small_multiples, Band, Nights, Panel};
use super::sources::Sources;
use crate::base::schema::{
    Alarm, GroupingSet, TrendSummary, BASELINE_ROLE, TREND, TREND_FILE, WATCHED_ROLE,
};
use crate::base::text::{p_value_text, plural};
use crate::output::cells::read_number;

/// Alarms listed in the table; alarms.json holds them all.
const ALARMS_LISTED: usize = 40;
/// Alarmed series drawn above the table, at most.
const ALARMED_DRAWN: usize = 24;
/// Panels of every series drawn, at most.
const PANELS_DRAWN: usize = 360;
/// Night-points (panels × nights) drawn of every series, and of the
/// alarmed series apart, at most, down to one panel each: a longer
/// history draws fewer panels, so the page stays under a few MB up to
/// 30,000 nights.
const NIGHT_POINTS: usize = 30_000;
/// Nights, and labels revisions, listed; the tables keep the latest.
const LISTED: usize = 60;
/// Panels in a row.
const COLUMNS: usize = 5;
/// Panels in a row of the alarmed series, whose titles are longer.
const ALARMED_COLUMNS: usize = 3;
/// How far a written interval may miss its mean (the two are computed
/// apart, each rounded).
const ROUNDING: f64 = 1e-9;

/// The page of the trend whose alarms.json is `summary` and whose other
/// files `sources` finds.
///
/// # Errors
/// trend.csv cannot be read, or is not what `rgrade trend` writes beside
/// this alarms.json.
pub fn page(summary: &TrendSummary, sources: &Sources) -> Result<String> {
    let (first, last) = match (summary.nights.first(), summary.nights.last()) {
        (Some(first), Some(last)) => (first, last),
        _ => bail!("alarms.json lists no night: not written by rgrade trend"),
    };
    let table = SeriesTable::read(sources.require(TREND_FILE)?, summary)?;
    let budget = PANELS_DRAWN.min(NIGHT_POINTS / summary.nights.len()).max(1);
    let nights = Nights {
        baseline: summary.nights.iter().map(|n| n.baseline).collect(),
        revision: summary.nights.iter().map(|n| n.revision).collect(),
    };
    let lede = html! {
        (plural(summary.nights.len() as u64, "night", "nights")) ", from " (first.as_of.to_string())
        " to " (last.as_of.to_string()) "; the first " (summary.settings.baseline_nights)
        " of each labels revision are its baseline. "
        "Alarms hold the chance of any false alarm, over every series and night, to α = "
        (summary.settings.alpha) "."
    };
    let body = html! {
        (alarms_section(summary, &table, &nights, budget.min(ALARMED_DRAWN))?)
        (nights_section(summary))
        (series_section(summary, &table.series, &nights, budget)?)
    };
    Ok(page::document("rgrade trend report", lede, body))
}

/// trend.csv's series, in the order their rows first come, and where each
/// is.
struct SeriesTable {
    series: Vec<Series>,
    index: HashMap<SeriesKey, usize>,
}

/// One series of trend.csv: its key, its values by night, the nights it
/// alarmed on (one at most per labels revision), its last test, and
/// whether it repeats another series' queries (and so is drawn once, as
/// that one).
struct Series {
    key: SeriesKey,
    nights: Vec<Option<Band>>,
    alarms: Vec<usize>,
    last_test: Option<LastTest>,
    repeat: bool,
}

/// A series' test on the last night it was tested.
#[derive(Debug, Clone, Copy)]
struct LastTest {
    night: usize,
    p_value: f64,
    level: f64,
}

impl LastTest {
    /// How the test stood against what an alarm needs, as a panel notes it.
    fn note(&self) -> String {
        format!(
            "p {} · alarm at {}",
            p_value_text(self.p_value),
            p_value_text(self.level)
        )
    }
}

/// run, stage, task, language, split, metric.
type SeriesKey = [String; 6];

impl Series {
    fn pair(&self) -> (&str, &str) {
        (&self.key[0], &self.key[1])
    }

    fn slice(&self) -> String {
        slice_name(&self.key[2], &self.key[3], &self.key[4])
    }

    fn panel(&self, title: String) -> Panel {
        Panel {
            title,
            note: self.last_test.map_or_else(String::new, |test| test.note()),
            nights: self.nights.clone(),
            alarms: self.alarms.clone(),
        }
    }
}

impl SeriesTable {
    /// Read trend.csv at `path`, checking each row against the nights of
    /// `summary` and its alarms against the rows'.
    fn read(path: &Path, summary: &TrendSummary) -> Result<Self> {
        let mut reader = csv::Reader::from_path(path)
            .with_context(|| format!("{}: cannot open", path.display()))?;
        ensure!(
            reader.headers()?.iter().eq(TREND),
            "{}: not the columns rgrade trend writes",
            path.display()
        );
        let night_of = night_index(summary);
        let repeated = repeated_sets(summary);
        let mut table = SeriesTable {
            series: Vec::new(),
            index: HashMap::new(),
        };
        for (line, record) in reader.records().enumerate() {
            let record = record.with_context(|| format!("{}: cannot read", path.display()))?;
            let at = |what: &str| format!("{}: line {}: {what}", path.display(), line + 2);
            let night = *night_of
                .get(&record[1])
                .with_context(|| at("a night alarms.json does not list"))?;
            let listed = &summary.nights[night];
            let role = if listed.baseline {
                BASELINE_ROLE
            } else {
                WATCHED_ROLE
            };
            ensure!(
                record[2] == listed.revision.to_string() && &record[13] == role,
                at("a revision or role unlike alarms.json's for its night")
            );
            let number = |column: usize| -> Result<f64> {
                read_number(&record[column])
                    .map_err(|err| anyhow::anyhow!(at(&err)))?
                    .with_context(|| at(&format!("no {}", TREND[column])))
            };
            let band = Band {
                mean: number(10)?,
                low: number(11)?,
                high: number(12)?,
            };
            ensure!(
                band.low <= band.mean + ROUNDING && band.mean <= band.high + ROUNDING,
                at("an interval that does not hold its mean")
            );
            let key: SeriesKey = std::array::from_fn(|i| record[3 + i].to_string());
            let repeat = repeated.contains(&(listed.revision, key[..5].to_vec()));
            let next = table.series.len();
            let at_index = *table.index.entry(key.clone()).or_insert(next);
            if at_index == next {
                table.series.push(Series {
                    key,
                    nights: vec![None; summary.nights.len()],
                    alarms: Vec::new(),
                    last_test: None,
                    repeat: false,
                });
            }
            let one = &mut table.series[at_index];
            ensure!(one.nights[night].is_none(), at("a series' night twice"));
            one.nights[night] = Some(band);
            one.repeat |= repeat;
            let test = |column: usize| {
                read_number(&record[column]).map_err(|err| anyhow::anyhow!(at(&err)))
            };
            if let (Some(p_value), Some(level)) = (test(16)?, test(17)?) {
                one.last_test = Some(LastTest {
                    night,
                    p_value,
                    level,
                });
            }
            match &record[18] {
                // A repeated set alarms with the series it repeats, which
                // alarms.json names once.
                "true" if repeat => {}
                "true" => {
                    let revision = |n: usize| summary.nights[n].revision;
                    ensure!(
                        one.alarms.iter().all(|&n| revision(n) != listed.revision),
                        at("a series' second alarm in one labels revision")
                    );
                    one.alarms.push(night);
                }
                "false" | "" => {}
                other => bail!(at(&format!("'{other}' is not true or false"))),
            }
        }
        table.check_alarms(summary, path)?;
        Ok(table)
    }

    /// Fail unless alarms.json's alarms are trend.csv's, one for one.
    fn check_alarms(&self, summary: &TrendSummary, path: &Path) -> Result<()> {
        let night_of = night_index(summary);
        for alarm in &summary.alarms {
            let alarmed = (self.index.get(&alarm_key(alarm)))
                .zip(night_of.get(alarm.night.as_str()))
                .is_some_and(|(&s, night)| self.series[s].alarms.contains(night));
            ensure!(
                alarmed,
                "{}: no alarm of {} {} on {}, which alarms.json lists",
                path.display(),
                pair_name(&alarm.run, &alarm.stage),
                alarm.metric,
                alarm.night
            );
        }
        let rows: usize = self.series.iter().map(|s| s.alarms.len()).sum();
        ensure!(
            rows == summary.alarms.len(),
            "{}: {rows} alarms, where alarms.json lists {}",
            path.display(),
            summary.alarms.len()
        );
        Ok(())
    }
}

/// Per labels revision, the grouping sets (run, stage, task, language,
/// split) tested as another that holds the same queries.
fn repeated_sets(summary: &TrendSummary) -> HashSet<(u32, Vec<String>)> {
    let mut repeated = HashSet::new();
    for revision in &summary.revisions {
        for r in &revision.repeated_sets {
            let set = &r.set;
            let key = [&r.run, &r.stage, &set.task, &set.language, &set.split];
            repeated.insert((revision.revision, key.map(|s| s.clone()).to_vec()));
        }
    }
    repeated
}

/// An alarm's slice, and the slices that repeat its queries.
fn alarm_slice(alarm: &Alarm) -> String {
    let name = |set: &GroupingSet| slice_name(&set.task, &set.language, &set.split);
    let mut text = slice_name(&alarm.task, &alarm.language, &alarm.split);
    if !alarm.also.is_empty() {
        let also: Vec<String> = alarm.also.iter().map(name).collect();
        text += &format!(" (= {})", also.join(", "));
    }
    text
}

/// The distinct series tested on the last night, nearest to an alarm:
/// the smallest p-value for its level.
fn closest_to_alarm(table: &SeriesTable, last_night: usize) -> Option<&Series> {
    let ratio = |s: &&Series| s.last_test.map_or(f64::INFINITY, |t| t.p_value / t.level);
    (table.series.iter())
        .filter(|s| !s.repeat && s.last_test.is_some_and(|t| t.night == last_night))
        .min_by(|a, b| ratio(a).total_cmp(&ratio(b)))
}

/// Each night's place in `summary`'s order, by its directory.
fn night_index(summary: &TrendSummary) -> HashMap<&str, usize> {
    (summary.nights.iter().enumerate())
        .map(|(i, n)| (n.night.as_str(), i))
        .collect()
}

/// The series an alarm names.
fn alarm_key(alarm: &Alarm) -> SeriesKey {
    [
        &alarm.run,
        &alarm.stage,
        &alarm.task,
        &alarm.language,
        &alarm.split,
        &alarm.metric,
    ]
    .map(|s| s.clone())
}

/// `text` begun with a capital, as a sentence of the page.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// The alarms: a verdict, the first `drawn` alarmed series' panels and a
/// table.
fn alarms_section(
    summary: &TrendSummary,
    table: &SeriesTable,
    nights: &Nights,
    drawn: usize,
) -> Result<Markup> {
    let alarms = &summary.alarms;
    let night_of = night_index(summary);
    // The series that alarmed, in the order of their first alarms (both
    // files were checked to hold the same).
    let mut alarmed: Vec<usize> = Vec::new();
    for alarm in alarms {
        let s = table.index[&alarm_key(alarm)];
        if alarmed.len() < drawn && !alarmed.contains(&s) {
            alarmed.push(s);
        }
    }
    let closest = closest_to_alarm(table, summary.nights.len() - 1);
    let panels: Vec<Panel> = (alarmed.iter().map(|&s| &table.series[s]))
        .map(|s| {
            let (pair, metric) = (pair_name(&s.key[0], &s.key[1]), &s.key[5]);
            s.panel(format!("{pair} · {metric} · {}", s.slice()))
        })
        .collect();
    let alarmed_series = (alarms.iter().map(alarm_key)).collect::<HashSet<_>>().len();
    let on_nights = (alarms.iter().map(|a| &a.night))
        .collect::<HashSet<_>>()
        .len();
    Ok(html! {
        section {
            h2 { "Alarms" }
            @if let Some(why) = summary.nothing_tested() {
                div.verdict { (capitalized(&why)) "." }
            } @else if alarms.is_empty() {
                div.verdict.pass {
                    "No alarm: no series fell below its baseline by more than chance allows at its night's "
                    "level. That does not show nothing dropped: a drop too small for these queries to tell "
                    "from chance would not alarm."
                }
            } @else {
                div.verdict.fail {
                    (plural(alarms.len() as u64, "alarm", "alarms")) " on "
                    (plural(on_nights as u64, "night", "nights"))
                }
                (charts::figure(
                    small_multiples(&panels, nights, ALARMED_COLUMNS)?,
                    &format!("The series that alarmed{}: the vermillion triangle is the night of the alarm.",
                        if alarmed_series > panels.len() { format!(" (the first {})", panels.len()) } else { String::new() }),
                ))
                table {
                    tr { th.n { "night" } th { "as of" } th { "run · stage" } th { "slice" } th { "metric" }
                         th.n { "queries" } th.n { "baseline" } th.n { "that night" } th.n { "drop" } th.n { "p" } th.n { "alarm at" } }
                    @for alarm in alarms.iter().take(ALARMS_LISTED) {
                        tr {
                            td.n { (night_of[alarm.night.as_str()] + 1) }
                            td { (alarm.as_of.to_string()) }
                            td { (pair_name(&alarm.run, &alarm.stage)) }
                            td { (alarm_slice(alarm)) }
                            td { (alarm.metric) }
                            td.n { (count(alarm.paired as u64)) }
                            (page::cell(Some(alarm.baseline)))
                            (page::cell(Some(alarm.mean)))
                            (page::cell(Some(alarm.drop)))
                            td.n { (p_value_text(alarm.p_value)) }
                            td.n { (p_value_text(alarm.level)) }
                        }
                    }
                }
                @if alarms.len() > ALARMS_LISTED {
                    p.note { (count((alarms.len() - ALARMS_LISTED) as u64)) " more in alarms.json." }
                }
            }
            @if let Some(closest) = closest {
                p {
                    "Closest to an alarm on the last night: " (pair_name(&closest.key[0], &closest.key[1]))
                    " · " (closest.key[5]) " · " (closest.slice()) ", "
                    (closest.last_test.map_or_else(String::new, |t| t.note())) "."
                }
            }
            p.note {
                "Each watched night, a series' queries are paired with their own mean over the baseline "
                "nights and a one-sided paired t-test asks whether the night fell below it; a series "
                "alarms when its p-value is at or under its night's level, the share of α that night "
                "may spend over the revision's distinct series. docs/trend.md says why that holds false "
                "alarms to α however many nights are watched, and rankings that change and stay changed "
                "do not add up to an alarm."
            }
        }
    })
}

fn nights_section(summary: &TrendSummary) -> Markup {
    let skipped = summary.nights.len().saturating_sub(LISTED);
    let revisions_skipped = summary.revisions.len().saturating_sub(LISTED);
    let alarms_on = |night: &str| summary.alarms.iter().filter(|a| a.night == night).count();
    html! {
        section {
            h2 { "Nights and labels revisions" }
            @if revisions_skipped > 0 {
                p.note { "The latest " (LISTED) " revisions; alarms.json lists the " (revisions_skipped) " before them." }
            }
            table {
                tr { th.n { "revision" } th { "changed" } th { "labels hash" } th.n { "nights" } th.n { "distinct series" } th.n { "series tested" } th.n { "repeated sets" } th.n { "share of α" } }
                @for revision in summary.revisions.iter().skip(revisions_skipped) {
                    tr {
                        td.n { (revision.revision) }
                        td { (revision.changed.as_deref().unwrap_or("")) }
                        td { code { (revision.labels_hash) } }
                        td.n { (revision.nights) }
                        td.n { (count(revision.series as u64)) }
                        td.n { (count(revision.tested as u64)) }
                        td.n { (count(revision.repeated_sets.len() as u64)) }
                        td.n { @if let Some(alpha) = revision.alpha { (format!("{alpha}")) } @else { "none watched" } }
                    }
                }
            }
            @if skipped > 0 {
                p.note { "The latest " (LISTED) " nights; alarms.json lists the " (skipped) " before them." }
            }
            table {
                tr { th.n { "night" } th { "as of" } th { "directory" } th.n { "revision" } th { "role" } th.n { "alarms" } }
                @for (i, night) in summary.nights.iter().enumerate().skip(skipped) {
                    tr {
                        td.n { (i + 1) }
                        td { (night.as_of.to_string()) }
                        td { code { (night.night) } }
                        td.n { (night.revision) }
                        td { @if night.baseline { (BASELINE_ROLE) } @else { (WATCHED_ROLE) } }
                        td.n { (alarms_on(&night.night)) }
                    }
                }
            }
        }
    }
}

/// One figure of the every-series section: a (run, stage) and metric, and
/// its series (one per grouping set).
struct Figure<'a> {
    pair: (&'a str, &'a str),
    metric: &'a str,
    series: Vec<&'a Series>,
}

/// Every series, as many panels as `budget` allows, shared among the
/// figures by [`shares`].
fn series_section(
    summary: &TrendSummary,
    series: &[Series],
    nights: &Nights,
    budget: usize,
) -> Result<Markup> {
    let figures = figures(summary, series)?;
    let sizes: Vec<usize> = figures.iter().map(|f| f.series.len()).collect();
    let shares = shares(&sizes, budget);
    let drawn: usize = shares.iter().sum();
    let repeats = series.iter().filter(|s| s.repeat).count();
    let distinct = series.len() - repeats;
    let mut pair = None;
    let mut parts = Vec::new();
    for (figure, &share) in figures.iter().zip(&shares).filter(|(_, &n)| n > 0) {
        let heading = (pair != Some(figure.pair)).then(|| pair_name(figure.pair.0, figure.pair.1));
        pair = Some(figure.pair);
        let shown = &figure.series[..share];
        let panels: Vec<Panel> = shown.iter().map(|s| s.panel(s.slice())).collect();
        let mut caption = format!(
            "{} of {}, one panel per grouping set",
            figure.metric,
            pair_name(figure.pair.0, figure.pair.1)
        );
        if share < figure.series.len() {
            caption += &format!(" (the first {share} of {})", figure.series.len());
        }
        parts.push((
            heading,
            charts::figure(small_multiples(&panels, nights, COLUMNS)?, &caption),
        ));
    }
    Ok(html! {
        section {
            h2 { "Every series" }
            p.note {
                "Night by night, each series' mean (the line) and its 95% interval (the band); shaded nights "
                "are the baseline, a purple line a change of labels, a vermillion triangle and title an alarm. "
                "Each panel has its own scale, and notes its last test's p-value against the level an alarm needed."
            }
            @if repeats > 0 {
                p.note { (plural(repeats as u64, "grouping set holds", "grouping sets hold")) " the same queries as another and is drawn once, as that one (alarms.json's repeated_sets)." }
            }
            @if drawn < distinct {
                p.note { (count(drawn as u64)) " of the " (count(distinct as u64)) " series are drawn, to keep the page small; trend.csv holds every one." }
            }
            @for (heading, figure) in parts {
                @if let Some(heading) = heading { h3 { (heading) } }
                (figure)
            }
        }
    })
}

/// How many of each figure's `sizes` panels to draw within `budget`: the
/// smallest figures whole, the rest an equal share of what remains (a
/// figure of one series leaves the others its unused share), the first
/// figures taking what rounding leaves. Past the budget a figure draws
/// none.
fn shares(sizes: &[usize], budget: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    // Among equals the last first, so rounding favours the first.
    order.sort_by_key(|&i| (sizes[i], std::cmp::Reverse(i)));
    let mut shares = vec![0; sizes.len()];
    let mut left = budget;
    for (done, &i) in order.iter().enumerate() {
        let share = sizes[i].min(left / (sizes.len() - done));
        shares[i] = share;
        left -= share;
    }
    // Rounding down can leave panels over; the first figures take them.
    for (share, &size) in shares.iter_mut().zip(sizes) {
        let more = (size - *share).min(left);
        *share += more;
        left -= more;
    }
    shares
}

/// The figures of every series: by (run, stage) in the order trend.csv
/// first names them, then by metric in the order the trend watched them.
fn figures<'a>(summary: &'a TrendSummary, series: &'a [Series]) -> Result<Vec<Figure<'a>>> {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for s in series {
        if !pairs.contains(&s.pair()) {
            pairs.push(s.pair());
        }
        ensure!(
            summary.settings.metrics.contains(&s.key[5]),
            "{TREND_FILE}: metric '{}' is not one alarms.json says was watched",
            s.key[5]
        );
    }
    let mut figures = Vec::new();
    for pair in pairs {
        for metric in &summary.settings.metrics {
            let of_figure: Vec<&Series> = (series.iter())
                .filter(|s| s.pair() == pair && s.key[5] == *metric && !s.repeat)
                .collect();
            if !of_figure.is_empty() {
                figures.push(Figure {
                    pair,
                    metric,
                    series: of_figure,
                });
            }
        }
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;
    use std::path::PathBuf;

    use super::*;
    use crate::base::schema::{OutputFile, TrendNight, TrendRevision, TrendSettings};
    use crate::base::timestamp::Timestamp;

    const NIGHTS: usize = 400;
    const SERIES: usize = 200;
    const ALARMS: usize = 50;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rgrade-trend-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A long history: `NIGHTS` nights, labels changed halfway, `SERIES`
    /// series (tasks t0..t199, one metric), the first `ALARMS` of them
    /// alarmed on night 300, and t0 on night 100 as well, in the first
    /// labels revision; and its trend.csv in `dir`.
    fn history(dir: &Path) -> TrendSummary {
        let night = |i: usize| TrendNight {
            night: format!("nights/{i:03}"),
            as_of: Timestamp::from_seconds(1_780_000_000 + 86_400 * i as i64),
            revision: 1 + u32::from(i >= NIGHTS / 2),
            baseline: i % (NIGHTS / 2) < 7,
        };
        let nights: Vec<TrendNight> = (0..NIGHTS).map(night).collect();
        let task = |s: usize| format!("t{s}");
        let alarmed = [(0, 100)].into_iter().chain((0..ALARMS).map(|s| (s, 300)));
        let alarms = alarmed
            .map(|(s, i): (usize, usize)| Alarm {
                run: "r".into(),
                stage: "final".into(),
                task: task(s),
                language: "*".into(),
                split: "*".into(),
                metric: "recall@10".into(),
                night: nights[i].night.clone(),
                as_of: nights[i].as_of,
                paired: 100,
                baseline: 0.7,
                mean: 0.6,
                drop: 0.1,
                p_value: 1e-9,
                level: 1e-8,
                also: Vec::new(),
            })
            .collect();
        let mut csv = TREND.join(",") + "\n";
        for (i, n) in nights.iter().enumerate() {
            for s in 0..SERIES {
                let mean = 0.6 + 0.1 * ((i * 7 + s) % 13) as f64 / 13.0;
                let alarmed = (s < ALARMS && i == 300) || (s == 0 && i == 100);
                let role = if n.baseline {
                    BASELINE_ROLE
                } else {
                    WATCHED_ROLE
                };
                let alarm = match (n.baseline, alarmed) {
                    (true, _) => "",
                    (false, true) => "true",
                    (false, false) => "false",
                };
                writeln!(
                    csv,
                    "{},{},{},r,final,{},*,*,recall@10,100,{mean},{},{},{role},,,,,{alarm}",
                    n.as_of,
                    n.night,
                    n.revision,
                    task(s),
                    mean - 0.05,
                    mean + 0.05
                )
                .unwrap();
            }
        }
        std::fs::write(dir.join(TREND_FILE), csv).unwrap();
        let revision = |revision| TrendRevision {
            revision,
            labels_hash: format!("hash{revision}"),
            changed: (revision > 1).then(|| "labels".to_string()),
            nights: NIGHTS / 2,
            series: SERIES,
            tested: SERIES,
            alpha: Some(0.05 / (f64::from(revision) * f64::from(revision + 1))),
            repeated_sets: Vec::new(),
        };
        TrendSummary {
            tool: "rgrade".into(),
            version: "0".into(),
            command: vec![],
            nights,
            settings: TrendSettings {
                baseline_nights: 7,
                alpha: 0.05,
                metrics: vec!["recall@10".into()],
            },
            revisions: vec![revision(1), revision(2)],
            alarms,
            outputs: vec![OutputFile {
                name: TREND_FILE.into(),
                bytes: 0,
                hash: String::new(),
            }],
        }
    }

    #[test]
    fn a_long_history_draws_a_bounded_page() {
        let dir = scratch("long");
        let summary = history(&dir);
        let html = page(&summary, &Sources::listed(&dir, &summary.outputs)).unwrap();
        assert!(html.len() < 3_000_000, "{} bytes", html.len());
        // 30 000 night-points over 400 nights: 75 panels of every series,
        // and 24 of the alarmed ones.
        let budget = NIGHT_POINTS / NIGHTS;
        assert!(html.contains(&format!("{budget} of the {SERIES} series are drawn")));
        assert!(html.contains(&format!("the first {budget} of {SERIES}")));
        assert!(html.contains(&format!(
            "The series that alarmed (the first {ALARMED_DRAWN})"
        )));
        // Each panel's series breaks at the change of labels: two lines.
        let lines = html
            .matches("stroke=\"#0072B2\" stroke-width=\"2\" points=")
            .count();
        assert_eq!(lines, 2 * (budget + ALARMED_DRAWN));
        // An alarm is marked in each panel of its series: among the first
        // alarmed series, and among every series (all 50 in the first 75);
        // t0 alarmed in both revisions, so its panels have two marks.
        let triangles = html.matches("fill=\"#D55E00\" points=").count();
        assert_eq!(triangles, (ALARMED_DRAWN + 1) + (ALARMS + 1));
        for night in ["101", "301"] {
            assert!(html.contains(&format!("<td class=\"n\">{night}</td>")));
        }
        let more = ALARMS + 1 - ALARMS_LISTED;
        assert!(html.contains(&format!("{more} more in alarms.json")));
        let skipped = NIGHTS - LISTED;
        assert!(html.contains(&format!("lists the {skipped} before them")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `csv` with field `column` of the first row holding `needle` set to
    /// `value`.
    fn edit_row(csv: &str, needle: &str, column: usize, value: &str) -> String {
        let mut done = false;
        let lines = csv.lines().map(|line| {
            if done || !line.contains(needle) {
                return line.to_string();
            }
            done = true;
            let mut fields: Vec<&str> = line.split(',').collect();
            fields[column] = value;
            fields.join(",")
        });
        let edited = lines.collect::<Vec<_>>().join("\n") + "\n";
        assert!(done, "{needle}");
        edited
    }

    #[test]
    fn a_trend_csv_unlike_its_alarms_json_is_refused() {
        let dir = scratch("unlike");
        let summary = history(&dir);
        let sources = Sources::listed(&dir, &summary.outputs);
        let csv = std::fs::read_to_string(dir.join(TREND_FILE)).unwrap();
        let first = ",nights/000,";
        let doubled = csv.clone() + csv.lines().nth(1).unwrap() + "\n";
        for (edited, says) in [
            (
                edit_row(&csv, first, 1, "nights/999"),
                "line 2: a night alarms.json does not list",
            ),
            (
                edit_row(&csv, first, 2, "2"),
                "line 2: a revision or role unlike",
            ),
            (
                edit_row(&csv, first, 13, "watched"),
                "line 2: a revision or role unlike",
            ),
            (
                edit_row(&csv, first, 10, "x"),
                "line 2: 'x' is not a number",
            ),
            (
                edit_row(&csv, first, 11, "0.9"),
                "an interval that does not hold its mean",
            ),
            (
                edit_row(&csv, first, 18, "maybe"),
                "'maybe' is not true or false",
            ),
            (
                edit_row(&csv, first, 8, "ndcg@10"),
                "metric 'ndcg@10' is not one",
            ),
            (doubled, "a series' night twice"),
            (
                edit_row(&csv, ",nights/300,2,r,final,t0,", 18, "false"),
                "no alarm of r · final recall@10 on nights/300",
            ),
            (
                edit_row(&csv, ",nights/101,1,r,final,t0,", 18, "true"),
                "a series' second alarm in one labels revision",
            ),
            (
                edit_row(&csv, ",nights/301,2,r,final,t60,", 18, "true"),
                "52 alarms, where alarms.json lists 51",
            ),
        ] {
            std::fs::write(dir.join(TREND_FILE), edited).unwrap();
            let Err(err) = page(&summary, &sources) else {
                panic!("{says}: drawn")
            };
            assert!(format!("{err:#}").contains(says), "{says}: {err:#}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn panels_are_shared_smallest_figures_first() {
        assert_eq!(shares(&[25, 1, 25], 30), [15, 1, 14]);
        assert_eq!(shares(&[25, 25], 360), [25, 25]);
        assert_eq!(shares(&[10, 10, 10], 2), [1, 1, 0]);
        assert_eq!(shares(&[], 10), Vec::<usize>::new());
        for (sizes, budget) in [(vec![7, 3, 90, 12], 50), (vec![5; 100], 75)] {
            let drawn: usize = shares(&sizes, budget).iter().sum();
            assert_eq!(drawn, budget.min(sizes.iter().sum()));
        }
    }
}
