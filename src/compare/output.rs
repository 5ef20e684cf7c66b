//! What `compare` writes: comparison.csv, per_query_delta.csv, gate.json,
//! comparison.json and the stdout report. Nothing here computes a statistic; it lays out
//! what [`super::slices::compare_slices`] and the rules produced.

use std::cmp::Ordering;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Result;

use super::evidence::stage_sides;
use super::paired::{holm_family_text, Origin, Paired, PairedQuery, StagePairs};
use super::rules::Gate;
use super::slices::SliceComparison;
use crate::base::schema::{
    per_query_delta_columns, ComparisonSummary, COMPARISON, COMPARISON_FILE,
    COMPARISON_SUMMARY_FILE, GATE_FILE, PER_QUERY_DELTA_FILE, PER_QUERY_DELTA_LEADING, SPLIT,
};
use crate::base::slices::{ANY, NO_SLICE};
use crate::base::stats::TIE_EPSILON;
use crate::base::text::{first_few, plural};
use crate::output::cells::number_text;
use crate::output::staged::{self, stage, Staged, Staging};

/// Queries listed per slice under "lost most" on stdout.
const LOSERS_SHOWN: usize = 3;

fn create(dir: &Path, name: &str) -> Result<csv::Writer<BufWriter<Staging>>> {
    Ok(csv::Writer::from_writer(stage(dir, name)?))
}

/// comparison.csv: one row per (stage, grouping set, metric).
///
/// # Errors
/// The file cannot be written.
pub fn write_comparison(
    dir: &Path,
    paired: &Paired,
    comparisons: &[SliceComparison],
) -> Result<Staged> {
    let mut wtr = create(dir, COMPARISON_FILE)?;
    wtr.write_record(COMPARISON)?;
    let name = |slice: Option<u32>| slice.map_or(ANY, |s| paired.names.name(s));
    for slice in comparisons {
        for change in &slice.changes {
            wtr.write_record([
                paired.stages[slice.stage].stage.as_str(),
                name(slice.task),
                name(slice.language),
                &paired.metrics[change.metric],
                &change.queries.to_string(),
                &number_text(Some(change.baseline)),
                &number_text(Some(change.candidate)),
                &number_text(Some(change.delta)),
                &number_text(change.ci.ok().map(|ci| ci.0)),
                &number_text(change.ci.ok().map(|ci| ci.1)),
                &change.counts.wins.to_string(),
                &change.counts.ties.to_string(),
                &change.counts.losses.to_string(),
                &number_text(Some(change.p_value)),
                &number_text(Some(change.p_holm)),
                name(slice.split),
                &number_text(change.mde),
                &change
                    .queries_for_mde
                    .map_or(String::new(), |n| n.to_string()),
                &change.holm_family.to_string(),
            ])?;
        }
    }
    staged::finish_csv(wtr)
}

/// per_query_delta.csv: one row per (stage, query), worst loss in the
/// first metric first, then by query_id and stage; queries in no mean
/// (no relevant document) come last with empty cells.
///
/// # Errors
/// The file cannot be written.
pub fn write_per_query_delta(dir: &Path, paired: &Paired, metrics: &[usize]) -> Result<Staged> {
    let mut wtr = create(dir, PER_QUERY_DELTA_FILE)?;
    let mut header: Vec<String> = PER_QUERY_DELTA_LEADING.map(String::from).to_vec();
    for &m in metrics {
        header.extend(per_query_delta_columns(&paired.metrics[m]));
    }
    header.push(SPLIT.to_string());
    wtr.write_record(&header)?;

    let mut rows: Vec<(&StagePairs, usize)> = paired
        .stages
        .iter()
        .flat_map(|pairs| (0..pairs.queries.len()).map(move |i| (pairs, i)))
        .collect();
    let first = metrics[0];
    // Counted queries by delta, then the rest; ties by query_id and stage.
    let delta = |&(pairs, i): &(&StagePairs, usize)| {
        pairs.queries[i]
            .counted
            .then(|| pairs.candidate(first)[i] - pairs.baseline(first)[i])
    };
    rows.sort_by(|a, b| {
        let by_delta = match (delta(a), delta(b)) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        let (qa, qb) = (&a.0.queries[a.1].query_id, &b.0.queries[b.1].query_id);
        by_delta
            .then_with(|| qa.cmp(qb))
            .then_with(|| a.0.stage.cmp(&b.0.stage))
    });

    let mut record: Vec<String> = Vec::with_capacity(header.len());
    for (pairs, i) in rows {
        let q = &pairs.queries[i];
        record.clear();
        record.extend([
            pairs.stage.clone(),
            q.query_id.to_string(),
            paired.names.name(q.task).to_string(),
            paired.names.name(q.language).to_string(),
            q.required.to_string(),
        ]);
        for &m in metrics {
            let (base, cand) = (pairs.baseline(m)[i], pairs.candidate(m)[i]);
            let counted = |v: f64| number_text(q.counted.then_some(v));
            record.extend([counted(base), counted(cand), counted(cand - base)]);
        }
        record.push(paired.names.name(q.split).to_string());
        wtr.write_record(&record)?;
    }
    staged::finish_csv(wtr)
}

