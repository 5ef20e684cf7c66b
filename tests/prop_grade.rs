//! The whole grade path against a naive reference model, on random inputs.
//!
//! Each case generates an answer key and captured logs (JSONL or TREC run),
//! writes them to a scratch directory, runs `rgrade grade` in-process through
//! [`rgrade::cmd::grade::run`], reads `per_query.csv`, `aggregates.csv` and
//! `rejects.jsonl` back and compares every cell with a reference written from
//! docs/guide.md (Input formats, Metrics, Outputs): one plain loop per (run,
//! stage, query) over explicit rankings, no indexes, no hashing tricks, no
//! shared code with `src/`.
//!
//! Where the definitions leave a choice open the reference follows
//! docs/guide.md, Decisions where tools differ, and says so in a comment; on a
//! mismatch the failure prints the input files, the command line and every
//! differing cell.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser as _;
use proptest::collection::{btree_map, btree_set, vec};
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::{select, subsequence, Index};
use proptest::test_runner::TestCaseError;
use rgrade::cli::{Cli, Command};
use serde_json::{json, Map, Value};

use crate::util::{self, aggregates_header, Workdir, METRICS};

// ---------------------------------------------------------------------------
// Vocabulary the generators draw from.
// ---------------------------------------------------------------------------

/// Query ids that may be labeled. `q10` sorts before `q2` and `42`/`Q3`
/// before both in byte order; `42` may be written as a JSON integer.
const LABELABLE_QUERIES: &[&str] = &["q0", "q1", "q2", "q10", "42", "Q3"];
/// A query id that is never labeled (logs also reuse unchosen labelable ids).
const UNLABELED_QUERY: &str = "u0";
/// Doc ids: `d10` sorts before `d2`, `D4` before all `d*`, `d#1` carries a
/// `#` (not a comment in TREC), `7` may be written as a JSON integer.
const DOCS: &[&str] = &["d0", "d1", "d2", "d3", "d10", "d#1", "D4", "7"];
/// Slice values; `Zeta` sorts before `faq` in byte order, `(none)` before all.
const TASKS: &[&str] = &["faq", "howto", "Zeta"];
/// Languages; `de` sorts before `en`.
const LANGUAGES: &[&str] = &["en", "de"];
/// Cutoffs; 20 is beyond every generated ranking.
const CUTOFFS: &[usize] = &[1, 2, 3, 5, 20];
/// TREC scores, few enough that ties are common.
const SCORES: &[f64] = &[-1.0, 0.0, 0.5, 1.0, 1.5, 2.5];
/// Absolute and relative tolerance for numeric cells.
const TOLERANCE: f64 = 1e-9;

// ---------------------------------------------------------------------------
// Generated inputs.
// ---------------------------------------------------------------------------

/// One labeled query of the answer key.
#[derive(Debug, Clone)]
struct Label {
    query_id: String,
    /// Doc id → grade; a `relevant` array gives grade 1 to each doc.
    grades: BTreeMap<String, i64>,
    /// Written as an array of doc ids rather than an object of grades.
    as_array: bool,
    task: Option<String>,
    language: Option<String>,
    required: Option<bool>,
}

impl Label {
    /// The relevant set R of docs/guide.md, Metrics: grade >= min-rel.
    fn relevant(&self, min_rel: i64) -> BTreeSet<&str> {
        self.grades
            .iter()
            .filter(|(_, &grade)| grade >= min_rel)
            .map(|(doc, _)| doc.as_str())
            .collect()
    }

    /// The nDCG gain of a doc: its raw grade whatever `--min-rel` says;
    /// zero and negative grades (and unjudged docs) add nothing
    /// (docs/guide.md, Decisions where tools differ).
    fn gain(&self, doc: &str) -> f64 {
        self.grades.get(doc).map_or(0.0, |&g| g.max(0) as f64)
    }

    fn task_name(&self) -> &str {
        self.task.as_deref().unwrap_or("(none)")
    }

    fn language_name(&self) -> &str {
        self.language.as_deref().unwrap_or("(none)")
    }
}

/// How one result of a JSONL ranking is written.
#[derive(Debug, Clone, Copy)]
enum ResultForm {
    /// `"d1"`
    Text,
    /// `7` (only for a doc id that is an integer; otherwise written as text)
    Integer,
    /// `{"doc_id": "d1", "score": …}`
    DocIdObject,
    /// `{"id": "d1"}`
    IdObject,
}

