//! The trend page: the alarms first, then the nights and their labels
//! revisions, then every series as small multiples
//! ([`super::small_multiples`]), one figure per (run, stage, metric) with
//! a panel per grouping set. Drawn from alarms.json and trend.csv alone,
//! so `rgrade report DIR` draws the same bytes again.
//!
//! However many series and nights, the page stays bounded: the panels
//! drawn share a budget of night-points, and the lists are cut, each cut
//! saying where the rest is.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use maud::{html, Markup};

use super::charts;
use super::page::{self, count, pair_name, slice_name};
use super::small_multiples::{small_multiples, Nights, Panel};
use super::sources::Sources;
use crate::base::intervals::{MeanInterval, Method};
use crate::base::schema::{Alarm, TrendSummary, TREND, TREND_FILE};
use crate::output::cells::read_number;

/// Alarms listed in the table; alarms.json holds them all.
const ALARMS_LISTED: usize = 40;
/// Alarmed series drawn above the table.
const ALARMED_DRAWN: usize = 24;
/// Panels drawn of every series at most (and of the alarmed ones,
/// besides).
const PANELS_DRAWN: usize = 360;
/// Night-points (panels × nights) drawn of every series at most: a long
/// history draws fewer panels, so the page stays under a few MB.
const NIGHT_POINTS: usize = 30_000;
/// Nights listed; the table keeps the latest.
const NIGHTS_LISTED: usize = 60;
/// Panels in a row.
const COLUMNS: usize = 5;
/// Panels in a row of the alarmed series, whose titles are longer.
const ALARMED_COLUMNS: usize = 3;

/// The page of the trend whose alarms.json is `summary` and whose other
/// files `sources` finds.
///
/// # Errors
/// trend.csv cannot be read, or is not what `rgrade trend` writes beside
/// this alarms.json.
pub fn page(summary: &TrendSummary, sources: &Sources) -> Result<String> {
    let series = read_series(sources.require(TREND_FILE)?, summary)?;
    // A panel's size grows with the nights: every series together, and
    // the alarmed ones apart, draw at most `NIGHT_POINTS` night-points.
    let budget = PANELS_DRAWN
        .min(NIGHT_POINTS / summary.nights.len().max(1))
        .max(1);
    let nights = Nights {
        baseline: summary.nights.iter().map(|n| n.baseline).collect(),
        revision: summary.nights.iter().map(|n| n.revision).collect(),
    };
    let (first, last) = match (summary.nights.first(), summary.nights.last()) {
        (Some(first), Some(last)) => (first, last),
        _ => bail!("alarms.json lists no night: not written by rgrade trend"),
    };
    let lede = html! {
        (summary.nights.len()) " nights, from " (first.as_of.to_string()) " to " (last.as_of.to_string())
        "; the first " (summary.settings.baseline_nights) " of each labels revision are its baseline. "
        "Alarms hold the chance of any false alarm, over every series and night, to α = "
        (summary.settings.alpha) "."
    };
    let body = html! {
        (alarms_section(summary, &series, &nights, budget.min(ALARMED_DRAWN))?)
        (nights_section(summary))
        (series_section(summary, &series, &nights, budget)?)
    };
    Ok(page::document("rgrade trend report", lede, body))
}

/// One series of trend.csv: (run, stage, task, language, split, metric),
/// its values by night, and the night it alarmed on.
struct Series {
    key: SeriesKey,
    nights: Vec<Option<MeanInterval>>,
    alarm: Option<usize>,
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
            nights: self.nights.clone(),
            alarm: self.alarm,
        }
    }
}

