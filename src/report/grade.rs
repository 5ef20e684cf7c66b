//! The grade page: for every (run, stage) its headline means with their
//! intervals and label coverage, the slices (splits among them), the
//! cutoffs, the first relevant ranks, latency and context size and the
//! worst queries (after the overview, the means calibrated against a human
//! key, when they were: [`super::calibration`]); then the wrong answers by their evidence, the
//! diagnostics (stage loss, stale labels, leaks, rejects) and what the
//! grading was made from.
//!
//! Everything but per_query.csv's rows (see [`super::collect`]) is read
//! from the other output files and summary.json, so a page drawn while
//! grading and one drawn again by `rgrade report` are the same bytes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{Context, Result};
use maud::{html, Markup};

use super::calibration;
use super::charts::{self, BarRow, Mark, Series};
use super::collect::{PairFigures, SliceList, DECADES, RANK_BINS, SLICES_SHOWN};
use super::page::{self, cell, count, ids, pair_name};
use super::sources::{number, read_aggregates_csv, read_csv, Sources};
use crate::base::intervals::{MeanInterval, Method, BOOTSTRAP_UP_TO};
use crate::base::metrics::{Cutoff, Metric};
use crate::base::schema::{
    Headline, RejectLine, Summary, AGGREGATES_FILE, AGGREGATES_LEADING, AGGREGATES_TRAILING,
    ATTRIBUTION, ATTRIBUTION_FILE, LANGUAGE, REJECTS_FILE, REVIEW_QUEUE_FILE, RUN, STAGE,
    STAGE_LOSS, STAGE_LOSS_FILE, TASK,
};
use crate::base::slices::ANY;

/// (run, stage) pairs drawn in full; the rest are in the overview only.
const PAIRS_DRAWN: usize = 12;
/// Rows of the overview table and chart.
const OVERVIEW_ROWS: usize = 40;
/// Missed ids listed per worst query.
const MISSED_SHOWN: usize = 5;
/// Inputs listed under "Made from".
const INPUTS_SHOWN: usize = 30;

/// The grade page for `summary`'s grading, from its per-query `figures`
/// and the other output files in `sources`.
///
/// # Errors
/// An output file cannot be read or is not as rgrade writes it.
pub fn page(summary: &Summary, figures: &[PairFigures], sources: &Sources) -> Result<String> {
    let ks = &summary.settings.k;
    let deepest = ks.iter().max().copied().unwrap_or(Cutoff::At(10));
    let asked = summary.settings.measures.as_deref();
    let headline = Headline::of(ks, asked);
    // The default metrics are drawn across the cutoffs; measures asked
    // for by name each have their own cutoff.
    let across: &[Cutoff] = if asked.is_some() { &[] } else { ks };
    let facts = Facts::read(summary, sources, &headline, deepest)?;
    let lede = html! {
        "Labels " code { (summary.labels.path) } " (" (count(summary.labels.queries as u64))
        " labeled queries), " (summary.inputs.len()) " log input"
        @if summary.inputs.len() != 1 { "s" }
        ", cutoffs k = " (ks.iter().map(Cutoff::to_string).collect::<Vec<_>>().join(", "))
        ". Means are macro averages over the queries that count; intervals are 95%."
    };
    let body = html! {
        (overview(summary, figures, &facts, &headline)?)
        (log_slices(&facts, &headline, deepest))
        (calibration::section(summary, sources.require(AGGREGATES_FILE)?, &headline.names, deepest)?)
        @for (i, pair) in figures.iter().take(PAIRS_DRAWN).enumerate() {
            (pair_section(i, pair, &facts, &headline, across, deepest)?)
        }
        @if figures.len() > PAIRS_DRAWN {
            p.note { (figures.len() - PAIRS_DRAWN) " more (run, stage) pairs are in the overview "
                "above and in per_query.csv and aggregates.csv; grade one run to see it drawn in full." }
        }
        (answers(&facts)?)
        (stage_loss(&facts)?)
        (stale_labels(summary))
        (leaks(summary, &facts))
        (rejects(summary, &facts))
        (made_from(summary))
    };
    Ok(page::document("rgrade grade report", lede, body))
}

/// What the page reads from the output files beside per_query.csv.
struct Facts {
    /// aggregates.csv's rows over every split, by (run, stage, task, language).
    aggregates: BTreeMap<(String, String, String, String), AggregateRow>,
    /// stage_loss.csv's overall rows, when there is one.
    stage_loss: Vec<StageLossRow>,
    /// rejects.jsonl by reason: how many, and the first.
    rejects: Vec<(String, u64, RejectLine)>,
    /// attribution.csv's rows of whole splits, when there is one.
    attribution: Vec<AttributionRow>,
    /// aggregates.csv's rows of the log fields sliced by.
    log_slices: Vec<LogSliceFacts>,
}

