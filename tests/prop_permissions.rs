//! Permissions on random small logs: an unauthorized result is an unjudged
//! result at its rank. It never raises a score, grades exactly as an unjudged
//! id in its place, and the counts in summary.json follow from the logs.

use std::collections::{BTreeMap, BTreeSet};

use proptest::collection::{btree_map, vec};
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::subsequence;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

use rgrade::Cutoff;

use crate::util::{count, grade, metric_columns, Table, Workdir};

const P_DOCS: &[&str] = &["d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7"];
const P_COLLECTIONS: &[&str] = &["pub", "hr", "fin"];
const P_STAGES: &[&str] = &["final", "retrieve"];
const P_KS: [Cutoff; 3] = [Cutoff::At(1), Cutoff::At(3), Cutoff::At(5)];

#[derive(Debug, Clone)]
struct PResult {
    doc: &'static str,
    /// Its own collection, if it names one.
    collection: Option<&'static str>,
    /// Logged as an object (else a bare id, which can name no collection).
    object: bool,
}

#[derive(Debug, Clone)]
struct PRecord {
    /// Index into the labeled queries; one past the end is unlabeled.
    query: usize,
    stage: &'static str,
    allowed: Option<Vec<&'static str>>,
    results: Vec<PResult>,
}

#[derive(Debug, Clone)]
struct PCase {
    /// Per query, doc → grade.
    labels: Vec<BTreeMap<&'static str, u8>>,
    /// `--doc-collections`, if given.
    map: Option<BTreeMap<&'static str, &'static str>>,
    records: Vec<PRecord>,
}

fn p_query(i: usize) -> String {
    format!("q{i}")
}

fn p_result() -> impl Strategy<Value = (Option<&'static str>, bool)> {
    (
        weighted(0.6, proptest::sample::select(P_COLLECTIONS)),
        any::<bool>(),
    )
}

fn p_record(queries: usize) -> impl Strategy<Value = PRecord> {
    (
        0..=queries,
        proptest::sample::select(P_STAGES),
        weighted(0.7, subsequence(P_COLLECTIONS, 0..=3)),
        subsequence(P_DOCS, 0..=6).prop_shuffle(),
        vec(p_result(), 6),
    )
        .prop_map(|(query, stage, allowed, docs, attrs)| PRecord {
            query,
            stage,
            allowed: allowed.map(|a| a.to_vec()),
            results: docs
                .into_iter()
                .zip(attrs)
                .map(|(doc, (collection, object))| PResult {
                    doc,
                    collection: collection.filter(|_| object),
                    object,
                })
                .collect(),
        })
}

fn p_case() -> impl Strategy<Value = PCase> {
    (1usize..=3).prop_flat_map(|queries| {
        (
            vec(
                btree_map(proptest::sample::select(P_DOCS), 0u8..=3, 0..=4),
                queries,
            ),
            weighted(
                0.5,
                btree_map(
                    proptest::sample::select(P_DOCS),
                    proptest::sample::select(P_COLLECTIONS),
                    0..=6,
                ),
            ),
            vec(p_record(queries), 1..=8),
        )
            .prop_map(|(labels, map, records)| PCase {
                labels,
                map,
                records,
            })
    })
}

impl PCase {
    fn labels_jsonl(&self) -> String {
        self.labels
            .iter()
            .enumerate()
            .map(|(i, grades)| format!("{}\n", json!({"query_id": p_query(i), "relevant": grades})))
            .collect()
    }

