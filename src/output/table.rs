//! The table on stdout: means per (run, stage) and slice, rounded to 3
//! decimals, and the evidence lost between stages.

use std::io::{self, Write};

use super::plural;
use super::schema::{metric_columns, Counts, Status};
use crate::grade::aggregate::{Aggregate, PairAggregates};
use crate::grade::group::GradeSettings;
use crate::grade::stage_loss::StageLoss;
use crate::labels::LabelIndex;

/// Print the table of means per (run, stage), overall then per task and
/// per language, rounded to 3 decimals.
///
/// # Errors
/// Writing to `out` fails (a closed pipe among others).
pub fn print_table(
    out: &mut impl Write,
    labels: &LabelIndex,
    settings: &GradeSettings,
    pairs: &[PairAggregates],
) -> io::Result<()> {
    let metrics = metric_columns(&settings.ks);
    for PairAggregates {
        run,
        stage,
        aggregates,
    } in pairs
    {
        let run = if run.is_empty() { "(unnamed)" } else { run };
        writeln!(out, "run {run}  stage {stage}")?;
        // Task × language rows stay in aggregates.csv: on a terminal they
        // would bury the overall, per-task and per-language rows.
        let (slices, shown): (Vec<String>, Vec<&Aggregate>) = aggregates
            .iter()
            .filter_map(|agg| {
                let name = match (agg.task, agg.language) {
                    (None, None) => "all".to_string(),
                    (Some(t), None) => format!("task={}", labels.slice_name(t)),
                    (None, Some(l)) => format!("language={}", labels.slice_name(l)),
                    (Some(_), Some(_)) => return None,
                };
                Some((name, agg))
            })
            .unzip();
        let width = slices.iter().map(String::len).max().unwrap_or(0).max(5);
        write!(
            out,
            "  {:<width$} {:>7} {:>7} {:>7} {:>7} {:>9}",
            "slice", "queries", "ok", "missing", "invalid", "no_answer"
        )?;
        for name in &metrics {
            write!(
                out,
                " {:>name_width$}",
                name,
                name_width = name.len().max(5)
            )?;
        }
        writeln!(out)?;
        for (slice, agg) in slices.iter().zip(shown) {
            write!(
                out,
                "  {slice:<width$} {:>7} {:>7} {:>7} {:>7} {:>9}",
                agg.queries,
                agg.status_count(Status::Ok),
                agg.status_count(Status::Missing),
                agg.status_count(Status::Invalid),
                agg.status_count(Status::NoAnswer)
            )?;
            let means = agg.means();
            for (i, name) in metrics.iter().enumerate() {
                let w = name.len().max(5);
                match &means {
                    Some(m) => write!(out, " {:>w$.3}", m[i])?,
                    None => write!(out, " {:>w$}", "-")?,
                }
            }
            writeln!(out)?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The "evidence lost between stages" table: per run and transition, the
/// totals overall and per task.
///
/// # Errors
/// Writing to `out` fails (a closed pipe among others).
pub fn print_stage_loss(
    out: &mut impl Write,
    labels: &LabelIndex,
    loss: &StageLoss,
) -> io::Result<()> {
    if loss.transitions.is_empty() {
        return writeln!(
            out,
            "evidence lost between stages: no run graded two stages of --stage-order"
        );
    }
    writeln!(
        out,
        "evidence lost between stages (relevant documents found, then dropped)"
    )?;
    writeln!(
        out,
        "  {:<16} {:<24} {:<20} {:>14} {:>8} {:>9}",
        "run", "from -> to", "slice", "relevant_found", "lost", "lost_rate"
    )?;
    for step in &loss.transitions {
        let run = if step.run.is_empty() {
            "(unnamed)"
        } else {
            &step.run
        };
        let transition = format!("{} -> {}", step.from, step.to);
        for set in step.totals.iter().filter(|s| s.language.is_none()) {
            let slice = match set.task {
                None => "all".to_string(),
                Some(task) => format!("task={}", labels.slice_name(task)),
            };
            let rate = set
                .lost_rate()
                .map_or_else(|| "-".to_string(), |r| format!("{r:.3}"));
            writeln!(
                out,
                "  {run:<16} {transition:<24} {slice:<20} {:>14} {:>8} {rate:>9}",
                set.relevant_found, set.lost
            )?;
        }
    }
    writeln!(out)
}

/// A line on the rejects and unlabeled events, and one on the leaks, when
/// there are any.
///
/// # Errors
/// Writing to `out` fails (a closed pipe among others).
pub fn print_notes(out: &mut impl Write, counts: &Counts) -> io::Result<()> {
    if counts.rejected > 0 || counts.unlabeled_events > 0 {
        writeln!(
            out,
            "note: {} rejected, {} unlabeled events",
            counts.rejected, counts.unlabeled_events
        )?;
    }
    if counts.leaked_results > 0 {
        writeln!(
            out,
            "leaks: {} outside the user's allowed collections (summary.json lists the first)",
            plural(counts.leaked_results, "result", "results")
        )?;
    }
    Ok(())
}