/// What the page shows of the set of one value of a log field sliced by.
struct LogSliceFacts {
    run: String,
    stage: String,
    /// `tenant=acme`.
    name: String,
    /// queries, ok, missing.
    counts: [u64; 3],
    /// The deepest cutoff's six means.
    means: Vec<Option<f64>>,
}

/// The columns the page reads of a log field's set, before its means.
const LOG_SLICE_COLUMNS: [&str; 5] = [RUN, STAGE, "queries", "ok", "missing"];

/// A row of attribution.csv over every task and language.
struct AttributionRow {
    run: String,
    stage: String,
    split: String,
    /// answered, answer_ok, wrong_missing_evidence, wrong_with_evidence,
    /// ok_missing_evidence.
    counts: [u64; 5],
}

/// What the page shows of one row of aggregates.csv.
#[derive(Debug, Default)]
struct AggregateRow {
    queries: u64,
    statuses: [u64; 4],
    latency: [Option<f64>; 3],
    context_mean: Option<f64>,
    leaks: u64,
    /// judged@k at the deepest cutoff.
    judged: Option<f64>,
}

/// One overall row of stage_loss.csv.
struct StageLossRow {
    run: String,
    from: String,
    to: String,
    found: u64,
    lost: u64,
}

impl Facts {
    fn read(
        summary: &Summary,
        sources: &Sources,
        headline: &Headline,
        deepest: Cutoff,
    ) -> Result<Self> {
        let stage_loss = match sources.path(STAGE_LOSS_FILE) {
            Some(path) => read_stage_loss(path)?,
            None => Vec::new(),
        };
        let rejects = match summary.counts.rejected {
            0 => Vec::new(),
            _ => read_rejects(sources.require(REJECTS_FILE)?)?,
        };
        let aggregates = sources.require(AGGREGATES_FILE)?;
        let slice_by = &summary.settings.slice_by;
        let columns: Vec<&str> = (LOG_SLICE_COLUMNS.into_iter())
            .chain(headline.names.iter().map(String::as_str))
            .collect();
        let mut log_slices = Vec::new();
        for row in read_aggregates_csv(aggregates, &columns, slice_by)?.1 {
            let [run, stage, queries, ok, missing] = [0, 1, 2, 3, 4].map(|i| &row.cells[i]);
            log_slices.push(LogSliceFacts {
                run: run.clone(),
                stage: stage.clone(),
                name: format!("{}={}", slice_by[row.field], row.value),
                counts: [
                    whole(queries, aggregates)?,
                    whole(ok, aggregates)?,
                    whole(missing, aggregates)?,
                ],
                means: (row.cells[LOG_SLICE_COLUMNS.len()..].iter())
                    .map(|mean| number(mean, aggregates))
                    .collect::<Result<_>>()?,
            });
        }
        Ok(Facts {
            aggregates: read_aggregates(aggregates, &judged_column(summary, deepest), slice_by)?,
            log_slices,
            attribution: match sources.path(ATTRIBUTION_FILE) {
                Some(path) => read_attribution(path)?,
                None => Vec::new(),
            },
            stage_loss,
            rejects,
        })
    }

    /// The overall aggregate of a (run, stage).
    fn overall(&self, run: &str, stage: &str) -> Option<&AggregateRow> {
        let key = (run.into(), stage.into(), ANY.into(), ANY.into());
        self.aggregates.get(&key)
    }
}

/// An integer cell.
fn whole(text: &str, path: &Path) -> Result<u64> {
    text.parse()
        .with_context(|| format!("{}: '{text}' is not a count", path.display()))
}

fn read_aggregates(
    path: &Path,
    judged: &Option<String>,
    slice_by: &[String],
) -> Result<BTreeMap<(String, String, String, String), AggregateRow>> {
    let columns: Vec<&str> = AGGREGATES_LEADING
        .iter()
        .chain(&AGGREGATES_TRAILING)
        .copied()
        .chain(judged.as_deref())
        .collect();
    let split_at = AGGREGATES_LEADING.len() + AGGREGATES_TRAILING.len() - 1;
    let mut rows = BTreeMap::new();
    for r in read_aggregates_csv(path, &columns, slice_by)?.0 {
        let row = AggregateRow {
            queries: whole(&r[4], path)?,
            statuses: [
                whole(&r[5], path)?,
                whole(&r[6], path)?,
                whole(&r[7], path)?,
                whole(&r[8], path)?,
            ],
            latency: [
                number(&r[9], path)?,
                number(&r[10], path)?,
                number(&r[11], path)?,
            ],
            context_mean: number(&r[12], path)?,
            leaks: whole(&r[13], path)?,
            judged: match r.get(split_at + 1) {
                Some(judged) => number(judged, path)?,
                None => None,
            },
        };
        // The sets within a split are drawn from per_query.csv's rows.
        if r[split_at] == ANY {
            let [run, stage, task, language] = [0, 1, 2, 3].map(|i| r[i].clone());
            rows.insert((run, stage, task, language), row);
        }
    }
    Ok(rows)
}

