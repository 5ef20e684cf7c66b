//! The compare page: the gate's verdict first, rule by rule; then per
//! stage the overall changes, a forest plot of every slice's change with
//! its interval and Holm mark, wins / ties / losses, every query's change
//! sorted (help/hurt), the queries that lost most with the evidence each
//! lost, and both sides' latency and context size.
//!
//! It is drawn from the comparison's files alone (comparison.csv,
//! per_query_delta.csv, gate.json and comparison.json), so the page made
//! by `compare -o` and the one `rgrade report` draws again are the same.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use maud::{html, Markup};

use super::charts::{self, Change, ForestRow};
use super::page::{self, cell, count, ids, slice_name};
use super::sources::Sources;
use crate::base::failure::Setting;
use crate::base::schema::{
    ComparisonSummary, QueryLoss, SideFigures, COMPARISON, COMPARISON_FILE, GATE_FILE,
    PER_QUERY_DELTA_FILE, STAGE,
};
use crate::base::slices::{repeats_broader, ANY};
use crate::compare::rules::Gate;

/// Slices in a stage's forest plot at most, overall first.
const FOREST_ROWS: usize = 40;
/// Metrics in a forest plot at most: the first ones compared.
const FOREST_PANELS: usize = 6;
/// Ids listed per lost query.
const EVIDENCE_SHOWN: usize = 5;

/// The compare page of `summary`'s comparison, from its files in `sources`.
///
/// # Errors
/// An output file cannot be read or is not as rgrade writes it.
pub fn page(summary: &ComparisonSummary, sources: &Sources) -> Result<String> {
    let rows = read_comparison(sources.require(COMPARISON_FILE)?)?;
    let first = summary
        .settings
        .metrics
        .first()
        .cloned()
        .unwrap_or_default();
    let deltas = read_first_deltas(sources.require(PER_QUERY_DELTA_FILE)?, &first)?;
    let gate = sources.path(GATE_FILE).map(read_gate).transpose()?;
    let side = |run: &crate::base::schema::ComparedRun| {
        html! { b { @if run.run.is_empty() { "(no run name)" } @else { (run.run) } } " (" code { (run.path) } ")" }
    };
    let lede = html! {
        "Candidate " (side(&summary.candidate)) " against baseline " (side(&summary.baseline))
        ". Changes are candidate minus baseline; intervals are "
        (format!("{:.0}%", summary.settings.confidence * 100.0)) " intervals of the mean change (none under 10 queries, \
        or when every query changed alike); "
        "* marks a Holm-adjusted p below " (summary.settings.alpha) ", over the metrics compared, \
        those whose changes are equal query by query counted once; "
        "detectable is the smallest change a paired t-test of as many queries, as spread, "
        "detects with 80% power at that level."
    };
    let mut stages = Vec::new();
    for sides in &summary.stages {
        let stage_rows: Vec<&ComparisonRow> =
            rows.iter().filter(|r| r.stage == sides.stage).collect();
        let stage_deltas = deltas
            .iter()
            .find(|(stage, _)| *stage == sides.stage)
            .map_or(&[][..], |(_, d)| d.as_slice());
        stages.push(stage_section(
            summary,
            sides,
            &stage_rows,
            stage_deltas,
            &first,
        )?);
    }
    let body = html! {
        (verdict(gate.as_ref()))
        @for stage in stages { (stage) }
        (made_from(summary))
    };
    Ok(page::document("rgrade compare report", lede, body))
}

/// One row of comparison.csv.
struct ComparisonRow {
    stage: String,
    task: String,
    language: String,
    split: String,
    metric: String,
    queries: u64,
    baseline: f64,
    candidate: f64,
    change: Change,
    wins_ties_losses: [u64; 3],
    p_holm: f64,
    /// The smallest change detectable with 80% power.
    mde: Option<f64>,
    /// The queries needed to detect `--mde`.
    queries_for_mde: Option<u64>,
    /// The distinct hypotheses p_holm was adjusted over.
    holm_family: u64,
}

