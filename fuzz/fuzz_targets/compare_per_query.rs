//! compare's per_query.csv reader: the input is a grade output's
//! per_query.csv, read back as `rgrade compare` reads each side. The
//! summary.json beside it is the diagnostics sample's, listing the input
//! with its true size and hash, so that the reader gets past the check that
//! the file is the one graded.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rgrade::fuzzing::{load_graded, Side};
use rgrade::schema::{OutputFile, Summary, PER_QUERY_FILE, SUMMARY_FILE};
use rgrade::Cutoff;
use rgrade_fuzz::{grade_sample, scratch};

/// The diagnostics sample's summary.json, graded with the cutoffs of its
/// expected per_query.csv (fuzz/run.sh's seed).
fn sample_summary() -> &'static Summary {
    static SUMMARY: OnceLock<Summary> = OnceLock::new();
    SUMMARY.get_or_init(|| {
        let graded = grade_sample(
            "diagnostics/labels.jsonl",
            &["diagnostics/logs.jsonl"],
            &[Cutoff::At(1), Cutoff::At(3)],
            "diagnostics",
        );
        let text = std::fs::read(graded.join(SUMMARY_FILE)).expect("the sample was graded");
        serde_json::from_slice(&text).expect("rgrade reads its own summary.json")
    })
}

/// Where each input is written, apart from the sample's own output.
fn output_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch().join("per-query");
        std::fs::create_dir_all(&dir).expect("cannot create the output directory");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let dir = output_dir();
    std::fs::write(dir.join(PER_QUERY_FILE), data).expect("cannot write per_query.csv");
    let summary = Summary {
        outputs: vec![OutputFile {
            name: PER_QUERY_FILE.into(),
            bytes: data.len() as u64,
            hash: format!("{:032x}", xxhash_rust::xxh3::xxh3_128(data)),
        }],
        ..sample_summary().clone()
    };
    let summary = serde_json::to_vec(&summary).expect("a summary serializes");
    std::fs::write(dir.join(SUMMARY_FILE), summary).expect("cannot write summary.json");
    // Unpicked, the file must hold one run; picked, other runs are skipped.
    let _ = load_graded(dir, None, Side::Baseline);
    let _ = load_graded(dir, Some("hybrid-v1"), Side::Candidate);
});