/// attribution.csv's rows of whole splits (every task and language).
fn read_attribution(path: &Path) -> Result<Vec<AttributionRow>> {
    let mut rows = Vec::new();
    for r in read_csv(path, &ATTRIBUTION)? {
        if r[2] == ANY && r[3] == ANY {
            let mut counts = [0; 5];
            for (count, cell) in counts.iter_mut().zip(&r[5..]) {
                *count = whole(cell, path)?;
            }
            rows.push(AttributionRow {
                run: r[0].clone(),
                stage: r[1].clone(),
                split: r[4].clone(),
                counts,
            });
        }
    }
    Ok(rows)
}

fn read_stage_loss(path: &Path) -> Result<Vec<StageLossRow>> {
    let columns = [
        RUN,
        TASK,
        LANGUAGE,
        STAGE_LOSS[3],
        STAGE_LOSS[4],
        STAGE_LOSS[5],
        STAGE_LOSS[6],
    ];
    let mut rows = Vec::new();
    for r in read_csv(path, &columns)? {
        if r[1] == ANY && r[2] == ANY {
            rows.push(StageLossRow {
                run: r[0].clone(),
                from: r[3].clone(),
                to: r[4].clone(),
                found: whole(&r[5], path)?,
                lost: whole(&r[6], path)?,
            });
        }
    }
    Ok(rows)
}

/// Rejects by reason, most frequent first: the count and the first one.
fn read_rejects(path: &Path) -> Result<Vec<(String, u64, RejectLine)>> {
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut reasons: BTreeMap<String, (u64, RejectLine)> = BTreeMap::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("{}: cannot read", path.display()))?;
        let reject: RejectLine = serde_json::from_str(&line)
            .with_context(|| format!("{}:{}: not a reject line", path.display(), n + 1))?;
        reasons
            .entry(reject.reason.clone())
            .and_modify(|(count, _)| *count += 1)
            .or_insert((1, reject));
    }
    let mut reasons: Vec<(String, u64, RejectLine)> = reasons
        .into_iter()
        .map(|(reason, (n, first))| (reason, n, first))
        .collect();
    reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(reasons)
}

/// "1 record was", "5 records were": `n` of `noun`, and the verb.
fn were(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun} was"),
        n => format!("{} {noun}s were", count(n)),
    }
}

/// The column of aggregates.csv that says how much of the top k at the
/// deepest cutoff the labels judge, if the grading wrote one: `judged@k`
/// follows the default metrics, and is among the measures asked for by
/// name only if asked.
fn judged_column(summary: &Summary, deepest: Cutoff) -> Option<String> {
    let column = format!("judged@{deepest}");
    match &summary.settings.measures {
        Some(asked) => asked.contains(&column).then_some(column),
        None => Some(column),
    }
}

/// The headline intervals of an overall row.
fn headline_of(pair: &PairFigures, headline: &Headline) -> Vec<Option<MeanInterval>> {
    headline.of_row(&pair.overall).to_vec()
}

