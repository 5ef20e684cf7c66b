//! traces.jsonl: the log's captures as the spans of an instrumented RAG
//! pipeline, exported as OTLP/JSON lines (docs/reference.md, "Traces").

use std::io;

use rand_pcg::Pcg64;

use super::corpus::Corpus;
use super::encode::{push_fixed, push_json_string, push_uint};
use super::logs::{final_latency, retrieve_latency, LogFormat, RUN};
use super::output::Output;
use super::queries::{QueryName, QuerySpec};
use super::ranking::{Hit, RankingModel};

/// traces.jsonl: per query one trace of an instrumented RAG pipeline, its
/// RETRIEVER span holding the retriever's ranking, its RERANKER span the
/// final ranking (so `--span-stage RERANKER=final` grades as logs.jsonl)
/// and an LLM span; traces are exported [`TRACES_PER_EXPORT`] a line, as
/// a batching span processor sends them.
#[derive(Default)]
pub(super) struct OtlpTraces {
    /// The spans of the export being filled, comma separated.
    spans: Vec<u8>,
    traces: usize,
    /// Traces written so far: numbers their ids and start times.
    written: u64,
}

/// Traces a batching span processor sends together.
const TRACES_PER_EXPORT: usize = 64;
/// When the first trace starts, in nanoseconds since 1970.
const FIRST_START_NANOS: u64 = 1_767_225_600_000_000_000;

impl LogFormat for OtlpTraces {
    const FILE_NAME: &'static str = "traces.jsonl";

    fn write_query(
        &mut self,
        output: &mut Output,
        query: QueryName,
        rng: &mut Pcg64,
        model: &mut RankingModel,
        spec: &QuerySpec,
    ) -> io::Result<()> {
        let corpus = model.corpus;
        // Trace ids start at 1: OTLP reserves the id of all zeros.
        self.written += 1;
        let trace = self.written;
        let start = FIRST_START_NANOS + trace * 1_000_000_000;
        let retrieved = model.retrieve(rng, spec);
        let results = retrieved.len();
        let retrieve_tenths = retrieve_latency(rng, results);
        let retrieve_end = start + u64::from(retrieve_tenths) * 100_000;
        let spans = &mut self.spans;
        if !spans.is_empty() {
            spans.push(b',');
        }
        let span = TraceSpans {
            trace,
            start,
            query,
        };
        span.push(spans, 1, "RETRIEVER", retrieve_end, |spans| {
            push_documents(spans, "retrieval.documents.", retrieved, corpus);
        });
        let reranked = model.rerank(rng, spec);
        let final_tenths = final_latency(rng, retrieve_tenths, results);
        let rerank = TraceSpans {
            start: retrieve_end,
            ..span
        };
        let rerank_end = start + u64::from(final_tenths) * 100_000;
        spans.push(b',');
        rerank.push(spans, 2, "RERANKER", rerank_end, |spans| {
            push_documents(spans, "reranker.output_documents.", reranked, corpus);
        });
        let answer = TraceSpans {
            start: rerank_end,
            ..span
        };
        spans.push(b',');
        answer.push(spans, 3, "LLM", rerank_end + 400_000_000, |_| {});
        self.traces += 1;
        if self.traces == TRACES_PER_EXPORT {
            self.export(output)?;
        }
        Ok(())
    }

    fn finish(&mut self, output: &mut Output, _corpus: &Corpus) -> io::Result<()> {
        if self.traces > 0 {
            self.export(output)?;
        }
        Ok(())
    }
}

impl OtlpTraces {
    /// Write the spans held as one ExportTraceServiceRequest line.
    fn export(&mut self, output: &mut Output) -> io::Result<()> {
        let line = output.start_line();
        line.extend_from_slice(b"{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
        push_string_attribute(line, "service.name", RUN);
        line.extend_from_slice(
            b"]},\"scopeSpans\":[{\"scope\":{\"name\":\"rgrade-gen\"},\"spans\":[",
        );
        line.extend_from_slice(&self.spans);
        line.extend_from_slice(b"]}]}]}");
        self.spans.clear();
        self.traces = 0;
        output.end_line()
    }
}

/// What the spans of one trace share.
#[derive(Clone, Copy)]
struct TraceSpans {
    trace: u64,
    start: u64,
    query: QueryName,
}

impl TraceSpans {
    /// The span numbered `number` in its trace, of OpenInference `kind`,
    /// ending at `end`; `documents` adds its ranking's attributes.
    fn push(
        &self,
        spans: &mut Vec<u8>,
        number: u64,
        kind: &str,
        end: u64,
        documents: impl FnOnce(&mut Vec<u8>),
    ) {
        spans.extend_from_slice(b"{\"traceId\":\"");
        push_hex(spans, self.trace, 32);
        spans.extend_from_slice(b"\",\"spanId\":\"");
        push_hex(spans, self.trace << 2 | number, 16);
        spans.extend_from_slice(b"\",\"name\":");
        push_json_string(spans, &kind.to_ascii_lowercase());
        spans.extend_from_slice(b",\"kind\":1,\"startTimeUnixNano\":\"");
        push_uint(spans, self.start);
        spans.extend_from_slice(b"\",\"endTimeUnixNano\":\"");
        push_uint(spans, end);
        spans.extend_from_slice(b"\",\"attributes\":[");
        push_string_attribute(spans, "openinference.span.kind", kind);
        spans.push(b',');
        let mut metadata = b"{\"query_id\":".to_vec();
        self.query.push_json(&mut metadata);
        metadata.push(b'}');
        push_string_attribute(spans, "metadata", &String::from_utf8_lossy(&metadata));
        documents(spans);
        spans.extend_from_slice(b"],\"status\":{\"code\":1}}");
    }
}

/// `{"key": key, "value": {"stringValue": value}}`.
fn push_string_attribute(line: &mut Vec<u8>, key: &str, value: &str) {
    line.extend_from_slice(b"{\"key\":");
    push_json_string(line, key);
    line.extend_from_slice(b",\"value\":{\"stringValue\":");
    push_json_string(line, value);
    line.extend_from_slice(b"}}");
}

/// A ranking as OpenInference flattens it: `{prefix}{i}.document.id` and
/// `.document.score` attributes.
fn push_documents(line: &mut Vec<u8>, prefix: &str, hits: &[Hit], corpus: &Corpus) {
    for (i, hit) in hits.iter().enumerate() {
        for (field, value) in [("id", None), ("score", Some(hit.score))] {
            line.extend_from_slice(b",{\"key\":\"");
            line.extend_from_slice(prefix.as_bytes());
            push_uint(line, i as u64);
            line.extend_from_slice(b".document.");
            line.extend_from_slice(field.as_bytes());
            line.extend_from_slice(b"\",\"value\":");
            match value {
                None => {
                    line.extend_from_slice(b"{\"stringValue\":");
                    push_json_string(line, corpus.id(hit.doc));
                }
                Some(score) => {
                    line.extend_from_slice(b"{\"doubleValue\":");
                    push_fixed(line, score, 4);
                }
            }
            line.extend_from_slice(b"}}");
        }
    }
}

/// `value` in lowercase hex, zero-padded to `width` digits, as OTLP/JSON
/// writes trace and span ids.
fn push_hex(line: &mut Vec<u8>, value: u64, width: usize) {
    let digits = format!("{value:0width$x}");
    line.extend_from_slice(digits.as_bytes());
}
