//! Results outside the user's allowed collections (docs/guide.md,
//! Diagnostics), on hand cases through the binary: ranks kept, JSON pointers,
//! the `--doc-collections` map (and its errors), unknown collections,
//! `bad_field` rejects, dedupe, records without permission data, leaks in
//! unlabeled records, `--max-leaks`, `--repeats`, the leak list (capped, in
//! input order, the same with any thread count).

use std::fs;

use serde_json::{json, Value};

use crate::util::permissions::{grade_logs, LABELS};
use crate::util::{
    assert_cell, assert_counts_add_up, assert_same_lines, assert_text, count, grade, row, text,
    Workdir,
};

/// A result outside the allowed collections keeps its rank: the relevant
/// document after it is scored at rank 2, not moved up to 1, and the
/// unauthorized relevant document counts for nothing.
#[test]
fn an_unauthorized_result_keeps_its_rank() {
    let wd = Workdir::new("perm_rank_kept");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "a", "collection": "hr"}, {"doc_id": "b", "collection": "pub"}, {"doc_id": "x", "collection": "fin"}, "y"]}"#,
        ],
        &["--max-leaks", "2"],
    );
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = row(&per_query, "final", "q1");
    for (column, want) in [
        ("n_results", 4.0),
        ("first_rel_rank", 2.0),
        ("unauthorized", 2.0),
        ("recall@1", 0.0),
        ("rr@1", 0.0),
        ("precision@1", 0.0),
        ("recall@3", 0.5),
        ("rr@3", 0.5),
        ("hit@3", 1.0),
        ("precision@3", 1.0 / 3.0),
        ("ndcg@3", (1.0 / 3f64.log2()) / (1.0 + 1.0 / 3f64.log2())),
        ("ap@3", 0.25),
    ] {
        assert_cell(&q1, column, want);
    }
    assert_text(&q1, "missing_at_3", "a");
    // q2 was not captured: no unauthorized count.
    assert_text(&row(&per_query, "final", "q2"), "unauthorized", "");
    let aggregates = wd.read_csv("out/aggregates.csv");
    let leaks: Vec<String> = aggregates.column("leaks");
    // *,*  t1,*  t2,*  *,de  *,en  t1,en  t2,de
    assert_eq!(
        leaks,
        ["1", "1", "0", "0", "1", "1", "0"],
        "{}",
        aggregates.dump()
    );
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "leaked_results"), 2);
    assert_eq!(
        summary["leaks"],
        json!([
            {"query_id": "q1", "doc_id": "a", "collection": "hr", "file": "logs.jsonl", "line": 1},
            {"query_id": "q1", "doc_id": "x", "collection": "fin", "file": "logs.jsonl", "line": 1},
        ])
    );
}

