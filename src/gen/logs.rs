//! The log, as production traffic would leave it: labeled and unlabeled
//! queries in random order, each query's `final` event a few events after
//! its `retrieve` event, latencies with a long tail. It is written as
//! logs.jsonl (both stages), as run.trec (the retriever's rankings), as
//! traces.jsonl (both stages as the spans of a traced pipeline, otlp.rs) or
//! as logs.parquet (the events of logs.jsonl, parquet.rs), in the formats
//! docs/reference.md describes ("Logs", "Traces", "Parquet").

use std::io;
use std::path::Path;

use rand::seq::SliceRandom;
use rand::RngExt;
use rand_pcg::Pcg64;

use super::config::{GenConfig, NightChanges, Nights};
use super::corpus::Corpus;
use super::encode::{push_fixed, push_json_string, push_list, push_uint};
use super::output::{write_file, Output, WrittenFile};
use super::queries::{NightDraw, QueryName, QuerySpec, QueryStreams};
use super::ranking::{Hit, RankingModel, FINAL_DEPTH, RERANK_CANDIDATES};

/// The run name every generated event carries.
pub(super) const RUN: &str = "bm25-v3";
/// How many queries are in flight at once: a query's `final` event follows
/// its `retrieve` event after about this many other events.
const IN_FLIGHT: usize = 4;
/// Latencies are capped at a minute, as a gateway would time out.
const LATENCY_CAP_TENTHS: u32 = 600_000;

/// The order production traffic logs the queries in: labeled and
/// unlabeled shuffled together by `rng`, the data set's stream.
pub(super) fn traffic_order(config: &GenConfig, rng: &mut Pcg64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..config.labeled + config.unlabeled).collect();
    order.shuffle(rng);
    order
}

/// One night of a series (`rgrade gen --nights`).
#[derive(Debug, Clone, Copy)]
pub(super) struct NightOf<'a> {
    /// Its number, from 1.
    pub(super) night: usize,
    /// The series.
    pub(super) nights: &'a Nights,
}

/// Each night, one query in this many draws its rankings afresh.
const REDRAWN_EACH_NIGHT: u32 = 20;

/// Draw each query of `order` from its own stream and let `format` write
/// it into `dir`; on a `night` of a series, one query in twenty draws
/// its rankings from that night's stream (and, when changes persist,
/// keeps them on the nights after), and a planted drop loses relevant
/// documents.
pub(super) fn write_events<F: LogFormat>(
    config: &GenConfig,
    corpus: &Corpus,
    streams: &QueryStreams,
    (order, dir, night): (&[usize], &Path, Option<NightOf<'_>>),
    mut format: F,
) -> anyhow::Result<WrittenFile> {
    let mut model = RankingModel::new(corpus, config.results);
    write_file(dir, F::FILE_NAME, |output| {
        for &index in order {
            let mut rng = streams.rng(index);
            let spec = QuerySpec::draw(&mut rng, corpus);
            if let Some(NightOf { night, nights }) = night {
                // The latest night that drew this query's rankings afresh:
                // tonight only, or any night so far when changes persist.
                let earliest = match nights.changes {
                    NightChanges::Revert => night,
                    NightChanges::Persist => 1,
                };
                for drawn in (earliest..=night).rev() {
                    let mut fresh = streams.night_rng(index, drawn, NightDraw::Rankings);
                    if fresh.random_range(0..REDRAWN_EACH_NIGHT) == 0 {
                        rng = fresh;
                        break;
                    }
                }
                let drop = (nights.drop.as_ref())
                    .filter(|drop| night >= drop.from && spec.task == drop.task);
                model.lose(drop.map(|drop| {
                    let losses = streams.night_rng(index, night, NightDraw::Losses);
                    (drop.rate, losses)
                }));
            }
            let query = QueryName::of(config, index);
            format.write_query(output, query, &mut rng, &mut model, &spec)?;
        }
        format.finish(output, corpus)
    })
}

/// A log file format: how one query's rankings become lines.
pub(super) trait LogFormat {
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
pub(super) struct JsonlLog {
    in_flight: Vec<FinalEvent>,
    /// Picks which held-back event is logged next.
    rng: Pcg64,
}

impl JsonlLog {
    /// `rng` picks when each held-back `final` event is logged.
    pub(super) fn new(rng: Pcg64) -> Self {
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
pub(super) struct TrecRun;

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

/// A latency in tenths of a millisecond with a long tail: a Pareto
/// distribution with shape 2 (`scale / sqrt(u)`), so the median is 1.4x the
/// scale and p99 10x. Square roots are exactly rounded on every platform.
fn long_tail_tenths(rng: &mut Pcg64, scale_tenths: u32) -> u32 {
    let unit = 1.0 - rng.random::<f64>();
    let tenths = f64::from(scale_tenths) / unit.sqrt();
    tenths.min(f64::from(LATENCY_CAP_TENTHS)) as u32
}

/// The retriever's latency: a fixed cost plus a little per result.
pub(super) fn retrieve_latency(rng: &mut Pcg64, results: usize) -> u32 {
    long_tail_tenths(rng, 150 + results as u32 / 2)
}

/// The end-to-end latency of the `final` stage: retrieval, then the
/// reranker's cost per candidate.
pub(super) fn final_latency(rng: &mut Pcg64, retrieve_tenths: u32, results: usize) -> u32 {
    let candidates = results.min(RERANK_CANDIDATES) as u32;
    retrieve_tenths + long_tail_tenths(rng, 250 + 15 * candidates)
}

/// One search event; `context_tokens` is the size of the chunks the stage
/// hands on.
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
    let context_tokens: u32 = hits.iter().map(|hit| corpus.tokens(hit.doc)).sum();
    push_uint(line, u64::from(context_tokens));
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

    #[test]
    fn event_and_trec_lines_follow_the_logs_formats() {
        let corpus = Corpus::of(&["kb/a#chunk-0001", "kb/b#chunk-0002"]);
        let query = QueryName::new(b'q', 3, 10);
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
        let mut line = Vec::new();
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
}