fn read_comparison(path: &Path) -> Result<Vec<ComparisonRow>> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let header = reader.headers()?.clone();
    anyhow::ensure!(
        header.iter().eq(COMPARISON),
        "{}: not the columns rgrade compare writes",
        path.display()
    );
    let mut rows = Vec::new();
    for (n, record) in reader.records().enumerate() {
        let record = record.with_context(|| format!("{}: cannot read", path.display()))?;
        let at = || format!("{}:{}", path.display(), n + 2);
        let number = |i: usize| -> Result<f64> {
            record[i]
                .parse()
                .with_context(|| format!("{}: '{}' is not a number", at(), &record[i]))
        };
        let whole = |i: usize| -> Result<u64> {
            record[i]
                .parse()
                .with_context(|| format!("{}: '{}' is not a count", at(), &record[i]))
        };
        let p_holm = number(14)?;
        let empty_or = |i: usize| (!record[i].is_empty()).then_some(i);
        let interval = match (empty_or(8), empty_or(9)) {
            (Some(low), Some(high)) => Some((number(low)?, number(high)?)),
            _ => None,
        };
        rows.push(ComparisonRow {
            stage: record[0].to_string(),
            task: record[1].to_string(),
            language: record[2].to_string(),
            split: record[15].to_string(),
            metric: record[3].to_string(),
            queries: whole(4)?,
            baseline: number(5)?,
            candidate: number(6)?,
            change: Change {
                delta: number(7)?,
                interval,
                significant: false,
            },
            wins_ties_losses: [whole(10)?, whole(11)?, whole(12)?],
            p_holm,
            mde: empty_or(16).map(number).transpose()?,
            queries_for_mde: empty_or(17).map(whole).transpose()?,
            holm_family: whole(18)?,
        });
    }
    Ok(rows)
}

/// Per stage, in file order, the first metric's change of every counted
/// query, sorted from the largest loss up.
fn read_first_deltas(path: &Path, first: &str) -> Result<Vec<(String, Vec<f64>)>> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let header = reader.headers()?.clone();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .with_context(|| format!("{}: no column {name}", path.display()))
    };
    let (stage_at, delta_at) = (column(STAGE)?, column(&format!("{first}_delta"))?);
    let mut stages: Vec<(String, Vec<f64>)> = Vec::new();
    let mut record = csv::ByteRecord::new();
    while reader.read_byte_record(&mut record)? {
        let cell = std::str::from_utf8(&record[delta_at]).unwrap_or("");
        if cell.is_empty() {
            continue;
        }
        let delta: f64 = cell
            .parse()
            .with_context(|| format!("{}: '{cell}' is not a number", path.display()))?;
        let stage = String::from_utf8_lossy(&record[stage_at]);
        match stages.iter_mut().find(|(s, _)| *s == stage) {
            Some((_, deltas)) => deltas.push(delta),
            None => stages.push((stage.into_owned(), vec![delta])),
        }
    }
    for (_, deltas) in &mut stages {
        deltas.sort_by(f64::total_cmp);
    }
    Ok(stages)
}

fn read_gate(path: &Path) -> Result<Gate> {
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    serde_json::from_reader(BufReader::new(file))
        .with_context(|| format!("{}: not a gate.json written by rgrade", path.display()))
}

fn verdict(gate: Option<&Gate>) -> Markup {
    let Some(gate) = gate else {
        return html! {
            section { h2 { "Verdict" } p { "No acceptance rules were given (" code { (Setting::Rules.name()) }
                "): the verdict is yours to draw from the changes below." } }
        };
    };
    let failed = gate.rules.iter().filter(|r| !r.passed).count();
    html! {
        section {
            h2 { "Verdict" }
            @if gate.passed {
                div.verdict.pass { "PASS: all " (gate.rules.len()) " acceptance rules hold." }
            } @else {
                div.verdict.fail { "FAIL: " (failed) " of " (gate.rules.len()) " acceptance rules failed." }
            }
            table {
                tr { th { "" } th { "rule" } th { "metric" } th.n { "value" } th.n { "limit" } th { "why" } }
                @for rule in &gate.rules {
                    tr {
                        td { @if rule.passed { span.mark.pass { "PASS" } } @else { span.mark.fail { "FAIL" } } }
                        td { (rule.name) } td { code { (rule.metric) } }
                        td.n { (format!("{:.4}", rule.value)) } td.n { (format!("{:.4}", rule.limit)) }
                        td { (rule.detail) }
                    }
                }
            }
        }
    }
}