/// One JSONL search event.
#[derive(Debug, Clone)]
struct JsonEvent {
    query_id: String,
    /// `None`: the key is absent (run ""); `Some("")` is the same run.
    run: Option<&'static str>,
    /// `None`: the key is absent (stage "final").
    stage: Option<&'static str>,
    results: Vec<(String, ResultForm)>,
    latency_ms: Option<f64>,
    context_tokens: Option<u32>,
}

/// One line of a TREC run: `query_id Q0 doc_id rank score tag`.
#[derive(Debug, Clone)]
struct TrecLine {
    query_id: String,
    doc_id: String,
    rank: u32,
    score: f64,
    tag: &'static str,
    separator: &'static str,
    /// Fields after the sixth, which are ignored.
    trailing: bool,
}

/// The logs of one case, split over files in the order given.
#[derive(Debug, Clone)]
enum Logs {
    Jsonl(Vec<Vec<JsonEvent>>),
    Trec(Vec<Vec<TrecLine>>),
}

/// The grading options of one case.
#[derive(Debug, Clone)]
struct Options {
    ks: Vec<usize>,
    missing_skip: bool,
    repeats: Repeats,
    dedupe: bool,
    min_rel: i64,
    threads: usize,
}

/// `--repeats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repeats {
    Error,
    First,
    Last,
    Mean,
}

impl Repeats {
    /// Every policy.
    const ALL: [Self; 4] = [Self::Error, Self::First, Self::Last, Self::Mean];
    /// The policies that grade one capture and set the others aside.
    const ONE_OF_SEVERAL: [Self; 2] = [Self::First, Self::Last];
    /// The policies that use every capture of a key.
    const EVERY_CAPTURE: [Self; 2] = [Self::Error, Self::Mean];

    fn name(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::First => "first",
            Self::Last => "last",
            Self::Mean => "mean",
        }
    }
}

/// One generated grading problem.
#[derive(Debug, Clone)]
struct Scenario {
    labels: Vec<Label>,
    logs: Logs,
    options: Options,
}

// ---------------------------------------------------------------------------
// Strategies.
// ---------------------------------------------------------------------------

fn slice_value(values: &'static [&'static str]) -> impl Strategy<Value = Option<String>> {
    weighted(0.7, select(values).prop_map(str::to_string))
}

/// Judgments: a plain array of relevant ids, or graded -1..=3.
fn judgments() -> impl Strategy<Value = (BTreeMap<String, i64>, bool)> {
    prop_oneof![
        btree_set(select(DOCS), 0..=3).prop_map(|docs| {
            let grades = docs.into_iter().map(|d| (d.to_string(), 1)).collect();
            (grades, true)
        }),
        btree_map(select(DOCS).prop_map(str::to_string), -1i64..=3, 0..=5)
            .prop_map(|grades| (grades, false)),
    ]
}

/// An answer key of 1–6 distinct queries (some end up no-answer).
fn labels() -> impl Strategy<Value = Vec<Label>> {
    let body = (
        judgments(),
        slice_value(TASKS),
        slice_value(LANGUAGES),
        weighted(0.6, any::<bool>()),
    );
    (
        subsequence(LABELABLE_QUERIES.to_vec(), 1..=LABELABLE_QUERIES.len()).prop_shuffle(),
        vec(body, LABELABLE_QUERIES.len()),
    )
        .prop_map(|(ids, bodies)| {
            ids.into_iter()
                .zip(bodies)
                .map(
                    |(id, ((grades, as_array), task, language, required))| Label {
                        query_id: id.to_string(),
                        grades,
                        as_array,
                        task,
                        language,
                        required,
                    },
                )
                .collect()
        })
}

/// A query id as logs carry it: labeled, unchosen-labelable or never labeled.
fn logged_query() -> impl Strategy<Value = String> {
    let mut all = LABELABLE_QUERIES.to_vec();
    all.push(UNLABELED_QUERY);
    select(all).prop_map(str::to_string)
}