fn overview(
    summary: &Summary,
    figures: &[PairFigures],
    facts: &Facts,
    headline: &Headline,
) -> Result<Markup> {
    let names = &headline.names;
    let counts = &summary.counts;
    let chart = if figures.len() > 1 {
        let rows: Vec<BarRow> = figures
            .iter()
            .take(OVERVIEW_ROWS)
            .map(|p| BarRow {
                label: pair_name(&p.run, &p.stage),
                values: headline_of(p, headline),
            })
            .collect();
        Some(charts::slice_bars(&rows, names)?)
    } else {
        None
    };
    Ok(html! {
        section {
            h2 { "Overview" }
            @if figures.len() > 1 {
                nav { ul { @for (i, p) in figures.iter().take(PAIRS_DRAWN).enumerate() {
                    li { a href=(format!("#pair-{i}")) { (pair_name(&p.run, &p.stage)) } }
                } } }
            }
            table {
                tr { th { "run" } th { "stage" } th.n { "queries" } th.n { "ok" } th.n { "missing" }
                     th.n { "invalid" } th.n { "no answer" }
                     @for name in names { th.n { (name) } } }
                @for p in figures.iter().take(OVERVIEW_ROWS) {
                    @let agg = facts.overall(&p.run, &p.stage);
                    tr {
                        td.id { (p.run) } td { (p.stage) }
                        td.n { (count(agg.map_or(0, |a| a.queries))) }
                        @for status in 0..4 { td.n { (count(agg.map_or(0, |a| a.statuses[status]))) } }
                        @for value in headline_of(p, headline) { (cell(value.map(|v| v.mean))) }
                    }
                }
            }
            @if figures.len() > OVERVIEW_ROWS {
                p.note { (figures.len() - OVERVIEW_ROWS) " more (run, stage) pairs are in aggregates.csv." }
            }
            @if let Some(svg) = chart {
                (charts::figure(svg, "Each (run, stage) at the deepest cutoff: mean over its queries, \
                    with the 95% interval as a whisker."))
            }
            h3 { "Records" }
            table {
                tr { th { "records read" } td.n { (count(counts.records)) } }
                tr { th { "search events" } td.n { (count(counts.events)) } }
                tr { th { "graded (run, stage, query) rows" } td.n { (count(counts.graded)) } }
                tr { th { "events of unlabeled queries" } td.n { (count(counts.unlabeled_events)) } }
                @if counts.other_stage_events > 0 {
                    tr { th { "events of stages not graded" } td.n { (count(counts.other_stage_events)) } }
                }
                @if counts.other_records > 0 {
                    tr { th { "records without a search event" } td.n { (count(counts.other_records)) } }
                }
                tr { th { "repeated captures" } td.n { (count(counts.repeats)) } }
                tr { th { "rejected records" } td.n { (count(counts.rejected)) } }
            }
            @if counts.rejected > 0 {
                p.warn { (were(counts.rejected, "record")) " rejected; see " a href="#rejects" { "Rejects" } "." }
            }
            @if counts.leaked_results > 0 {
                p.warn { (were(counts.leaked_results, "result")) " outside their user's allowed \
                    collections; see " a href="#leaks" { "Leaks" } "." }
            }
            @if summary.stale_labels.look_stale() {
                p.warn { "Most captured queries returned no document their labels judge: the labels \
                    may be stale; see " a href="#stale" { "Stale labels" } "." }
            }
        }
    })
}

fn pair_section(
    i: usize,
    pair: &PairFigures,
    facts: &Facts,
    heading: &Headline,
    across: &[Cutoff],
    deepest: Cutoff,
) -> Result<Markup> {
    let names = &heading.names;
    let headline = headline_of(pair, heading);
    let agg = facts.overall(&pair.run, &pair.stage);
    Ok(html! {
        section id=(format!("pair-{i}")) {
            h2 { (pair_name(&pair.run, &pair.stage)) }
            @if let Some(agg) = agg {
                p { (count(agg.queries)) " labeled queries: " (count(agg.statuses[0])) " ok, "
                    (count(agg.statuses[1])) " missing, " (count(agg.statuses[2])) " invalid, "
                    (count(agg.statuses[3])) " no answer." }
            }
            div.headline {
                @for (name, value) in names.iter().zip(&headline) {
                    div {
                        span { (name) }
                        @match value {
                            Some(v) => { b { (charts::three(v.mean)) }
                                span { "[" (charts::three(v.low)) ", " (charts::three(v.high)) "] · "
                                    (count(v.n as u64)) " queries" } }
                            None => { b { "–" } span { "no query counts" } }
                        }
                    }
                }
            }
            (interval_note(&headline))
            @if let Some(judged) = agg.and_then(|a| a.judged) {
                p.note { "judged@" (deepest) " " (charts::three(judged)) ": the labels judge "
                    (charts::percent(judged)) " of the top " (deepest) " results shown. \
                    Unjudged results count as not relevant, so a low share leaves the metrics \
                    less to go on." }
            }
            (slices(pair, names)?)
            (cutoffs(pair, across)?)
            (first_ranks(pair)?)
            (latency_and_context(pair, agg)?)
            (worst(pair, names, deepest))
        }
    })
}

/// Which way the headline intervals were found.
fn interval_note(headline: &[Option<MeanInterval>]) -> Markup {
    let method = headline.iter().flatten().map(|v| v.method).next();
    html! {
        p.note {
            @match method {
                Some(Method::Bootstrap) => { "Intervals: percentile bootstrap, 1,000 resamples." }
                Some(Method::Normal) => { "Intervals: normal approximation (over "
                    (count(BOOTSTRAP_UP_TO as u64)) " queries the bootstrap gives the same)." }
                None => {}
            }
        }
    }
}