    /// The collection rgrade should give a result: its own, else the map's.
    fn collection(&self, result: &PResult) -> Option<&'static str> {
        result
            .collection
            .or_else(|| self.map.as_ref().and_then(|m| m.get(result.doc).copied()))
    }

    /// Whether the result at `position` of `record` is unauthorized.
    fn outside(&self, record: &PRecord, result: &PResult) -> bool {
        match (&record.allowed, self.collection(result)) {
            (Some(allowed), Some(c)) => !allowed.contains(&c),
            _ => false,
        }
    }

    /// The logs: with permission data (`with`), without it, or without it
    /// and every unauthorized result replaced by an unjudged placeholder.
    fn logs(&self, variant: Variant) -> String {
        let mut out = String::new();
        for (line, record) in self.records.iter().enumerate() {
            let results: Vec<Value> = record
                .results
                .iter()
                .enumerate()
                .map(|(pos, r)| {
                    if variant == Variant::Placeholders && self.outside(record, r) {
                        return json!(format!("placeholder_{line}_{pos}"));
                    }
                    match (r.object, r.collection) {
                        (false, _) => json!(r.doc),
                        (true, Some(c)) => json!({"doc_id": r.doc, "collection": c}),
                        (true, None) => json!({"doc_id": r.doc}),
                    }
                })
                .collect();
            let mut value = json!({
                "query_id": p_query(record.query),
                "stage": record.stage,
                "results": results,
            });
            if let (Variant::WithPermissions, Some(allowed)) = (variant, &record.allowed) {
                value["allowed_collections"] = json!(allowed);
            }
            out.push_str(&format!("{value}\n"));
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    WithPermissions,
    Without,
    Placeholders,
}

/// Grade one variant; per_query.csv and summary.json.
fn p_grade(wd: &Workdir, case: &PCase, variant: Variant) -> Result<(Table, Value), TestCaseError> {
    let name = format!("{variant:?}");
    wd.write(&format!("{name}.jsonl"), case.logs(variant));
    let out = format!("out_{name}");
    let mut args = vec![
        "--labels",
        "labels.jsonl",
        "-k",
        "1,3,5",
        "--repeats",
        "mean",
        "--max-leaks",
        "1000",
        "-q",
        "-j",
        "1",
        "-o",
        &out,
    ];
    if variant == Variant::WithPermissions && case.map.is_some() {
        args.extend_from_slice(&["--doc-collections", "map.csv"]);
    }
    let logs = format!("{name}.jsonl");
    args.push(&logs);
    let run = grade(wd, &args);
    prop_assert_eq!(run.status.code(), Some(0), "{}", run);
    Ok((
        wd.read_csv(&format!("{out}/per_query.csv")),
        wd.read_json(&format!("{out}/summary.json")),
    ))
}

fn p_check(case: &PCase) -> Result<(), TestCaseError> {
    let wd = Workdir::new("perm_prop");
    wd.write("labels.jsonl", case.labels_jsonl());
    if let Some(map) = &case.map {
        let mut csv = String::from("doc_id,collection\n");
        for (doc, collection) in map {
            csv.push_str(&format!("{doc},{collection}\n"));
        }
        wd.write("map.csv", csv);
    }
    let (with, summary) = p_grade(&wd, case, Variant::WithPermissions)?;
    let (without, _) = p_grade(&wd, case, Variant::Without)?;
    let (placeholders, _) = p_grade(&wd, case, Variant::Placeholders)?;

    // The counts in summary.json, from the case.
    let leaked: u64 = case
        .records
        .iter()
        .map(|r| r.results.iter().filter(|x| case.outside(r, x)).count() as u64)
        .sum();
    prop_assert_eq!(count(&summary, "leaked_results"), leaked);
    let unlisted = case.records.iter().filter(|r| r.allowed.is_none()).count() as u64;
    prop_assert_eq!(count(&summary, "records_without_permissions"), unlisted);
    prop_assert_eq!(
        summary["leaks"].as_array().map(Vec::len),
        Some(leaked.min(100) as usize)
    );

    prop_assert_eq!(&with.header, &without.header);
    prop_assert_eq!(with.rows.len(), without.rows.len());
    let metrics = metric_columns(&P_KS);
    let (w, b, p) = (with.records(), without.records(), placeholders.records());
    for ((w, b), p) in w.iter().zip(&b).zip(&p) {
        let key = (&w["run"], &w["stage"], &w["query_id"]);
        prop_assert_eq!(key, (&b["run"], &b["stage"], &b["query_id"]));
        // Exactly the placeholder grading, but for the unauthorized count.
        for column in &with.header {
            if column != "unauthorized" {
                prop_assert_eq!(&w[column], &p[column], "{} of {:?}", column, key);
            }
        }
        // Never above the grading without permission data.
        for column in &metrics {
            if w[column].is_empty() {
                prop_assert!(b[column].is_empty(), "{} of {:?}", column, key);
                continue;
            }
            let (got, base): (f64, f64) = (
                w[column].parse().expect("number"),
                b[column].parse().expect("number"),
            );
            prop_assert!(
                got <= base + 1e-12,
                "{} of {:?}: {} > {}",
                column,
                key,
                got,
                base
            );
        }
        let missing = "missing_at_5";
        let set = |s: &str| -> BTreeSet<String> {
            s.split('|')
                .filter(|x| !x.is_empty())
                .map(String::from)
                .collect()
        };
        prop_assert!(set(&w[missing]).is_superset(&set(&b[missing])), "{:?}", key);
        // unauthorized: the mean over the query's captures at that stage.
        let captures: Vec<&PRecord> = case
            .records
            .iter()
            .filter(|r| p_query(r.query) == *w["query_id"] && r.stage == w["stage"])
            .collect();
        let want = if captures.is_empty() {
            String::new()
        } else {
            let sum: usize = captures
                .iter()
                .map(|r| r.results.iter().filter(|x| case.outside(r, x)).count())
                .sum();
            (sum as f64 / captures.len() as f64).to_string()
        };
        prop_assert_eq!(&w["unauthorized"], &want, "{:?}", key);
        prop_assert!(
            b["unauthorized"] == "0" || b["unauthorized"].is_empty(),
            "{:?}",
            key
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// On random small logs (random allowed lists, own and mapped
    /// collections, bare and object results, repeated captures, unlabeled
    /// queries), marking results unauthorized never raises a metric of any
    /// query, and grades exactly as replacing them with unjudged ids at the
    /// same rank; the counts in summary.json follow from the logs.
    #[test]
    fn unauthorized_results_score_as_unjudged_ones(case in p_case()) {
        p_check(&case)?;
    }
}