/// trend.csv's series, in the order their rows first come.
fn read_series(path: &Path, summary: &TrendSummary) -> Result<Vec<Series>> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("{}: cannot open", path.display()))?;
    ensure!(
        reader.headers()?.iter().eq(TREND),
        "{}: not the columns rgrade trend writes",
        path.display()
    );
    let night_of: HashMap<&str, usize> = (summary.nights.iter().enumerate())
        .map(|(i, n)| (n.night.as_str(), i))
        .collect();
    let mut series: Vec<Series> = Vec::new();
    let mut index: HashMap<SeriesKey, usize> = HashMap::new();
    for (line, record) in reader.records().enumerate() {
        let record = record.with_context(|| format!("{}: cannot read", path.display()))?;
        let at = |what: &str| format!("{}: line {}: {what}", path.display(), line + 2);
        let night = *night_of
            .get(&record[1])
            .with_context(|| at("a night alarms.json does not list"))?;
        let key: SeriesKey = std::array::from_fn(|i| record[3 + i].to_string());
        let number = |column: usize| -> Result<f64> {
            read_number(&record[column])
                .map_err(|err| anyhow::anyhow!(at(&err)))?
                .with_context(|| at(&format!("no {}", TREND[column])))
        };
        let value = MeanInterval {
            mean: number(10)?,
            low: number(11)?,
            high: number(12)?,
            n: (record[9].parse()).with_context(|| at("the query count is not a count"))?,
            method: Method::Normal,
        };
        let next = series.len();
        let at_index = *index.entry(key).or_insert(next);
        if at_index == next {
            series.push(Series {
                key: std::array::from_fn(|i| record[3 + i].to_string()),
                nights: vec![None; summary.nights.len()],
                alarm: None,
            });
        }
        let one = &mut series[at_index];
        ensure!(one.nights[night].is_none(), at("a series' night twice"));
        one.nights[night] = Some(value);
        match &record[17] {
            "true" => {
                ensure!(one.alarm.is_none(), at("a series' second alarm"));
                one.alarm = Some(night);
            }
            "false" | "" => {}
            other => bail!(at(&format!("'{other}' is not true or false"))),
        }
    }
    Ok(series)
}

