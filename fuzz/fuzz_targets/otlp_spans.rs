//! OTLP/JSON trace exports: the input is one block of export lines,
//! judged as a grading worker judges it (spans, kinds, query identity,
//! documents, times), once with the default mapping and once joined by
//! question text with remapped attributes and stages.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rgrade::kernels::{LogFields, SpanFields, TrecLines};
use rgrade::{DuplicateDocs, FieldNames, JoinBy, LogsFormat, RunName, SpanKind};
use rgrade_fuzz::judge;

/// Spans named as a deployment of one's own might name them: the query
/// text in an attribute, the run in another, the doc id in the metadata.
fn mapped() -> &'static SpanFields {
    static FIELDS: OnceLock<SpanFields> = OnceLock::new();
    FIELDS.get_or_init(|| {
        let names = FieldNames {
            query: Some("session.question".into()),
            run: Some("deployment".into()),
            doc: Some("/chunk/id".into()),
            ..FieldNames::default()
        };
        let stages = [(SpanKind::Reranker, "final".to_string())];
        SpanFields::new(&names, &stages, JoinBy::Text)
    })
}

fuzz_target!(|data: &[u8]| {
    let fields = LogFields::default();
    for (spans, duplicates) in [
        (&SpanFields::default(), DuplicateDocs::Reject),
        (mapped(), DuplicateDocs::Dedupe),
    ] {
        judge(
            data,
            LogsFormat::Otlp,
            &fields,
            spans,
            duplicates,
            TrecLines::RankEarly,
            RunName::Tag,
        );
    }
});