/// `--allowed-field` and `--collection-field` as JSON pointers: the
/// record's `/user/acl` and each result's `/meta/coll` decide; the default
/// keys, present with other values, are ignored.
#[test]
fn json_pointer_fields() {
    let wd = Workdir::new("perm_pointers");
    let logs = [
        r#"{"query_id": "q1", "user": {"acl": ["pub"]}, "allowed_collections": ["hr"], "results": [{"doc_id": "a", "meta": {"coll": "hr"}, "collection": "pub"}, {"doc_id": "b", "meta": {"coll": "pub"}, "collection": "hr"}]}"#,
        r#"{"query_id": "q2", "user": {"acl": ["pub", "hr"]}, "allowed_collections": [], "results": [{"doc_id": "c", "meta": {"coll": "hr"}}]}"#,
    ];
    let run = grade_logs(
        &wd,
        &logs,
        &[
            "--allowed-field",
            "/user/acl",
            "--collection-field",
            "/meta/coll",
            "--max-leaks",
            "1",
        ],
    );
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = row(&per_query, "final", "q1");
    assert_text(&q1, "unauthorized", "1");
    assert_cell(&q1, "rr@3", 0.5);
    assert_text(&q1, "missing_at_3", "a");
    let q2 = row(&per_query, "final", "q2");
    assert_text(&q2, "unauthorized", "0");
    assert_cell(&q2, "rr@1", 1.0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(
        summary["leaks"],
        json!([{"query_id": "q1", "doc_id": "a", "collection": "hr", "file": "logs.jsonl", "line": 1}])
    );
    assert_eq!(count(&summary, "records_without_permissions"), 0);

    // With the default fields: allowed [hr], and a in pub is the outsider
    // again, by other fields (mixing a pointer with a default key would
    // leave b outside instead).
    let run = grade_logs(&wd, &logs, &["--max-leaks", "9"]);
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = row(&per_query, "final", "q1");
    assert_text(&q1, "unauthorized", "1");
    assert_text(&q1, "missing_at_3", "a");
    // allowed_collections [] allows nothing, but c names no `collection`.
    assert_text(&row(&per_query, "final", "q2"), "unauthorized", "0");
}

/// `--doc-collections`: results that name no collection take the mapped
/// one (bare ids and objects alike, gzip or plain CSV, columns in any
/// order, extra columns ignored); a result's own collection wins over the
/// map; a doc in neither is allowed.
#[test]
fn doc_collections_map_results_that_name_none() {
    let wd = Workdir::new("perm_doc_collections");
    let csv = text(&[
        "collection,note,doc_id",
        "hr,old,a",
        "pub,,b",
        "hr,,c",
        "hr,same again,a",
    ]);
    wd.write("map.csv", &csv);
    wd.write_gz("map.csv.gz", &csv);
    let logs = [
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["a", {"doc_id": "b"}, "y"]}"#,
        r#"{"query_id": "q2", "allowed_collections": ["pub"], "results": [{"doc_id": "c", "collection": "pub"}]}"#,
    ];
    for map in ["map.csv", "map.csv.gz"] {
        let run = grade_logs(&wd, &logs, &["--doc-collections", map]);
        run.expect_code(1).expect_stderr(&[
            "1 result outside the user's allowed collections exceeds --max-leaks 0; \
             the first is logs.jsonl:1: query q1 got a from collection hr",
        ]);
        let per_query = wd.read_csv("out/per_query.csv");
        let q1 = row(&per_query, "final", "q1");
        assert_text(&q1, "unauthorized", "1");
        assert_cell(&q1, "rr@1", 0.0);
        assert_cell(&q1, "rr@3", 0.5);
        assert_cell(&q1, "recall@3", 0.5);
        let q2 = row(&per_query, "final", "q2");
        assert_text(&q2, "unauthorized", "0");
        assert_cell(&q2, "rr@1", 1.0);
    }
    // Without the map nothing can be checked.
    let run = grade_logs(&wd, &logs, &[]);
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    assert_text(&row(&per_query, "final", "q1"), "unauthorized", "0");
    assert_cell(&row(&per_query, "final", "q1"), "rr@1", 1.0);
}

/// A map that puts one doc in two collections, or lacks a column, or a
/// row without a collection cell, or no file at all: exit 2 before
/// grading, naming the file (and line).
#[test]
fn doc_collections_errors_exit_2() {
    let wd = Workdir::new("perm_doc_collections_errors");
    let logs = [r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["a"]}"#];
    wd.write(
        "twice.csv",
        text(&["doc_id,collection", "a,hr", "b,pub", "a,pub"]),
    );
    wd.write_gz(
        "twice.csv.gz",
        text(&["doc_id,collection", "b,pub", "a,hr", "a,fin"]),
    );
    wd.write("no_collection.csv", text(&["doc_id,group", "a,hr"]));
    wd.write("no_doc.csv", text(&["doc,collection", "a,hr"]));
    for (map, needles) in [
        (
            "twice.csv",
            vec!["twice.csv:4: doc a is in collection pub here but in hr on an earlier line"],
        ),
        (
            "twice.csv.gz",
            vec!["twice.csv.gz:4: doc a is in collection fin here but in hr"],
        ),
        (
            "no_collection.csv",
            vec!["no_collection.csv:1: no 'collection' column"],
        ),
        ("no_doc.csv", vec!["no_doc.csv:1: no 'doc_id' column"]),
        ("absent.csv", vec!["absent.csv: cannot open"]),
    ] {
        let run = grade_logs(&wd, &logs, &["--doc-collections", map]);
        run.expect_code(2).expect_stderr(&needles);
        assert!(!wd.exists("out/per_query.csv"), "graded with {map}\n{run}");
    }
    // A short row names its file; which line it names is not checked.
    wd.write("short.csv", text(&["doc_id,collection", "a"]));
    let run = grade_logs(&wd, &logs, &["--doc-collections", "short.csv"]);
    run.expect_code(2).expect_stderr(&["short.csv:"]);
}