impl ComparisonRow {
    /// The grouping set: split, task and language.
    fn slice(&self) -> (&str, &str, &str) {
        (&self.split, &self.task, &self.language)
    }
}

fn stage_section(
    summary: &ComparisonSummary,
    sides: &crate::base::schema::StageSides,
    rows: &[&ComparisonRow],
    deltas: &[f64],
    first: &str,
) -> Result<Markup> {
    let alpha = summary.settings.alpha;
    let metrics: Vec<&String> = summary
        .settings
        .metrics
        .iter()
        .take(FOREST_PANELS)
        .collect();
    let overall: Vec<&&ComparisonRow> = rows
        .iter()
        .filter(|r| r.slice() == (ANY, ANY, ANY))
        .collect();
    // Overall, then each split whole, then the other slices in file order
    // (tasks, languages, task × language, and those within each split).
    let mut slices: Vec<(&str, &str, &str)> = Vec::new();
    let split_whole = |r: &&&ComparisonRow| r.task == ANY && r.language == ANY;
    let other = |r: &&&ComparisonRow| !(r.task == ANY && r.language == ANY);
    for row in rows
        .iter()
        .filter(split_whole)
        .chain(rows.iter().filter(other))
    {
        if !slices.contains(&row.slice()) {
            slices.push(row.slice());
        }
    }
    // A slice of the same queries as a broader one (the task `(none)` of
    // labels that name no task) would be drawn twice: drawn once, and named.
    let queries: HashMap<(&str, &str, &str), u64> = rows
        .iter()
        .filter(|r| metrics.first() == Some(&&r.metric))
        .map(|r| (r.slice(), r.queries))
        .collect();
    let mut repeated = Vec::new();
    slices.retain(|&(split, task, language)| {
        let Some(&n) = queries.get(&(split, task, language)) else {
            return true;
        };
        let of =
            |[split, task, language]: [&str; 3]| queries.get(&(split, task, language)).copied();
        let repeats = repeats_broader([split, task, language], ANY, n, of);
        if repeats {
            repeated.push(slice_name(task, language, split));
        }
        !repeats
    });
    let hidden = slices.len().saturating_sub(FOREST_ROWS);
    slices.truncate(FOREST_ROWS);
    let forest_rows: Vec<ForestRow> = slices
        .iter()
        .map(|&slice| {
            let of_slice = |metric: &String| {
                rows.iter()
                    .find(|r| r.slice() == slice && &r.metric == metric)
            };
            let label = of_slice(metrics[0]).map_or_else(String::new, |r| {
                format!(
                    "{} ({})",
                    slice_name(&r.task, &r.language, &r.split),
                    r.queries
                )
            });
            ForestRow {
                label,
                changes: metrics
                    .iter()
                    .map(|m| {
                        of_slice(m).map(|r| Change {
                            significant: r.p_holm < alpha,
                            ..r.change
                        })
                    })
                    .collect(),
            }
        })
        .collect();
    let panels: Vec<String> = metrics.iter().map(|m| m.to_string()).collect();
    // The overall set alone is the table above again.
    let forest = (forest_rows.len() > 1 && !panels.is_empty())
        .then(|| charts::forest(&forest_rows, &panels))
        .transpose()?;
    let wtl: Vec<(String, [u64; 3])> = overall
        .iter()
        .map(|r| (r.metric.clone(), r.wins_ties_losses))
        .collect();
    let wtl = (!wtl.is_empty())
        .then(|| charts::wins_ties_losses(&wtl))
        .transpose()?;
    let help_hurt = (!deltas.is_empty())
        .then(|| charts::help_hurt(deltas, first))
        .transpose()?;
    let family = overall.first().map_or(0, |r| r.holm_family);
    let hurt = deltas.iter().filter(|&&d| d < 0.0).count() as u64;
    let helped = deltas.iter().filter(|&&d| d > 0.0).count() as u64;
    let losses: Vec<_> = summary
        .biggest_losses
        .iter()
        .filter(|l| l.stage == sides.stage)
        .collect();
    Ok(html! {
        section {
            h2 { "stage " (sides.stage) }
            p { (count(sides.queries)) " labeled queries paired; " (count(sides.counted))
                " counted in the means (the rest have no relevant document, or were not captured)." }
            table {
                tr { th { "metric" } th.n { "baseline" } th.n { "candidate" } th.n { "change" }
                     th.n { "95% interval" } th.n { "won" } th.n { "tied" } th.n { "lost" } th.n title="Holm-adjusted over this many distinct hypotheses: metrics whose changes are equal query by query count once" { "p (Holm, family of " (family) ")" } th { "" }
                     th.n title="The smallest change a paired t-test of these queries detects with 80% power" { "detectable" }
                     @if let Some(effect) = summary.settings.mde { th.n { "queries for ±" (effect) } } }
                @for r in &overall {
                    tr {
                        td { code { (r.metric) } }
                        (cell(Some(r.baseline))) (cell(Some(r.candidate)))
                        td.n { (format!("{:+.3}", r.change.delta)) }
                        td.n { @match r.change.interval {
                            Some((low, high)) => (format!("[{low:+.3}, {high:+.3}]")),
                            None => "none valid",
                        } }
                        td.n { (count(r.wins_ties_losses[0])) } td.n { (count(r.wins_ties_losses[1])) }
                        td.n { (count(r.wins_ties_losses[2])) }
                        td.n { (format!("{:.4}", r.p_holm)) }
                        td { @if r.p_holm < alpha {
                            @if r.change.delta < 0.0 { span.mark.fail { "* worse" } } @else { span.mark.pass { "* better" } }
                        } }
                        td.n { @if let Some(mde) = r.mde { (format!("±{mde:.3}")) } }
                        @if summary.settings.mde.is_some() {
                            td.n { @if let Some(n) = r.queries_for_mde { (count(n)) } }
                        }
                    }
                }
            }
            @if let Some(svg) = forest {
                h3 { "By slice" }
                (charts::figure(svg, &format!(
                    "Mean change per slice with its interval; filled and starred: Holm-adjusted p below {alpha}. \
                     Points left of the line are losses.{}{}",
                    if repeated.is_empty() { String::new() }
                    else { format!(" Drawn once, as the broader slice of the same queries: {}.", repeated.join(", ")) },
                    if hidden > 0 { format!(" The first {FOREST_ROWS} slices shown; {hidden} more in comparison.csv.") }
                    else { String::new() })))
            }
            @if let Some(svg) = wtl {
                h3 { "Won, tied, lost" }
                (charts::figure(svg, "Queries whose value rose, stayed (within 1e-12) or fell, per metric."))
            }
            @if let Some(svg) = help_hurt {
                h3 { "Every query's change" }
                (charts::figure(svg, &format!(
                    "Change in {first} of each of the {} counted queries, sorted: {} hurt, {} unchanged, {} helped{}.",
                    count(deltas.len() as u64), count(hurt),
                    count(deltas.len() as u64 - hurt - helped), count(helped),
                    if deltas.len() > charts::HELP_HURT_COLUMNS {
                        format!(" (drawn as {} evenly spaced quantiles)", charts::HELP_HURT_COLUMNS)
                    } else { String::new() })))
            }
            @if !losses.is_empty() {
                h3 { "Lost most" }
                p.note { "The queries whose " code { (first) } " fell most, with the relevant documents \
                    the baseline had in its top " (summary.evidence_cutoff) " and the candidate has not \
                    (lost), and the reverse (gained). A loss higher up the ranking loses no document \
                    from the top " (summary.evidence_cutoff) ": the row says within which top k it is." }
                table {
                    tr { th { "query" } th { "task" } th { "language" } th.n { "baseline" } th.n { "candidate" }
                         th { "lost" } th { "gained" } }
                    @for l in &losses {
                        tr { td.id { (l.query_id) } td { (l.task) } td { (l.language) }
                             (cell(Some(l.baseline))) (cell(Some(l.candidate)))
                             td { (lost(l, &summary.evidence_cutoff)) } td { (evidence(&l.gained)) } }
                    }
                }
            } @else {
                p.note { "No query lost on " code { (first) } "." }
            }
            (shift(sides))
        }
    })
}

