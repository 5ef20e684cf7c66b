//! The table on stdout: means per (run, stage) and slice, rounded to 3
//! decimals, the evidence lost between stages, and the wrong answers by
//! their evidence.
//!
//! A terminal wraps a line wider than itself, which scatters a table's
//! columns over several screen lines. So the means table is laid out for a
//! width: slices as rows when every column fits, else turned, metrics as
//! rows and slices as columns, in as many column groups as the width
//! needs.

use std::io::{self, Write};

use crate::base::metrics::Metric;
use crate::base::schema::{judged_columns, Counts, Status};
use crate::base::slices::repeats_broader;
use crate::base::text::plural;
use crate::grade::aggregate::{Aggregate, PairAggregates};
use crate::grade::diagnostics::stage_loss::StageLoss;
use crate::grade::graded::Graded;
use crate::grade::score::GradeSettings;
use crate::labels::LabelIndex;
use crate::logs::record::DEFAULT_STAGE;

/// The status count columns, after the slice.
const COUNT_COLUMNS: [&str; 5] = ["queries", "ok", "missing", "invalid", "no_answer"];
/// The narrowest a count column is, so counts up to millions line up.
const COUNT_WIDTH: usize = 7;
/// The narrowest a metric column is: a mean, `0.000`.
const MEAN_WIDTH: usize = 5;

