//! The options a message names: the library names each as data and the
//! command line spells it as its flag (`--join text`), in errors and
//! warnings alike; a file the library writes (rejects.jsonl) names it as
//! the plan does (`` `join` text ``), as it knows no front end.

use crate::util::{grade, Workdir};

/// The seed sample's answer key: q_export, q_reset and q_sharing.
const LABELS: &str = concat!(
    r#"{"query_id": "q_export", "relevant": ["export_csv"]}"#,
    "\n",
    r#"{"query_id": "q_reset", "relevant": ["reset_steps"]}"#,
    "\n",
    r#"{"query_id": "q_sharing", "relevant": ["share_roles"]}"#,
    "\n",
);

/// One OTLP/JSON export of a RETRIEVER span with `attributes` besides
/// its kind.
fn retriever_export(attributes: &str) -> String {
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[]}},"scopeSpans":[{{"spans":[{{"name":"r","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{{"key":"openinference.span.kind","value":{{"stringValue":"RETRIEVER"}}}}{attributes}]}}]}}]}}]}}"#
    ) + "\n"
}

/// The `metadata` attribute naming query q_export.
const QUERY: &str = r#"{"key":"metadata","value":{"stringValue":"{\"query_id\":\"q_export\"}"}}"#;

fn workdir(test: &str) -> Workdir {
    let wd = Workdir::new(test);
    wd.write("labels.jsonl", LABELS);
    wd
}

/// A reject's detail names the option on stderr as a flag, and in
/// rejects.jsonl as the plan's name.
#[test]
fn a_reject_names_its_option_as_a_flag_and_in_rejects_jsonl_by_name() {
    let wd = workdir("option_names_reject");
    let one_doc =
        r#",{"key":"retrieval.documents.0.document.id","value":{"stringValue":"export_csv"}}"#;
    wd.write("spans.json", retriever_export(one_doc));
    let args = [
        "--labels",
        "labels.jsonl",
        "--logs-format",
        "otlp",
        "spans.json",
    ];
    let run = grade(&wd, &args);
    run.expect_code(1).expect_stderr(&[
        "no query_id in its 'metadata' nor a 'query_id' attribute (--join text matches its \
         question text instead) (use -o DIR to list them all in rejects.jsonl)",
    ]);
    grade(&wd, &[&args[..4], &["-o", "out", "spans.json"]].concat()).expect_code(1);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    assert_eq!(
        rejects[0]["detail"],
        "span 1, RETRIEVER 'r': no query_id in its 'metadata' nor a 'query_id' attribute \
         (`join` text matches its question text instead)"
    );

    let no_id = r#"{"key":"output.value","value":{"stringValue":"{\"documents\":[{\"page_content\":\"x\"}]}"}}"#;
    wd.write("no_id.json", retriever_export(&format!(",{QUERY},{no_id}")));
    grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--logs-format",
            "otlp",
            "no_id.json",
        ],
    )
    .expect_code(1)
    .expect_stderr(&["(--doc-field /KEY reads the id from each document's metadata)"]);
}

/// The hints of the rejects of repeated captures and of runs sharing a
/// tag, and the limit on rejects.
#[test]
fn rejects_name_repeats_run_name_and_max_rejects_as_flags() {
    let wd = workdir("option_names_repeats");
    wd.write(
        "logs.jsonl",
        concat!(
            r#"{"query_id":"q_export","results":["export_csv"]}"#,
            "\n",
            r#"{"query_id":"q_export","results":["billing"]}"#,
            "\n",
            r#"{"query_id":"q_reset","results":["reset_steps"]}"#,
            "\n",
        ),
    );
    grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--repeats",
            "error",
            "logs.jsonl",
        ],
    )
    .expect_code(1)
    .expect_stderr(&[
        "2 rejected records exceed --max-rejects 0; the first is logs.jsonl:1: \
             repeated_capture: run '', stage 'final', query 'q_export' was captured 2 times \
             (--repeats error)",
    ]);

    wd.write("labels.qrels", "q_export 0 export_csv 1\n");
    wd.write(
        "runs/a.trec",
        "q_export Q0 export_csv 1 2.0 run\nq_export Q0 billing 2 1.0 run\n",
    );
    wd.write(
        "runs/b.trec",
        "q_export Q0 billing 1 2.0 run\nq_export Q0 export_csv 2 1.0 run\n",
    );
    grade(&wd, &["--labels", "labels.qrels", "runs"])
        .expect_code(1)
        .expect_stderr(&["do two runs share a tag? --run-name file keeps them apart"]);
    grade(
        &wd,
        &[
            "--labels",
            "labels.qrels",
            "--duplicate-docs",
            "dedupe",
            "runs",
        ],
    )
    .expect_code(0)
    .expect_stderr(&[
        "rgrade: warning: run 'run': --duplicate-docs dedupe dropped copies of documents \
             that 2 files also list (runs/a.trec, runs/b.trec): do several runs share this tag? \
             --run-name file keeps them apart",
    ]);
}