fn slices(pair: &PairFigures, names: &[String]) -> Result<Markup> {
    let kinds = ["task", "language", "task × language", "split"];
    let sets = |list: &SliceList| list.shown.len() + list.hidden;
    let [tasks, languages, both, _] = &pair.slices;
    // Task × language parts each task, and each language: as many sets as
    // either holds are the same sets (each task of one language), drawn
    // already under that name.
    let both_repeats = sets(both) == sets(tasks) || sets(both) == sets(languages);
    let mut figures = Vec::new();
    for (list, kind) in pair.slices.iter().zip(kinds) {
        if list.shown.len() < 2 || (kind == kinds[2] && both_repeats) {
            continue;
        }
        figures.push((
            kind,
            charts::slice_bars(&slice_rows(list), names)?,
            list.hidden,
        ));
    }
    Ok(html! {
        @if !figures.is_empty() {
            h3 { "By slice" }
            @for (kind, svg, hidden) in figures {
                (charts::figure(svg, &format!(
                    "By {kind}: the mean at the deepest cutoff with its 95% interval; \
                     slices with no counted query say none.{}",
                    if hidden > 0 {
                        format!(" The {SLICES_SHOWN} largest shown; {hidden} more in aggregates.csv.")
                    } else {
                        String::new()
                    })))
            }
        }
    })
}

fn slice_rows(list: &SliceList) -> Vec<BarRow> {
    list.shown
        .iter()
        .map(|s| {
            let label = match (&s.task, &s.language, &s.split) {
                (Some(task), Some(language), _) => format!("{task} × {language}"),
                (Some(name), None, _) | (None, Some(name), _) | (None, None, Some(name)) => {
                    name.clone()
                }
                (None, None, None) => ANY.to_string(),
            };
            BarRow {
                label: format!("{label} ({})", s.counted),
                values: s.intervals.clone(),
            }
        })
        .collect()
}

fn cutoffs(pair: &PairFigures, ks: &[Cutoff]) -> Result<Markup> {
    if ks.len() < 2 {
        return Ok(html! {});
    }
    // In cutoff order, as a curve reads.
    let mut order: Vec<usize> = (0..ks.len()).collect();
    order.sort_by_key(|&i| ks[i]);
    let labels: Vec<String> = order.iter().map(|&i| ks[i].to_string()).collect();
    let series: Vec<Series> = Metric::ALL
        .iter()
        .enumerate()
        .map(|(m, metric)| Series {
            name: metric.name().to_string(),
            values: order
                .iter()
                .map(|&i| pair.overall[i * Metric::ALL.len() + m])
                .collect(),
        })
        .collect();
    let svg = charts::cutoff_lines(&labels, &series)?;
    Ok(html! {
        h3 { "Across cutoffs" }
        (charts::figure(svg, "Each metric's mean at every cutoff graded, with its 95% interval."))
    })
}

fn first_ranks(pair: &PairFigures) -> Result<Markup> {
    let total: u64 = pair.first_ranks.iter().sum();
    if total == 0 {
        return Ok(html! {});
    }
    // Ranks past the deepest one seen say nothing; "none" always shows.
    let last = pair.first_ranks[..RANK_BINS.len()]
        .iter()
        .rposition(|&n| n > 0)
        .map_or(0, |i| i + 1);
    let mut labels: Vec<String> = RANK_BINS[..last]
        .iter()
        .map(|&(first, last)| match (first, last) {
            (a, b) if a == b => a.to_string(),
            (a, u32::MAX) => format!(">{}", a - 1),
            (a, b) => format!("{a}–{b}"),
        })
        .collect();
    labels.push("none".to_string());
    let shares: Vec<f64> = pair.first_ranks[..last]
        .iter()
        .chain(&pair.first_ranks[RANK_BINS.len()..])
        .map(|&n| n as f64 / total as f64)
        .collect();
    let svg = charts::share_bars(&labels, &shares, last)?;
    Ok(html! {
        h3 { "First relevant rank" }
        (charts::figure(svg, &format!(
            "Of the {} queries graded ok, the share whose first relevant result is at each rank \
             (any depth); the line adds them up: the hit rate by depth. \"none\": no relevant \
             result in any capture.", count(total))))
    })
}

