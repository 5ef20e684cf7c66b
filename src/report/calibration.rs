//! The grade page's calibration section (`grade --calibrate`): for each
//! (run, stage), overall and per task and language, the deepest cutoff's
//! means under the judge's labels beside their estimates calibrated
//! against the human key, with the intervals and the human-graded queries
//! behind them, all read from aggregates.csv.

use std::path::Path;

use anyhow::Result;
use maud::{html, Markup};

use super::charts;
use super::page::{count, pair_name};
use super::sources::{number, read_aggregates_csv};
use crate::base::metrics::Cutoff;
use crate::base::schema::{
    Summary, CALIBRATED_WEIGHT, CALIBRATION_QUERIES, LANGUAGE, RUN, SPLIT, STAGE, TASK,
};
use crate::base::slices::ANY;

/// One grouping set's row: its name, its human-graded queries, and per
/// metric the judge-only mean and the calibrated one with its interval and
/// the judge's weight.
struct SetRow {
    pair: (String, String),
    slice: String,
    human_queries: String,
    metrics: Vec<(Option<f64>, Option<[f64; 4]>)>,
}

/// The section, or nothing when the grading `summary` describes was not
/// calibrated.
///
/// # Errors
/// aggregates.csv cannot be read or lacks the calibration columns.
pub fn section(
    summary: &Summary,
    aggregates: &Path,
    names: &[String],
    deepest: Cutoff,
) -> Result<Markup> {
    let Some(calibration) = &summary.calibration else {
        return Ok(html! {});
    };
    let rows = read(aggregates, names, &summary.settings.slice_by)?;
    let mut pairs: Vec<&(String, String)> = rows.iter().map(|r| &r.pair).collect();
    pairs.dedup();
    Ok(html! {
        section id="calibration" {
            h2 { "Calibrated against human labels" }
            p { "The means above are graded under " code { (summary.labels.path) } "; the human key "
                code { (calibration.labels.path) } " grades " (count(calibration.shared_queries))
                " of their queries too. Each calibrated mean corrects the judge-only mean by how far the \
                 judge and the humans part on those queries (prediction-powered inference), with a 95% \
                 interval, and says how far it trusted the judge: its weight, from 0 (the humans' mean \
                 alone) to 1. The interval holds when the human-graded queries are a random sample of \
                 the graded ones. A set with fewer than " (calibration.min_queries) " human-graded \
                 queries gets none: too few to calibrate." }
            @for (run, stage) in pairs {
                h3 { (pair_name(run, stage)) }
                table {
                    tr {
                        th { "slice" } th.n { "human-graded" }
                        @for name in names { th.n { (name) } }
                    }
                    @for row in rows.iter().filter(|r| (&r.pair.0, &r.pair.1) == (run, stage)) {
                        tr {
                            td { (row.slice) } td.n { (row.human_queries) }
                            @for (judge, calibrated) in &row.metrics {
                                td.n {
                                    @match calibrated {
                                        Some([mean, low, high, weight]) => {
                                            b { (charts::three(*mean)) } br;
                                            span.interval { "[" (charts::three(*low)) ", "
                                                (charts::three(*high)) "]" } br;
                                            span.note { "weight " (format!("{weight:.2}")) }
                                        }
                                        None => { "too few to calibrate" }
                                    }
                                    br;
                                    span.note { "judge " @match judge {
                                        Some(v) => { (charts::three(*v)) }
                                        None => { "–" }
                                    } }
                                }
                            }
                        }
                    }
                }
            }
            p.note { "Bold: the calibrated mean [95% interval] at k = " (deepest) ", the weight the \
                judge earned in it; below it, the mean under the judge's labels alone. Task × language sets, splits and the other cutoffs are \
                in aggregates.csv." }
        }
    })
}

/// aggregates.csv's overall, per-task and per-language rows of every
/// split-wide set, in file order.
fn read(path: &Path, names: &[String], slice_by: &[String]) -> Result<Vec<SetRow>> {
    // Per metric: its mean, calibrated mean, the interval's ends and the
    // judge's weight.
    let metric_columns: Vec<String> = (names.iter())
        .flat_map(|m| {
            [
                "",
                "_calibrated",
                "_calibrated_low",
                "_calibrated_high",
                CALIBRATED_WEIGHT,
            ]
            .map(|end| format!("{m}{end}"))
        })
        .collect();
    let columns: Vec<&str> = [RUN, STAGE, TASK, LANGUAGE, SPLIT, CALIBRATION_QUERIES]
        .into_iter()
        .chain(metric_columns.iter().map(String::as_str))
        .collect();
    let mut rows = Vec::new();
    // The sets of log fields are in aggregates.csv, not drawn here.
    for row in read_aggregates_csv(path, &columns, slice_by)?.0 {
        let (set, cells) = row.split_at(6);
        let slice = match (set[2].as_str(), set[3].as_str()) {
            (ANY, ANY) => "all".to_string(),
            (task, ANY) => format!("task={task}"),
            (ANY, language) => format!("language={language}"),
            _ => continue,
        };
        if set[4] != ANY {
            continue;
        }
        let mut metrics = Vec::new();
        for metric in cells.chunks(5) {
            let [mean, calibrated, low, high, weight] =
                [0, 1, 2, 3, 4].map(|i| number(&metric[i], path));
            let calibrated = match (calibrated?, low?, high?, weight?) {
                (Some(c), Some(l), Some(h), Some(w)) => Some([c, l, h, w]),
                _ => None,
            };
            metrics.push((mean?, calibrated));
        }
        rows.push(SetRow {
            pair: (set[0].clone(), set[1].clone()),
            slice,
            human_queries: set[5].clone(),
            metrics,
        });
    }
    Ok(rows)
}
