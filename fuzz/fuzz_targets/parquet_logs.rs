//! Parquet logs: the input is the file, graded as `rgrade grade
//! --logs-format parquet` grades it (footer, layout, column types, row
//! groups, rows), once joined by query id and once by question text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rgrade::JoinBy;
use rgrade_fuzz::grade_parquet;

fuzz_target!(|data: &[u8]| {
    grade_parquet(data, JoinBy::Id);
    grade_parquet(data, JoinBy::Text);
});