/// A ranking of 0–6 distinct docs, sometimes with one doc repeated.
fn ranking() -> impl Strategy<Value = Vec<String>> {
    (
        subsequence(DOCS.to_vec(), 0..=6).prop_shuffle(),
        weighted(0.3, (any::<Index>(), any::<Index>())),
    )
        .prop_map(|(docs, duplicate)| {
            let mut docs: Vec<String> = docs.into_iter().map(str::to_string).collect();
            if let (Some((which, at)), false) = (duplicate, docs.is_empty()) {
                let doc = docs[which.index(docs.len())].clone();
                docs.insert(at.index(docs.len() + 1), doc);
            }
            docs
        })
}

fn result_form() -> impl Strategy<Value = ResultForm> {
    select(vec![
        ResultForm::Text,
        ResultForm::Integer,
        ResultForm::DocIdObject,
        ResultForm::IdObject,
    ])
}

/// A JSONL event; absent and explicit default run/stage share a key, so
/// repeated captures are frequent.
fn json_event() -> impl Strategy<Value = JsonEvent> {
    (
        logged_query(),
        select(vec![None, Some(""), Some("r1")]),
        select(vec![None, Some("final"), Some("retrieve")]),
        ranking().prop_flat_map(|docs| {
            let n = docs.len();
            (Just(docs), vec(result_form(), n))
        }),
        weighted(0.8, (0u32..2000).prop_map(|q| f64::from(q) / 4.0)),
        weighted(0.5, 0u32..5000),
    )
        .prop_map(
            |(query_id, run, stage, (docs, forms), latency_ms, context_tokens)| JsonEvent {
                query_id,
                run,
                stage,
                results: docs.into_iter().zip(forms).collect(),
                latency_ms,
                context_tokens,
            },
        )
}

fn trec_line() -> impl Strategy<Value = TrecLine> {
    (
        logged_query(),
        select(DOCS),
        0u32..10,
        select(SCORES),
        select(vec!["r1", "r2"]),
        select(vec![" ", "\t", "   "]),
        weighted(0.2, Just(())),
    )
        .prop_map(
            |(query_id, doc_id, rank, score, tag, separator, trailing)| TrecLine {
                query_id,
                doc_id: doc_id.to_string(),
                rank,
                score,
                tag,
                separator,
                trailing: trailing.is_some(),
            },
        )
}

/// Grading options, `--repeats` drawn from `policies`.
fn options(policies: &[Repeats]) -> impl Strategy<Value = Options> {
    (
        subsequence(CUTOFFS.to_vec(), 1..=3).prop_shuffle(),
        any::<bool>(),
        select(policies.to_vec()),
        any::<bool>(),
        1i64..=3,
        1usize..=2,
    )
        .prop_map(
            |(ks, missing_skip, repeats, dedupe, min_rel, threads)| Options {
                ks,
                missing_skip,
                repeats,
                dedupe,
                min_rel,
                threads,
            },
        )
}

/// JSONL logs in 1–3 non-empty files of up to `per_file` events each.
fn jsonl_logs(per_file: usize) -> impl Strategy<Value = Logs> {
    vec(vec(json_event(), 1..=per_file), 1..=3).prop_map(Logs::Jsonl)
}

/// TREC runs in 1–3 non-empty files of up to `per_file` lines each.
fn trec_logs(per_file: usize) -> impl Strategy<Value = Logs> {
    vec(vec(trec_line(), 1..=per_file), 1..=3).prop_map(Logs::Trec)
}

/// An answer key, logs and options, `--repeats` drawn from `policies`.
fn scenario(
    logs: impl Strategy<Value = Logs>,
    policies: &[Repeats],
) -> impl Strategy<Value = Scenario> {
    (labels(), logs, options(policies)).prop_map(|(labels, logs, options)| Scenario {
        labels,
        logs,
        options,
    })
}

// ---------------------------------------------------------------------------
// Rendering the inputs as files.
// ---------------------------------------------------------------------------

/// An id as JSON: an integer when it is one and `as_integer` asks for it.
fn id_value(id: &str, as_integer: bool) -> Value {
    match id.parse::<u64>() {
        Ok(n) if as_integer => Value::from(n),
        _ => Value::from(id),
    }
}

