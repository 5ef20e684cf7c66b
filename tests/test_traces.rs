//! Traces (docs/reference.md, "Traces"): OTLP/JSON spans written by the
//! OpenTelemetry SDK grade exactly as the same captures written as rgrade
//! JSONL; bad spans are rejected one by one, and every span is counted.

use std::path::Path;

use serde_json::{json, Value};

use crate::util::{
    assert_counts_add_up, assert_same_lines, count, rgrade_in, Workdir, LANGSMITH_FIELDS, REPO_ROOT,
};

const TRACES: &str = "data-samples/traces";

/// `rgrade grade` of the traces sample's labels at k = 1,5,10 with
/// `options`, writing into `wd`'s `out/`, from the repository's top.
fn grade_traces(wd: &Workdir, options: &[&str]) -> crate::util::Run {
    let out = wd.path("out").display().to_string();
    let labels = format!("{TRACES}/labels.jsonl");
    let mut args = vec![
        "grade", "--labels", &labels, "-k", "1,5,10", "-q", "-o", &out,
    ];
    args.extend_from_slice(options);
    rgrade_in(Path::new(REPO_ROOT), &args)
}

/// The expected file `name`, keeping only the header and the rows whose
/// second column (stage) is one of `stages`.
fn expected(name: &str, stages: &[&str]) -> Vec<u8> {
    let path = Path::new(REPO_ROOT)
        .join(TRACES)
        .join("expected")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let kept: Vec<&str> = text
        .lines()
        .enumerate()
        .filter(|(i, line)| *i == 0 || stages.iter().any(|s| line.split(',').nth(1) == Some(s)))
        .map(|(_, line)| line)
        .collect();
    format!("{}\n", kept.join("\n")).into_bytes()
}

#[track_caller]
fn assert_outputs_expected(wd: &Workdir, what: &str, stages: &[&str]) {
    for name in ["per_query.csv", "aggregates.csv"] {
        let got = wd.read(&format!("out/{name}"));
        assert_same_lines(&format!("{what}: {name}"), &got, &expected(name, stages));
    }
}

#[test]
fn openinference_spans_grade_as_the_same_captures_in_jsonl() {
    let both = ["rerank", "retrieve"];
    let wd = Workdir::new("traces_jsonl");
    grade_traces(&wd, &[&format!("{TRACES}/captures.jsonl")]).expect_code(0);
    assert_outputs_expected(&wd, "captures.jsonl", &both);

    let wd = Workdir::new("traces_openinference");
    grade_traces(&wd, &[&format!("{TRACES}/otlp/openinference.jsonl")]).expect_code(0);
    assert_outputs_expected(&wd, "openinference.jsonl", &both);
    let summary = wd.read_json("out/summary.json");
    assert_counts_add_up(&summary);
    // Per question: a CHAIN, a RETRIEVER, a RERANKER and an LLM span.
    assert_eq!(
        ["records", "graded_records", "other_records", "rejected"].map(|c| count(&summary, c)),
        [80, 40, 40, 0]
    );

    // Joined by the question text (three of them padded with whitespace
    // in the spans), the same grades.
    let wd = Workdir::new("traces_openinference_text");
    grade_traces(
        &wd,
        &[
            "--join",
            "text",
            &format!("{TRACES}/otlp/openinference.jsonl"),
        ],
    )
    .expect_code(0);
    assert_outputs_expected(&wd, "openinference.jsonl --join text", &both);
}

#[test]
fn genai_retrieval_spans_join_their_labels_by_text() {
    let wd = Workdir::new("traces_genai");
    let genai = format!("{TRACES}/otlp/genai.jsonl");
    grade_traces(&wd, &["--join", "text", &genai]).expect_code(0);
    assert_outputs_expected(&wd, "genai.jsonl", &["retrieve"]);
    // They name no query id: joined by id, every one is rejected, saying
    // that the text could join them.
    let wd = Workdir::new("traces_genai_by_id");
    grade_traces(&wd, &[&genai]).expect_code(1).expect_stderr(&[
        "20 rejected records exceed --max-rejects 0",
        "missing_query_id: span 1, retrieval 'retrieval': no query_id",
        "--join text",
    ]);
}

