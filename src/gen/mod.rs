//! Synthetic labels and logs that look like a help-center RAG system's.
//!
//! The generator models:
//! - a corpus of chunked documents (`kb/billing/invoice-export#chunk-0012`,
//!   `support/tickets/t-482913#chunk-0003`) in a few collections, each chunk
//!   with a fixed size in tokens;
//! - an answer key: queries with a task and a language (both skewed), whose
//!   relevant chunks come from the collections that serve the task; most are
//!   plain lists, some graded, a few no-answer (`chitchat`), a few marked as
//!   required regression cases;
//! - a retriever that finds a relevant chunk near the top, deep in the
//!   ranking, or not at all, and fills the rest with unrelated chunks, so
//!   recall@10 lands around 0.65;
//! - a reranker that lightly reshuffles the retriever's top candidates,
//!   lifting relevant chunks a little, and keeps the top 10;
//! - production traffic: queries in random order, each query's `final` event
//!   a few events after its `retrieve` event, latencies with a long tail.
//!
//! Every query draws from its own random stream, seeded from the seed and its
//! index, so labels and logs are written in separate passes without keeping
//! the key in memory, and the TREC run holds exactly the rankings of the
//! JSONL log's `retrieve` events. Only integer arithmetic, division and square
//! roots touch the random numbers, so every platform writes the same bytes.

use std::fs;
use std::io;
use std::path::PathBuf;

use anyhow::{bail, Context};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

mod corpus;
mod encode;
mod output;
mod queries;
mod random;
mod ranking;
#[cfg(test)]
mod testing;

use corpus::Corpus;
use encode::{push_fixed, push_json_string, push_list, push_uint};
use output::{write_file, Output};
use queries::{LabelShape, QueryName, QuerySpec, QueryStreams};
use ranking::{Hit, RankingModel, FINAL_DEPTH, RERANK_CANDIDATES};

/// The largest `results`: rankings deeper than trec_eval's customary 1000
/// are rare, and the corpus grows with the ranking depth.
pub const MAX_RESULTS: usize = 10_000;

/// The run name every generated event carries.
const RUN: &str = "bm25-v3";
/// How many queries are in flight at once: a query's `final` event follows
/// its `retrieve` event after about this many other events.
const IN_FLIGHT: usize = 4;

/// What to generate and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenConfig {
    /// Queries in the answer key (and in the log), at least 1.
    pub labeled: usize,
    /// Queries in the log that the answer key does not cover.
    pub unlabeled: usize,
    /// Results per retrieved ranking, 1 to [`MAX_RESULTS`].
    pub results: usize,
    /// Seeds every random draw: the same configuration gives byte-identical
    /// files.
    pub seed: u64,
    /// The log's format.
    pub format: GenFormat,
    /// The directory to write into, created if missing.
    pub out: PathBuf,
}

/// The log format `rgrade gen` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GenFormat {
    /// logs.jsonl, one JSON object per search event.
    Jsonl,
    /// run.trec, a TREC run file.
    Trec,
}

/// Write the answer key and the log (or TREC run) that `config` describes
/// into `config.out`, and say what was written.
pub fn write_dataset(config: &GenConfig) -> anyhow::Result<Written> {
    config.check()?;
    fs::create_dir_all(&config.out)
        .with_context(|| format!("cannot create output directory {}", config.out.display()))?;
    let mut rng = Pcg64::seed_from_u64(config.seed);
    let corpus = Corpus::generate(&mut rng, config.results);
    let streams = QueryStreams::new(&mut rng);
    let labels = write_labels(config, &corpus, &streams)?;
    let logs = write_logs(config, &corpus, &streams, rng)?;
    Ok(Written {
        labeled: config.labeled,
        unlabeled: config.unlabeled,
        files: vec![labels, logs],
    })
}

/// What `write_dataset` wrote, so the command can report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Queries in the answer key.
    pub labeled: usize,
    /// Queries in the log that the answer key does not cover.
    pub unlabeled: usize,
    /// The files, labels first.
    pub files: Vec<WrittenFile>,
}

/// One file `write_dataset` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its lines: labeled queries, search events or TREC result lines.
    pub lines: u64,
    /// Its size.
    pub bytes: u64,
}

