//! TREC run lines: the input is one block of run lines, judged as a
//! grading worker judges it, ranking the (run, query)s it holds whole, and
//! again holding every line as a worker does for input read only once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rgrade::kernels::{LogFields, TrecLines};
use rgrade::{DuplicateDocs, LogsFormat};
use rgrade_fuzz::judge;

fuzz_target!(|data: &[u8]| {
    let fields = LogFields::default();
    judge(
        data,
        LogsFormat::Trec,
        &fields,
        DuplicateDocs::Reject,
        TrecLines::RankEarly,
    );
    judge(
        data,
        LogsFormat::Trec,
        &fields,
        DuplicateDocs::Dedupe,
        TrecLines::HoldAll,
    );
});