fn latency_and_context(pair: &PairFigures, agg: Option<&AggregateRow>) -> Result<Markup> {
    let mut parts = Vec::new();
    if !pair.latency.bars.is_empty() {
        let marks: Vec<Mark> = ["p50", "p95", "p99"]
            .iter()
            .zip(agg.map_or([None; 3], |a| a.latency))
            .filter_map(|(name, value)| {
                value.map(|value| Mark {
                    name: name.to_string(),
                    value,
                })
            })
            .collect();
        let svg = charts::log_histogram(
            &pair.latency.edges,
            &pair.latency.bars,
            "latency (ms, log scale)",
            &marks,
        )?;
        parts.push(charts::figure(
            svg,
            &below_note(
                "Latency of each query's graded captures",
                pair.latency.below,
            ),
        ));
    }
    if !pair.context.bars.is_empty() {
        let marks: Vec<Mark> = agg
            .and_then(|a| a.context_mean)
            .map(|value| Mark {
                name: "mean".to_string(),
                value,
            })
            .into_iter()
            .collect();
        let svg = charts::log_histogram(
            &pair.context.edges,
            &pair.context.bars,
            "context size (tokens, log scale)",
            &marks,
        )?;
        parts.push(charts::figure(
            svg,
            &below_note(
                "Context size of each query's graded captures",
                pair.context.below,
            ),
        ));
    }
    Ok(html! {
        @if !parts.is_empty() {
            h3 { "Latency and context" }
            @for part in parts { (part) }
        }
    })
}

/// A caption that also counts the values a log scale cannot show.
fn below_note(caption: &str, below: u64) -> String {
    match below {
        0 => format!("{caption}."),
        n => format!(
            "{caption}; {} at 0 or below, or more than {DECADES} decades below the largest, \
             are not drawn.",
            count(n)
        ),
    }
}

/// The queries lowest on the first two headline metrics `names`.
fn worst(pair: &PairFigures, names: &[String], deepest: Cutoff) -> Markup {
    let ranked_by = &names[..names.len().min(2)];
    html! {
        @if !pair.worst.is_empty() {
            h3 { "Worst queries" }
            p.note { "Graded queries with the lowest " (ranked_by.join(", then "))
                ", and the relevant documents their captures missed in the top " (deepest) "." }
            table {
                tr { th { "query" } th { "task" } th { "language" } th.n { "relevant" }
                     th.n { "first rank" } @for name in ranked_by { th.n { (name) } }
                     th { "missed evidence" } }
                @for q in &pair.worst {
                    tr {
                        td.id { (q.query_id) } td { (q.task) } td { (q.language) }
                        td.n { (q.n_relevant) }
                        td.n { @if let Some(rank) = q.first_rel_rank { (rank) } @else { "none" } }
                        @for &value in &q.lowest { (cell(Some(value))) }
                        td { (ids(&q.missed, MISSED_SHOWN)) }
                    }
                }
            }
        }
    }
}

/// Wrong answers by their evidence, per (run, stage) and split, from
/// attribution.csv.
fn answers(facts: &Facts) -> Result<Markup> {
    let rows: Vec<&AttributionRow> = facts
        .attribution
        .iter()
        .filter(|r| r.counts[0] > 0)
        .collect();
    if rows.is_empty() {
        return Ok(html! {});
    }
    let name = |r: &AttributionRow| match r.split.as_str() {
        ANY => pair_name(&r.run, &r.stage),
        split => format!("{} · split {split}", pair_name(&r.run, &r.stage)),
    };
    let bars: Vec<(String, Vec<u64>)> = rows
        .iter()
        .map(|r| {
            let [_, ok, wrong_missing, wrong_with, ok_missing] = r.counts;
            (
                name(r),
                vec![ok - ok_missing, ok_missing, wrong_with, wrong_missing],
            )
        })
        .collect();
    let parts = [
        ("ok", charts::BLUE),
        ("ok, evidence missing", charts::SKY),
        ("generation", charts::ORANGE),
        ("retrieval", charts::VERMILLION),
    ];
    let svg = charts::stacked_shares(&bars, &parts)?;
    Ok(html! {
        section id="answers" {
            h2 { "Wrong answers and their evidence" }
            p { "Of the graded queries whose captures say whether the answer was acceptable: \
                 a wrong answer whose evidence was missing from the top k at the deepest cutoff \
                 is a retrieval failure; one whose evidence was all there, a generation failure." }
            (charts::figure(svg, "Answered queries: right (with all their evidence, or without), \
                 wrong with all their evidence (generation), wrong without (retrieval)."))
            table {
                tr { th { "run · stage" } th.n { "answered" } th.n { "ok" } th.n { "wrong: retrieval" }
                     th.n { "wrong: generation" } th.n { "ok, evidence missing" } }
                @for r in &rows {
                    tr { td.id { (name(r)) } td.n { (count(r.counts[0])) } td.n { (count(r.counts[1])) }
                         td.n { (count(r.counts[2])) } td.n { (count(r.counts[3])) }
                         td.n { (count(r.counts[4])) } }
                }
            }
        }
    })
}