fn label_line(label: &Label) -> String {
    let mut object = Map::new();
    // The integer query id `42` is written as a JSON integer.
    object.insert("query_id".into(), id_value(&label.query_id, true));
    let relevant = if label.as_array {
        Value::from(label.grades.keys().cloned().collect::<Vec<_>>())
    } else {
        json!(label.grades)
    };
    object.insert("relevant".into(), relevant);
    // An absent slice is sometimes written as null (the same thing).
    for (key, value) in [("task", &label.task), ("language", &label.language)] {
        let value = match value {
            Some(v) => Value::from(v.as_str()),
            None if label.as_array => Value::Null,
            None => continue,
        };
        object.insert(key.into(), value);
    }
    if let Some(required) = label.required {
        object.insert("required".into(), Value::from(required));
    }
    object.insert("note".into(), Value::from("ignored"));
    Value::Object(object).to_string()
}

fn json_event_line(event: &JsonEvent, ordinal: usize) -> String {
    let mut object = Map::new();
    // Alternate string and integer forms of the integer query id.
    object.insert(
        "query_id".into(),
        id_value(&event.query_id, ordinal.is_multiple_of(2)),
    );
    if let Some(run) = event.run {
        object.insert("run".into(), Value::from(run));
    }
    if let Some(stage) = event.stage {
        object.insert("stage".into(), Value::from(stage));
    }
    let results: Vec<Value> = event
        .results
        .iter()
        .enumerate()
        .map(|(i, (doc, form))| match form {
            ResultForm::Text => Value::from(doc.as_str()),
            ResultForm::Integer => id_value(doc, true),
            // Scores increase down the ranking: the order must not be re-sorted.
            ResultForm::DocIdObject => json!({"doc_id": doc, "score": i as f64 * 0.5}),
            ResultForm::IdObject => json!({"id": doc}),
        })
        .collect();
    object.insert("results".into(), Value::from(results));
    if let Some(latency) = event.latency_ms {
        object.insert("latency_ms".into(), Value::from(latency));
    }
    if let Some(tokens) = event.context_tokens {
        object.insert("context_tokens".into(), Value::from(tokens));
    }
    Value::Object(object).to_string()
}

fn trec_run_line(line: &TrecLine) -> String {
    let fields = [
        line.query_id.clone(),
        "Q0".to_string(),
        line.doc_id.clone(),
        line.rank.to_string(),
        line.score.to_string(),
        line.tag.to_string(),
    ];
    let mut text = fields.join(line.separator);
    if line.trailing {
        text.push_str(" ignored trailing");
    }
    text
}

/// The files of a scenario: (file name, contents), labels first.
fn render(scenario: &Scenario) -> (String, Vec<(String, String)>) {
    let labels: String = scenario
        .labels
        .iter()
        .map(|l| label_line(l) + "\n")
        .collect();
    let logs = match &scenario.logs {
        Logs::Jsonl(files) => files
            .iter()
            .enumerate()
            .map(|(f, events)| {
                let text = events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| json_event_line(e, f + i) + "\n")
                    .collect();
                (format!("logs{f}.jsonl"), text)
            })
            .collect(),
        Logs::Trec(files) => files
            .iter()
            .enumerate()
            .map(|(f, lines)| {
                let text = lines.iter().map(|l| trec_run_line(l) + "\n").collect();
                (format!("run{f}.trec"), text)
            })
            .collect(),
    };
    (labels, logs)
}

// ---------------------------------------------------------------------------
// The reference model.
// ---------------------------------------------------------------------------

/// Where a record came from: (index of the log file as given, 1-based line).
type Origin = (usize, usize);

/// One capture: a ranking a run returned for a query at a stage.
#[derive(Debug, Clone)]
struct Capture {
    run: String,
    stage: String,
    query_id: String,
    /// In ranked order, duplicates and all.
    ranking: Vec<String>,
    latency_ms: Option<f64>,
    context_tokens: Option<f64>,
    /// The log lines it was read from (one for JSONL, a group for TREC).
    origins: Vec<Origin>,
}

/// The captures of the logs in input order: files in the order given, then
/// line number (docs/guide.md, Input formats).
fn captures(logs: &Logs) -> Vec<Capture> {
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
                    origins: vec![(f, i + 1)],
                })
            })
            .collect(),
        Logs::Trec(files) => trec_captures(files),
    }
}

/// TREC lines grouped by (tag, query_id) across every file; each group is
/// ranked by score descending, ties by doc id descending in byte order,
/// like trec_eval (docs/guide.md, Input formats). The tag is the run, the
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
                origins: lines.iter().map(|&(_, origin)| origin).collect(),
            }
        })
        .collect()
}

