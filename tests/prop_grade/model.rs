//! The reference model of the grade properties: the captures in input
//! order, every (run, stage, labeled query) graded straight from the
//! definitions of docs/reference.md, Metrics, and the per_query.csv and
//! aggregates.csv it expects, as cells.

use std::collections::{BTreeMap, BTreeSet};

use rgrade::Cutoff;

use super::inputs::{Label, Logs, Options, Repeats, TrecLine};
use crate::util::{self, metric_columns, percentile};

// ---------------------------------------------------------------------------
// The reference model.
// ---------------------------------------------------------------------------

/// Where a record came from: (index of the log file as given, 1-based line).
pub(super) type Origin = (usize, usize);

/// One capture: a ranking a run returned for a query at a stage.
#[derive(Debug, Clone)]
pub(super) struct Capture {
    run: String,
    stage: String,
    query_id: String,
    /// In ranked order, duplicates and all.
    ranking: Vec<String>,
    latency_ms: Option<f64>,
    context_tokens: Option<f64>,
    answer_ok: Option<bool>,
    /// The log lines it was read from (one for JSONL, a group for TREC).
    origins: Vec<Origin>,
}

/// The captures of the logs in input order: files in the order given, then
/// line number (docs/reference.md, Input formats).
pub(super) fn captures(logs: &Logs) -> Vec<Capture> {
    match logs {
        Logs::Jsonl(files) => files
            .iter()
            .enumerate()
            .flat_map(|(f, events)| {
                events.iter().enumerate().map(move |(i, e)| Capture {
                    run: e.run.unwrap_or("").to_string(),
                    stage: e.stage.unwrap_or("final").to_string(),
                    query_id: e.query_id.clone(),
                    ranking: e.results.iter().map(|(doc, _)| doc.clone()).collect(),
                    latency_ms: e.latency_ms,
                    context_tokens: e.context_tokens.map(f64::from),
                    answer_ok: e.answer_ok,
                    origins: vec![(f, i + 1)],
                })
            })
            .collect(),
        Logs::Trec(files) => trec_captures(files),
    }
}

/// TREC lines grouped by (tag, query_id) across every file; each group is
/// ranked by score descending, ties by doc id descending in byte order,
/// like trec_eval (docs/reference.md, Input formats). The tag is the run, the
/// stage `final`.
fn trec_captures(files: &[Vec<TrecLine>]) -> Vec<Capture> {
    let mut groups: BTreeMap<(String, String), Vec<(&TrecLine, Origin)>> = BTreeMap::new();
    for (f, lines) in files.iter().enumerate() {
        for (i, line) in lines.iter().enumerate() {
            groups
                .entry((line.tag.to_string(), line.query_id.clone()))
                .or_default()
                .push((line, (f, i + 1)));
        }
    }
    groups
        .into_iter()
        .map(|((tag, query_id), mut lines)| {
            lines.sort_by(|(a, _), (b, _)| {
                b.score
                    .total_cmp(&a.score)
                    .then_with(|| b.doc_id.as_bytes().cmp(a.doc_id.as_bytes()))
            });
            Capture {
                run: tag,
                stage: "final".to_string(),
                query_id,
                ranking: lines.iter().map(|(l, _)| l.doc_id.clone()).collect(),
                latency_ms: None,
                context_tokens: None,
                answer_ok: None,
                origins: lines.iter().map(|&(_, origin)| origin).collect(),
            }
        })
        .collect()
}

/// A per-query status (docs/reference.md, Metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Missing,
    Invalid,
    NoAnswer,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Missing => "missing",
            Self::Invalid => "invalid",
            Self::NoAnswer => "no_answer",
        }
    }
}

/// The reference's row of per_query.csv.
#[derive(Debug, Clone)]
pub(super) struct QueryRow<'a> {
    run: String,
    stage: String,
    label: &'a Label,
    status: Status,
    n_relevant: usize,
    n_results: Option<f64>,
    first_rel_rank: Option<f64>,
    captures: usize,
    latency_ms: Option<f64>,
    context_tokens: Option<f64>,
    /// Six values per cutoff, in the order of `-k`, then of the metric
    /// columns ([`metric_columns`]).
    metrics: Vec<Option<f64>>,
    missing_at: String,
    /// judged@k per cutoff, in the order of `-k`.
    judged: Vec<Option<f64>>,
    answer_ok: Option<bool>,
}

/// What one graded ranking scores.
struct Graded {
    /// Six values per cutoff, as in [`QueryRow::metrics`].
    metrics: Vec<f64>,
    /// judged@k per cutoff: the share of the top k shown that any label
    /// line judges.
    judged: Vec<f64>,
    first_rel_rank: Option<usize>,
    /// Relevant ids not in the top k for the largest k.
    missed: BTreeSet<String>,
}