/// A result whose collection is unknown (no own collection, a `null` one,
/// not in the map) is allowed; a record with `allowed_collections: null`
/// has no permission data; `[]` allows no known collection.
#[test]
fn unknown_collections_are_allowed() {
    let wd = Workdir::new("perm_unknown");
    wd.write("map.csv", text(&["doc_id,collection", "z,hr"]));
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["y", {"doc_id": "a", "collection": null}, {"id": "b"}]}"#,
            r#"{"query_id": "q1", "stage": "s2", "allowed_collections": null, "results": [{"doc_id": "a", "collection": "hr"}]}"#,
            r#"{"query_id": "q1", "stage": "s3", "allowed_collections": [], "results": [{"doc_id": "a", "collection": "pub"}, "b", "z"]}"#,
        ],
        &["--doc-collections", "map.csv", "--max-leaks", "2"],
    );
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let final_q1 = row(&per_query, "final", "q1");
    assert_text(&final_q1, "unauthorized", "0");
    assert_cell(&final_q1, "recall@3", 1.0);
    assert_text(&row(&per_query, "s2", "q1"), "unauthorized", "0");
    let s3 = row(&per_query, "s3", "q1");
    assert_text(&s3, "unauthorized", "2");
    assert_cell(&s3, "rr@3", 0.5);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "records_without_permissions"), 1);
    assert_eq!(count(&summary, "leaked_results"), 2);
}

/// A collection that is not a string, or an allowed field that is not an
/// array of strings, rejects the record as `bad_field`; its query, with
/// no other capture, is `invalid`.
#[test]
fn bad_permission_fields_are_rejected() {
    let wd = Workdir::new("perm_bad_field");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "a", "collection": "pub"}, {"doc_id": "b", "collection": 3}]}"#,
            r#"{"query_id": "q1", "stage": "s2", "allowed_collections": "pub", "results": ["a"]}"#,
            r#"{"query_id": "q1", "stage": "s3", "allowed_collections": ["pub", 1], "results": ["a"]}"#,
            r#"{"query_id": "q1", "stage": "s4", "allowed_collections": {"pub": true}, "results": ["a"]}"#,
            r#"{"query_id": "q2", "stage": "s4", "allowed_collections": ["pub"], "results": [{"doc_id": "c", "collection": ["pub"]}]}"#,
            r#"{"query_id": "q2", "allowed_collections": ["pub"], "results": ["c"]}"#,
        ],
        &["--max-rejects", "5"],
    );
    run.expect_code(0);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let got: Vec<(u64, &str, &str)> = rejects
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().expect("line"),
                r["reason"].as_str().expect("reason"),
                r["detail"].as_str().expect("detail"),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, "bad_field", "result 2: 'collection' must be a string"),
            (
                2,
                "bad_field",
                "'allowed_collections' must be an array of strings"
            ),
            (
                3,
                "bad_field",
                "'allowed_collections' must be an array of strings"
            ),
            (
                4,
                "bad_field",
                "'allowed_collections' must be an array of strings"
            ),
            (5, "bad_field", "result 1: 'collection' must be a string"),
        ]
    );
    let per_query = wd.read_csv("out/per_query.csv");
    for stage in ["final", "s2", "s3", "s4"] {
        let q1 = row(&per_query, stage, "q1");
        assert_text(&q1, "status", "invalid");
        assert_text(&q1, "unauthorized", "");
    }
    assert_text(&row(&per_query, "s4", "q2"), "status", "invalid");
    assert_text(&row(&per_query, "final", "q2"), "status", "ok");
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "rejected"), 5);
    assert_eq!(count(&summary, "records_without_permissions"), 0);
    assert_eq!(count(&summary, "leaked_results"), 0);
    assert_counts_add_up(&summary);
}

/// Under `--duplicate-docs dedupe` the first occurrence decides: a
/// repeated unauthorized doc counts once in `unauthorized`, the gap
/// closes, and a doc allowed at its first occurrence is allowed.
#[test]
fn dedupe_counts_unauthorized_after_dedupe() {
    let wd = Workdir::new("perm_dedupe");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "x", "collection": "hr"}, {"doc_id": "x", "collection": "hr"}, "a"]}"#,
            r#"{"query_id": "q2", "allowed_collections": ["pub"], "results": [{"doc_id": "c", "collection": "pub"}, {"doc_id": "c", "collection": "hr"}]}"#,
        ],
        &["--duplicate-docs", "dedupe", "--max-leaks", "9"],
    );
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = row(&per_query, "final", "q1");
    assert_text(&q1, "unauthorized", "1");
    assert_text(&q1, "n_results", "2");
    assert_cell(&q1, "rr@3", 0.5);
    let q2 = row(&per_query, "final", "q2");
    assert_text(&q2, "unauthorized", "0");
    assert_text(&q2, "n_results", "1");
    assert_cell(&q2, "rr@1", 1.0);
}