impl GenConfig {
    /// An error for counts the generator cannot honour, named by the
    /// `rgrade gen` options that set them.
    fn check(&self) -> anyhow::Result<()> {
        if self.labeled == 0 {
            bail!("--queries must be at least 1: the answer key needs a labeled query");
        }
        if !(1..=MAX_RESULTS).contains(&self.results) {
            bail!(
                "--results must be between 1 and {MAX_RESULTS}, got {}",
                self.results
            );
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Traffic: latencies and context sizes

/// Latencies are capped at a minute, as a gateway would time out.
const LATENCY_CAP_TENTHS: u32 = 600_000;

/// A latency in tenths of a millisecond with a long tail: a Pareto
/// distribution with shape 2 (`scale / sqrt(u)`), so the median is 1.4x the
/// scale and p99 10x. Square roots are exactly rounded on every platform.
fn long_tail_tenths(rng: &mut Pcg64, scale_tenths: u32) -> u32 {
    let unit = 1.0 - rng.random::<f64>();
    let tenths = f64::from(scale_tenths) / unit.sqrt();
    tenths.min(f64::from(LATENCY_CAP_TENTHS)) as u32
}

/// The retriever's latency: a fixed cost plus a little per result.
fn retrieve_latency(rng: &mut Pcg64, results: usize) -> u32 {
    long_tail_tenths(rng, 150 + results as u32 / 2)
}

/// The end-to-end latency of the `final` stage: retrieval, then the
/// reranker's cost per candidate.
fn final_latency(rng: &mut Pcg64, retrieve_tenths: u32, results: usize) -> u32 {
    let candidates = results.min(RERANK_CANDIDATES) as u32;
    retrieve_tenths + long_tail_tenths(rng, 250 + 15 * candidates)
}

// ---------------------------------------------------------------------------
// Writing

/// labels.jsonl: the labeled queries in id order.
fn write_labels(
    config: &GenConfig,
    corpus: &Corpus,
    streams: &QueryStreams,
) -> anyhow::Result<WrittenFile> {
    write_file(&config.out, "labels.jsonl", |output| {
        for index in 0..config.labeled {
            let spec = QuerySpec::draw(&mut streams.rng(index), corpus);
            let query = QueryName::of(config, index);
            push_label(output.start_line(), query, &spec, corpus);
            output.end_line()?;
        }
        Ok(())
    })
}

/// The log, labeled and unlabeled queries shuffled together, in the format
/// asked for.
fn write_logs(
    config: &GenConfig,
    corpus: &Corpus,
    streams: &QueryStreams,
    mut rng: Pcg64,
) -> anyhow::Result<WrittenFile> {
    let mut order: Vec<usize> = (0..config.labeled + config.unlabeled).collect();
    order.shuffle(&mut rng);
    match config.format {
        GenFormat::Jsonl => write_events(config, corpus, streams, &order, JsonlLog::new(rng)),
        GenFormat::Trec => write_events(config, corpus, streams, &order, TrecRun),
    }
}

/// Draw each query of `order` from its own stream and let `format` write it.
fn write_events<F: LogFormat>(
    config: &GenConfig,
    corpus: &Corpus,
    streams: &QueryStreams,
    order: &[usize],
    mut format: F,
) -> anyhow::Result<WrittenFile> {
    let mut model = RankingModel::new(corpus, config.results);
    write_file(&config.out, F::FILE_NAME, |output| {
        for &index in order {
            let mut rng = streams.rng(index);
            let spec = QuerySpec::draw(&mut rng, corpus);
            let query = QueryName::of(config, index);
            format.write_query(output, query, &mut rng, &mut model, &spec)?;
        }
        format.finish(output, corpus)
    })
}

/// A log file format: how one query's rankings become lines.
trait LogFormat {
    /// The file it writes in the output directory.
    const FILE_NAME: &'static str;

    /// Draw the query's rankings from `model` (the retriever's first, so
    /// every format sees the same retrieved ranking) and write them.
    fn write_query(
        &mut self,
        output: &mut Output,
        query: QueryName,
        rng: &mut Pcg64,
        model: &mut RankingModel,
        spec: &QuerySpec,
    ) -> io::Result<()>;

    /// Write whatever is still held back.
    fn finish(&mut self, output: &mut Output, corpus: &Corpus) -> io::Result<()>;
}

/// logs.jsonl: a `retrieve` event per query, and a `final` event that is
/// held back while a few other queries are logged.
struct JsonlLog {
    in_flight: Vec<FinalEvent>,
    /// Picks which held-back event is logged next.
    rng: Pcg64,
}

impl JsonlLog {
    fn new(rng: Pcg64) -> Self {
        JsonlLog {
            in_flight: Vec::with_capacity(IN_FLIGHT),
            rng,
        }
    }
}

impl LogFormat for JsonlLog {
    const FILE_NAME: &'static str = "logs.jsonl";

    fn write_query(
        &mut self,
        output: &mut Output,
        query: QueryName,
        rng: &mut Pcg64,
        model: &mut RankingModel,
        spec: &QuerySpec,
    ) -> io::Result<()> {
        let corpus = model.corpus;
        let retrieved = model.retrieve(rng, spec);
        let results = retrieved.len();
        let retrieve_tenths = retrieve_latency(rng, results);
        push_event(
            output.start_line(),
            query,
            "retrieve",
            retrieved,
            retrieve_tenths,
            corpus,
        );
        output.end_line()?;
        let reranked = model.rerank(rng, spec);
        let final_event = FinalEvent::new(
            query,
            reranked,
            final_latency(rng, retrieve_tenths, results),
        );
        if self.in_flight.len() == IN_FLIGHT {
            let due = self
                .in_flight
                .swap_remove(self.rng.random_range(0..IN_FLIGHT));
            due.write(output, corpus)?;
        }
        self.in_flight.push(final_event);
        Ok(())
    }

    fn finish(&mut self, output: &mut Output, corpus: &Corpus) -> io::Result<()> {
        self.in_flight
            .drain(..)
            .try_for_each(|due| due.write(output, corpus))
    }
}

/// A `final` event waiting to be logged.
struct FinalEvent {
    query: QueryName,
    hits: [Hit; FINAL_DEPTH],
    len: usize,
    latency_tenths: u32,
}

impl FinalEvent {
    fn new(query: QueryName, reranked: &[Hit], latency_tenths: u32) -> Self {
        let mut hits = [Hit::default(); FINAL_DEPTH];
        hits[..reranked.len()].copy_from_slice(reranked);
        FinalEvent {
            query,
            hits,
            len: reranked.len(),
            latency_tenths,
        }
    }

    fn write(&self, output: &mut Output, corpus: &Corpus) -> io::Result<()> {
        let hits = &self.hits[..self.len];
        push_event(
            output.start_line(),
            self.query,
            "final",
            hits,
            self.latency_tenths,
            corpus,
        );
        output.end_line()
    }
}

/// run.trec: the retriever's ranking of each query, one line per result.
struct TrecRun;

impl LogFormat for TrecRun {
    const FILE_NAME: &'static str = "run.trec";

    fn write_query(
        &mut self,
        output: &mut Output,
        query: QueryName,
        rng: &mut Pcg64,
        model: &mut RankingModel,
        spec: &QuerySpec,
    ) -> io::Result<()> {
        let corpus = model.corpus;
        for (rank, hit) in model.retrieve(rng, spec).iter().enumerate() {
            push_trec_line(output.start_line(), query, rank + 1, hit, corpus);
            output.end_line()?;
        }
        Ok(())
    }

    fn finish(&mut self, _output: &mut Output, _corpus: &Corpus) -> io::Result<()> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Line formats

/// `{"query_id":"q000001","relevant":[...],"task":"howto","language":"en"}`,
/// with `"required":true` for required queries.
fn push_label(line: &mut Vec<u8>, query: QueryName, spec: &QuerySpec, corpus: &Corpus) {
    line.extend_from_slice(b"{\"query_id\":");
    query.push_json(line);
    line.extend_from_slice(b",\"relevant\":");
    match spec.shape {
        LabelShape::Graded => push_list(line, b'{', b'}', spec.judged(), |line, judged| {
            push_json_string(line, corpus.id(judged.doc));
            line.push(b':');
            push_uint(line, u64::from(judged.grade));
        }),
        LabelShape::List | LabelShape::NoAnswer => {
            push_list(line, b'[', b']', spec.judged(), |line, judged| {
                push_json_string(line, corpus.id(judged.doc));
            })
        }
    }
    line.extend_from_slice(b",\"task\":");
    push_json_string(line, spec.task);
    line.extend_from_slice(b",\"language\":");
    push_json_string(line, spec.language);
    if spec.required {
        line.extend_from_slice(b",\"required\":true");
    }
    line.push(b'}');
}

/// One search event in the log format the README describes (Input formats,
/// Logs); `context_tokens` is the size of the chunks the stage hands on.
fn push_event(
    line: &mut Vec<u8>,
    query: QueryName,
    stage: &str,
    hits: &[Hit],
    latency_tenths: u32,
    corpus: &Corpus,
) {
    line.extend_from_slice(b"{\"query_id\":");
    query.push_json(line);
    line.extend_from_slice(b",\"stage\":");
    push_json_string(line, stage);
    line.extend_from_slice(b",\"run\":");
    push_json_string(line, RUN);
    line.extend_from_slice(b",\"results\":");
    push_list(line, b'[', b']', hits, |line, hit| {
        line.extend_from_slice(b"{\"doc_id\":");
        push_json_string(line, corpus.id(hit.doc));
        line.extend_from_slice(b",\"score\":");
        push_fixed(line, hit.score, 4);
        line.push(b'}');
    });
    line.extend_from_slice(b",\"latency_ms\":");
    push_fixed(line, latency_tenths, 1);
    line.extend_from_slice(b",\"context_tokens\":");
    push_uint(line, u64::from(corpus.tokens(hits)));
    line.push(b'}');
}

/// `query_id Q0 doc_id rank score tag`.
fn push_trec_line(line: &mut Vec<u8>, query: QueryName, rank: usize, hit: &Hit, corpus: &Corpus) {
    query.push_to(line);
    line.extend_from_slice(b" Q0 ");
    line.extend_from_slice(corpus.id(hit.doc).as_bytes());
    line.push(b' ');
    push_uint(line, rank as u64);
    line.push(b' ');
    push_fixed(line, hit.score, 4);
    line.push(b' ');
    line.extend_from_slice(RUN.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use queries::Judged;

    #[test]
    fn lines_follow_the_input_formats() {
        let corpus = Corpus::of(&["kb/a#chunk-0001", "kb/b#chunk-0002"]);
        let query = QueryName::new(b'q', 3, 10);
        let mut spec = QuerySpec {
            task: "billing",
            language: "de",
            shape: LabelShape::Graded,
            required: true,
            judged: [
                Judged { doc: 1, grade: 3 },
                Judged { doc: 0, grade: 0 },
                Judged { doc: 0, grade: 0 },
                Judged { doc: 0, grade: 0 },
            ],
            judged_len: 2,
        };
        let mut line = Vec::new();
        push_label(&mut line, query, &spec, &corpus);
        assert_eq!(
            String::from_utf8_lossy(&line),
            r#"{"query_id":"q000003","relevant":{"kb/b#chunk-0002":3,"kb/a#chunk-0001":0},"task":"billing","language":"de","required":true}"#
        );
        (spec.shape, spec.required, spec.judged_len) = (LabelShape::List, false, 1);
        line.clear();
        push_label(&mut line, query, &spec, &corpus);
        assert_eq!(
            String::from_utf8_lossy(&line),
            r#"{"query_id":"q000003","relevant":["kb/b#chunk-0002"],"task":"billing","language":"de"}"#
        );
        let hits = [
            Hit {
                doc: 0,
                score: 125_000,
            },
            Hit {
                doc: 1,
                score: 31_234,
            },
        ];
        line.clear();
        push_event(&mut line, query, "final", &hits, 412, &corpus);
        assert_eq!(
            String::from_utf8_lossy(&line),
            r#"{"query_id":"q000003","stage":"final","run":"bm25-v3","results":[{"doc_id":"kb/a#chunk-0001","score":12.5000},{"doc_id":"kb/b#chunk-0002","score":3.1234}],"latency_ms":41.2,"context_tokens":200}"#
        );
        line.clear();
        push_trec_line(&mut line, query, 2, &hits[1], &corpus);
        assert_eq!(
            String::from_utf8_lossy(&line),
            "q000003 Q0 kb/b#chunk-0002 2 3.1234 bm25-v3"
        );
    }

    fn config(labeled: usize, results: usize, out: PathBuf) -> GenConfig {
        GenConfig {
            labeled,
            unlabeled: 0,
            results,
            seed: 0,
            format: GenFormat::Jsonl,
            out,
        }
    }

    #[test]
    fn bad_arguments_are_errors_that_say_why() {
        let out = std::env::temp_dir().join(format!("rgrade-gen-unit-{}", std::process::id()));
        let error = write_dataset(&config(0, 10, out.clone())).unwrap_err();
        assert!(
            error.to_string().contains("--queries must be at least 1"),
            "{error}"
        );
        let error = write_dataset(&config(1, 0, out.clone())).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("--results must be between 1 and"),
            "{error}"
        );
        assert!(!out.exists(), "nothing is written for bad arguments");

        fs::create_dir_all(&out).unwrap();
        let file = out.join("a-file");
        fs::write(&file, "").unwrap();
        let inside_a_file = file.join("out");
        let error = write_dataset(&config(1, 10, inside_a_file.clone())).unwrap_err();
        assert!(
            format!("{error:#}").contains(&inside_a_file.display().to_string()),
            "{error:#}"
        );
        fs::remove_dir_all(&out).unwrap();
    }
}
