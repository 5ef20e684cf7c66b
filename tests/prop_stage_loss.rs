//! Stage loss on random small logs (proptest): every row agrees with the
//! rankings, lost ⊆ found ∖ later ranking, the totals are the per-query sums,
//! and the same ranking at every stage loses nothing.

use std::collections::{BTreeMap, BTreeSet};

use proptest::collection::{btree_map, vec};
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use proptest::test_runner::TestCaseError;
use serde_json::json;

use crate::util::stage_loss::{rate, set_order, sets_of, PER_QUERY_HEADER, TOTALS_HEADER};
use crate::util::{grade, Table, Workdir};

/// Documents the random rankings draw from; `x` and `y` are never labeled.
/// `d10` sorts before `d2` in byte order.
const PROP_DOCS: &[&str] = &["d0", "d1", "d2", "d10", "d4", "x", "y"];
/// Labelable documents (PROP_DOCS without the unlabeled ones).
const PROP_LABEL_DOCS: &[&str] = &["d0", "d1", "d2", "d10", "d4"];
/// Labeled queries; `q10` sorts before `q2`.
const PROP_QUERIES: &[&str] = &["q0", "q1", "q2", "q10"];
/// Runs of a case.
const PROP_RUNS: &[&str] = &["r1", "r2"];
/// The stage order; a case uses its first 2 or 3.
const PROP_STAGES: &[&str] = &["retrieve", "rerank", "final"];

/// One labeled query: grades (0 = judged not relevant), task, language.
#[derive(Debug, Clone)]
struct PropLabel {
    grades: BTreeMap<&'static str, u8>,
    task: &'static str,
    language: &'static str,
}

/// Per query, the ranking if captured.
type StageLogs = Vec<Option<Vec<&'static str>>>;

/// A transition of a run and a grouping set: (run, from, to, set order).
type SetKey = (String, String, String, (u8, String, String));

/// A random case: labels per query, then per run and stage either nothing
/// (the run lacks the stage) or per query an optional ranking.
#[derive(Debug, Clone)]
struct PropCase {
    stages: usize,
    labels: Vec<PropLabel>,
    /// [run][stage] → per query, the ranking if captured.
    logs: Vec<Vec<Option<StageLogs>>>,
}

/// A labeled query: up to four graded documents (possibly none relevant).
fn prop_label() -> impl Strategy<Value = PropLabel> {
    (
        btree_map(select(PROP_LABEL_DOCS), 0u8..=2, 0..=4),
        select(&["faq", "howto"][..]),
        select(&["en", "de"][..]),
    )
        .prop_map(|(grades, task, language)| PropLabel {
            grades,
            task,
            language,
        })
}

/// A ranking: distinct documents, labeled or not, in random order.
fn prop_ranking() -> impl Strategy<Value = Vec<&'static str>> {
    subsequence(PROP_DOCS, 0..=PROP_DOCS.len()).prop_shuffle()
}

/// A whole case: 2–3 stages, labels, and per run and stage the captures.
fn prop_case() -> impl Strategy<Value = PropCase> {
    let stage = weighted(0.85, vec(weighted(0.8, prop_ranking()), PROP_QUERIES.len()));
    (
        2usize..=3,
        vec(prop_label(), PROP_QUERIES.len()),
        vec(vec(stage, PROP_STAGES.len()), PROP_RUNS.len()),
    )
        .prop_map(|(stages, labels, logs)| PropCase {
            stages,
            labels,
            logs,
        })
}

impl PropCase {
    /// The same case with every stage of every run holding, for every
    /// query, the ranking of the run's first stage that has one.
    fn identical(&self) -> PropCase {
        let logs = self
            .logs
            .iter()
            .map(|run| {
                let per_query: StageLogs = (0..PROP_QUERIES.len())
                    .map(|q| {
                        run[..self.stages]
                            .iter()
                            .flatten()
                            .find_map(|stage| stage[q].clone())
                    })
                    .collect();
                vec![Some(per_query); PROP_STAGES.len()]
            })
            .collect();
        PropCase {
            logs,
            ..self.clone()
        }
    }

    fn labels_jsonl(&self) -> String {
        PROP_QUERIES
            .iter()
            .zip(&self.labels)
            .map(|(q, l)| {
                let line = json!({
                    "query_id": q,
                    "relevant": l.grades,
                    "task": l.task,
                    "language": l.language,
                });
                format!("{line}\n")
            })
            .collect()
    }