/// Print the table of means per (run, stage), overall then per task, per
/// language and per split, rounded to 3 decimals, in lines of at most `width`
/// characters where the names allow.
///
/// # Errors
/// Writing to `out` fails (a closed pipe among others).
pub fn print_table(
    out: &mut impl Write,
    labels: &LabelIndex,
    settings: &GradeSettings,
    pairs: &[PairAggregates],
    width: usize,
) -> io::Result<()> {
    // The metrics, then the labels' coverage at each cutoff.
    let mut metrics = settings.metric_columns();
    metrics.extend(judged_columns(settings.judged_cutoffs()));
    // Turned, each default metric reads down its cutoffs; measures asked
    // for by name keep the order asked.
    let (n_ks, per_k) = match &settings.measures {
        Some(measures) => (1, measures.len()),
        None => (settings.ks.len(), Metric::ALL.len()),
    };
    for PairAggregates {
        run,
        stage,
        aggregates,
        log_slices,
    } in pairs
    {
        let run = if run.is_empty() { "(unnamed)" } else { run };
        writeln!(out, "run {run}  stage {stage}")?;
        // Task × language rows, and the slices within each split, stay in
        // aggregates.csv: on a terminal they would bury the overall,
        // per-task, per-language and per-split rows.
        let queries_of = |set: [Option<u32>; 3]| {
            let found = aggregates
                .iter()
                .find(|a| [a.split, a.task, a.language] == set);
            found.map(|a| a.queries)
        };
        let mut repeats = Vec::new();
        let named = aggregates.iter().filter_map(|agg| {
            let set = [agg.split, agg.task, agg.language];
            let name = match (agg.split, agg.task, agg.language) {
                (None, None, None) => "all".to_string(),
                (None, Some(t), None) => format!("task={}", labels.slice_name(t)),
                (None, None, Some(l)) => format!("language={}", labels.slice_name(l)),
                (Some(s), None, None) => format!("split={}", labels.slice_name(s)),
                _ => return None,
            };
            if repeats_broader(set, None, agg.queries, queries_of) {
                repeats.push(name);
                return None;
            }
            Some((name, agg))
        });
        let by_log_field = log_slices.iter().map(|slice| {
            let field = &settings.slice_by[slice.field];
            (format!("{field}={}", slice.value), &slice.aggregate)
        });
        let table = SliceTable::new(&metrics, named.chain(by_log_field));
        if table.width() <= width {
            table.print(out)?;
        } else {
            table.print_turned(out, n_ks, per_k, width)?;
        }
        if !repeats.is_empty() {
            writeln!(out, "  the same queries as all: {}", repeats.join(", "))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// One (run, stage)'s means as text, slices as rows.
struct SliceTable {
    /// "slice", the count columns, the metric columns, then judged@k.
    header: Vec<String>,
    /// Per slice: its name, its counts, then its means (`-` where none).
    rows: Vec<Vec<String>>,
    /// Each column's width: its widest cell, and no less than its minimum.
    widths: Vec<usize>,
}

impl SliceTable {
    /// The table of `named` sets, each a row under its name.
    fn new<'a>(metrics: &[String], named: impl Iterator<Item = (String, &'a Aggregate)>) -> Self {
        let header: Vec<String> = std::iter::once("slice")
            .chain(COUNT_COLUMNS)
            .map(String::from)
            .chain(metrics.iter().cloned())
            .collect();
        let rows: Vec<Vec<String>> = named
            .map(|(name, agg)| {
                let counts = [
                    Status::Ok,
                    Status::Missing,
                    Status::Invalid,
                    Status::NoAnswer,
                ]
                .map(|status| agg.status_count(status));
                let means = agg
                    .means()
                    .zip(agg.judged_means())
                    .map(|(mut means, judged)| {
                        means.extend(judged);
                        means
                    });
                let means = (0..metrics.len()).map(|i| match &means {
                    Some(m) => format!("{:.3}", m[i]),
                    None => "-".to_string(),
                });
                let mut row = vec![name, agg.queries.to_string()];
                row.extend(counts.iter().map(u64::to_string));
                row.extend(means);
                row
            })
            .collect();
        let minimum = |column: usize| match column {
            0 => 0,
            1..=5 => COUNT_WIDTH,
            _ => MEAN_WIDTH,
        };
        let widths = (0..header.len())
            .map(|column| {
                let cells = rows.iter().map(|row| row[column].len());
                cells
                    .chain([header[column].len(), minimum(column)])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        SliceTable {
            header,
            rows,
            widths,
        }
    }

    /// The length of a line, slices as rows.
    fn width(&self) -> usize {
        2 + self.widths[0] + self.widths[1..].iter().map(|w| 1 + w).sum::<usize>()
    }

    /// Slices as rows: the slice name left-aligned, every number
    /// right-aligned under its column's name.
    fn print(&self, out: &mut impl Write) -> io::Result<()> {
        for line in std::iter::once(&self.header).chain(&self.rows) {
            write!(out, "  {:<w$}", line[0], w = self.widths[0])?;
            for (cell, w) in line[1..].iter().zip(&self.widths[1..]) {
                write!(out, " {cell:>w$}")?;
            }
            writeln!(out)?;
        }
        Ok(())
    }

    /// Turned: a row per count and metric (each of the `per_k` metrics at
    /// each of the `n_ks` cutoffs in turn, so its rise with k reads down
    /// the column; judged@k last) and a column per slice, the slices in as
    /// many groups as `width` needs, each group under its own header.
    fn print_turned(
        &self,
        out: &mut impl Write,
        n_ks: usize,
        per_k: usize,
        width: usize,
    ) -> io::Result<()> {
        let first_metric = 1 + COUNT_COLUMNS.len();
        let metrics = (0..per_k).flat_map(|m| (0..n_ks).map(move |k| first_metric + k * per_k + m));
        let judged = first_metric + n_ks * per_k..self.header.len();
        // Each line shows one column of the slices-as-rows table: the
        // slice names first, as the header.
        let lines: Vec<usize> = (0..first_metric).chain(metrics).chain(judged).collect();
        let label_width = lines.iter().map(|&c| self.header[c].len()).max();
        let label_width = label_width.unwrap_or(0);
        let slice_width = |row: &Vec<String>| lines.iter().map(|&c| row[c].len()).max();
        let widths: Vec<usize> = self
            .rows
            .iter()
            .map(|row| slice_width(row).unwrap_or(0))
            .collect();
        let mut first = 0;
        while first < self.rows.len() {
            // As many slices as fit, and always one.
            let mut end = first + 1;
            let mut used = 2 + label_width + 1 + widths[first];
            while end < self.rows.len() && used + 1 + widths[end] <= width {
                used += 1 + widths[end];
                end += 1;
            }
            if first > 0 {
                writeln!(out)?;
            }
            for &column in &lines {
                write!(out, "  {:<label_width$}", self.header[column])?;
                for (row, w) in self.rows[first..end].iter().zip(&widths[first..end]) {
                    write!(out, " {:>w$}", row[column])?;
                }
                writeln!(out)?;
            }
            first = end;
        }
        Ok(())
    }
}

/// The answers of the final stage (or of every stage when none is named
/// `final`) split by their evidence: of the wrong answers, how many lacked
/// evidence (retrieval failures) and how many had it all (generation
/// failures), and the right answers that lacked some.
///
/// # Errors
/// Writing to `out` fails (a closed pipe among others).
pub fn print_attribution(out: &mut impl Write, pairs: &[PairAggregates]) -> io::Result<()> {
    let answered = |pair: &&PairAggregates| {
        pair.aggregates
            .first()
            .filter(|all| all.attribution.answered > 0)
            .is_some()
    };
    let finals: Vec<&PairAggregates> = pairs
        .iter()
        .filter(answered)
        .filter(|pair| &*pair.stage == DEFAULT_STAGE)
        .collect();
    let shown = if finals.is_empty() {
        pairs.iter().filter(answered).collect()
    } else {
        finals
    };
    writeln!(
        out,
        "wrong answers by their evidence (at the deepest cutoff)"
    )?;
    for pair in shown {
        let a = pair.aggregates[0].attribution;
        let wrong = a.answered - a.answer_ok;
        let share = |n: u64, of: u64| {
            if of == 0 {
                "-".to_string()
            } else {
                format!("{:.0}%", 100.0 * n as f64 / of as f64)
            }
        };
        let run = if pair.run.is_empty() {
            "(unnamed)"
        } else {
            &pair.run
        };
        writeln!(
            out,
            "  run {run}  stage {}: {} answered, {} ok, {wrong} wrong",
            pair.stage, a.answered, a.answer_ok
        )?;
        writeln!(
            out,
            "    retrieval: {} wrong without all their evidence ({} of wrong)",
            a.wrong_missing_evidence,
            share(a.wrong_missing_evidence, wrong)
        )?;
        writeln!(
            out,
            "    generation: {} wrong with all their evidence ({} of wrong)",
            a.wrong_with_evidence,
            share(a.wrong_with_evidence, wrong)
        )?;
        writeln!(
            out,
            "    {} ok without all their evidence",
            a.ok_missing_evidence
        )?;
    }
    writeln!(out)
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

/// Every (run, stage)'s overall means calibrated against the human key
/// `human`, beside the judge-only means; the slices' are in aggregates.csv.
fn print_calibration(
    out: &mut impl Write,
    human: &LabelIndex,
    settings: &GradeSettings,
    pairs: &[PairAggregates],
) -> io::Result<()> {
    writeln!(
        out,
        "means calibrated against {}:",
        human.source.given_path().display()
    )?;
    let metrics = settings.metric_columns();
    for PairAggregates {
        run,
        stage,
        aggregates,
        ..
    } in pairs
    {
        let Some(all) = aggregates.first() else {
            continue;
        };
        let n = all.human_queries().unwrap_or(0);
        write!(out, "  run {run}  stage {stage}: ")?;
        let (Some(means), Some(_)) = (all.means(), all.calibrated().next().flatten()) else {
            writeln!(
                out,
                "{} human-graded, too few to calibrate",
                plural(n, "query", "queries")
            )?;
            continue;
        };
        writeln!(out, "{} human-graded", plural(n, "query", "queries"))?;
        writeln!(
            out,
            "    {:<14} calibrated [95% interval]  judge alone  judge's weight",
            ""
        )?;
        for ((metric, calibrated), judge) in metrics.iter().zip(all.calibrated()).zip(means) {
            if let Some(c) = calibrated {
                writeln!(
                    out,
                    "    {metric:<14} {:.3} [{:.3}, {:.3}]      {judge:.3}        {:.2}",
                    c.mean, c.low, c.high, c.lambda
                )?;
            }
        }
    }
    writeln!(out)
}

/// The stdout table is laid out here, with the other outputs.
impl Graded {
    /// Write the stdout table: means per (run, stage) and slice, turned
    /// when wider than `width` characters, the evidence lost between
    /// stages, how wrong answers split by their evidence, and a note of
    /// rejects and leaks.
    ///
    /// # Errors
    /// Writing to `out` fails (a closed pipe among others).
    pub fn print_table(&self, out: &mut impl Write, width: usize) -> io::Result<()> {
        print_table(out, &self.labels, &self.settings, &self.pairs, width)?;
        if let Some(loss) = &self.stage_loss {
            print_stage_loss(out, &self.labels, loss)?;
        }
        if self.has_answers() {
            print_attribution(out, &self.pairs)?;
        }
        if let Some(human) = &self.calibrated_against {
            print_calibration(out, &human.key, &self.settings, &self.pairs)?;
        }
        print_notes(out, &self.counts)
    }
}