/// gate.json: the rules' verdicts.
///
/// # Errors
/// The file cannot be written.
pub fn write_gate(dir: &Path, gate: &Gate) -> Result<Staged> {
    let mut out = stage(dir, GATE_FILE)?;
    serde_json::to_writer_pretty(&mut out, gate)?;
    writeln!(out)?;
    staged::finish(out)
}

/// comparison.json: what was compared and every other file written.
///
/// # Errors
/// The file cannot be written.
pub fn write_comparison_summary(dir: &Path, summary: &ComparisonSummary) -> Result<Staged> {
    let mut out = stage(dir, COMPARISON_SUMMARY_FILE)?;
    serde_json::to_writer_pretty(&mut out, summary)?;
    writeln!(out)?;
    staged::finish(out)
}

/// Print, per stage, the overall table with significant changes marked,
/// the latency and context figures, and per task and language the queries
/// that lost most on the first metric; then the rules' verdicts.
///
/// # Errors
/// Writing to `out` fails (a closed pipe among others).
pub fn print_report(
    out: &mut impl Write,
    alpha: f64,
    paired: &Paired,
    comparisons: &[SliceComparison],
    gate: Option<&Gate>,
) -> io::Result<()> {
    let run = |origin: &Origin| {
        let name = if origin.run.is_empty() {
            "(unnamed)"
        } else {
            &origin.run
        };
        format!("{name} ({})", origin.source.shown(&origin.path))
    };
    writeln!(out, "baseline   {}", run(&paired.baseline))?;
    writeln!(out, "candidate  {}", run(&paired.candidate))?;
    for (stage, pairs) in paired.stages.iter().enumerate() {
        writeln!(out)?;
        let Some(overall) = comparisons
            .iter()
            .find(|c| c.stage == stage && c.is_overall())
        else {
            writeln!(
                out,
                "stage {}: no query with a relevant document",
                pairs.stage
            )?;
            continue;
        };
        let left_out = pairs.queries.len() - overall.changes[0].queries;
        writeln!(
            out,
            "stage {}: {} queries compared ({left_out} left out of the means: no relevant document or never captured)",
            pairs.stage, overall.changes[0].queries
        )?;
        print_changes(out, paired, overall, alpha)?;
        print_side_figures(out, pairs)?;
        print_losers(out, paired, stage, comparisons)?;
    }
    if let Some(gate) = gate {
        writeln!(out)?;
        print_rules(out, gate)?;
    }
    Ok(())
}

/// Each rule's PASS or FAIL with the numbers behind it, then the verdict.
///
/// # Errors
/// Writing to `out` fails.
pub fn print_rules(out: &mut impl Write, gate: &Gate) -> io::Result<()> {
    writeln!(out, "rules")?;
    for rule in &gate.rules {
        let verdict = if rule.passed { "PASS" } else { "FAIL" };
        writeln!(out, "  {verdict}  {}: {}", rule.name, rule.detail)?;
    }
    let rules = plural(gate.rules.len() as u64, "rule", "rules");
    match gate.rules.iter().filter(|r| !r.passed).count() {
        0 => writeln!(out, "gate: PASS ({rules})"),
        n => writeln!(out, "gate: FAIL ({n} of {rules} failed)"),
    }
}

fn print_changes(
    out: &mut impl Write,
    paired: &Paired,
    slice: &SliceComparison,
    alpha: f64,
) -> io::Result<()> {
    let width = slice
        .changes
        .iter()
        .map(|c| paired.metrics[c.metric].len())
        .max()
        .unwrap_or(0)
        .max(6);
    writeln!(
        out,
        "  {:<width$} {:>8} {:>9} {:>7}  {:>18}  {:>6} {:>6} {:>6} {:>7}",
        "metric", "baseline", "candidate", "delta", "95% CI", "wins", "ties", "losses", "p_holm"
    )?;
    for change in &slice.changes {
        let mark = if change.p_holm < alpha { " *" } else { "" };
        let interval = match change.ci {
            Ok((low, high)) => format!("[{low:>+7.3}, {high:>+7.3}]"),
            Err(reason) => reason.to_string(),
        };
        writeln!(
            out,
            "  {:<width$} {:>8.3} {:>9.3} {:>+7.3}  {interval:>18}  {:>6} {:>6} {:>6} {:>7.4}{mark}",
            paired.metrics[change.metric],
            change.baseline,
            change.candidate,
            change.delta,
            change.counts.wins,
            change.counts.ties,
            change.counts.losses,
            change.p_holm,
        )?;
    }
    writeln!(
        out,
        "  * Holm-adjusted p < {alpha}; {}",
        holm_family_text(&slice.changes, &paired.metrics)
    )
}