    fn logs_jsonl(&self) -> String {
        let mut out = String::new();
        for (run, stages) in PROP_RUNS.iter().zip(&self.logs) {
            for (stage, queries) in PROP_STAGES[..self.stages].iter().zip(stages) {
                let Some(queries) = queries else { continue };
                for (q, ranking) in PROP_QUERIES.iter().zip(queries) {
                    if let Some(ranking) = ranking {
                        let line = json!({
                            "query_id": q, "run": run, "stage": stage, "results": ranking,
                        });
                        out.push_str(&format!("{line}\n"));
                    }
                }
            }
        }
        out
    }

    /// The ranking of (run, stage, query) if captured.
    fn ranking(&self, run: &str, stage: &str, query: &str) -> Option<&Vec<&'static str>> {
        let r = PROP_RUNS.iter().position(|x| *x == run)?;
        let s = PROP_STAGES[..self.stages]
            .iter()
            .position(|x| *x == stage)?;
        let q = PROP_QUERIES.iter().position(|x| *x == query)?;
        self.logs[r][s].as_ref()?[q].as_ref()
    }
}

/// Run the case through the binary; return the two tables or a message.
fn run_case(case: &PropCase) -> Result<(Table, Table), TestCaseError> {
    let wd = Workdir::new("stage_loss_prop");
    wd.write("labels.jsonl", case.labels_jsonl());
    wd.write("logs.jsonl", case.logs_jsonl());
    let order = PROP_STAGES[..case.stages].join(",");
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage-order",
            &order,
            "-j",
            "2",
            "-q",
            "-o",
            "out",
            "logs.jsonl",
        ],
    );
    prop_assert_eq!(run.status.code(), Some(0), "{}", run);
    Ok((
        wd.read_csv("out/stage_loss.csv"),
        wd.read_csv("out/stage_loss_per_query.csv"),
    ))
}