/// A per-query status (docs/guide.md, Metrics).
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
struct QueryRow<'a> {
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
    /// Six values per cutoff, in the order of `-k`, then of [`METRICS`].
    metrics: Vec<Option<f64>>,
    missing_at: String,
}

/// What one graded ranking scores.
struct Graded {
    /// Six values per cutoff, as in [`QueryRow::metrics`].
    metrics: Vec<f64>,
    first_rel_rank: Option<usize>,
    /// Relevant ids not in the top k for the largest k.
    missed: BTreeSet<String>,
}

/// docs/guide.md, Metrics, for one ranking, straight from the definitions.
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
    for &k in &options.ks {
        let top = &ranking[..k.min(ranking.len())];
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
            .take(k)
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
        metrics.extend([
            found / n_rel,
            rr,
            if found > 0.0 { 1.0 } else { 0.0 },
            found / k as f64,
            dcg / idcg,
            ap / n_rel,
        ]);
    }
    let deepest = options.ks.iter().copied().max().unwrap_or(1);
    let top = &ranking[..deepest.min(ranking.len())];
    Graded {
        metrics,
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

    let relevant = label.relevant(options.min_rel);
    let status = if relevant.is_empty() {
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
        metrics: vec![None; METRICS.len() * options.ks.len()],
        missing_at: String::new(),
    };
    // Facts of the graded capture(s), averaged under --repeats mean over those
    // that have a value (docs/guide.md, Decisions where tools differ), for ok
    // and no_answer alike.
    row.n_results = mean(chosen.iter().map(|(_, r)| r.len() as f64));
    row.latency_ms = mean(chosen.iter().filter_map(|(c, _)| c.latency_ms));
    row.context_tokens = mean(chosen.iter().filter_map(|(c, _)| c.context_tokens));
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
            // docs/guide.md, Decisions where tools differ: the best rank any
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
            // Scores 0 where it counts in the means; under --missing skip a
            // missing query has no score at all.
            let scored = status == Status::Invalid || !options.missing_skip;
            row.metrics = vec![scored.then_some(0.0); row.metrics.len()];
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
struct Expected<'a> {
    rows: Vec<QueryRow<'a>>,
    /// Origins of every rejected record.
    rejected: BTreeSet<Origin>,
}

/// Group captures by (run, stage, query) and grade every labeled query
/// under every (run, stage) seen.
fn reference<'a>(labels: &'a [Label], captures: &[Capture], options: &Options) -> Expected<'a> {
    // docs/guide.md, Decisions where tools differ: every (run, stage) of a
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

/// A query counts in the metric means (docs/guide.md, Metrics).
fn counted(row: &QueryRow, options: &Options) -> bool {
    match row.status {
        Status::Ok | Status::Invalid => true,
        Status::Missing => !options.missing_skip,
        Status::NoAnswer => false,
    }
}

/// Linear interpolation between closest ranks (numpy's default).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

// ---------------------------------------------------------------------------
// Expected tables, as cells.
// ---------------------------------------------------------------------------

/// An expected cell: exact text, or a number (None: the empty cell).
#[derive(Debug, Clone, PartialEq)]
enum Cell {
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
fn per_query_header(options: &Options) -> Vec<String> {
    let deepest = options.ks.iter().max().copied().unwrap_or(1);
    util::per_query_header(&options.ks, deepest)
}

fn per_query_table(rows: &[QueryRow]) -> Vec<Vec<Cell>> {
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
            cells
        })
        .collect()
}

/// One aggregates.csv row: the rows of a (run, stage) in one slice.
fn aggregate_row(
    (run, stage): (&str, &str),
    (task, language): (&str, &str),
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
    for m in 0..METRICS.len() * options.ks.len() {
        cells.push(Cell::Number(mean(
            scored.iter().map(|r| r.metrics[m].unwrap_or(0.0)),
        )));
    }
    // docs/guide.md, Decisions where tools differ: over the queries of the
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
    cells
}

