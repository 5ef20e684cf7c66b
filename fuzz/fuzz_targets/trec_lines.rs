//! TREC, MS MARCO and CSV run lines: the input is one block of run lines
//! (its first line perhaps a header; a CSV run's names its columns), judged as a grading worker judges it,
//! ranking the (run, query)s it holds whole, and again holding every line
//! as a worker does for input read only once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rgrade::kernels::{LogFields, SpanFields, TrecLines};
use rgrade::{DuplicateDocs, LogsFormat, RunName};
use rgrade_fuzz::judge;

fuzz_target!(|data: &[u8]| {
    let fields = LogFields::default();
    let spans = SpanFields::default();
    for format in [LogsFormat::Trec, LogsFormat::Msmarco, LogsFormat::Csv] {
        judge(
            data,
            format,
            &fields,
            &spans,
            DuplicateDocs::Reject,
            TrecLines::RankEarly,
            RunName::Tag,
        );
        judge(
            data,
            format,
            &fields,
            &spans,
            DuplicateDocs::Dedupe,
            TrecLines::HoldAll,
            RunName::File,
        );
    }
});