/// The properties of one case's outputs; a message naming the case's
/// input on failure. Returns the per-query table.
fn check_case(case: &PropCase) -> Result<Table, TestCaseError> {
    let context = format!(
        "labels:\n{}logs:\n{}",
        case.labels_jsonl(),
        case.logs_jsonl()
    );
    let (totals, per_query) = run_case(case)?;
    prop_assert_eq!(&per_query.header, &PER_QUERY_HEADER);
    prop_assert_eq!(&totals.header, &TOTALS_HEADER);

    // Every per-query row: the query is labeled with relevant documents,
    // both stages captured it, `relevant_found` counts the relevant
    // documents of the earlier ranking, lost ⊆ those, each lost document
    // is absent from the later ranking, and every relevant document of the
    // earlier ranking absent from the later one is listed, sorted.
    let mut sums: BTreeMap<SetKey, (u64, u64)> = BTreeMap::new();
    let mut seen: BTreeSet<(String, String, String, String)> = BTreeSet::new();
    for r in per_query.records() {
        let q = PROP_QUERIES
            .iter()
            .position(|x| *x == r["query_id"])
            .ok_or_else(|| TestCaseError::fail(format!("unknown query {r:?}\n{context}")))?;
        let label = &case.labels[q];
        let relevant: BTreeSet<&str> = label
            .grades
            .iter()
            .filter(|(_, g)| **g >= 1)
            .map(|(d, _)| *d)
            .collect();
        prop_assert!(
            !relevant.is_empty(),
            "no-answer query measured: {:?}\n{}",
            r,
            context
        );
        prop_assert_eq!(&r["task"], label.task);
        prop_assert_eq!(&r["language"], label.language);
        let (run, from, to) = (&r["run"], &r["from_stage"], &r["to_stage"]);
        let before = case.ranking(run, from, &r["query_id"]);
        let after = case.ranking(run, to, &r["query_id"]);
        let (Some(before), Some(after)) = (before, after) else {
            return Err(TestCaseError::fail(format!(
                "a row for a query not captured at both stages: {r:?}\n{context}"
            )));
        };
        let found: BTreeSet<&str> = before
            .iter()
            .copied()
            .filter(|d| relevant.contains(d))
            .collect();
        prop_assert_eq!(
            &r["relevant_found"],
            &found.len().to_string(),
            "{:?}\n{}",
            r,
            context
        );
        let lost: Vec<&str> = if r["lost_ids"].is_empty() {
            Vec::new()
        } else {
            r["lost_ids"].split('|').collect()
        };
        prop_assert_eq!(&r["lost"], &lost.len().to_string(), "{:?}\n{}", r, context);
        for doc in &lost {
            prop_assert!(
                found.contains(doc),
                "lost {} not found before: {:?}\n{}",
                doc,
                r,
                context
            );
            prop_assert!(
                !after.contains(doc),
                "lost {} is in the later ranking: {:?}\n{}",
                doc,
                r,
                context
            );
        }
        let want_lost: Vec<&str> = found
            .iter()
            .copied()
            .filter(|d| !after.contains(d))
            .collect();
        prop_assert_eq!(&lost, &want_lost, "{:?}\n{}", r, context);
        prop_assert!(
            seen.insert((run.clone(), from.clone(), to.clone(), r["query_id"].clone())),
            "a row twice: {:?}\n{}",
            r,
            context
        );
        for (task, language) in sets_of(label.task, label.language) {
            let key = (
                run.clone(),
                from.clone(),
                to.clone(),
                set_order(&task, &language),
            );
            let sum = sums.entry(key).or_default();
            sum.0 += found.len() as u64;
            sum.1 += lost.len() as u64;
        }
    }

    // Exactly the expected rows: consecutive stages the run has (stages
    // it lacks skipped), queries with relevant documents captured at both.
    // Each (run, query) with relevant documents steps through the stages
    // that graded it: a stage it lacks is skipped.
    let mut want_seen = BTreeSet::new();
    for (r, run) in PROP_RUNS.iter().enumerate() {
        for (q, query) in PROP_QUERIES.iter().enumerate() {
            if !case.labels[q].grades.values().any(|g| *g >= 1) {
                continue;
            }
            let stages: Vec<&str> = (0..case.stages)
                .filter(|&s| case.logs[r][s].is_some())
                .map(|s| PROP_STAGES[s])
                .filter(|stage| case.ranking(run, stage, query).is_some())
                .collect();
            for pair in stages.windows(2) {
                want_seen.insert((
                    run.to_string(),
                    pair[0].to_string(),
                    pair[1].to_string(),
                    query.to_string(),
                ));
            }
        }
    }
    prop_assert_eq!(&seen, &want_seen, "{}", context);

    // Row order: by run, then transition in stage order, then query id in
    // byte order (`q10` before `q2`, though the labels list `q2` first).
    let stage_rank = |s: &str| PROP_STAGES.iter().position(|x| *x == s);
    let order_keys: Vec<_> = per_query
        .records()
        .iter()
        .map(|r| {
            (
                r["run"].clone(),
                stage_rank(&r["from_stage"]),
                stage_rank(&r["to_stage"]),
                r["query_id"].clone(),
            )
        })
        .collect();
    let mut sorted = order_keys.clone();
    sorted.sort();
    prop_assert_eq!(&order_keys, &sorted, "per-query row order\n{}", context);

    // Totals: one row per (run, transition, grouping set) with a query,
    // equal to the per-query sums, with the rate lost / found.
    let mut got_sums = BTreeMap::new();
    for r in totals.records() {
        let key = (
            r["run"].clone(),
            r["from_stage"].clone(),
            r["to_stage"].clone(),
            set_order(&r["task"], &r["language"]),
        );
        let found: u64 = r["relevant_found"].parse().expect("count");
        let lost: u64 = r["lost"].parse().expect("count");
        prop_assert!(lost <= found, "{:?}\n{}", r, context);
        prop_assert_eq!(&r["lost_rate"], &rate(found, lost), "{:?}\n{}", r, context);
        prop_assert!(
            got_sums.insert(key, (found, lost)).is_none(),
            "{:?} twice",
            r
        );
    }
    prop_assert_eq!(
        &got_sums,
        &sums,
        "totals against per-query sums\n{}",
        context
    );
    Ok(per_query)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random labels (grades 0–2, some no-answer queries) and logs over
    /// two runs and two or three stages (a run may lack a stage, a stage a
    /// query): every row agrees with the rankings, lost ⊆ found ∖ later
    /// ranking, totals are the per-query sums. With the same ranking at
    /// every stage nothing is lost and every transition finds the same.
    #[test]
    fn stage_loss_properties(case in prop_case()) {
        // A case that captured nothing makes an empty log, which is an
        // error (exit 2, tested on its own), not a case of stage loss.
        prop_assume!(!case.logs_jsonl().is_empty());
        check_case(&case)?;
        // Same rankings everywhere: nothing lost (the totals, checked
        // against the per-query sums, are then 0 too).
        let per_query = check_case(&case.identical())?;
        for r in per_query.records() {
            prop_assert_eq!(&r["lost"], "0", "{:?}", r);
            prop_assert_eq!(&r["lost_ids"], "", "{:?}", r);
        }
    }
}