fn shift(sides: &crate::base::schema::StageSides) -> Markup {
    let figure = |name: &'static str, of: fn(&SideFigures) -> Option<f64>| {
        (name, of(&sides.baseline), of(&sides.candidate))
    };
    let figures = [
        figure("latency p50 (ms)", |s| s.latency_p50_ms),
        figure("latency p95 (ms)", |s| s.latency_p95_ms),
        figure("latency p99 (ms)", |s| s.latency_p99_ms),
        figure("context tokens (mean)", |s| s.context_tokens_mean),
    ];
    let shown: Vec<_> = figures
        .iter()
        .filter(|f| f.1.is_some() || f.2.is_some())
        .collect();
    html! {
        @if !shown.is_empty() {
            h3 { "Latency and context" }
            table {
                tr { th { "" } th.n { "baseline" } th.n { "candidate" } th.n { "change" } }
                @for (name, base, cand) in shown {
                    tr { th { (name) } td.n { (opt(*base)) } td.n { (opt(*cand)) }
                         td.n { @if let (Some(b), Some(c)) = (base, cand) {
                             @if *b != 0.0 { (format!("{:+.1}%", (c - b) / b * 100.0)) }
                         } } }
                }
            }
        }
    }
}

/// The lost cell of a query that lost: the relevant ids that left the top
/// `evidence_cutoff`, or, when none did, where the loss is, so that a
/// reranker's loss above the evidence's depth (a document moved from the
/// top 1 to the top 3, say) does not read as no loss at all: within the
/// metric's own cutoff, and ranked lower when that is the evidence's.
fn lost(loss: &QueryLoss, evidence_cutoff: &str) -> Markup {
    if !loss.lost.is_empty() {
        return evidence(&loss.lost);
    }
    match loss.metric.rsplit_once('@').map(|(_, k)| k) {
        Some(k) if k != evidence_cutoff => html! {
            "none from the top " (evidence_cutoff) "; the loss is within the top " (k)
        },
        _ => html! { "none: ranked lower within the top " (evidence_cutoff) },
    }
}

/// A list of ids, or a dash for none.
fn evidence(list: &[String]) -> Markup {
    html! { @if list.is_empty() { "–" } @else { (ids(list, EVIDENCE_SHOWN)) } }
}

/// A figure to one decimal, or a dash.
fn opt(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_string(), |v| format!("{v:.1}"))
}

fn made_from(summary: &ComparisonSummary) -> Markup {
    let s = &summary.settings;
    html! {
        section {
            h2 { "Made from" }
            table {
                tr { th { "rgrade" } td { (summary.version) } }
                tr { th { "baseline" } td { code { (summary.baseline.path) } ", run " (summary.baseline.run) } }
                tr { th { "candidate" } td { code { (summary.candidate.path) } ", run " (summary.candidate.run) } }
                tr { th { "labels (xxh3-128)" } td { code { (summary.labels_hash) } } }
                tr { th { "metrics" } td { (s.metrics.join(", ")) } }
                tr { th { "permutations" } td { (s.permutations) } }
                tr { th { "seed" } td { (s.seed) } }
            }
        }
    }
}