/// Warnings of a grading that went on name the option that would change
/// what they warn of.
#[test]
fn warnings_name_the_options_as_flags() {
    let wd = workdir("option_names_warnings");
    wd.write("spans.json", retriever_export(&format!(",{QUERY}")));
    grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--logs-format",
            "otlp",
            "spans.json",
        ],
    )
    .expect_code(0)
    .expect_stderr(&[
        "--missing skip grades only the queries they hold",
        "if the instrumentation records the documents elsewhere, --doc-field names where",
    ]);
    wd.write(
        "other.jsonl",
        "{\"query_id\":\"zzz\",\"results\":[\"export_csv\"]}\n",
    );
    grade(&wd, &["--labels", "labels.jsonl", "other.jsonl"])
        .expect_code(0)
        .expect_stderr(&["none of the 1 events matched a labeled query_id; check --query-field"]);
    wd.write("weird.txt", "1\t7\t1\n");
    grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--logs-format",
            "trec",
            "weird.txt",
        ],
    )
    .expect_stderr(&[
        "rgrade: warning: weird.txt: read as a TREC run, but its first line has 3 fields \
             with a whole number third: an MS MARCO run? --logs-format msmarco",
    ]);
    wd.write("run.trec", "q_export Q0 export_csv 1 2.0 run\n");
    grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--logs-format",
            "jsonl",
            "run.trec",
        ],
    )
    .expect_stderr(&["6 fields shaped as a TREC run line? --logs-format trec"]);
}

/// A stage named that no record had names `--span-stage`; the corpus
/// check names `-o`.
#[test]
fn errors_name_span_stage_and_the_output_directory_as_flags() {
    let wd = workdir("option_names_errors");
    wd.write(
        "logs.jsonl",
        "{\"query_id\":\"q_export\",\"results\":[\"export_csv\"]}\n",
    );
    grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage",
            "nosuch",
            "logs.jsonl",
        ],
    )
    .expect_code(2)
    .expect_stderr(&["spans are stage retrieve or rerank unless --span-stage renames them)"]);
    wd.write("corpus.txt", "export_csv\n");
    let args = [
        "--labels",
        "labels.jsonl",
        "--corpus",
        "corpus.txt",
        "logs.jsonl",
    ];
    grade(&wd, &args)
        .expect_code(2)
        .expect_stderr(&["use -o DIR to list them all. Were the labels made"]);
}

/// Gradings compare, and nights trend, only when graded alike: the
/// setting they differ in is named as its flag; so is trend's baseline.
#[test]
fn gradings_graded_unlike_name_the_setting_as_a_flag() {
    let wd = workdir("option_names_unlike");
    wd.write(
        "logs.jsonl",
        "{\"query_id\":\"q_export\",\"results\":[\"export_csv\"]}\n",
    );
    let gradings: [(&str, &[&str]); 4] = [
        ("a", &["--as-of", "2026-01-01"]),
        ("b", &["--min-rel", "2", "--as-of", "2026-01-02"]),
        ("c", &["--missing", "skip"]),
        ("d", &["--as-of", "2026-01-03"]),
    ];
    for (out, extra) in gradings {
        let args = [
            &["--labels", "labels.jsonl", "-q", "-o", out],
            extra,
            &["logs.jsonl"],
        ];
        grade(&wd, &args.concat()).expect_code(0);
    }
    wd.rgrade(&["compare", "a", "b"])
        .expect_code(2)
        .expect_stderr(&["were graded with different --min-rel (1 vs 2)"]);
    wd.rgrade(&["compare", "a", "c"])
        .expect_code(2)
        .expect_stderr(&["were graded with different --missing policies"]);
    wd.rgrade(&["trend", "a", "b"])
        .expect_code(2)
        .expect_stderr(&[
            "a and b: graded with other --min-rel; a trend compares nights graded alike \
         (--allow-label-changes watches each revision apart)",
        ]);
    wd.rgrade(&["trend", "a", "d"])
        .expect_code(0)
        .expect_stderr(&[
        "rgrade: warning: labels revision 1 has 2 nights, none past its baseline: nothing in it \
         was tested (--baseline sets how many nights the baseline takes)",
    ]);
}