/// Under dedupe, a repeated unauthorized result was shown once: summary.json
/// counts and lists it once, as per_query.csv does.
#[test]
fn dedupe_lists_a_repeated_leak_once() {
    let wd = Workdir::new("perm_dedupe_leaks");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "x", "collection": "hr"}, {"doc_id": "x", "collection": "hr"}, "a"]}"#,
        ],
        &["--duplicate-docs", "dedupe", "--max-leaks", "1"],
    );
    run.expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "leaked_results"), 1);
    assert_eq!(summary["leaks"].as_array().map(Vec::len), Some(1));
}

/// A record rejected as `duplicate_doc` is not a valid record: its
/// unauthorized results are neither counted nor listed.
#[test]
fn a_rejected_record_has_no_leaks() {
    let wd = Workdir::new("perm_rejected_leaks");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "x", "collection": "hr"}, "a", "a"]}"#,
        ],
        &["--max-rejects", "1"],
    );
    run.expect_code(1)
        .expect_stderr(&["was rejected, so nothing was graded"]);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "leaked_results"), 0);
    assert_eq!(summary["leaks"], json!([]));
}

/// records_without_permissions counts the valid records of graded stages
/// that name no allowed list, labeled or not; not rejected records, not
/// records of a stage left out by `--stage`, not those that carry one.
#[test]
fn records_without_permissions_are_counted() {
    let wd = Workdir::new("perm_without");
    let logs = [
        r#"{"query_id": "q1", "results": ["a"]}"#,
        r#"{"query_id": "q2", "allowed_collections": ["pub"], "results": ["c"]}"#,
        r#"{"query_id": "unlabeled", "results": ["a"]}"#,
        r#"{"query_id": "unlabeled", "allowed_collections": [], "results": ["a"]}"#,
        r#"{"query_id": "q1", "stage": "retrieve", "results": ["a"]}"#,
        r#"{"query_id": "unlabeled", "stage": "final", "results": "c"}"#,
        r#"{"query_id": "q1", "stage": "final", "run": "other", "allowed_collections": null, "results": ["b"]}"#,
    ];
    let run = grade_logs(&wd, &logs, &["--stage", "final", "--max-rejects", "1"]);
    run.expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(
        count(&summary, "records_without_permissions"),
        3,
        "lines 1, 3, 7"
    );
    assert_eq!(count(&summary, "other_stage_events"), 1);
    assert_eq!(count(&summary, "rejected"), 1);
    assert_eq!(count(&summary, "leaked_results"), 0);
    assert_counts_add_up(&summary);
    // Without --stage the retrieve record counts too.
    let run = grade_logs(&wd, &logs, &["--max-rejects", "1"]);
    run.expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "records_without_permissions"), 4);
}

/// A leak in a record of an unlabeled query counts (and is listed, and
/// fails the run) though nothing of it is graded; leaks of a stage left
/// out by `--stage` do not.
#[test]
fn leaks_in_unlabeled_records_are_counted() {
    let wd = Workdir::new("perm_unlabeled_leaks");
    let logs = [
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["a"]}"#,
        r#"{"query_id": "q1", "stage": "retrieve", "allowed_collections": ["pub"], "results": [{"doc_id": "s", "collection": "hr"}]}"#,
        r#"{"query_id": "nobody", "allowed_collections": ["pub"], "results": [{"doc_id": "secret", "collection": "hr"}, "a"]}"#,
    ];
    let run = grade_logs(&wd, &logs, &["--stage", "final"]);
    run.expect_code(1).expect_stderr(&[
        "rgrade: 1 result outside the user's allowed collections exceeds --max-leaks 0; \
         the first is logs.jsonl:3: query nobody got secret from collection hr",
    ]);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "unlabeled_events"), 1);
    assert_eq!(count(&summary, "leaked_results"), 1);
    assert_eq!(
        summary["leaks"],
        json!([{"query_id": "nobody", "doc_id": "secret", "collection": "hr", "file": "logs.jsonl", "line": 3}])
    );
    let per_query = wd.read_csv("out/per_query.csv");
    assert_text(&row(&per_query, "final", "q1"), "unauthorized", "0");
    assert!(wd
        .read_csv("out/aggregates.csv")
        .column("leaks")
        .iter()
        .all(|l| l == "0"));
}

