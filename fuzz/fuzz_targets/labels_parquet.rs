//! Parquet labels, the CSV labels' columns: the input is the labels
//! file, loaded as `rgrade grade --labels-format parquet` does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rgrade::LabelsFormat;
use rgrade_fuzz::load_labels;

fuzz_target!(|data: &[u8]| load_labels(data, LabelsFormat::Parquet));
