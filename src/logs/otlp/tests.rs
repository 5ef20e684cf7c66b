//! The span reader against exports written as the instrumentations write them.

use super::*;
use crate::io::json::JsonParser;
use serde_json::{json, Value as Json};

fn string(key: &str, value: &str) -> Json {
    json!({"key": key, "value": {"stringValue": value}})
}

/// An export line of one resource named `service` holding `spans`.
fn export(service: &str, spans: Vec<Json>) -> String {
    json!({"resourceSpans": [{
        "resource": {"attributes": [string("service.name", service)]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
    }]})
    .to_string()
}

fn span(attributes: Vec<Json>) -> Json {
    json!({
        "name": "search",
        "startTimeUnixNano": "1000000",
        "endTimeUnixNano": "3500000",
        "attributes": attributes,
    })
}

/// What each span of `line` became: its key and doc ids, "other", or
/// the reject code and detail.
fn records(line: &str, fields: &SpanFields) -> Result<Vec<String>, Invalid> {
    let mut parser = JsonParser::default();
    parser.parse(line.as_bytes(), |root| {
        let mut seen = Vec::new();
        for_each_span(
            root,
            fields,
            &[],
            &mut FieldsSeen::default(),
            |_, record| {
                seen.push(match record {
                    Record::Invalid(invalid) => {
                        format!("{}: {}", invalid.reason, invalid.detail)
                    }
                    Record::Event {
                        key,
                        ranking: Ok(ranking),
                        ..
                    } => format!(
                        "{}/{}/{} {:?} {:?}",
                        key.run, key.stage, key.query_id, ranking.docs, ranking.latency_ms
                    ),
                    Record::Event {
                        key,
                        ranking: Err(invalid),
                        ..
                    } => {
                        format!("{} {}: {}", key.query_id, invalid.reason, invalid.detail)
                    }
                    _ => "other".to_string(),
                });
            },
        )
        .map(|_| seen)
    })?
}

fn retriever(query_id: &str, docs: &[&str]) -> Json {
    let mut attributes = vec![
        string("openinference.span.kind", "RETRIEVER"),
        string("input.value", &format!("  question of {query_id} ")),
        string("metadata", &json!({"query_id": query_id}).to_string()),
    ];
    for (i, doc) in docs.iter().enumerate() {
        attributes.push(string(&format!("retrieval.documents.{i}.document.id"), doc));
        attributes.push(json!({"key": format!("retrieval.documents.{i}.document.score"), "value": {"doubleValue": 1.5}}));
    }
    span(attributes)
}

#[test]
fn openinference_spans_rank_their_documents_by_number() {
    // Twelve documents: "10" and "11" rank after "9", not after "1".
    let docs: Vec<String> = (0..12).map(|i| format!("d{i}")).collect();
    let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
    let mut shuffled = retriever("q1", &docs);
    shuffled["attributes"].as_array_mut().unwrap().reverse();
    let reranker = span(vec![
        string("openinference.span.kind", "RERANKER"),
        json!({"key": "query_id", "value": {"intValue": "42"}}),
        string("reranker.input_documents.0.document.id", "d9"),
        string("reranker.output_documents.1.document.id", "d2"),
        json!({"key": "reranker.output_documents.0.document.id", "value": {"intValue": "7"}}),
    ]);
    let llm = span(vec![string("openinference.span.kind", "LLM")]);
    let line = export(
        "bm25",
        vec![shuffled, reranker, llm, json!({"name": "plain"})],
    );
    let seen = records(&line, &SpanFields::default()).unwrap();
    let ids: Vec<String> = docs.iter().map(|d| format!("{d:?}")).collect();
    assert_eq!(
        seen,
        [
            format!("bm25/retrieve/q1 [{}] Some(2.5)", ids.join(", ")),
            r#"bm25/rerank/42 ["7", "d2"] Some(2.5)"#.to_string(),
            "other".to_string(),
            "other".to_string(),
        ]
    );
}

/// One document number under two keys (`01` and `1`), or one key
/// given twice with two ids, is refused, not read as whichever came
/// first; one key given twice with one id is that id.
#[test]
fn a_document_number_given_twice_is_refused() {
    let doc = |key: &str, id: &str| string(&format!("retrieval.documents.{key}.document.id"), id);
    let kind = string("openinference.span.kind", "RETRIEVER");
    let query = string("metadata", r#"{"query_id": "q1"}"#);
    let spans = vec![
        span(vec![
            kind.clone(),
            query.clone(),
            doc("0", "a"),
            doc("01", "b"),
            doc("1", "c"),
        ]),
        span(vec![
            kind.clone(),
            query.clone(),
            doc("0", "a"),
            doc("0", "b"),
        ]),
        span(vec![kind, query, doc("0", "a"), doc("0", "a")]),
    ];
    let seen = records(&export("svc", spans), &SpanFields::default()).unwrap();
    assert!(
        seen[0].ends_with(
            "document 1 is given twice, as 'retrieval.documents.01.document.id' \
                           and 'retrieval.documents.1.document.id'"
        ),
        "{seen:?}"
    );
    assert!(
        seen[1].ends_with(
            "document 0 is given twice, as 'retrieval.documents.0.document.id': 'a' and 'b'"
        ),
        "{seen:?}"
    );
    assert!(seen[2].starts_with(r#"svc/retrieve/q1 ["a"]"#), "{seen:?}");
}

/// A droppedAttributesCount that is no count (a fraction, a negative
/// number, a word) rejects its span as one that dropped attributes
/// does: what it dropped cannot be known. Null is none dropped.
#[test]
fn a_dropped_attributes_count_that_is_no_count_is_refused() {
    let with_count = |count: Json| {
        let mut span = retriever("q1", &["a"]);
        span["droppedAttributesCount"] = count;
        span
    };
    let spans = [
        json!(2.5),
        json!(-1),
        json!("many"),
        json!(true),
        json!(null),
        json!("0"),
    ];
    let spans = spans.into_iter().map(with_count).collect();
    let seen = records(&export("svc", spans), &SpanFields::default()).unwrap();
    for (i, shown) in ["2.5", "-1", "\"many\"", "true"].iter().enumerate() {
        assert!(
            seen[i].ends_with(&format!(
                "droppedAttributesCount {shown} is not a count, so the span may have lost \
                 documents unseen"
            )),
            "{seen:?}"
        );
    }
    assert!(seen[4].starts_with(r#"svc/retrieve/q1 ["a"]"#), "{seen:?}");
    assert!(seen[5].starts_with(r#"svc/retrieve/q1 ["a"]"#), "{seen:?}");
}

#[test]
fn retriever_documents_as_a_json_string_or_only_in_the_output() {
    let with = |attributes: Vec<Json>| {
        let mut span = retriever("q1", &[]);
        span["attributes"]
            .as_array_mut()
            .unwrap()
            .extend(attributes);
        export("svc", vec![span])
    };
    let listed = with(vec![string(
        "retrieval.documents",
        r#"[{"document.id": "a", "document.metadata": "{\"id\": \"m-a\"}"},
            {"id": 7, "document.metadata": {"id": "m-7"}}]"#,
    )]);
    assert_eq!(
        records(&listed, &SpanFields::default()).unwrap(),
        [r#"svc/retrieve/q1 ["a", "7"] Some(2.5)"#]
    );
    let metadata = FieldNames {
        doc: Some("/id".to_string()),
        ..FieldNames::default()
    };
    let by_metadata = SpanFields::new(&metadata, &[], JoinBy::Id);
    assert_eq!(
        records(&listed, &by_metadata).unwrap(),
        [r#"svc/retrieve/q1 ["m-a", "m-7"] Some(2.5)"#]
    );
    let both = with(vec![
        string("retrieval.documents", "[]"),
        string("retrieval.documents.0.document.id", "a"),
    ]);
    let refused = records(&both, &SpanFields::default()).unwrap();
    assert!(
        refused[0].contains("both as a JSON string and flattened"),
        "{refused:?}"
    );
    let not_a_list = records(
        &with(vec![string("retrieval.documents", "{}")]),
        &SpanFields::default(),
    );
    assert!(not_a_list.unwrap()[0].contains("bad_results"));

    // LangChain's instrumentation: content and metadata flattened, the
    // ids only in output.value's documents.
    let output = |ids: &str| string("output.value", &format!(r#"{{"documents": [{ids}]}}"#));
    let content = |i: usize| string(&format!("retrieval.documents.{i}.document.content"), "text");
    let langchain = with(vec![
        content(0),
        content(1),
        output(r#"{"id": "x"}, {"id": "y"}"#),
    ]);
    assert_eq!(
        records(&langchain, &SpanFields::default()).unwrap(),
        [r#"svc/retrieve/q1 ["x", "y"] Some(2.5)"#]
    );
    let fewer = with(vec![content(0), content(1), output(r#"{"id": "x"}"#)]);
    let refused = records(&fewer, &SpanFields::default()).unwrap();
    assert!(refused[0].contains("flattens 2 documents"), "{refused:?}");
    let no_id = with(vec![content(0), output(r#"{"page_content": "text"}"#)]);
    let refused = records(&no_id, &SpanFields::default()).unwrap();
    assert!(
        refused[0].contains("document 0 of 'output.value' has no 'id'"),
        "{refused:?}"
    );
}

#[test]
fn genai_documents_read_structured_or_as_a_json_string() {
    let kv = |id: &str| {
        json!({"kvlistValue": {"values": [
            {"key": "score", "value": {"doubleValue": 0.5}},
            {"key": "id", "value": {"stringValue": id}},
        ]}})
    };
    let structured = span(vec![
        string("gen_ai.operation.name", "retrieval"),
        string("gen_ai.retrieval.query.text", "How do I export?"),
        json!({"key": "gen_ai.retrieval.documents", "value": {"arrayValue": {"values": [kv("a"), kv("b")]}}}),
    ]);
    let as_string = span(vec![
        string("gen_ai.operation.name", "retrieval"),
        string("gen_ai.retrieval.query.text", "Reset steps?"),
        string(
            "gen_ai.retrieval.documents",
            r#"[{"id": "c", "score": 1}, {"id": 5}]"#,
        ),
    ]);
    let line = export("svc", vec![structured, as_string]);
    let by_text = SpanFields::new(&FieldNames::default(), &[], JoinBy::Text);
    assert_eq!(
        records(&line, &by_text).unwrap(),
        [
            r#"svc/retrieve/How do I export? ["a", "b"] Some(2.5)"#,
            r#"svc/retrieve/Reset steps? ["c", "5"] Some(2.5)"#,
        ]
    );
    // Without a query id, joined by id, each span is rejected, saying why.
    let by_id = records(&line, &SpanFields::default()).unwrap();
    assert!(
        by_id[0].starts_with("missing_query_id: retrieval 'search': no query_id"),
        "{by_id:?}"
    );
}

#[test]
fn the_field_flags_and_span_stages_remap_what_a_span_names() {
    let mut with_run = retriever("q1", &["a"]);
    with_run["attributes"].as_array_mut().unwrap().extend([
        string(
            "retrieval.documents.0.document.metadata",
            r#"{"chunk": {"id": "kb/1"}}"#,
        ),
        string("deployment", "canary"),
        string("session.query", "q9"),
    ]);
    let names = FieldNames {
        doc: Some("/chunk/id".into()),
        run: Some("deployment".into()),
        query: Some("session.query".into()),
        ..FieldNames::default()
    };
    let stages = [(SpanKind::Retriever, "first-stage".to_string())];
    let fields = SpanFields::new(&names, &stages, JoinBy::Id);
    let line = export("bm25", vec![with_run]);
    assert_eq!(
        records(&line, &fields).unwrap(),
        [r#"canary/first-stage/q9 ["kb/1"] Some(2.5)"#]
    );
}

/// JSON held in an attribute (metadata, document metadata, GenAI
/// documents) reads as a log line does: the first of a key named twice
/// counts, and a number beyond 64 bits where rgrade reads nothing is
/// harmless.
#[test]
fn json_inside_attributes_reads_as_a_log_line_does() {
    let metadata = r#"{"query_id": "q1", "query_id": "q2", "x": 1e400}"#;
    let retriever = span(vec![
        string("openinference.span.kind", "RETRIEVER"),
        string("metadata", metadata),
        string(
            "retrieval.documents.0.document.metadata",
            r#"{"chunk": "a", "chunk": "z", "score": 1e400}"#,
        ),
    ]);
    let genai = span(vec![
        string("gen_ai.operation.name", "retrieval"),
        json!({"key": "query_id", "value": {"intValue": "7"}}),
        string(
            "gen_ai.retrieval.documents",
            r#"[{"id": "c", "id": "zzz", "score": 1e400}, {"id": 18446744073709551615}]"#,
        ),
    ]);
    let names = FieldNames {
        doc: Some("/chunk".into()),
        ..FieldNames::default()
    };
    let line = export("svc", vec![retriever.clone(), genai]);
    let chunk = SpanFields::new(&names, &[], JoinBy::Id);
    assert_eq!(
        records(&line, &chunk).unwrap()[0],
        r#"svc/retrieve/q1 ["a"] Some(2.5)"#
    );
    let by_id = records(&line, &SpanFields::default()).unwrap();
    assert_eq!(
        by_id[1],
        r#"svc/retrieve/7 ["c", "18446744073709551615"] Some(2.5)"#
    );
    // Not JSON at all: said so.
    let mut broken = retriever;
    broken["attributes"][1] = string("metadata", "{not json");
    let line = export("svc", vec![broken]);
    let seen = records(&line, &SpanFields::default()).unwrap();
    assert!(seen[0].contains("'metadata' is not valid JSON"), "{seen:?}");
}

#[test]
fn malformed_spans_are_rejected_alone_and_malformed_exports_whole() {
    let mut gap = retriever("q1", &["a", "b"]);
    gap["attributes"]
        .as_array_mut()
        .unwrap()
        .retain(|a| a["key"] != "retrieval.documents.0.document.id");
    let mut backwards = retriever("q2", &["a"]);
    backwards["endTimeUnixNano"] = json!("10");
    let mut bad_id = retriever("q3", &["a"]);
    bad_id["attributes"][3] =
        json!({"key": "retrieval.documents.0.document.id", "value": {"doubleValue": 1.5}});
    let line = export(
        "s",
        vec![
            gap,
            backwards,
            bad_id,
            json!(["not", "a", "span"]),
            json!({"attributes": {"k": 1}}),
        ],
    );
    let seen = records(&line, &SpanFields::default()).unwrap();
    assert_eq!(
        seen,
        [
            "q1 bad_result: RETRIEVER 'search': document 0 has no \
             'retrieval.documents.0.document.id'",
            "q2 bad_field: RETRIEVER 'search': the span ends before it starts",
            "q3 bad_result: RETRIEVER 'search': document 0: \
             'retrieval.documents.0.document.id' holds no doc id",
            "bad_span: a span must be a JSON object",
            "bad_span: 'attributes' must be an array",
        ]
    );
    for line in [
        r#"{"resourceSpans": {}}"#,
        r#"{"resourceSpans": [{"scopeSpans": {}}]}"#,
        r#"{"resourceSpans": [{"scopeSpans": [{"spans": 3}]}]}"#,
        r#"{"query_id": "q1", "results": []}"#,
    ] {
        let err = records(line, &SpanFields::default()).unwrap_err();
        assert_eq!(err.reason, RejectReason::NotATrace, "{line}");
    }
    // Exports of no span, as protobuf writes them, leaving empty lists
    // out, are no error.
    for empty in [
        r#"{"resourceSpans": [{"scopeSpans": [{"scope": {}}]}]}"#,
        r#"{"resourceSpans": [{"resource": {}}]}"#,
        "{}",
    ] {
        let spans = records(empty, &SpanFields::default()).unwrap();
        assert_eq!(spans, Vec::<String>::new(), "{empty}");
    }
}