#[test]
fn span_stages_rename_what_the_reranker_dropped() {
    let wd = Workdir::new("traces_stage_loss_jsonl");
    let order = ["--stage-order", "retrieve,rerank"];
    grade_traces(
        &wd,
        &[order[0], order[1], &format!("{TRACES}/captures.jsonl")],
    )
    .expect_code(0);
    let from_jsonl = wd.read_text("out/stage_loss.csv");
    assert!(from_jsonl.lines().count() > 1, "{from_jsonl}");

    let wd = Workdir::new("traces_stage_loss_spans");
    let otlp = format!("{TRACES}/otlp/openinference.jsonl");
    let args = [
        "--span-stage",
        "RERANKER=final",
        "--stage-order",
        "retrieve,final",
        &otlp,
    ];
    grade_traces(&wd, &args).expect_code(0);
    let got = wd.read("out/stage_loss.csv");
    let want = from_jsonl.replace(",rerank,", ",final,");
    assert_same_lines("stage_loss.csv", &got, want.as_bytes());
}

/// An attribute holding a string.
fn string(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}

/// A RETRIEVER span of `query_id` ranking `docs`, lasting `millis`.
fn retriever(query_id: &str, docs: &[&str], millis: u64) -> Value {
    let mut attributes = vec![
        string("openinference.span.kind", "RETRIEVER"),
        string("metadata", &json!({"query_id": query_id}).to_string()),
    ];
    for (i, doc) in docs.iter().enumerate() {
        attributes.push(string(&format!("retrieval.documents.{i}.document.id"), doc));
    }
    json!({
        "name": "retrieve",
        "startTimeUnixNano": "1000000000",
        "endTimeUnixNano": (1_000_000_000 + millis * 1_000_000).to_string(),
        "attributes": attributes,
    })
}

/// One OTLP/JSON line: an export of `spans` from service `run`.
fn export(run: &str, spans: &[Value]) -> String {
    json!({"resourceSpans": [{
        "resource": {"attributes": [string("service.name", run)]},
        "scopeSpans": [{"spans": spans}],
    }]})
    .to_string()
}

/// summary.json's records, graded records, other records and rejects,
/// checked to add up.
fn span_counts(wd: &Workdir, out: &str) -> [u64; 4] {
    let summary = wd.read_json(&format!("{out}/summary.json"));
    assert_counts_add_up(&summary);
    ["records", "graded_records", "other_records", "rejected"].map(|c| count(&summary, c))
}

fn seed_labels(wd: &Workdir) {
    wd.write(
        "labels.jsonl",
        concat!(
            r#"{"query_id": "q_export", "relevant": ["export_csv"], "query": "How do I export a CSV?"}"#,
            "\n",
            r#"{"query_id": "q_reset", "relevant": ["reset_steps", "reset_limits"], "query": "How do I reset my password?"}"#,
            "\n",
        ),
    );
}

/// An export of no span is `{}` as protobuf writes it, and says nothing
/// of the format; a capture span whose SDK dropped attributes over its
/// limit is rejected, since its ranking may have lost documents.
#[test]
fn an_empty_export_is_counted_and_a_span_that_lost_attributes_rejected() {
    let wd = Workdir::new("traces_dropped");
    seed_labels(&wd);
    let mut truncated = retriever("q_reset", &["reset_steps", "reset_limits"], 5);
    truncated["droppedAttributesCount"] = json!(24);
    let mut llm = json!({"name": "llm", "attributes": [string("openinference.span.kind", "LLM")]});
    llm["droppedAttributesCount"] = json!(5);
    let spans = [retriever("q_export", &["export_csv"], 3), truncated, llm];
    wd.write(
        "traces.jsonl",
        format!("{{}}\n{}\n", export("bm25", &spans)),
    );
    let args = "grade --labels labels.jsonl -k 3 -o out traces.jsonl";
    let run = wd.rgrade(&args.split_whitespace().collect::<Vec<_>>());
    run.expect_code(1).expect_stderr(&["dropped_attributes"]);
    assert_eq!(
        span_counts(&wd, "out"),
        [4, 1, 2, 1],
        "an empty export, a capture, a capture that lost attributes, an LLM span"
    );
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    assert_eq!(rejects[0]["reason"].as_str(), Some("dropped_attributes"));
    let detail = rejects[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("dropped 24 of the span's attributes"),
        "{detail}"
    );
    let per_query = wd.read_csv("out/per_query.csv");
    assert_eq!(
        per_query.row(&[("query_id", "q_reset")])["status"],
        "invalid"
    );
}