/// `--max-leaks N` tolerates exactly N unauthorized results: N - 1 exits
/// 1 (every output written, the message naming the first leak), N exits
/// 0; rejects beyond `--max-rejects` and leaks beyond `--max-leaks` both
/// speak.
#[test]
fn max_leaks_boundary() {
    let wd = Workdir::new("perm_max_leaks");
    let logs = [
        r#"{"query_id": "q2", "allowed_collections": ["pub"], "results": ["c"]}"#,
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "x", "collection": "hr"}, "a", {"doc_id": "b", "collection": "fin"}]}"#,
        r#"{"query_id": "q1", "stage": "s2", "allowed_collections": ["hr"], "results": [{"doc_id": "a", "collection": "pub"}]}"#,
    ];
    for (max, code) in [
        (None, 1),
        (Some("1"), 1),
        (Some("2"), 1),
        (Some("3"), 0),
        (Some("4"), 0),
    ] {
        let _ = fs::remove_dir_all(wd.path("out"));
        let extra: Vec<&str> = max.map_or_else(Vec::new, |m| vec!["--max-leaks", m]);
        let run = grade_logs(&wd, &logs, &extra);
        run.expect_code(code);
        for file in [
            "per_query.csv",
            "aggregates.csv",
            "summary.json",
            "rejects.jsonl",
        ] {
            assert!(
                wd.exists(&format!("out/{file}")),
                "{file} not written\n{run}"
            );
        }
        if code == 1 {
            let limit = max.unwrap_or("0");
            run.expect_stderr(&[&format!(
                "rgrade: 3 results outside the user's allowed collections exceed --max-leaks \
                 {limit}; the first is logs.jsonl:2: query q1 got x from collection hr"
            )]);
        } else {
            assert_eq!(run.stderr, "", "{run}");
        }
    }
    // Both checks fail: both messages, exit 1.
    let mut with_reject = logs.to_vec();
    with_reject.push("not json");
    let run = grade_logs(&wd, &with_reject, &["--max-leaks", "2"]);
    run.expect_code(1).expect_stderr(&[
        "3 results outside the user's allowed collections exceed --max-leaks 2",
        "1 rejected record exceeds --max-rejects 0; the first is logs.jsonl:4: invalid_json",
    ]);
}

/// `unauthorized` under `--repeats`: the mean over graded captures, or
/// the chosen capture's count; `leaks` counts a query whose value is > 0.
/// leaked_results counts every valid record, superseded ones included.
#[test]
fn repeats_and_unauthorized() {
    let wd = Workdir::new("perm_repeats");
    let logs = [
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "a", "collection": "hr"}, {"doc_id": "x", "collection": "hr"}, "b"]}"#,
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["a", "b"]}"#,
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["b", {"doc_id": "a", "collection": "hr"}]}"#,
    ];
    for (policy, unauthorized, rr3, leaks) in [
        ("mean", "1", (1.0 / 3.0 + 1.0 + 1.0) / 3.0, "1"),
        ("first", "2", 1.0 / 3.0, "1"),
        ("last", "1", 1.0, "1"),
    ] {
        let run = grade_logs(&wd, &logs, &["--repeats", policy, "--max-leaks", "3"]);
        run.expect_code(0);
        let per_query = wd.read_csv("out/per_query.csv");
        let q1 = row(&per_query, "final", "q1");
        assert_text(&q1, "unauthorized", unauthorized);
        assert_cell(&q1, "rr@3", rr3);
        let aggregates = wd.read_csv("out/aggregates.csv");
        assert_text(
            &aggregates.row(&[("task", "*"), ("language", "*")]),
            "leaks",
            leaks,
        );
        let summary = wd.read_json("out/summary.json");
        assert_eq!(count(&summary, "leaked_results"), 3, "{policy}");
    }
    // The mean can be a fraction.
    let run = grade_logs(&wd, &logs[1..], &["--repeats", "mean", "--max-leaks", "3"]);
    run.expect_code(0);
    let q1 = row(&wd.read_csv("out/per_query.csv"), "final", "q1");
    assert_text(&q1, "unauthorized", "0.5");
    // Last without leaks: the query has none, though a superseded record did.
    let run = grade_logs(&wd, &logs[..2], &["--repeats", "last", "--max-leaks", "2"]);
    run.expect_code(0);
    let aggregates = wd.read_csv("out/aggregates.csv");
    assert!(
        aggregates.column("leaks").iter().all(|l| l == "0"),
        "{}",
        aggregates.dump()
    );
    assert_eq!(
        count(&wd.read_json("out/summary.json"), "leaked_results"),
        2
    );
}