/// Per (run, stage): the overall row, then per task, per language and per
/// task × language, each sorted by name in byte order.
fn aggregates_table(rows: &[QueryRow], options: &Options) -> Vec<Vec<Cell>> {
    let pairs: BTreeSet<(&str, &str)> = rows
        .iter()
        .map(|r| (r.run.as_str(), r.stage.as_str()))
        .collect();
    let mut table = Vec::new();
    for pair in pairs {
        let of_pair: Vec<&QueryRow> = rows
            .iter()
            .filter(|r| (r.run.as_str(), r.stage.as_str()) == pair)
            .collect();
        let tasks: BTreeSet<&str> = of_pair.iter().map(|r| r.label.task_name()).collect();
        let languages: BTreeSet<&str> = of_pair.iter().map(|r| r.label.language_name()).collect();
        let both: BTreeSet<(&str, &str)> = of_pair
            .iter()
            .map(|r| (r.label.task_name(), r.label.language_name()))
            .collect();
        let mut slices = vec![("*", "*")];
        slices.extend(tasks.into_iter().map(|t| (t, "*")));
        slices.extend(languages.into_iter().map(|l| ("*", l)));
        slices.extend(both);
        for (task, language) in slices {
            let members: Vec<&QueryRow> = of_pair
                .iter()
                .copied()
                .filter(|r| task == "*" || r.label.task_name() == task)
                .filter(|r| language == "*" || r.label.language_name() == language)
                .collect();
            table.push(aggregate_row(pair, (task, language), &members, options));
        }
    }
    table
}

// ---------------------------------------------------------------------------
// Running rgrade and reading its outputs.
// ---------------------------------------------------------------------------

/// The written inputs of a scenario and how to describe them on failure.
struct Written {
    labels: PathBuf,
    logs: Vec<PathBuf>,
    description: String,
}

fn write_inputs(scenario: &Scenario, dir: &Path) -> Written {
    let (labels_text, logs) = render(scenario);
    let labels = dir.join("labels.jsonl");
    std::fs::write(&labels, &labels_text).expect("write labels");
    let mut description = format!("--- labels.jsonl\n{labels_text}");
    let logs = logs
        .into_iter()
        .map(|(name, contents)| {
            let path = dir.join(&name);
            std::fs::write(&path, &contents).expect("write log");
            let _ = write!(description, "--- {name}\n{contents}");
            path
        })
        .collect();
    Written {
        labels,
        logs,
        description,
    }
}

/// The command line for a scenario, writing into `out`.
fn command_line(written: &Written, options: &Options, threads: usize, out: &Path) -> Vec<String> {
    let ks: Vec<String> = options.ks.iter().map(usize::to_string).collect();
    let mut args: Vec<String> = vec![
        "rgrade".into(),
        "grade".into(),
        "-q".into(),
        "--progress".into(),
        "never".into(),
        "--labels".into(),
        written.labels.display().to_string(),
        "-k".into(),
        ks.join(","),
        "-o".into(),
        out.display().to_string(),
        "--missing".into(),
        (if options.missing_skip { "skip" } else { "fail" }).into(),
        "--repeats".into(),
        options.repeats.name().into(),
        "--duplicate-docs".into(),
        (if options.dedupe { "dedupe" } else { "reject" }).into(),
        "--min-rel".into(),
        options.min_rel.to_string(),
        "-j".into(),
        threads.to_string(),
    ];
    args.extend(written.logs.iter().map(|p| p.display().to_string()));
    args
}

/// Run the whole grade path in-process; the exit status as a number.
fn grade(command: &[String]) -> Result<u8, String> {
    let cli = Cli::try_parse_from(command).map_err(|e| format!("usage error: {e}"))?;
    let Command::Grade(args) = cli.command else {
        return Err("expected the grade subcommand".into());
    };
    let code = rgrade::cmd::grade::run(&args, command.to_vec())
        .map_err(|e| format!("grade failed: {e:#}"))?;
    [0u8, 1, 2]
        .into_iter()
        .find(|&n| code == ExitCode::from(n))
        .ok_or_else(|| format!("unexpected exit code {code:?}"))
}