/// docs/reference.md, Metrics, for one ranking, straight from the definitions.
fn grade_ranking(ranking: &[String], label: &Label, options: &Options) -> Graded {
    let relevant = label.relevant(options.min_rel);
    let is_relevant = |doc: &String| relevant.contains(doc.as_str());
    let discount = |i: usize| 1.0 / ((i + 2) as f64).log2(); // rank i + 1
    let mut ideal: Vec<f64> = label
        .grades
        .values()
        .filter(|&&g| g > 0)
        .map(|&g| g as f64)
        .collect();
    ideal.sort_by(|a, b| b.total_cmp(a));

    let mut metrics = Vec::new();
    let mut judged = Vec::new();
    for &cutoff in &options.ks {
        // At `all`: the whole ranking, precision over its length (set_P),
        // and the ideal ranking of every positive grade.
        let (k, precision_over, ideal_depth) = match cutoff {
            Cutoff::At(k) => (k, k, k),
            Cutoff::All => (ranking.len(), ranking.len(), ideal.len()),
        };
        let top = &ranking[..k.min(ranking.len())];
        // Over the results shown: k, or fewer past the ranking's end.
        let judged_in_k = top.iter().filter(|d| label.grades.contains_key(*d)).count();
        judged.push(if top.is_empty() {
            0.0
        } else {
            judged_in_k as f64 / top.len() as f64
        });
        let found = top.iter().filter(|d| is_relevant(d)).count() as f64;
        let n_rel = relevant.len() as f64;
        let rr = top
            .iter()
            .position(is_relevant)
            .map_or(0.0, |i| 1.0 / (i + 1) as f64);
        let dcg: f64 = top
            .iter()
            .enumerate()
            .map(|(i, d)| label.gain(d) * discount(i))
            .sum();
        let idcg: f64 = ideal
            .iter()
            .take(ideal_depth)
            .enumerate()
            .map(|(i, g)| g * discount(i))
            .sum();
        let mut ap = 0.0;
        let mut seen = 0.0;
        for (i, doc) in top.iter().enumerate() {
            if is_relevant(doc) {
                seen += 1.0;
                ap += seen / (i + 1) as f64;
            }
        }
        // Over |R|, 0 when no grade reaches --min-rel.
        let per_relevant = |x: f64| if n_rel > 0.0 { x / n_rel } else { 0.0 };
        metrics.extend([
            per_relevant(found),
            rr,
            if found > 0.0 { 1.0 } else { 0.0 },
            if precision_over > 0 {
                found / precision_over as f64
            } else {
                0.0
            },
            dcg / idcg,
            per_relevant(ap),
        ]);
    }
    let deepest = options.ks.iter().map(|k| k.depth()).max().unwrap_or(1);
    let top = &ranking[..deepest.min(ranking.len())];
    Graded {
        metrics,
        judged,
        first_rel_rank: ranking.iter().position(is_relevant).map(|i| i + 1),
        missed: relevant
            .iter()
            .filter(|doc| !top.iter().any(|d| d == *doc))
            .map(|doc| doc.to_string())
            .collect(),
    }
}

fn has_duplicate(ranking: &[String]) -> bool {
    let mut seen = BTreeSet::new();
    ranking.iter().any(|doc| !seen.insert(doc))
}

/// Keep the first occurrence of each doc and close the gap.
fn dedupe(ranking: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    ranking
        .iter()
        .filter(|doc| seen.insert(doc.as_str()))
        .cloned()
        .collect()
}

fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// The row of one (run, stage, labeled query) from its captures in input
/// order; records the origins of every capture it rejects.
fn query_row<'a>(
    (run, stage): &(String, String),
    label: &'a Label,
    captures: &[&Capture],
    options: &Options,
    rejected: &mut BTreeSet<Origin>,
) -> QueryRow<'a> {
    // --duplicate-docs: reject the capture, or keep first occurrences.
    let mut valid: Vec<(&Capture, Vec<String>)> = Vec::new();
    for capture in captures {
        if has_duplicate(&capture.ranking) && !options.dedupe {
            rejected.extend(&capture.origins);
        } else {
            valid.push((capture, dedupe(&capture.ranking)));
        }
    }
    // --repeats: a rejected capture still counts as a capture of its key.
    let chosen: Vec<(&Capture, Vec<String>)> = match options.repeats {
        Repeats::Error if captures.len() > 1 => {
            captures.iter().for_each(|c| rejected.extend(&c.origins));
            Vec::new()
        }
        Repeats::Error | Repeats::Mean => valid,
        Repeats::First => valid.into_iter().take(1).collect(),
        Repeats::Last => valid.into_iter().last().into_iter().collect(),
    };

    // No positive grade: no answer. Grades that all fall below --min-rel
    // still grade, as trec_eval -l grades them (docs/reference.md, Metrics).
    let relevant = label.relevant(options.min_rel);
    let status = if label.relevant(1).is_empty() {
        Status::NoAnswer
    } else if captures.is_empty() {
        Status::Missing
    } else if chosen.is_empty() {
        Status::Invalid
    } else {
        Status::Ok
    };
    let mut row = QueryRow {
        run: run.clone(),
        stage: stage.clone(),
        label,
        status,
        n_relevant: relevant.len(),
        n_results: None,
        first_rel_rank: None,
        captures: captures.len(),
        latency_ms: None,
        context_tokens: None,
        metrics: vec![None; metric_columns(&options.ks).len()],
        missing_at: String::new(),
        judged: vec![None; options.ks.len()],
        answer_ok: None,
    };
    // Facts of the graded capture(s), averaged under --repeats mean over those
    // that have a value (docs/reference.md, Decisions where tools differ), for ok
    // and no_answer alike.
    row.n_results = mean(chosen.iter().map(|(_, r)| r.len() as f64));
    row.latency_ms = mean(chosen.iter().filter_map(|(c, _)| c.latency_ms));
    row.context_tokens = mean(chosen.iter().filter_map(|(c, _)| c.context_tokens));
    // Ok only if every graded capture that says was ok.
    let said: Vec<bool> = chosen.iter().filter_map(|(c, _)| c.answer_ok).collect();
    row.answer_ok = (!said.is_empty()).then(|| said.iter().all(|&ok| ok));
    match status {
        Status::NoAnswer => {}
        Status::Ok => {
            let graded: Vec<Graded> = chosen
                .iter()
                .map(|(_, ranking)| grade_ranking(ranking, label, options))
                .collect();
            row.metrics = (0..row.metrics.len())
                .map(|m| mean(graded.iter().map(|g| g.metrics[m])))
                .collect();
            row.judged = (0..row.judged.len())
                .map(|k| mean(graded.iter().map(|g| g.judged[k])))
                .collect();

            // docs/reference.md, Decisions where tools differ: the best rank any
            // capture reached; the relevant ids that at least one capture
            // missed.
            row.first_rel_rank = graded
                .iter()
                .filter_map(|g| g.first_rel_rank)
                .min()
                .map(|r| r as f64);
            let missed: BTreeSet<&String> = graded.iter().flat_map(|g| &g.missed).collect();
            row.missing_at = join_ids(missed.into_iter().map(String::as_str));
        }
        Status::Missing | Status::Invalid => {
            row.n_results = None;
            row.latency_ms = None;
            row.context_tokens = None;
            row.answer_ok = None;
            // Scores 0 where it counts in the means; under --missing skip a
            // missing query has no score at all.
            let scored = status == Status::Invalid || !options.missing_skip;
            row.metrics = vec![scored.then_some(0.0); row.metrics.len()];
            row.judged = vec![scored.then_some(0.0); row.judged.len()];
            row.missing_at = join_ids(relevant.iter().copied());
        }
    }
    row
}

fn join_ids<'s>(ids: impl Iterator<Item = &'s str>) -> String {
    let sorted: BTreeSet<&str> = ids.collect();
    sorted.into_iter().collect::<Vec<_>>().join("|")
}

/// What the reference expects of one run of `rgrade grade`.
pub(super) struct Expected<'a> {
    pub(super) rows: Vec<QueryRow<'a>>,
    /// Origins of every rejected record.
    pub(super) rejected: BTreeSet<Origin>,
}

/// Group captures by (run, stage, query) and grade every labeled query
/// under every (run, stage) seen.
pub(super) fn reference<'a>(
    labels: &'a [Label],
    captures: &[Capture],
    options: &Options,
) -> Expected<'a> {
    // docs/reference.md, Decisions where tools differ: every (run, stage) of a
    // record that parses gets a row for each labeled query, labeled or not,
    // even when the record is then rejected (otherwise an `invalid` query
    // could not be reported).
    let mut pairs: BTreeSet<(String, String)> = captures
        .iter()
        .map(|c| (c.run.clone(), c.stage.clone()))
        .collect();
    if pairs.is_empty() {
        pairs.insert((String::new(), "final".to_string()));
    }
    let mut sorted_labels: Vec<&Label> = labels.iter().collect();
    sorted_labels.sort_by(|a, b| a.query_id.as_bytes().cmp(b.query_id.as_bytes()));

    let mut rejected = BTreeSet::new();
    let mut rows = Vec::new();
    for pair in &pairs {
        for label in &sorted_labels {
            let of_key: Vec<&Capture> = captures
                .iter()
                .filter(|c| (&c.run, &c.stage) == (&pair.0, &pair.1))
                .filter(|c| c.query_id == label.query_id)
                .collect();
            rows.push(query_row(pair, label, &of_key, options, &mut rejected));
        }
    }
    Expected { rows, rejected }
}