/// The alarms: a verdict, the first `drawn` alarmed series' panels and a
/// table.
fn alarms_section(
    summary: &TrendSummary,
    series: &[Series],
    nights: &Nights,
    drawn: usize,
) -> Result<Markup> {
    let alarms = &summary.alarms;
    let night_number: HashMap<&str, usize> = (summary.nights.iter().enumerate())
        .map(|(i, n)| (n.night.as_str(), i + 1))
        .collect();
    let numbers = (alarms.iter().take(ALARMS_LISTED))
        .map(|alarm| {
            (night_number.get(alarm.night.as_str()).copied()).with_context(|| {
                format!(
                    "an alarm on {}, a night alarms.json does not list",
                    alarm.night
                )
            })
        })
        .collect::<Result<Vec<usize>>>()?;
    // The series that alarmed, in the order of their alarms.
    let alarmed: Vec<Panel> = (alarms.iter())
        .filter_map(|alarm| series.iter().find(|s| s.key == alarm_key(alarm)))
        .take(drawn)
        .map(|s| {
            let title = format!(
                "{} · {} · {}",
                pair_name(&s.key[0], &s.key[1]),
                s.key[5],
                s.slice()
            );
            s.panel(title)
        })
        .collect();
    let on_nights = {
        let mut on: Vec<&str> = alarms.iter().map(|a| a.night.as_str()).collect();
        on.dedup();
        on.len()
    };
    Ok(html! {
        section {
            h2 { "Alarms" }
            @if alarms.is_empty() {
                div.verdict.pass { "No alarm: no series fell below its baseline by more than chance allows." }
            } @else {
                div.verdict.fail {
                    (count(alarms.len() as u64)) " alarm" @if alarms.len() > 1 { "s" }
                    " on " (on_nights) " night" @if on_nights > 1 { "s" }
                }
                (charts::figure(
                    small_multiples(&alarmed, nights, ALARMED_COLUMNS)?,
                    &format!("The series that alarmed{}: the vermillion triangle is the night of the alarm.",
                        if alarms.len() > alarmed.len() { format!(" (the first {})", alarmed.len()) } else { String::new() }),
                ))
                table {
                    tr { th.n { "night" } th { "as of" } th { "run · stage" } th { "slice" } th { "metric" }
                         th.n { "queries" } th.n { "baseline" } th.n { "that night" } th.n { "drop" } th.n { "evidence" } }
                    @for (alarm, number) in alarms.iter().zip(numbers) {
                        tr {
                            td.n { (number) }
                            td { (alarm.as_of.to_string()) }
                            td { (pair_name(&alarm.run, &alarm.stage)) }
                            td { (slice_name(&alarm.task, &alarm.language, &alarm.split)) }
                            td { (alarm.metric) }
                            td.n { (count(alarm.paired as u64)) }
                            (page::cell(Some(alarm.baseline)))
                            (page::cell(Some(alarm.mean)))
                            (page::cell(Some(alarm.drop)))
                            td.n { (format!("{:.3e}", alarm.evidence)) }
                        }
                    }
                }
                @if alarms.len() > ALARMS_LISTED {
                    p.note { (count((alarms.len() - ALARMS_LISTED) as u64)) " more in alarms.json." }
                }
            }
            p.note {
                "Each night's queries are paired with the same queries' mean over the baseline nights; "
                "the evidence of a drop is the wealth of a bet against \"no drop\", and a series alarms "
                "when it reaches its revision's threshold. docs/trend.md says why that holds false alarms "
                "to α however many nights are watched."
            }
        }
    })
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

fn nights_section(summary: &TrendSummary) -> Markup {
    let skipped = summary.nights.len().saturating_sub(NIGHTS_LISTED);
    let alarms_on = |night: &str| summary.alarms.iter().filter(|a| a.night == night).count();
    html! {
        section {
            h2 { "Nights and labels revisions" }
            table {
                tr { th.n { "revision" } th { "labels hash" } th.n { "nights" } th.n { "series watched" } th.n { "alarm threshold" } }
                @for revision in &summary.revisions {
                    tr {
                        td.n { (revision.revision) }
                        td { code { (revision.labels_hash) } }
                        td.n { (revision.nights) }
                        td.n { (count(revision.series as u64)) }
                        td.n { @if let Some(t) = revision.threshold { (format!("{t:.0}")) } @else { "none watched" } }
                    }
                }
            }
            @if skipped > 0 {
                p.note { "The latest " (NIGHTS_LISTED) " nights; alarms.json lists the " (skipped) " before them." }
            }
            table {
                tr { th.n { "night" } th { "as of" } th { "directory" } th.n { "revision" } th { "role" } th.n { "alarms" } }
                @for (i, night) in summary.nights.iter().enumerate().skip(skipped) {
                    tr {
                        td.n { (i + 1) }
                        td { (night.as_of.to_string()) }
                        td { code { (night.night) } }
                        td.n { (night.revision) }
                        td { @if night.baseline { "baseline" } @else { "watched" } }
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

/// Every series, as many panels as `budget` allows, shared evenly among
/// the figures.
fn series_section(
    summary: &TrendSummary,
    series: &[Series],
    nights: &Nights,
    budget: usize,
) -> Result<Markup> {
    let figures = figures(summary, series)?;
    let figures_drawn = figures.len().min(budget);
    let per_figure = budget / figures_drawn.max(1);
    let drawn: usize = (figures.iter().take(figures_drawn))
        .map(|f| f.series.len().min(per_figure))
        .sum();
    let mut pair = None;
    let mut parts = Vec::with_capacity(figures_drawn);
    for figure in figures.iter().take(figures_drawn) {
        let heading = (pair != Some(figure.pair)).then(|| pair_name(figure.pair.0, figure.pair.1));
        pair = Some(figure.pair);
        let shown = &figure.series[..figure.series.len().min(per_figure)];
        let panels: Vec<Panel> = shown.iter().map(|s| s.panel(s.slice())).collect();
        let mut caption = format!(
            "{} of {}, one panel per grouping set",
            figure.metric,
            pair_name(figure.pair.0, figure.pair.1)
        );
        if shown.len() < figure.series.len() {
            caption += &format!(" (the first {} of {})", shown.len(), figure.series.len());
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
                "Each panel has its own scale."
            }
            @if drawn < series.len() {
                p.note { (count(drawn as u64)) " of the " (count(series.len() as u64)) " series are drawn, to keep the page small; trend.csv holds every one." }
            }
            @for (heading, figure) in parts {
                @if let Some(heading) = heading { h3 { (heading) } }
                (figure)
            }
        }
    })
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
                .filter(|s| s.pair() == pair && s.key[5] == *metric)
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
    /// alarmed on night 300; and its trend.csv in `dir`.
    fn history(dir: &Path) -> TrendSummary {
        let night = |i: usize| TrendNight {
            night: format!("nights/{i:03}"),
            as_of: Timestamp::from_seconds(1_780_000_000 + 86_400 * i as i64),
            revision: 1 + u32::from(i >= NIGHTS / 2),
            baseline: i % (NIGHTS / 2) < 7,
        };
        let nights: Vec<TrendNight> = (0..NIGHTS).map(night).collect();
        let task = |s: usize| format!("t{s}");
        let alarms = (0..ALARMS)
            .map(|s| Alarm {
                run: "r".into(),
                stage: "final".into(),
                task: task(s),
                language: "*".into(),
                split: "*".into(),
                metric: "recall@10".into(),
                night: nights[300].night.clone(),
                as_of: nights[300].as_of,
                paired: 100,
                baseline: 0.7,
                mean: 0.6,
                drop: 0.1,
                evidence: 1e5,
            })
            .collect();
        let mut csv = TREND.join(",") + "\n";
        for (i, n) in nights.iter().enumerate() {
            for s in 0..SERIES {
                let mean = 0.6 + 0.1 * ((i * 7 + s) % 13) as f64 / 13.0;
                let alarm = match (n.baseline, s < ALARMS && i == 300) {
                    (true, _) => "",
                    (false, true) => "true",
                    (false, false) => "false",
                };
                writeln!(
                    csv,
                    "{},{},{},r,final,{},*,*,recall@10,100,{mean},{},{},role,,,,{alarm}",
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
            nights: NIGHTS / 2,
            series: SERIES,
            threshold: Some(16_000.0),
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
        // alarmed series, and among every series (all 50 in the first 75).
        let triangles = html.matches("fill=\"#D55E00\" points=").count();
        assert_eq!(triangles, ALARMED_DRAWN + ALARMS);
        assert!(html.contains("<td class=\"n\">301</td>"));
        let more = ALARMS - ALARMS_LISTED;
        assert!(html.contains(&format!("{more} more in alarms.json")));
        let skipped = NIGHTS - NIGHTS_LISTED;
        assert!(html.contains(&format!("lists the {skipped} before them")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_trend_csv_unlike_its_alarms_json_is_refused() {
        let dir = scratch("unlike");
        let summary = history(&dir);
        let sources = Sources::listed(&dir, &summary.outputs);
        let csv = std::fs::read_to_string(dir.join(TREND_FILE)).unwrap();
        for (from, to, says) in [
            (
                "nights/000,",
                "nights/999,",
                "line 2: a night alarms.json does not list",
            ),
            (",0.6,", ",x,", "line 2: 'x' is not a number"),
            (
                ",role,,,,\n",
                ",role,,,,maybe\n",
                "'maybe' is not true or false",
            ),
            (
                "recall@10,100",
                "ndcg@10,100",
                "metric 'ndcg@10' is not one",
            ),
        ] {
            std::fs::write(dir.join(TREND_FILE), csv.replacen(from, to, 1)).unwrap();
            let Err(err) = page(&summary, &sources) else {
                panic!("{says}: drawn")
            };
            assert!(format!("{err:#}").contains(says), "{says}: {err:#}");
        }
        let doubled = csv.clone() + csv.lines().nth(1).unwrap() + "\n";
        std::fs::write(dir.join(TREND_FILE), doubled).unwrap();
        let Err(err) = page(&summary, &sources) else {
            panic!("a night twice: drawn")
        };
        assert!(
            format!("{err:#}").contains("a series' night twice"),
            "{err:#}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