/// A CSV file as rows of cells, header included.
fn read_csv(path: &Path) -> Result<Vec<Vec<String>>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    reader
        .records()
        .map(|r| {
            r.map(|r| r.iter().map(str::to_string).collect())
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

/// The (file index, line) of every record in rejects.jsonl.
fn read_rejects(path: &Path, logs: &[PathBuf]) -> Result<BTreeSet<Origin>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let value: Value = serde_json::from_str(line).map_err(|e| format!("{line}: {e}"))?;
            let file = value["file"].as_str().unwrap_or_default();
            let index = logs
                .iter()
                .position(|p| p.display().to_string() == file)
                .ok_or_else(|| format!("reject names an unknown file: {line}"))?;
            let number = value["line"].as_u64().ok_or(format!("no line: {line}"))?;
            Ok((index, number as usize))
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Comparing.
// ---------------------------------------------------------------------------

fn numbers_agree(expected: f64, got: f64) -> bool {
    (expected - got).abs() <= TOLERANCE * expected.abs().max(got.abs()).max(1.0)
}

fn cell_agrees(expected: &Cell, got: &str) -> bool {
    match expected {
        Cell::Text(t) => t == got,
        Cell::Number(None) => got.is_empty(),
        Cell::Number(Some(x)) => got.parse::<f64>().is_ok_and(|g| numbers_agree(*x, g)),
    }
}

fn show(cell: &Cell) -> String {
    match cell {
        Cell::Text(t) => format!("{t:?}"),
        Cell::Number(None) => "(empty)".into(),
        Cell::Number(Some(x)) => x.to_string(),
    }
}

/// Every difference between an expected and a written table, one per line,
/// naming the row by its first `key_columns` cells and the column by name.
fn table_differences(
    file: &str,
    header: &[String],
    expected: &[Vec<Cell>],
    got: &[Vec<String>],
    key_columns: usize,
) -> Vec<String> {
    let mut differences = Vec::new();
    match got.first() {
        Some(got_header) if got_header.as_slice() == header => {}
        other => differences.push(format!(
            "{file}: header\n  expected {header:?}\n  got      {other:?}"
        )),
    }
    let got_rows = got.get(1..).unwrap_or_default();
    if got_rows.len() != expected.len() {
        let keys = |cells: Vec<String>| cells[..key_columns.min(cells.len())].join(",");
        differences.push(format!(
            "{file}: {} rows expected, {} written\n  expected keys {:?}\n  written keys  {:?}",
            expected.len(),
            got_rows.len(),
            expected
                .iter()
                .map(|r| keys(r.iter().map(show).collect()))
                .collect::<Vec<_>>(),
            got_rows.iter().map(|r| keys(r.clone())).collect::<Vec<_>>(),
        ));
    }
    for (want, have) in expected.iter().zip(got_rows) {
        let key = have[..key_columns.min(have.len())].join(", ");
        if have.len() != want.len() {
            differences.push(format!(
                "{file} [{key}]: {} cells, expected {}",
                have.len(),
                want.len()
            ));
            continue;
        }
        for ((column, cell), value) in header.iter().zip(want).zip(have) {
            if !cell_agrees(cell, value) {
                differences.push(format!(
                    "{file} [{key}] {column}: expected {}, got {value:?}",
                    show(cell)
                ));
            }
        }
    }
    differences
}

/// Grade `scenario` with rgrade and with the reference; describe every
/// difference (with the inputs and command line) if there is any.
fn check_against_reference(scenario: &Scenario) -> Result<(), String> {
    let scratch = Workdir::new("prop_grade");
    let written = write_inputs(scenario, scratch.root());
    let out = scratch.path("out");
    let command = command_line(&written, &scenario.options, scenario.options.threads, &out);
    let context = || {
        format!(
            "{}--- command\n{}\n",
            written.description,
            command.join(" ")
        )
    };
    let status = grade(&command).map_err(|e| format!("{e}\n{}", context()))?;

    let captures = captures(&scenario.logs);
    let expected = reference(&scenario.labels, &captures, &scenario.options);
    let options = &scenario.options;
    let mut differences = table_differences(
        "per_query.csv",
        &per_query_header(options),
        &per_query_table(&expected.rows),
        &read_csv(&out.join("per_query.csv"))?,
        3,
    );
    differences.extend(table_differences(
        "aggregates.csv",
        &aggregates_header(&options.ks),
        &aggregates_table(&expected.rows, options),
        &read_csv(&out.join("aggregates.csv"))?,
        4,
    ));
    let rejected = read_rejects(&out.join("rejects.jsonl"), &written.logs)?;
    if rejected != expected.rejected {
        differences.push(format!(
            "rejects.jsonl (file index, line): expected {:?}, got {rejected:?}",
            expected.rejected
        ));
    }
    let expected_status = u8::from(!expected.rejected.is_empty());
    if status != expected_status {
        differences.push(format!(
            "exit status: expected {expected_status}, got {status}"
        ));
    }
    if differences.is_empty() {
        return Ok(());
    }
    differences.truncate(40);
    Err(format!("{}\n{}", differences.join("\n"), context()))
}

/// Grade `scenario` with -j 1 and -j 2; the outputs must be byte-identical.
fn check_thread_independence(scenario: &Scenario) -> Result<(), String> {
    let scratch = Workdir::new("prop_grade");
    let written = write_inputs(scenario, scratch.root());
    let mut outputs = Vec::new();
    for threads in [1, 2] {
        let out = scratch.path(&format!("out-j{threads}"));
        let command = command_line(&written, &scenario.options, threads, &out);
        let status = grade(&command).map_err(|e| format!("{e}\n{}", written.description))?;
        let files: Vec<Vec<u8>> = ["per_query.csv", "aggregates.csv", "rejects.jsonl"]
            .iter()
            .map(|name| std::fs::read(out.join(name)).unwrap_or_default())
            .collect();
        outputs.push((status, files, command.join(" ")));
    }
    let (one, two) = (&outputs[0], &outputs[1]);
    let mut differences = Vec::new();
    if one.0 != two.0 {
        differences.push(format!(
            "exit status: -j 1 gives {}, -j 2 gives {}",
            one.0, two.0
        ));
    }
    for (name, (a, b)) in ["per_query.csv", "aggregates.csv", "rejects.jsonl"]
        .iter()
        .zip(one.1.iter().zip(&two.1))
    {
        if a != b {
            differences.push(format!(
                "{name} differs\n--- -j 1\n{}\n--- -j 2\n{}",
                String::from_utf8_lossy(a),
                String::from_utf8_lossy(b)
            ));
        }
    }
    if differences.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}\n{}--- command\n{}\n",
        differences.join("\n"),
        written.description,
        one.2
    ))
}