/// A query counts in the metric means (docs/reference.md, Metrics).
fn counted(row: &QueryRow, options: &Options) -> bool {
    match row.status {
        Status::Ok | Status::Invalid => true,
        Status::Missing => !options.missing_skip,
        Status::NoAnswer => false,
    }
}

// ---------------------------------------------------------------------------
// Expected tables, as cells.
// ---------------------------------------------------------------------------

/// An expected cell: exact text, or a number (None: the empty cell).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Cell {
    Text(String),
    Number(Option<f64>),
}

fn text(s: &str) -> Cell {
    Cell::Text(s.to_string())
}

fn count(n: usize) -> Cell {
    Cell::Number(Some(n as f64))
}

/// per_query.csv's header, its missing-evidence column named for the
/// deepest cutoff.
pub(super) fn per_query_header(options: &Options) -> Vec<String> {
    let deepest = options.ks.iter().max().copied().unwrap_or(Cutoff::At(1));
    util::per_query_header(&options.ks, deepest)
}

pub(super) fn per_query_table(rows: &[QueryRow]) -> Vec<Vec<Cell>> {
    rows.iter()
        .map(|row| {
            let mut cells = vec![
                text(&row.run),
                text(&row.stage),
                text(&row.label.query_id),
                text(row.label.task_name()),
                text(row.label.language_name()),
                text(if row.label.required == Some(true) {
                    "true"
                } else {
                    "false"
                }),
                text(row.status.name()),
                count(row.n_relevant),
                Cell::Number(row.n_results),
                Cell::Number(row.first_rel_rank),
                count(row.captures),
                Cell::Number(row.latency_ms),
                Cell::Number(row.context_tokens),
            ];
            cells.extend(row.metrics.iter().map(|&m| Cell::Number(m)));
            cells.push(text(&row.missing_at));
            // No generated record carries permission data: every graded
            // ranking has 0 unauthorized results.
            cells.push(Cell::Number(row.n_results.map(|_| 0.0)));
            cells.push(text(row.label.split_name()));
            cells.push(text(match row.answer_ok {
                Some(true) => "true",
                Some(false) => "false",
                None => "",
            }));
            cells.extend(row.judged.iter().map(|&j| Cell::Number(j)));
            cells
        })
        .collect()
}

/// One aggregates.csv row: the rows of a (run, stage) in one slice.
fn aggregate_row(
    (run, stage): (&str, &str),
    (split, task, language): (&str, &str, &str),
    rows: &[&QueryRow],
    options: &Options,
) -> Vec<Cell> {
    let with = |s: Status| count(rows.iter().filter(|r| r.status == s).count());
    let mut cells = vec![
        text(run),
        text(stage),
        text(task),
        text(language),
        count(rows.len()),
        with(Status::Ok),
        with(Status::Missing),
        with(Status::Invalid),
        with(Status::NoAnswer),
    ];
    let scored: Vec<&&QueryRow> = rows.iter().filter(|r| counted(r, options)).collect();
    for m in 0..metric_columns(&options.ks).len() {
        cells.push(Cell::Number(mean(
            scored.iter().map(|r| r.metrics[m].unwrap_or(0.0)),
        )));
    }
    // docs/reference.md, Decisions where tools differ: over the queries of the
    // slice that recorded a latency, whatever their status.
    let mut latencies: Vec<f64> = rows.iter().filter_map(|r| r.latency_ms).collect();
    latencies.sort_by(f64::total_cmp);
    for p in [0.5, 0.95, 0.99] {
        cells.push(Cell::Number(
            (!latencies.is_empty()).then(|| percentile(&latencies, p)),
        ));
    }
    cells.push(Cell::Number(mean(
        rows.iter().filter_map(|r| r.context_tokens),
    )));
    cells.push(count(0));
    cells.push(text(split));
    for k in 0..options.ks.len() {
        cells.push(Cell::Number(mean(
            scored.iter().map(|r| r.judged[k].unwrap_or(0.0)),
        )));
    }
    // The 95% interval's half-width, 1.96 s / √n, from the values' own
    // two-pass variance.
    for m in 0..metric_columns(&options.ks).len() {
        let values: Vec<f64> = scored.iter().map(|r| r.metrics[m].unwrap_or(0.0)).collect();
        let n = values.len() as f64;
        cells.push(Cell::Number((values.len() >= 2).then(|| {
            let mean = values.iter().sum::<f64>() / n;
            let squares: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
            1.959_963_984_540_054 * (squares / (n - 1.0) / n).sqrt()
        })));
    }
    cells
}

