//! The random inputs of the grade properties: the vocabulary they draw from,
//! an answer key, JSONL or TREC logs and grading options as data, the
//! proptest strategies that generate them, and their rendering as files.

use std::collections::{BTreeMap, BTreeSet};

use proptest::collection::{btree_map, btree_set, vec};
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::{select, subsequence, Index};
use rgrade::Cutoff;
use serde_json::{json, Map, Value};

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
/// Held-out splits, when a key uses them.
const SPLITS: &[&str] = &["test", "dev"];
/// Cutoffs; 20 is beyond every generated ranking, `all` reads it whole.
const CUTOFFS: &[Cutoff] = &[
    Cutoff::At(1),
    Cutoff::At(2),
    Cutoff::At(3),
    Cutoff::At(5),
    Cutoff::At(20),
    Cutoff::All,
];
/// TREC scores, few enough that ties are common.
const SCORES: &[f64] = &[-1.0, 0.0, 0.5, 1.0, 1.5, 2.5];

// ---------------------------------------------------------------------------
// Generated inputs.
// ---------------------------------------------------------------------------

/// One labeled query of the answer key.
#[derive(Debug, Clone)]
pub(super) struct Label {
    pub(super) query_id: String,
    /// Doc id → grade; a `relevant` array gives grade 1 to each doc.
    pub(super) grades: BTreeMap<String, i64>,
    /// Written as an array of doc ids rather than an object of grades.
    pub(super) as_array: bool,
    pub(super) task: Option<String>,
    pub(super) language: Option<String>,
    pub(super) split: Option<String>,
    pub(super) required: Option<bool>,
}

impl Label {
    /// The relevant set R of docs/reference.md, Metrics: grade >= min-rel.
    pub(super) fn relevant(&self, min_rel: i64) -> BTreeSet<&str> {
        self.grades
            .iter()
            .filter(|(_, &grade)| grade >= min_rel)
            .map(|(doc, _)| doc.as_str())
            .collect()
    }

    /// The nDCG gain of a doc: its raw grade whatever `--min-rel` says;
    /// zero and negative grades (and unjudged docs) add nothing
    /// (docs/reference.md, Decisions where tools differ).
    pub(super) fn gain(&self, doc: &str) -> f64 {
        self.grades.get(doc).map_or(0.0, |&g| g.max(0) as f64)
    }

    pub(super) fn task_name(&self) -> &str {
        self.task.as_deref().unwrap_or("(none)")
    }

    pub(super) fn language_name(&self) -> &str {
        self.language.as_deref().unwrap_or("(none)")
    }

    pub(super) fn split_name(&self) -> &str {
        self.split.as_deref().unwrap_or("(none)")
    }
}

/// How one result of a JSONL ranking is written.
#[derive(Debug, Clone, Copy)]
pub(super) enum ResultForm {
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
pub(super) struct JsonEvent {
    pub(super) query_id: String,
    /// `None`: the key is absent (run ""); `Some("")` is the same run.
    pub(super) run: Option<&'static str>,
    /// `None`: the key is absent (stage "final").
    pub(super) stage: Option<&'static str>,
    pub(super) results: Vec<(String, ResultForm)>,
    pub(super) latency_ms: Option<f64>,
    pub(super) context_tokens: Option<u32>,
    /// Whether the answer was acceptable; `None` leaves the key out.
    pub(super) answer_ok: Option<bool>,
}

/// One line of a TREC run: `query_id Q0 doc_id rank score tag`.
#[derive(Debug, Clone)]
pub(super) struct TrecLine {
    pub(super) query_id: String,
    pub(super) doc_id: String,
    pub(super) rank: u32,
    pub(super) score: f64,
    pub(super) tag: &'static str,
    pub(super) separator: &'static str,
    /// Fields after the sixth, which are ignored.
    pub(super) trailing: bool,
}

/// The logs of one case, split over files in the order given.
#[derive(Debug, Clone)]
pub(super) enum Logs {
    Jsonl(Vec<Vec<JsonEvent>>),
    Trec(Vec<Vec<TrecLine>>),
}

/// The grading options of one case.
#[derive(Debug, Clone)]
pub(super) struct Options {
    pub(super) ks: Vec<Cutoff>,
    pub(super) missing_skip: bool,
    pub(super) repeats: Repeats,
    pub(super) dedupe: bool,
    pub(super) min_rel: i64,
    pub(super) threads: usize,
}

/// `--repeats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Repeats {
    Error,
    First,
    Last,
    Mean,
}

impl Repeats {
    /// Every policy.
    pub(super) const ALL: [Self; 4] = [Self::Error, Self::First, Self::Last, Self::Mean];
    /// The policies that grade one capture and set the others aside.
    pub(super) const ONE_OF_SEVERAL: [Self; 2] = [Self::First, Self::Last];
    /// The policies that use every capture of a key.
    pub(super) const EVERY_CAPTURE: [Self; 2] = [Self::Error, Self::Mean];

    pub(super) fn name(self) -> &'static str {
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
pub(super) struct Scenario {
    pub(super) labels: Vec<Label>,
    pub(super) logs: Logs,
    pub(super) options: Options,
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
        slice_value(SPLITS),
        weighted(0.6, any::<bool>()),
    );
    (
        subsequence(LABELABLE_QUERIES.to_vec(), 1..=LABELABLE_QUERIES.len()).prop_shuffle(),
        vec(body, LABELABLE_QUERIES.len()),
        // Half the keys name no split at all.
        any::<bool>(),
    )
        .prop_map(|(ids, bodies, with_splits)| {
            ids.into_iter()
                .zip(bodies)
                .map(
                    |(id, ((grades, as_array), task, language, split, required))| Label {
                        query_id: id.to_string(),
                        grades,
                        as_array,
                        task,
                        language,
                        split: split.filter(|_| with_splits),
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
        weighted(0.5, any::<bool>()),
    )
        .prop_map(
            |(query_id, run, stage, (docs, forms), latency_ms, context_tokens, answer_ok)| {
                JsonEvent {
                    query_id,
                    run,
                    stage,
                    results: docs.into_iter().zip(forms).collect(),
                    latency_ms,
                    context_tokens,
                    answer_ok,
                }
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
pub(super) fn jsonl_logs(per_file: usize) -> impl Strategy<Value = Logs> {
    vec(vec(json_event(), 1..=per_file), 1..=3).prop_map(Logs::Jsonl)
}

/// TREC runs in 1–3 non-empty files of up to `per_file` lines each.
pub(super) fn trec_logs(per_file: usize) -> impl Strategy<Value = Logs> {
    vec(vec(trec_line(), 1..=per_file), 1..=3).prop_map(Logs::Trec)
}

/// An answer key, logs and options, `--repeats` drawn from `policies`.
pub(super) fn scenario(
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
    for (key, value) in [
        ("task", &label.task),
        ("language", &label.language),
        ("split", &label.split),
    ] {
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
            // Scores fall down the ranking: a list whose every result
            // carries one is ranked by them, in the order it was listed.
            ResultForm::DocIdObject => json!({"doc_id": doc, "score": i as f64 * -0.5}),
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
    if let Some(ok) = event.answer_ok {
        object.insert("answer_ok".into(), Value::from(ok));
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
pub(super) fn render(scenario: &Scenario) -> (String, Vec<(String, String)>) {
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
