//! Micro-benchmarks of the hot kernels: judging a block of log lines,
//! looking up labels, and scoring one ranking at several cutoffs.
//! The end-to-end benchmark over `rgrade gen` data is benches/e2e.sh.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rgrade::kernels::{
    bootstrap_mean_interval, id_hash, paired_randomization_p_value, score, Block, BlockWorker,
    Chunk, Hit, JudgeConfig, Judgments, LabelIndex, LogFields, RecordOptions, SpanFields,
    TrecLines,
};
use rgrade::{Cutoff, DuplicateDocs, LogsFormat, RunName};

const QUERIES: usize = 10_000;
const RESULTS: usize = 30;

fn doc_id(query: usize, rank: usize) -> String {
    format!(
        "kb/articles/topic-{:05}#chunk-{:04}",
        (query * 7 + rank * 13) % 50_000,
        rank
    )
}

/// Labels: every query has two relevant docs, at ranks 2 and 9 of its log line.
fn labels() -> LabelIndex {
    let ids: Vec<(String, Vec<String>)> = (0..QUERIES)
        .map(|q| (format!("q{q:06}"), vec![doc_id(q, 2), doc_id(q, 9)]))
        .collect();
    let queries = ids.iter().map(|(id, docs)| {
        let judged = docs.iter().map(|d| (d.as_str(), 1)).collect();
        (id.as_str(), Some("howto"), Some("en"), judged)
    });
    LabelIndex::from_queries(queries, 1).expect("generated labels are valid")
}

/// Compact JSONL lines shaped like production logs (about 1.7 KB each).
fn log_block() -> Vec<u8> {
    let mut text = String::new();
    for q in 0..QUERIES {
        let results: Vec<String> = (0..RESULTS)
            .map(|r| {
                format!(
                    r#"{{"doc_id":"{}","score":{:.3}}}"#,
                    doc_id(q, r),
                    30.0 - r as f64
                )
            })
            .collect();
        text.push_str(&format!(
            r#"{{"query_id":"q{q:06}","stage":"final","run":"bm25-v3","results":[{}],"latency_ms":41.5,"context_tokens":1830}}"#,
            results.join(",")
        ));
        text.push('\n');
    }
    text.into_bytes()
}

fn judge_block(c: &mut Criterion) {
    let labels = labels();
    let fields = LogFields::default();
    let config = JudgeConfig {
        labels: &labels,
        records: RecordOptions {
            fields: &fields,
            spans: &SpanFields::default(),
            run_name: RunName::Tag,
            file_runs: &[],
            partitions: &[],
        },
        stages: &[],
        duplicates: DuplicateDocs::Reject,
        doc_collections: None,
        trec: TrecLines::RankEarly,
        input_names: &[],
        pool_depth: None,
        doc_of: None,
    };
    let chunk = Chunk::Lines(Block {
        input: 0,
        first_line: 1,
        bytes: log_block(),
        format: LogsFormat::Jsonl,
        header: None,
        numbers: Vec::new(),
    });
    let Chunk::Lines(block) = &chunk else {
        unreachable!("built as lines above")
    };
    let mut group = c.benchmark_group("judge");
    group.throughput(Throughput::Bytes(block.bytes.len() as u64));
    group.sample_size(20);
    group.bench_function("jsonl_block_10k_lines", |b| {
        let mut worker = BlockWorker::new(&config);
        b.iter(|| black_box(worker.process(&chunk)))
    });
    group.finish();
}

fn label_lookup(c: &mut Criterion) {
    let labels = labels();
    let probes: Vec<(String, String)> = (0..1000)
        .map(|q| (format!("q{:06}", q * 7), doc_id(q * 7, q % RESULTS)))
        .collect();
    c.bench_function("label_lookup_1000_query_doc_pairs", |b| {
        b.iter(|| {
            let mut found = 0;
            for (query, doc) in &probes {
                if let Some(q) = labels.find_query(query.as_bytes()) {
                    found += usize::from(
                        labels
                            .find_doc(q, doc.as_bytes(), id_hash(doc.as_bytes()))
                            .is_some(),
                    );
                }
            }
            black_box(found)
        })
    });
}

fn metrics_all_k(c: &mut Criterion) {
    let hits = [
        Hit { rank: 2, grade: 3 },
        Hit { rank: 5, grade: 1 },
        Hit { rank: 9, grade: 2 },
        Hit { rank: 40, grade: 1 },
    ];
    let ideal = [3, 2, 1, 1];
    let judgments = Judgments {
        n_relevant: 4,
        ideal_grades: &ideal,
        n_judged: 4,
        min_rel: 1,
    };
    c.bench_function("score_one_ranking_at_k_1_3_5_10_100", |b| {
        b.iter(|| {
            for k in [1, 3, 5, 10, 100] {
                let scores = score(
                    black_box(&hits).iter().copied(),
                    &judgments,
                    Cutoff::At(k),
                    100,
                );
                black_box(scores);
            }
        })
    });
}

/// The paired statistics of `compare` over one million per-query deltas.
fn paired_statistics(c: &mut Criterion) {
    let deltas: Vec<f64> = (0..1_000_000u64)
        .map(|i| ((i * 7919) % 1000) as f64 / 1000.0 - 0.49)
        .collect();
    let mut group = c.benchmark_group("stats_1m_queries");
    group.sample_size(10);
    group.bench_function("randomization_p_value_10k_permutations", |b| {
        b.iter(|| black_box(paired_randomization_p_value(black_box(&deltas), 10_000, 0)))
    });
    group.bench_function("bootstrap_interval_1k_resamples", |b| {
        b.iter(|| black_box(bootstrap_mean_interval(black_box(&deltas), 1_000, 0, 0.95)))
    });
    group.finish();
}

criterion_group!(
    benches,
    judge_block,
    label_lookup,
    metrics_all_k,
    paired_statistics
);
criterion_main!(benches);