/// A (run, stage), a grouping set in it as (split, task, language), and
/// the rows of its queries.
type GroupingSet<'r, 'a> = (
    (&'r str, &'r str),
    (&'r str, &'r str, &'r str),
    Vec<&'r QueryRow<'a>>,
);

/// Per (run, stage): the overall set, then per task, per language and per
/// task × language, each sorted by name in byte order; then the same
/// within each split, when the key names splits.
fn grouping_sets<'r, 'a>(rows: &'r [QueryRow<'a>]) -> Vec<GroupingSet<'r, 'a>> {
    let pairs: BTreeSet<(&str, &str)> = rows
        .iter()
        .map(|r| (r.run.as_str(), r.stage.as_str()))
        .collect();
    let mut sets = Vec::new();
    for pair in pairs {
        let of_pair: Vec<&QueryRow> = rows
            .iter()
            .filter(|r| (r.run.as_str(), r.stage.as_str()) == pair)
            .collect();
        // Every split (`*`), then each split by name: only when the key
        // names a split at all.
        let mut splits = vec!["*"];
        if of_pair.iter().any(|r| r.label.split.is_some()) {
            let named: BTreeSet<&str> = of_pair.iter().map(|r| r.label.split_name()).collect();
            splits.extend(named);
        }
        for split in splits {
            let in_split: Vec<&QueryRow> = of_pair
                .iter()
                .copied()
                .filter(|r| split == "*" || r.label.split_name() == split)
                .collect();
            let tasks: BTreeSet<&str> = in_split.iter().map(|r| r.label.task_name()).collect();
            let languages: BTreeSet<&str> =
                in_split.iter().map(|r| r.label.language_name()).collect();
            let both: BTreeSet<(&str, &str)> = in_split
                .iter()
                .map(|r| (r.label.task_name(), r.label.language_name()))
                .collect();
            let mut slices = vec![("*", "*")];
            slices.extend(tasks.into_iter().map(|t| (t, "*")));
            slices.extend(languages.into_iter().map(|l| ("*", l)));
            slices.extend(both);
            for (task, language) in slices {
                let members: Vec<&QueryRow> = in_split
                    .iter()
                    .copied()
                    .filter(|r| task == "*" || r.label.task_name() == task)
                    .filter(|r| language == "*" || r.label.language_name() == language)
                    .collect();
                sets.push((pair, (split, task, language), members));
            }
        }
    }
    sets
}

/// aggregates.csv: one row per grouping set.
pub(super) fn aggregates_table(rows: &[QueryRow], options: &Options) -> Vec<Vec<Cell>> {
    grouping_sets(rows)
        .into_iter()
        .map(|(pair, set, members)| aggregate_row(pair, set, &members, options))
        .collect()
}

/// attribution.csv: per grouping set, the answered queries (ok, with an
/// outcome) split by whether recall at the deepest cutoff is 1.
pub(super) fn attribution_table(rows: &[QueryRow], options: &Options) -> Vec<Vec<Cell>> {
    let deepest = (0..options.ks.len())
        .max_by_key(|&i| options.ks[i])
        .unwrap_or(0);
    let recall_column = deepest * 6;
    grouping_sets(rows)
        .into_iter()
        .map(|((run, stage), (split, task, language), members)| {
            let answered: Vec<(bool, bool)> = members
                .iter()
                .filter(|r| r.status == Status::Ok)
                .filter_map(|r| {
                    let all_evidence = r.metrics[recall_column].is_some_and(|v| v >= 1.0);
                    r.answer_ok.map(|ok| (ok, all_evidence))
                })
                .collect();
            let with = |want: fn(&(bool, bool)) -> bool| {
                count(answered.iter().filter(|a| want(a)).count())
            };
            vec![
                text(run),
                text(stage),
                text(task),
                text(language),
                text(split),
                count(answered.len()),
                with(|&(ok, _)| ok),
                with(|&(ok, all)| !ok && !all),
                with(|&(ok, all)| !ok && all),
                with(|&(ok, all)| ok && !all),
            ]
        })
        .collect()
}
