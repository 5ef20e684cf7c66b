//! JSONL search logs: the input is one block of log lines, judged as a
//! grading worker judges it (parse, key, ranking, doc ids, collections),
//! once with the default field names and once mapped by JSON pointers.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rgrade::kernels::{LogFields, SpanFields, TrecLines};
use rgrade::{DuplicateDocs, FieldNames, LogsFormat, RunName};
use rgrade_fuzz::judge;

/// Fields nested the way a gateway's logs nest them.
fn pointer_fields() -> &'static LogFields {
    static FIELDS: OnceLock<LogFields> = OnceLock::new();
    FIELDS.get_or_init(|| {
        LogFields::new(&FieldNames {
            query: Some("/request/query_id".into()),
            results: Some("/response/hits".into()),
            doc: Some("/doc/0".into()),
            stage: Some("/meta/stage".into()),
            run: Some("/meta/run".into()),
            latency: Some("/timing/ms".into()),
            slices: vec!["/meta/tenant".into(), "lang".into()],
            ..FieldNames::default()
        })
    })
}

fuzz_target!(|data: &[u8]| {
    let defaults = LogFields::default();
    judge(
        data,
        LogsFormat::Jsonl,
        &defaults,
        &SpanFields::default(),
        DuplicateDocs::Reject,
        TrecLines::RankEarly,
        RunName::Tag,
    );
    judge(
        data,
        LogsFormat::Jsonl,
        pointer_fields(),
        &SpanFields::default(),
        DuplicateDocs::Dedupe,
        TrecLines::RankEarly,
        RunName::Tag,
    );
});