/// The leak list holds the first 100 leaks in input order (files in the
/// order given, then line), labeled or not, across many blocks, and is
/// the same with one thread or two; leaked_results counts them all.
#[test]
fn leak_list_is_capped_at_100_in_input_order() {
    let wd = Workdir::new("perm_leak_list");
    wd.write("labels.jsonl", LABELS);
    // Three files of about 1.4 MB (more than one block each): every
    // record padded, one leak in two records, some records with two.
    let pad = "p".repeat(2000);
    let mut want: Vec<Value> = Vec::new();
    let mut total = 0u64;
    let files = ["b_first.jsonl", "a_second.jsonl", "c_third.jsonl"];
    for (f, file) in files.iter().enumerate() {
        let mut lines = Vec::new();
        for i in 0..700usize {
            let query = match i % 3 {
                0 => "q1".to_string(),
                1 => "q2".to_string(),
                _ => format!("u{f}_{i}"),
            };
            let mut results = vec![json!("a")];
            let mut leaked = Vec::new();
            if i % 2 == 0 {
                leaked.push((format!("s{f}_{i}"), "hr"));
            }
            if i % 10 == 4 {
                leaked.push((format!("t{f}_{i}"), "fin"));
            }
            for (doc, collection) in &leaked {
                results.push(json!({"doc_id": doc, "collection": collection}));
                total += 1;
                want.push(
                    json!({"query_id": query, "doc_id": doc, "collection": collection,
                                 "file": file, "line": i + 1}),
                );
            }
            let stage = format!("s{}", i % 4);
            lines.push(
                json!({"query_id": query, "stage": stage, "pad": pad, "allowed_collections": ["pub"], "results": results})
                    .to_string(),
            );
        }
        wd.write(file, lines.join("\n") + "\n");
    }
    want.truncate(100);
    let mut summaries = Vec::new();
    for threads in ["1", "2"] {
        let out = format!("out{threads}");
        let run = grade(
            &wd,
            &[
                "--labels",
                "labels.jsonl",
                "-k",
                "3",
                "-q",
                "--repeats",
                "mean",
                "-j",
                threads,
                "-o",
                out.as_str(),
                files[0],
                files[1],
                files[2],
            ],
        );
        run.expect_code(1).expect_stderr(&[&format!(
            "rgrade: {total} results outside the user's allowed collections exceed --max-leaks 0; \
             the first is b_first.jsonl:1: query q1 got s0_0 from collection hr"
        )]);
        let summary = wd.read_json(&format!("{out}/summary.json"));
        assert_eq!(count(&summary, "leaked_results"), total);
        assert_eq!(summary["leaks"], Value::Array(want.clone()), "-j {threads}");
        summaries.push(summary);
        for file in ["per_query.csv", "aggregates.csv"] {
            assert_same_lines(
                &format!("{file} -j {threads} against -j 1"),
                &wd.read(&format!("{out}/{file}")),
                &wd.read(&format!("out1/{file}")),
            );
        }
    }
    assert_eq!(summaries[0]["counts"], summaries[1]["counts"]);
    // In the order given: a later file's leaks come after.
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "-k",
            "3",
            "-q",
            "--repeats",
            "mean",
            "-j",
            "2",
            "--max-leaks",
            "100000",
            "-o",
            "out_rev",
            files[2],
            files[0],
        ],
    );
    run.expect_code(0);
    let summary = wd.read_json("out_rev/summary.json");
    let listed = summary["leaks"].as_array().expect("leaks");
    assert_eq!(listed.len(), 100);
    assert!(listed.iter().all(|l| l["file"] == "c_third.jsonl"));
    assert_eq!(listed[0]["doc_id"], "s2_0");
}