#[test]
fn a_bad_span_is_rejected_alone_and_every_span_is_counted() {
    let wd = Workdir::new("traces_rejects");
    seed_labels(&wd);
    let mut no_doc_id = retriever("q_reset", &["billing", "reset_steps"], 5);
    no_doc_id["attributes"][2] = string("retrieval.documents.0.document.content", "Billing");
    let lines = [
        export(
            "bm25",
            &[
                retriever("q_export", &["export_csv", "billing"], 12),
                json!({"name": "llm", "attributes": [string("openinference.span.kind", "LLM")]}),
                no_doc_id,
                json!("not a span"),
            ],
        ),
        r#"{"resourceSpans": [{"scopeSpans": {}}]}"#.to_string(),
        r#"{"resourceSpans": []}"#.to_string(),
        "{not json".to_string(),
    ];
    wd.write("traces.jsonl", format!("{}\n", lines.join("\n")));
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "3",
        "--max-rejects",
        "10",
        "-o",
        "out",
        "traces.jsonl",
    ]);
    run.expect_code(0);
    assert_eq!(
        span_counts(&wd, "out"),
        [7, 1, 2, 4],
        "4 spans, then a line rejected whole, an export of no span, a line that is no JSON"
    );
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let got: Vec<(u64, &str)> = rejects
        .iter()
        .map(|r| (r["line"].as_u64().unwrap(), r["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (1, "bad_result"),
            (1, "bad_span"),
            (2, "not_a_trace"),
            (4, "invalid_json")
        ]
    );
    assert!(
        rejects[0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("span 3, RETRIEVER 'retrieve': document 0"),
        "{}",
        rejects[0]
    );
    // A span's excerpt is the span itself, not the start of its line.
    let excerpt = rejects[0]["record"].as_str().unwrap();
    assert!(
        excerpt.starts_with(r#"{"attributes":"#) || excerpt.starts_with(r#"{"name":"#),
        "{excerpt}"
    );
    assert_eq!(rejects[1]["record"], json!("\"not a span\""));
    // The rejected span made its query invalid, not missing; the
    // latency is the span's duration.
    let per_query = wd.read_csv("out/per_query.csv");
    let reset = per_query.row(&[("query_id", "q_reset")]);
    assert_eq!(reset["status"], "invalid");
    let export_row = per_query.row(&[("query_id", "q_export")]);
    assert_eq!(
        (
            export_row["status"].as_str(),
            export_row["latency_ms"].as_str()
        ),
        ("ok", "12")
    );
}

#[test]
fn repeats_follow_the_order_of_spans_within_a_line() {
    let wd = Workdir::new("traces_repeats");
    seed_labels(&wd);
    let line = export(
        "bm25",
        &[
            retriever("q_export", &["billing", "export_csv"], 10),
            retriever("q_export", &["export_csv"], 20),
        ],
    );
    wd.write("traces.jsonl", format!("{line}\n"));
    for (policy, latency) in [("first", "10"), ("last", "20")] {
        let out = format!("out-{policy}");
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "3",
            "--repeats",
            policy,
            "-o",
            &out,
            "traces.jsonl",
        ])
        .expect_code(0);
        let per_query = wd.read_csv(&format!("{out}/per_query.csv"));
        let row = per_query.row(&[("query_id", "q_export")]);
        assert_eq!(row["latency_ms"], latency, "--repeats {policy}");
    }
}