// ---------------------------------------------------------------------------
// The properties.
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// JSONL logs (results as strings, integers, `doc_id` and `id` objects,
    /// split over 1–3 files, with repeated captures, duplicate docs, empty
    /// rankings and unlabeled queries) under `--repeats error|mean`: every
    /// cell of per_query.csv and aggregates.csv matches the reference
    /// within 1e-9, rejects.jsonl lists exactly the records the reference
    /// rejects, and the exit status says whether there was any.
    #[test]
    fn jsonl_logs_grade_like_the_reference(
        scenario in scenario(jsonl_logs(5), &Repeats::EVERY_CAPTURE)
    ) {
        check_against_reference(&scenario).map_err(TestCaseError::fail)?;
    }

    /// The same promise under `--repeats first|last`: the capture graded is
    /// the first (last) valid one in input order, and `captures` still
    /// counts every capture of the key, superseded ones included
    /// (docs/guide.md, Outputs).
    #[test]
    fn jsonl_logs_under_first_or_last_grade_like_the_reference(
        scenario in scenario(jsonl_logs(5), &Repeats::ONE_OF_SEVERAL)
    ) {
        check_against_reference(&scenario).map_err(TestCaseError::fail)?;
    }

    /// TREC runs (score ties ranked by doc id descending, whitespace of any
    /// kind, trailing fields, one ranking per (tag, query) across files,
    /// duplicate docs rejecting every line of their ranking): the same
    /// promise as for JSONL.
    #[test]
    fn trec_runs_grade_like_the_reference(
        scenario in scenario(trec_logs(10), &Repeats::ALL)
    ) {
        check_against_reference(&scenario).map_err(TestCaseError::fail)?;
    }

    /// The thread count never shows in the outputs: `-j 1` and `-j 2` write
    /// byte-identical per_query.csv, aggregates.csv and rejects.jsonl and
    /// exit alike.
    #[test]
    fn thread_count_does_not_change_outputs(
        scenario in scenario(prop_oneof![jsonl_logs(60), trec_logs(60)], &Repeats::ALL)
    ) {
        check_thread_independence(&scenario).map_err(TestCaseError::fail)?;
    }
}