fn stage_loss(facts: &Facts) -> Result<Markup> {
    if facts.stage_loss.is_empty() {
        return Ok(html! {});
    }
    let mut runs: Vec<(&str, Vec<&StageLossRow>)> = Vec::new();
    for row in &facts.stage_loss {
        match runs.last_mut() {
            Some((run, rows)) if *run == row.run => rows.push(row),
            _ => runs.push((&row.run, vec![row])),
        }
    }
    let mut drawn = Vec::new();
    for (run, rows) in runs {
        let bars: Vec<(String, u64)> = rows
            .iter()
            .flat_map(|r| {
                [
                    (format!("found in {}", r.from), r.found),
                    (format!("still in {}", r.to), r.found - r.lost.min(r.found)),
                ]
            })
            .collect();
        drawn.push((run, rows, charts::count_bars(&bars, charts::BLUE)?));
    }
    Ok(html! {
        section {
            h2 { "Stage loss" }
            p { "Relevant documents one stage found and the next dropped, over the queries \
                 captured at both (stage_loss.csv; stage_loss_per_query.csv names them)." }
            @for (run, rows, svg) in drawn {
                h3 { @if run.is_empty() { "(no run name)" } @else { (run) } }
                (charts::figure(svg, "Relevant documents found in each stage, and how many the next stage kept."))
                table {
                    tr { th { "from" } th { "to" } th.n { "found" } th.n { "lost" } th.n { "lost rate" } }
                    @for r in rows {
                        tr { td { (r.from) } td { (r.to) } td.n { (count(r.found)) } td.n { (count(r.lost)) }
                             (cell((r.found > 0).then(|| r.lost as f64 / r.found as f64))) }
                    }
                }
            }
        }
    })
}

/// The sets of the log fields sliced by (`--slice-by`): each value's
/// queries and means at the deepest cutoff, as aggregates.csv has them.
fn log_slices(facts: &Facts, headline: &Headline, deepest: Cutoff) -> Markup {
    if facts.log_slices.is_empty() {
        return html! {};
    }
    html! {
        section id="log-slices" {
            h2 { "Slices by log fields" }
            p { "Each query counts in the slice of the value its graded capture recorded: "
                code { "(none)" } " when it recorded none or no capture was graded, "
                code { "(mixed)" } " when captures averaged by " code { "--repeats mean" }
                " disagree. Means at k = " (deepest) "." }
            table {
                tr {
                    th { "run" } th { "stage" } th { "slice" }
                    @for name in &LOG_SLICE_COLUMNS[2..] { th.n { (name) } }
                    @for name in &headline.short_names { th.n { (name) } }
                }
                @for slice in &facts.log_slices {
                    tr {
                        td.id { (slice.run) } td { (slice.stage) } td.id { (slice.name) }
                        @for n in slice.counts { td.n { (count(n)) } }
                        @for &mean in &slice.means { (cell(mean)) }
                    }
                }
            }
        }
    }
}

fn stale_labels(summary: &Summary) -> Markup {
    let stale = &summary.stale_labels;
    html! {
        section id="stale" {
            h2 { "Stale labels" }
            @if stale.look_stale() {
                p.warn { (count(stale.queries_without_judged_results)) " of " (count(stale.queries_captured))
                    " captured queries returned no document their labels judge, at any depth and grade: \
                     a changed id scheme does this, pooled labels do not." }
            }
            table {
                tr { th { "labeled documents of captured queries" } td.n { (count(stale.labeled)) } }
                tr { th { "never returned by any capture" } td.n { (count(stale.unseen)) }
                     (cell(Some(stale.fraction))) }
                tr { th { "captured queries with judged documents" } td.n { (count(stale.queries_captured)) } }
                tr { th { "of those, returning none of them" } td.n { (count(stale.queries_without_judged_results)) } }
            }
            @if !stale.sample.is_empty() {
                p { "First unseen ids: " (ids(&stale.sample, 10)) }
            }
        }
    }
}

fn leaks(summary: &Summary, facts: &Facts) -> Markup {
    if summary.counts.leaked_results == 0 {
        return html! {};
    }
    html! {
        section id="leaks" {
            h2 { "Leaks" }
            p.warn { (were(summary.counts.leaked_results, "result")) " outside their user's allowed \
                collections; they keep their rank and never count as relevant." }
            table {
                tr { th { "run" } th { "stage" } th.n { "queries with a leak" } }
                @for ((run, stage, task, language), row) in &facts.aggregates {
                    @if task == ANY && language == ANY && row.leaks > 0 {
                        tr { td.id { (run) } td { (stage) } td.n { (count(row.leaks)) } }
                    }
                }
            }
            h3 { "First leaks" }
            table {
                tr { th { "query" } th { "document" } th { "collection" } th { "where" } }
                @for leak in &summary.leaks {
                    tr { td.id { (leak.query_id) } td.id { (leak.doc_id) } td.id { (leak.collection) }
                         td.id { (leak.file) ":" (leak.line) } }
                }
            }
        }
    }
}