/// Latency percentiles and context size of both runs over every query of
/// the stage, as aggregates.csv computes them.
fn print_side_figures(out: &mut impl Write, pairs: &StagePairs) -> io::Result<()> {
    let sides = stage_sides(pairs);
    let (base, cand) = (&sides.baseline, &sides.candidate);
    let percentiles = [
        ("p50", base.latency_p50_ms, cand.latency_p50_ms),
        ("p95", base.latency_p95_ms, cand.latency_p95_ms),
        ("p99", base.latency_p99_ms, cand.latency_p99_ms),
    ];
    let figures: Vec<String> = percentiles
        .iter()
        .filter_map(|&(name, b, c)| Some(format!("{name} {:.1} -> {:.1}", b?, c?)))
        .collect();
    if !figures.is_empty() {
        writeln!(out, "  latency ms: {}", figures.join(", "))?;
    }
    if let (Some(b), Some(c)) = (base.context_tokens_mean, cand.context_tokens_mean) {
        writeln!(out, "  context tokens (mean): {b:.1} -> {c:.1}")?;
    }
    Ok(())
}

/// Per task, per language and per split, the queries whose first metric dropped most:
/// an average can hide a few large losses. A `(none)` task or language
/// that every query of the stage has (labels without tasks, say) would
/// list the overall set's losers again: it is left out, and when that
/// leaves no slice, the overall set is listed once, as `all`.
fn print_losers(
    out: &mut impl Write,
    paired: &Paired,
    stage: usize,
    comparisons: &[SliceComparison],
) -> io::Result<()> {
    let pairs = &paired.stages[stage];
    let Some(metric) = comparisons.first().map(|c| c.changes[0].metric) else {
        return Ok(());
    };
    let (base, cand) = (pairs.baseline(metric), pairs.candidate(metric));
    let delta = |i: usize| cand[i] - base[i];
    let metric_name = &paired.metrics[metric];
    let of_stage = || comparisons.iter().filter(|c| c.stage == stage);
    let mut slices: Vec<&SliceComparison> = of_stage()
        .filter(|c| c.split.is_none() && c.task.is_some() != c.language.is_some())
        .filter(|c| !repeats_overall(paired, pairs, c))
        .collect();
    slices.extend(
        of_stage().filter(|c| c.split.is_some() && c.task.is_none() && c.language.is_none()),
    );
    if slices.is_empty() {
        slices.extend(of_stage().filter(|c| c.is_overall()));
    }
    let mut any = false;
    for slice in slices {
        let label = match (slice.split, slice.task, slice.language) {
            (Some(s), None, None) => format!("split={}", paired.names.name(s)),
            (_, Some(t), _) => format!("task={}", paired.names.name(t)),
            (_, None, Some(l)) => format!("language={}", paired.names.name(l)),
            (_, None, None) => "all".to_string(),
        };
        let mut losers: Vec<usize> = (0..pairs.queries.len())
            .filter(|&i| {
                let q = &pairs.queries[i];
                q.counted
                    && slice.split.is_none_or(|s| q.split == s)
                    && slice.task.is_none_or(|t| q.task == t)
                    && slice.language.is_none_or(|l| q.language == l)
                    && delta(i) < -TIE_EPSILON
            })
            .collect();
        if losers.is_empty() {
            continue;
        }
        losers.sort_by(|&a, &b| {
            delta(a)
                .total_cmp(&delta(b))
                .then_with(|| pairs.queries[a].query_id.cmp(&pairs.queries[b].query_id))
        });
        if !any {
            writeln!(out, "  lost most on {metric_name}:")?;
            any = true;
        }
        let shown = losers.iter().map(|&i| {
            let id = &pairs.queries[i].query_id;
            format!("{id} {:.3} -> {:.3}", base[i], cand[i])
        });
        writeln!(out, "    {label}: {}", first_few(shown, LOSERS_SHOWN))?;
    }
    if !any {
        writeln!(out, "  no query lost on {metric_name}")?;
    }
    Ok(())
}

/// Whether `slice` is the `(none)` task or language of every query of the
/// stage, and so the overall set under another name.
fn repeats_overall(paired: &Paired, pairs: &StagePairs, slice: &SliceComparison) -> bool {
    let (value, of): (u32, fn(&PairedQuery) -> u32) = match (slice.task, slice.language) {
        (Some(task), None) => (task, |q| q.task),
        (None, Some(language)) => (language, |q| q.language),
        _ => return false,
    };
    paired.names.name(value) == NO_SLICE && pairs.queries.iter().all(|q| of(q) == value)
}