#[test]
fn joining_by_text_needs_one_text_per_label() {
    let wd = Workdir::new("traces_join_labels");
    wd.write(
        "run.jsonl",
        format!("{}\n", export("bm25", &[retriever("q", &["a"], 1)])),
    );
    let grade =
        |labels: &str| wd.rgrade(&["grade", "--labels", labels, "--join", "text", "run.jsonl"]);
    wd.write("qrels.txt", "q 0 a 1\n");
    grade("qrels.txt")
        .expect_code(2)
        .expect_stderr(&["qrels.txt", "TREC qrels hold no query text"]);
    wd.write(
        "same.jsonl",
        concat!(
            r#"{"query_id": "q1", "relevant": ["a"], "query": "Reset?"}"#,
            "\n",
            r#"{"query_id": "q2", "relevant": ["b"], "query": " Reset? "}"#,
            "\n",
        ),
    );
    grade("same.jsonl").expect_code(2).expect_stderr(&[
        "same.jsonl:2: query_id 'q2' has the query text of query_id 'q1' (line 1): 'Reset?'",
    ]);
    wd.write("none.jsonl", r#"{"query_id": "q1", "relevant": ["a"]}"#);
    grade("none.jsonl")
        .expect_code(2)
        .expect_stderr(&["none.jsonl:1: no 'query' text"]);
    wd.write(
        "texts.csv",
        "query_id,doc_id,query\nq1,a,Reset?\nq1,b,Other?\n",
    );
    grade("texts.csv")
        .expect_code(2)
        .expect_stderr(&["texts.csv:3: query_id 'q1' has query text 'Other?' here but 'Reset?'"]);

    // Unicode's two ways to write é: composed (U+00E9) and decomposed
    // (e, U+0301) are one text, in the labels and between labels and spans.
    let (composed, decomposed) = ("Caf\u{e9} hours?", "Cafe\u{301} hours?");
    let label = |id: &str, text: &str| json!({"query_id": id, "relevant": ["a"], "query": text});
    wd.write(
        "forms.jsonl",
        format!("{}\n{}\n", label("q1", composed), label("q2", decomposed)),
    );
    grade("forms.jsonl")
        .expect_code(2)
        .expect_stderr(&["forms.jsonl:2: query_id 'q2' has the query text of query_id 'q1'"]);
    wd.write("composed.jsonl", format!("{}\n", label("q1", composed)));
    let mut span = retriever("ignored", &["a"], 1);
    let mut attributes = span["attributes"].as_array().unwrap().clone();
    attributes.retain(|a| a["key"] != "metadata");
    attributes.push(string("input.value", decomposed));
    span["attributes"] = json!(attributes);
    wd.write("decomposed.jsonl", format!("{}\n", export("bm25", &[span])));
    let args = [
        "grade",
        "--labels",
        "composed.jsonl",
        "--join",
        "text",
        "-k",
        "1",
    ];
    let mut args = args.to_vec();
    args.extend(["-o", "nfc", "decomposed.jsonl"]);
    wd.rgrade(&args).expect_code(0);
    let q1 = wd.read_csv("nfc/per_query.csv").row(&[("query_id", "q1")]);
    assert_eq!((&q1["status"][..], &q1["rr@1"][..]), ("ok", "1"));
}

/// `rgrade gen --format otlp` writes the JSONL log's captures as spans:
/// with the reranker's stage named `final`, every grade is the same; only
/// the latency of `final` (the span's own duration, not the request's) and
/// the context size (no span attribute holds it) differ.
#[test]
fn generated_traces_grade_as_the_generated_jsonl_log() {
    let wd = Workdir::new("traces_gen");
    for (format, dir) in [("jsonl", "jsonl"), ("otlp", "otlp")] {
        wd.rgrade(&[
            "gen",
            "--queries",
            "300",
            "--results",
            "20",
            "--unlabeled",
            "30",
            "--seed",
            "5",
            "--format",
            format,
            "-o",
            dir,
        ])
        .expect_code(0);
    }
    let grade = |logs: &str, out: &str, extra: &[&str]| {
        let mut args = vec![
            "grade",
            "--labels",
            "jsonl/labels.jsonl",
            "-k",
            "1,5,10",
            "-q",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-o", out, logs]);
        wd.rgrade(&args).expect_code(0);
        wd.read_csv(&format!("{out}/per_query.csv"))
    };
    let jsonl = grade("jsonl/logs.jsonl", "out-jsonl", &[]);
    let spans = grade(
        "otlp/traces.jsonl",
        "out-otlp",
        &["--span-stage", "RERANKER=final"],
    );
    let (jsonl, spans) = (jsonl.records(), spans.records());
    assert_eq!(jsonl.len(), spans.len());
    for (want, got) in jsonl.iter().zip(&spans) {
        for (column, value) in want {
            let differs =
                column == "context_tokens" || (column == "latency_ms" && want["stage"] == "final");
            if !differs {
                assert_eq!(&got[column], value, "{column} of {want:?}");
            }
        }
    }
    let summary = wd.read_json("out-otlp/summary.json");
    assert_counts_add_up(&summary);
    assert_eq!(
        count(&summary, "other_records"),
        330,
        "one LLM span per query"
    );
}

/// A RETRIEVER span placed in a trace: `trace`, its own id, its parent's.
fn in_trace(mut span: Value, trace: &str, id: &str, parent: &str) -> Value {
    span["traceId"] = json!(trace);
    span["spanId"] = json!(id);
    span["parentSpanId"] = json!(parent);
    span
}

/// OpenInference's LlamaIndex instrumentation traces `retrieve()` as two
/// RETRIEVER spans: the outer one with the documents, the inner
/// `_retrieve` with none, exported first. The inner one is no capture of
/// its own: it never makes a query `invalid` (a repeated capture), never
/// grades 0 under `--repeats first`, never halves `--repeats mean`, and
/// summary.json counts it. An empty retriever span on its own is an empty
/// ranking, said in a warning.
#[test]
fn an_empty_retriever_span_inside_another_is_set_aside() {
    let wd = Workdir::new("traces_nested");
    seed_labels(&wd);
    let call = |trace: &str, query: &str, docs: &[&str]| {
        let mut inner = retriever(query, &[], 2);
        inner["name"] = json!("VectorIndexRetriever._retrieve");
        [
            in_trace(
                inner,
                trace,
                &format!("{trace}-inner"),
                &format!("{trace}-outer"),
            ),
            in_trace(
                retriever(query, docs, 3),
                trace,
                &format!("{trace}-outer"),
                "",
            ),
        ]
    };
    let [inner_a, outer_a] = call("a1", "q_export", &["billing", "export_csv"]);
    let [inner_b, outer_b] = call("b2", "q_reset", &["reset_steps", "x", "reset_limits"]);
    let spans = [inner_a, outer_a, inner_b, outer_b];
    // Exported together (a batch processor), or each span on its own line
    // as a simple span processor writes them, the inner one first, or in
    // two files.
    wd.write(
        "together.jsonl",
        format!("{}\n", export("llamaindex", &spans)),
    );
    let line = |span: &Value| format!("{}\n", export("llamaindex", std::slice::from_ref(span)));
    wd.write("alone.jsonl", spans.iter().map(line).collect::<String>());
    wd.write("split/1.jsonl", line(&spans[0]) + &line(&spans[3]));
    wd.write("split/2.jsonl", line(&spans[2]) + &line(&spans[1]));
    let mut per_query = Vec::new();
    let layouts = [
        ["together.jsonl"].as_slice(),
        &["alone.jsonl"],
        &["split/2.jsonl", "split/1.jsonl"],
    ];
    for (repeats, logs) in ["error", "first", "mean"]
        .iter()
        .flat_map(|r| layouts.map(|l| (r, l)))
    {
        let out = format!("out_{repeats}_{}", logs[0].replace('/', "_"));
        let args = [
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "3",
            "--repeats",
            repeats,
        ];
        let mut args = args.to_vec();
        args.extend(["-o", &out]);
        args.extend(logs);
        wd.rgrade(&args).expect_code(0);
        assert_eq!(
            span_counts(&wd, &out),
            [4, 2, 2, 0],
            "--repeats {repeats} {logs:?}"
        );
        let summary = wd.read_json(&format!("{out}/summary.json"));
        assert_eq!(count(&summary, "nested_spans"), 2);
        assert_eq!(count(&summary, "empty_spans"), 0);
        per_query.push(wd.read_text(&format!("{out}/per_query.csv")));
    }
    assert!(
        per_query.iter().all(|p| *p == per_query[0]),
        "{per_query:?}"
    );
    let graded = wd.read_csv("out_error_alone.jsonl/per_query.csv");
    let q_export = graded.row(&[("query_id", "q_export")]);
    assert_eq!(
        (&q_export["status"][..], &q_export["rr@3"][..]),
        ("ok", "0.5")
    );
    let reset = graded.row(&[("query_id", "q_reset")]);
    assert_eq!((&reset["recall@3"][..], &reset["captures"][..]), ("1", "1"));

    // One grading of `log` into `out` under `--repeats repeats`, and its
    // nested and empty span counts.
    let grade = |out: &str, repeats: &str, log: &str| {
        let args = [
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "3",
            "--repeats",
            repeats,
        ];
        let mut args = args.to_vec();
        args.extend(["-o", out, log]);
        wd.rgrade(&args)
    };
    let span_counts_of = |out: &str| {
        let summary = wd.read_json(&format!("{out}/summary.json"));
        [
            count(&summary, "nested_spans"),
            count(&summary, "empty_spans"),
        ]
    };

    // Under a capture of another query (a sub-question), or of another
    // trace, an empty span is a capture of its own.
    let outer = in_trace(
        retriever("q_export", &["export_csv"], 3),
        "d4",
        "d4-outer",
        "",
    );
    let other_query = in_trace(retriever("q_reset", &[], 2), "d4", "d4-inner", "d4-outer");
    let other_trace = in_trace(retriever("q_export", &[], 2), "e5", "e5-inner", "d4-outer");
    wd.write(
        "lone.jsonl",
        format!("{}\n", export("llamaindex", &[other_query, outer])),
    );
    wd.write(
        "other_trace.jsonl",
        format!("{}\n", export("llamaindex", &[other_trace])),
    );
    grade("lone", "error", "lone.jsonl")
        .expect_code(0)
        .expect_stderr(&[
            "1 retrieval or rerank span held no document and was graded as an empty ranking",
        ]);
    assert_eq!(span_counts_of("lone"), [0, 1]);
    let lone = wd.read_csv("lone/per_query.csv");
    let q_reset = lone.row(&[("query_id", "q_reset")]);
    assert_eq!(
        (&q_reset["status"][..], &q_reset["n_results"][..]),
        ("ok", "0")
    );
    assert_eq!(lone.row(&[("query_id", "q_export")])["rr@3"], "1");
    grade("e5", "error", "other_trace.jsonl").expect_code(0);
    let q_export = wd
        .read_csv("e5/per_query.csv")
        .row(&[("query_id", "q_export")])
        .clone();
    assert_eq!(
        (&q_export["status"][..], &q_export["n_results"][..]),
        ("ok", "0")
    );

    // A span that names itself as its parent, or two empty spans that
    // name each other, name no real parent: captures of their own.
    let looped = [
        in_trace(retriever("q_export", &[], 2), "g7", "g7-a", "g7-a"),
        in_trace(retriever("q_reset", &[], 2), "h8", "h8-a", "h8-b"),
        in_trace(retriever("q_reset", &[], 2), "h8", "h8-b", "h8-a"),
    ];
    wd.write(
        "looped.jsonl",
        format!("{}\n", export("llamaindex", &looped)),
    );
    grade("g7", "first", "looped.jsonl").expect_code(0);
    assert_eq!(span_counts_of("g7"), [0, 3]);
    let statuses = wd.read_csv("g7/per_query.csv").column("status");
    assert_eq!(statuses, ["ok", "ok"], "empty rankings, not missing");

    // The outer span rejected (its SDK dropped attributes): its inner call
    // is still no capture of its own, and the query is invalid rather than
    // graded on a ranking of nothing.
    let mut outer = in_trace(
        retriever("q_export", &["export_csv"], 3),
        "f6",
        "f6-outer",
        "",
    );
    outer["droppedAttributesCount"] = json!(3);
    let inner = in_trace(retriever("q_export", &[], 2), "f6", "f6-inner", "f6-outer");
    wd.write(
        "dropped.jsonl",
        format!("{}\n", export("llamaindex", &[inner, outer])),
    );
    grade("f6", "first", "dropped.jsonl").expect_code(1);
    let q_export = wd
        .read_csv("f6/per_query.csv")
        .row(&[("query_id", "q_export")])
        .clone();
    assert_eq!(q_export["status"], "invalid");
    assert_eq!(span_counts_of("f6")[0], 1);
}

/// Format detection looks past a first line it cannot place: an export
/// whose first line holds a byte that is not UTF-8, or a file that starts
/// mid-line (a byte range of a larger export), is still read as OTLP, and
/// only the broken line is rejected.
#[test]
fn a_broken_first_line_does_not_decide_the_format() {
    let wd = Workdir::new("traces_broken_first_line");
    let sample = std::fs::read(
        Path::new(REPO_ROOT)
            .join(TRACES)
            .join("otlp/openinference.jsonl"),
    )
    .unwrap();
    let first_end = sample.iter().position(|&b| b == b'\n').unwrap();
    let mut garbled = sample.clone();
    let at = garbled[..first_end]
        .windows(3)
        .position(|w| w == b"bm2")
        .unwrap();
    garbled[at] = 0xff;
    wd.write("garbled.jsonl", &garbled);
    wd.write("cut.jsonl", &sample[100..]);
    for (file, reason) in [
        ("garbled.jsonl", "invalid_utf8"),
        ("cut.jsonl", "invalid_json"),
    ] {
        let out = format!("out_{file}");
        let labels = Path::new(REPO_ROOT).join(TRACES).join("labels.jsonl");
        let labels = labels.display().to_string();
        let args = ["grade", "--labels", &labels, "-k", "3", "-o", &out, file];
        wd.rgrade(&args).expect_code(1);
        // Three lines of 32, 32 and 16 spans, half of them captures; the
        // first line is one rejected record.
        assert_eq!(span_counts(&wd, &out), [49, 24, 24, 1], "{file}");
        let rejects = wd.read_jsonl(&format!("{out}/rejects.jsonl"));
        assert_eq!(
            (rejects[0]["line"].as_u64(), rejects[0]["reason"].as_str()),
            (Some(1), Some(reason))
        );
    }
}

/// The per_query.csv rows of `stage` for the queries of `subset`, without
/// their run, stage and latency; every other row must have status
/// `status_of_others`.
fn rows_of<S: AsRef<str>>(
    csv: &[u8],
    stage: &str,
    subset: &[S],
    status_of_others: &str,
) -> Vec<String> {
    let text = String::from_utf8(csv.to_vec()).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let left_out = ["run", "stage", "latency_ms"].map(|c| header.iter().position(|h| *h == c));
    let status = header.iter().position(|c| *c == "status").unwrap();
    let mut kept = Vec::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if cells[1] != stage {
            continue;
        }
        if subset.iter().any(|q| q.as_ref() == cells[2]) {
            let without: Vec<&str> = (cells.iter().enumerate())
                .filter(|(i, _)| !left_out.contains(&Some(*i)))
                .map(|(_, c)| *c)
                .collect();
            kept.push(without.join(","));
        } else {
            assert_eq!(cells[status], status_of_others, "{line}");
        }
    }
    assert_eq!(kept.len(), subset.len());
    kept
}

/// The shapes other instrumentations write (data-samples/traces/README.md,
/// "More shapes"): OpenInference's LangChain spans, whose ids are only in
/// `output.value`, `retrieval.documents` held as one JSON string, and
/// Langfuse's observations export (its documents a JSON string in
/// `output`, its question in `input`), grade their four questions as
/// captures.jsonl's retriever rankings do. The rows are compared without
/// their run and stage (Langfuse's export names neither as the spans do)
/// and latency (LangChain's span times pass through a float; Langfuse
/// keeps seconds).
#[test]
fn instrumentation_shapes_grade_as_their_captures() {
    let subset = ["q000005", "q000021", "q000025", "q000035"];
    let expected = expected("per_query.csv", &["retrieve"]);
    let want = rows_of(&expected, "retrieve", &subset, "ok");
    let langfuse = [
        "--join",
        "text",
        "--query-field",
        "input",
        "--results-field",
        "output",
        "--doc-field",
        "id",
        "--stage-field",
        "type",
        "--stage",
        "RETRIEVER",
    ];
    for (file, stage, options) in [
        ("otlp/langchain.jsonl", "retrieve", &["--join", "id"][..]),
        ("otlp/langchain.jsonl", "retrieve", &["--join", "text"][..]),
        (
            "otlp/openinference_json_documents.jsonl",
            "retrieve",
            &[][..],
        ),
        ("langfuse_observations.jsonl", "RETRIEVER", &langfuse[..]),
    ] {
        let wd = Workdir::new("traces_instrumentations");
        let logs = format!("{TRACES}/{file}");
        let mut args = options.to_vec();
        args.push(&logs);
        grade_traces(&wd, &args).expect_code(0);
        let got = rows_of(&wd.read("out/per_query.csv"), stage, &subset, "missing");
        assert_eq!(got, want, "{file} {options:?}");
        let summary = wd.read_json("out/summary.json");
        assert_counts_add_up(&summary);
        assert_eq!(count(&summary, "rejected"), 0, "{file}");
    }
}

/// LangSmith's runs, exported one a line by its SDK or in bulk as Parquet
/// (`inputs`, `outputs` and `extra` JSON held in string columns), grade
/// through the same field flags as captures.jsonl's retriever rankings:
/// a pointer that reaches a string column goes on inside its JSON.
#[test]
fn langsmith_runs_grade_as_their_captures() {
    let expected = expected("per_query.csv", &["retrieve"]);
    let queries: Vec<String> = (String::from_utf8_lossy(&expected).lines().skip(1))
        .map(|line| line.split(',').nth(2).unwrap().to_string())
        .collect();
    assert_eq!(queries.len(), 20);
    let want = rows_of(&expected, "retrieve", &queries, "ok");
    for file in [
        "langsmith_runs.jsonl",
        "parquet/langsmith_bulk_export.parquet",
    ] {
        let wd = Workdir::new("traces_langsmith");
        let logs = format!("{TRACES}/{file}");
        let mut options = LANGSMITH_FIELDS.to_vec();
        options.extend(["--stage-field", "run_type", "--stage", "retriever", &logs]);
        grade_traces(&wd, &options).expect_code(0);
        let got = rows_of(&wd.read("out/per_query.csv"), "retriever", &queries, "");
        assert_eq!(got, want, "{file}");
        let summary = wd.read_json("out/summary.json");
        assert_counts_add_up(&summary);
        // Per question a chain, a retriever and an LLM run: the chain and
        // LLM runs are of a stage left out.
        assert_eq!(
            ["records", "graded_records", "rejected"].map(|c| count(&summary, c)),
            [60, 20, 0],
            "{file}"
        );
    }
}

/// Shapes that hold no gradable capture in a form rgrade reads are named
/// and refused (exit 2), not read line by line into rejects or misread:
/// the ConsoleSpanExporter's pretty-printed spans, and Phoenix's
/// retrieved-documents frame, which holds no document id.
#[test]
fn shapes_rgrade_does_not_read_are_named() {
    for (file, needle) in [
        ("otlp/console_spans.json", "ConsoleSpanExporter prints them"),
        (
            "parquet/phoenix_retrieved_documents.parquet",
            "Phoenix's retrieved-documents frame",
        ),
    ] {
        let wd = Workdir::new("traces_unread");
        let logs = format!("{TRACES}/{file}");
        let run = grade_traces(&wd, &[&logs]);
        run.expect_code(2);
        assert!(run.stderr.contains(&format!("{logs}: ")), "{}", run.stderr);
        assert!(run.stderr.contains(needle), "{}", run.stderr);
        assert!(!wd.exists("out/summary.json"));
    }
}