fn rejects(summary: &Summary, facts: &Facts) -> Markup {
    if summary.counts.rejected == 0 {
        return html! {};
    }
    html! {
        section id="rejects" {
            h2 { "Rejects" }
            p { (were(summary.counts.rejected, "record")) " rejected (rejects.jsonl holds each, \
                 with its file, line and reason). By reason, with the first of each:" }
            table {
                tr { th { "reason" } th.n { "records" } th { "first" } }
                @for (reason, n, first) in &facts.rejects {
                    tr {
                        td { code { (reason) } }
                        td.n { (count(*n)) }
                        td { span.id { (first.file) ":" (first.line) } ": " (first.detail) }
                    }
                }
            }
        }
    }
}

fn made_from(summary: &Summary) -> Markup {
    let s = &summary.settings;
    let labels = &summary.labels;
    html! {
        section {
            h2 { "Made from" }
            table {
                tr { th { "rgrade" } td { (summary.version) } }
                tr { th { "labels" } td { code { (labels.path) } " (" (labels.format) ", "
                     (count(labels.bytes)) " bytes, xxh3 " code { (labels.hash) } ")" } }
                @if let Some(reviewers) = &labels.reviewers {
                    tr { th { "reviewers" } td { (page::reviewers(reviewers)) } }
                }
                @if !labels.sources.is_empty() {
                    tr { th { "label sources" } td {
                        @for (i, s) in labels.sources.iter().enumerate() {
                            @if i > 0 { ", " }
                            code { (s.source) } " (" (count(s.labels)) " labels, "
                            (count(s.judgments)) " judgments)"
                        }
                    } }
                }
                @if labels.pooled_queries > 0 {
                    tr { th { "judging pools" } td {
                        (count(labels.pooled_queries)) " labeled queries name the runs they were pooled from"
                        @for p in &summary.self_pooled {
                            br; span.warn { "run " code { (p.run) } " alone was pooled for "
                            (count(p.queries)) " of them (" (format!("{:.1}", 100.0 * p.share))
                            "%): it defined its own answer key there" }
                        }
                    } }
                }
                tr { th { "cutoffs" } td { (s.k.iter().map(Cutoff::to_string).collect::<Vec<_>>().join(", ")) } }
                tr { th { "missing queries" } td { (s.missing) } }
                tr { th { "repeated captures" } td { (s.repeats) } }
                tr { th { "duplicate documents" } td { (s.duplicate_docs) } }
                @if let Some(pattern) = &s.doc_of {
                    tr { th { "graded unit" } td { "documents, named by " code { (pattern) } ": "
                        (count(summary.counts.later_chunks)) " later chunks of a ranked document dropped"
                        @if summary.counts.unmapped_ids > 0 {
                            br; span.warn { (count(summary.counts.unmapped_ids))
                                " result ids named no document and were graded as their own" }
                        }
                        @if summary.counts.labeled_chunk_ids > 0 {
                            br; span.warn { (count(summary.counts.labeled_chunk_ids))
                                " labeled ids look like chunks: no mapped result can match them" }
                        }
                    } }
                }
                tr { th { "lowest relevant grade" } td { (s.min_rel) } }
                tr { th { "stages" } td { @if s.stages.is_empty() { "all" } @else { (s.stages.join(", ")) } } }
                tr { th { "collection versions" } td {
                    @if labels.collection_versions.is_empty() { "none named" }
                    @for (i, v) in labels.collection_versions.iter().enumerate() {
                        @if i > 0 { ", " }
                        code { (v.version) } " (" (count(v.queries)) ")"
                    }
                    @if let Some(version) = &s.collection_version {
                        " · every label checked against " code { (version) }
                    }
                } }
                @if let Some(depth) = s.pool_depth {
                    tr { th { "review queue" } td { code { (REVIEW_QUEUE_FILE) }
                        ": the unjudged documents ranked within the top " (depth) } }
                }
                @for (key, value) in &summary.meta.0 {
                    tr { th { (key) } td { (value) } }
                }
            }
            h3 { "Inputs" }
            table {
                tr { th { "path" } th.n { "bytes" } th.n { "records" } th.n { "rejected" } th { "xxh3-128" } }
                @for input in summary.inputs.iter().take(INPUTS_SHOWN) {
                    tr { td.id { (input.path) } td.n { (count(input.bytes)) } td.n { (count(input.records)) }
                         td.n { (count(input.rejected)) } td { code { (input.hash) } } }
                }
            }
            @if summary.inputs.len() > INPUTS_SHOWN {
                p.note { (summary.inputs.len() - INPUTS_SHOWN) " more inputs are listed in summary.json." }
            }
        }
    }
}
