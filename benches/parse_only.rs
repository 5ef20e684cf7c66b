//! The baseline rgrade's JSONL path is measured against: the same reader
//! (blocks, decompression, reader thread) and the same JSON parse and field
//! mapping on the same number of rayon workers, touching every doc id —
//! and nothing else: no label lookup, no grouping, no grading, no output.
//! Given the labels too, it parses their lines as well.
//!
//! ```sh
//! cargo bench --bench parse_only -- [-j N] [--decode-only | --trec] FILES...
//! ```
//! `--decode-only` stops after reading and decompressing the blocks.
//! `--trec` is the TREC baseline instead: each block checked as UTF-8
//! once, every line of qrels and runs split into its whitespace-separated
//! fields, and a run line's score (its fifth of six or more) parsed as a
//! 32-bit float, as trec_eval keeps it. With `-j 1` one thread reads and
//! parses, as `rgrade grade -j 1` does.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rgrade::kernels::{
    discover, for_each_block, lines, pool, read_inputs, Chunk, ColumnNames, Event, EventKey,
    FieldNames, Input, JsonParser, LogChunk, LogFields, SpanFields,
};
use rgrade::LogsFormat;

fn main() -> anyhow::Result<()> {
    let mut threads = None;
    let mut decode_only = false;
    let mut trec = false;
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-j" => threads = args.next().and_then(|n| n.parse::<NonZeroUsize>().ok()),
            "--decode-only" => decode_only = true,
            "--trec" => trec = true,
            // cargo bench passes --bench to every bench target.
            flag if flag.starts_with("--") => {}
            path => paths.push(PathBuf::from(path)),
        }
    }
    let inputs = discover(&paths, None)?.inputs;
    let inputs: Vec<(u32, &Input)> = (0..).zip(&inputs).collect();
    let fields = LogFields::default();
    let results = AtomicU64::new(0);
    let parse = |parser: &mut JsonParser, chunk: &LogChunk| {
        let Chunk::Lines(block) = chunk else { return };
        if decode_only {
            return;
        }
        if trec {
            results.fetch_add(split_trec(&block.bytes), Ordering::Relaxed);
            return;
        }
        let mut touched = 0;
        for line in lines(&block.bytes).filter(|l| !l.is_empty()) {
            let _ = parser.parse(line, |root| {
                let key = EventKey::from_value(root, &fields, &[]);
                if let (Ok(_), Ok(event)) = (key, Event::from_value(root, &fields, &[])) {
                    touched += event.doc_ids(&fields).filter(Result::is_ok).count() as u64;
                }
            });
        }
        results.fetch_add(touched, Ordering::Relaxed);
    };
    // The same driver as rgrade: -j 1 reads and parses on one thread, more
    // threads parse on the pool while a reader thread cuts blocks.
    let pool = pool(threads)?;
    let threads = pool.current_num_threads();
    let (names, spans) = (FieldNames::default(), SpanFields::default());
    let columns = ColumnNames {
        fields: &names,
        spans: &spans,
        partitions: &[],
    };
    let started = Instant::now();
    let stats = for_each_block(
        &pool,
        |sink| read_inputs(&inputs, LogsFormat::Jsonl, columns, sink, &|_| {}),
        JsonParser::default,
        parse,
        |_, ()| true,
    )?;
    let seconds = started.elapsed().as_secs_f64();
    let decoded: u64 = stats.iter().map(|s| s.decoded_bytes).sum();
    println!(
        "{} MB in {seconds:.3} s: {:.1} MB/s on {threads} thread(s), {} results (or fields) touched",
        decoded / 1_000_000,
        decoded as f64 / 1e6 / seconds,
        results.load(Ordering::Relaxed)
    );
    Ok(())
}

/// Split a block of TREC qrels or run lines into fields and parse each run
/// line's score as an f32; returns the fields seen (and folds the scores
/// in, so that no work can be left out).
fn split_trec(block: &[u8]) -> u64 {
    let Ok(text) = std::str::from_utf8(block) else {
        return 0;
    };
    let mut fields_seen = 0u64;
    let mut scores = 0f32;
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let mut n = 0;
        let mut score = None;
        for field in fields.by_ref() {
            n += 1;
            if n == 5 {
                score = Some(field);
            }
        }
        fields_seen += n;
        if n >= 6 {
            scores += score.and_then(|s| s.parse::<f32>().ok()).unwrap_or(0.0);
        }
    }
    fields_seen + u64::from(scores.is_nan())
}
