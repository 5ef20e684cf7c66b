//! Stage 3, judge: each record a chunk yields is matched against the label
//! index on the worker that read it. Only the facts needed to grade
//! survive — the ranks of judged documents and a few numbers per capture —
//! so memory follows the number of labeled queries, not the bytes of the
//! logs.
//!
//! Records come from `crate::logs::records`, whatever their format: the
//! worker is the sink of a chunk's records, and judges each on one path
//! (`Judging::judge`). An event's ranking is read only for an event of a
//! stage being graded.

use std::borrow::Cow;

use crate::base::options::DuplicateDocs;
use crate::grade::capture::{Capture, EmptySpan, Found, LineCounts, Reject, RunStage};
use crate::grade::diagnostics::permissions::{
    outside, DocCollections, Leak, Outside, LEAKS_LISTED,
};
use crate::grade::diagnostics::pool::Pooled;
use crate::grade::ranking::RankingJudge;
use crate::grade::trec::ranker::{RankRules, RunLine};
use crate::grade::trec::runs::{BlockRuns, BlockScratch, TrecLines};
use crate::grade::units::{runs_refused, DocOf};
use crate::io::blocks::Chunk;
use crate::io::json::JsonParser;
use crate::labels::{LabelIndex, QueryIdx};
use crate::logs::parquet::{RowGroup, Rows};
use crate::logs::read::LogChunk;
use crate::logs::record::{
    EventKey, Invalid, Nanos, Origin, Pending, Ranking, Record, RecordSink, RunResult, Skipped,
    SpanIds,
};
use crate::logs::records::{input_of, records, RecordOptions};
use crate::logs::seen::FieldsSeen;

/// Everything one block produced. Pair indices are local to the block.
#[derive(Debug, Default)]
pub struct BlockOutcome {
    /// The input the block came from.
    pub input: u32,
    /// The (run, stage) pairs seen in the block.
    pub pairs: Vec<RunStage>,
    /// Judged captures of labeled queries: (pair, query, capture).
    pub captures: Vec<(u32, QueryIdx, Capture)>,
    /// Capture spans of labeled queries that returned no document, held
    /// until every span is read.
    pub empty_spans: Vec<EmptySpan>,
    /// Where the capture spans of labeled queries sit in their traces:
    /// (pair, query, own place).
    pub span_ids: Vec<(u32, QueryIdx, u64)>,
    /// (input, query) of rejected run lines of labeled queries whose run
    /// is unknown.
    pub unplaced: Vec<(u32, QueryIdx)>,
    /// The judged documents the captures found, back to back.
    pub found: Vec<Found>,
    /// Labeled (pair, query) keys whose capture was rejected.
    pub rejected_keys: Vec<(u32, QueryIdx)>,
    /// TREC lines of labeled queries: rankings the block held whole, and
    /// the other lines, held until every run is read.
    pub trec: BlockRuns,
    /// Rejected records.
    pub rejects: Vec<Reject>,
    /// The block's first leaks, in input order (at most [`LEAKS_LISTED`]).
    pub leaks: Vec<Leak>,
    /// Judged documents returned outside the user's allowed collections:
    /// never graded, but returned (for the stale-label check).
    pub withheld: Vec<u32>,
    /// The unjudged documents the captures ranked within the pool depth
    /// (`--review-queue`), back to back.
    pub pooled: Pooled,
    /// Line counts.
    pub counts: LineCounts,
    /// For each stage `--stage` names, whether a record of the block had
    /// it (empty when no stage is named).
    pub stages_seen: Vec<bool>,
    /// Which fields its records had.
    pub seen: FieldsSeen,
    /// Why the chunk could not be read at all (a Parquet row group that
    /// does not decode, a CSV run's header that cannot be read): the whole
    /// input is then in error.
    pub failed: Option<String>,
    /// Whether that is the input's own damage (a Parquet row group that
    /// does not decode), which `--bad-files skip` may skip.
    pub damaged: bool,
}

impl BlockOutcome {
    fn pair(&mut self, run: &str, stage: &str) -> u32 {
        let found = self
            .pairs
            .iter()
            .position(|(r, s)| &**r == run && &**s == stage);
        found.unwrap_or_else(|| {
            self.pairs.push((run.into(), stage.into()));
            self.pairs.len() - 1
        }) as u32
    }

    fn reject(&mut self, origin: Origin, invalid: Invalid, line: &[u8]) {
        self.counts.rejected += 1;
        self.rejects.push(Reject::new(origin, invalid, line));
    }

    /// Count a valid record's permission data and keep its first leaks
    /// (a record rejected while judging showed the user nothing).
    fn count_permissions(&mut self, event: &EventBody, query_id: &str, origin: Origin) {
        if !event.with_permissions {
            self.counts.without_permissions += 1;
        }
        self.counts.leaked_results += event.outside.len() as u64;
        let room = LEAKS_LISTED.saturating_sub(self.leaks.len());
        self.leaks
            .extend(event.outside.iter().take(room).map(|o| Leak {
                origin,
                query_id: query_id.to_string(),
                doc_id: event.docs[o.position].to_string(),
                collection: o.collection.clone(),
            }));
    }
}

/// What a worker needs to judge records; shared by all workers.
#[derive(Debug, Clone, Copy)]
pub struct JudgeConfig<'a> {
    /// The answer key.
    pub labels: &'a LabelIndex,
    /// How records are read: where their fields are, what names a run.
    pub records: RecordOptions<'a>,
    /// Stages to grade; empty means all.
    pub stages: &'a [String],
    /// What to do with a doc id listed twice.
    pub duplicates: DuplicateDocs,
    /// Each doc's collection, for results that name none.
    pub doc_collections: Option<&'a DocCollections>,
    /// What becomes of labeled TREC lines.
    pub trec: TrecLines<'a>,
    /// Each input's name, for reject details that cite two places.
    pub input_names: &'a [String],
    /// With `--review-queue`, the depth within which a capture's unjudged
    /// documents are pooled for judging.
    pub pool_depth: Option<usize>,
    /// Under `--unit doc`, how a result id names its document.
    pub doc_of: Option<&'a DocOf>,
}

impl<'a> JudgeConfig<'a> {
    /// How run lines become rankings.
    pub fn rank_rules(&self) -> RankRules<'a> {
        RankRules {
            duplicates: self.duplicates,
            input_names: self.input_names,
            pool_depth: self.pool_depth,
        }
    }

    /// Whether records of `stage` are graded; a stage named by `--stage`
    /// is marked in `seen`.
    fn wants_stage(&self, stage: &str, seen: &mut [bool]) -> bool {
        if self.stages.is_empty() {
            return true;
        }
        let named = self.stages.iter().position(|s| s == stage);
        if let Some(i) = named {
            seen[i] = true;
        }
        named.is_some()
    }
}

/// What a valid search event carries besides its key, whatever format
/// it came in.
struct EventBody<'i> {
    /// The doc ids in ranking order.
    docs: Vec<Cow<'i, str>>,
    latency_ms: Option<f64>,
    context_tokens: Option<f64>,
    answer_ok: Option<bool>,
    time: Option<Nanos>,
    /// The value of each field sliced by.
    slices: Vec<Option<Cow<'i, str>>>,
    /// Whether the record named the user's allowed collections.
    with_permissions: bool,
    /// The results outside them.
    outside: Vec<Outside>,
}

impl<'i> EventBody<'i> {
    /// What an event that ranked `ranking` returned: its results outside
    /// the user's allowed collections found, `mapped` naming the
    /// collection of a result that names none.
    fn of(ranking: Ranking<'i>, mapped: Option<&DocCollections>) -> Result<Self, Invalid> {
        let with_permissions = ranking.permissions.is_some();
        let outside = match ranking.permissions {
            Some(permissions) => outside(
                &permissions.allowed,
                permissions.collections.into_iter().map(Ok),
                &ranking.docs,
                mapped,
            )?,
            None => Vec::new(),
        };
        Ok(EventBody {
            docs: ranking.docs,
            latency_ms: ranking.latency_ms,
            context_tokens: ranking.context_tokens,
            answer_ok: ranking.answer_ok,
            time: ranking.time,
            slices: ranking.slices,
            with_permissions,
            outside,
        })
    }
}

/// Judge one search event of `key`, whose `ranking` is read only once its
/// key is known: a ranking that cannot be read still counts as a capture
/// of a labeled query, so a query whose every capture is rejected is
/// invalid, not missing.
fn take_event<'i>(
    config: &JudgeConfig,
    judge: &mut RankingJudge,
    out: &mut BlockOutcome,
    origin: Origin,
    (key, span): (&EventKey<'i>, Option<SpanIds>),
    ranking: Pending<'_, 'i>,
) -> Result<(), Invalid> {
    if !config.wants_stage(key.stage, &mut out.stages_seen) {
        // Left out by --stage, so its results are not read: the chain and
        // LLM runs of a tracing export hold none.
        out.counts.events += 1;
        out.counts.other_stage += 1;
        return Ok(());
    }
    let pair = out.pair(key.run, key.stage);
    let labeled = (config.labels)
        .find_captured(&key.query_id)
        .map(|query| (pair, query));
    // A capture span's place, kept even when its ranking is rejected: an
    // empty span inside it is its inner call all the same.
    if let (Some((pair, query)), Some(own)) = (labeled, span.and_then(|ids| ids.own)) {
        out.span_ids.push((pair, query, own));
    }
    let event = ranking
        .read()
        .and_then(|ranking| EventBody::of(ranking, config.doc_collections))
        .inspect_err(|_| out.rejected_keys.extend(labeled))?;
    out.counts.events += 1;
    let Some((pair, query)) = labeled else {
        out.counts.unlabeled += 1;
        out.count_permissions(&event, &key.query_id, origin);
        return Ok(());
    };
    let judged = judge.judge(
        config.labels,
        query,
        &event.docs,
        &event.outside,
        &mut out.found,
        &mut out.withheld,
    );
    let judged = judged.inspect_err(|_| out.rejected_keys.push((pair, query)))?;
    out.counts.later_chunks += u64::from(judged.folded.later_chunks);
    out.counts.unmapped_ids += u64::from(judged.folded.unmapped);
    let pooled = match config.pool_depth {
        Some(depth) => judge.pool(
            config.labels,
            query,
            &event.docs,
            &event.outside,
            depth,
            &mut out.pooled,
        ),
        None => 0..0,
    };
    out.count_permissions(&event, &key.query_id, origin);
    let capture = Capture {
        origin,
        n_results: judged.n_results,
        records: 1,
        latency_ms: event.latency_ms,
        context_tokens: event.context_tokens,
        unauthorized: judged.unauthorized,
        answer_ok: event.answer_ok,
        time: event.time,
        slices: (event.slices.into_iter())
            .map(|value| value.map(Box::from))
            .collect(),
        found: judged.found,
        pooled,
        returned_judged: judged.returned_judged,
    };
    match span {
        // Perhaps an instrumentation's inner call: decided once every span
        // of the query is known.
        Some(ids) if capture.n_results == 0 => out.empty_spans.push(EmptySpan {
            pair,
            query,
            capture,
            own: ids.own,
            parent: ids.parent,
        }),
        _ => out.captures.push((pair, query, capture)),
    }
    Ok(())
}

/// A worker: reads and judges chunks with its own reusable scratch.
pub struct BlockWorker<'a> {
    config: &'a JudgeConfig<'a>,
    parser: JsonParser,
    judge: RankingJudge,
    /// Run lines of the current chunk.
    trec: BlockScratch,
    last_query: LastQuery,
}

/// The query id of the previous TREC line and its label: a run lists a
/// query's lines together, so most lines need no lookup in the index.
#[derive(Debug, Default)]
struct LastQuery {
    id: Vec<u8>,
    query: Option<QueryIdx>,
}

impl LastQuery {
    fn find(&mut self, labels: &LabelIndex, id: &str) -> Option<QueryIdx> {
        if self.id != id.as_bytes() {
            self.id.clear();
            self.id.extend_from_slice(id.as_bytes());
            self.query = labels.find_captured(id);
        }
        self.query
    }
}

impl<'a> BlockWorker<'a> {
    /// A worker with empty scratch space.
    pub fn new(config: &'a JudgeConfig<'a>) -> Self {
        BlockWorker {
            config,
            parser: JsonParser::default(),
            judge: RankingJudge::new(config.duplicates, config.doc_of.cloned()),
            trec: BlockScratch::default(),
            last_query: LastQuery::default(),
        }
    }

    /// Read and judge every record of a chunk.
    pub fn process(&mut self, chunk: &LogChunk) -> BlockOutcome {
        let config = self.config;
        let mut out = BlockOutcome {
            input: input_of(chunk),
            stages_seen: vec![false; config.stages.len()],
            ..BlockOutcome::default()
        };
        let mut judging = Judging {
            config,
            judge: &mut self.judge,
            trec: &mut self.trec,
            last_query: &mut self.last_query,
            out: &mut out,
        };
        let read = records(chunk, &config.records, &mut self.parser).for_each(&mut judging);
        if let Err(failed) = read {
            out.failed = Some(failed);
            out.damaged = matches!(
                chunk,
                Chunk::Rows(RowGroup {
                    rows: Rows::Parquet { .. },
                    ..
                })
            );
        }
        // Rank or hold the run lines of the chunk just read.
        let rank_early = matches!(config.trec, TrecLines::RankEarly);
        out.trec = self
            .trec
            .finish(config.labels, config.rank_rules(), rank_early);
        out
    }
}

/// Where the records of the chunk a worker reads go: judged into its
/// outcome.
struct Judging<'w, 'a> {
    config: &'a JudgeConfig<'a>,
    judge: &'w mut RankingJudge,
    trec: &'w mut BlockScratch,
    last_query: &'w mut LastQuery,
    out: &'w mut BlockOutcome,
}

impl RecordSink for Judging<'_, '_> {
    fn take<'i>(
        &mut self,
        origin: Origin,
        record: Record<'i, Pending<'_, 'i>>,
    ) -> Result<(), Invalid> {
        let counts = &mut self.out.counts;
        match record {
            Record::Skipped(Skipped::Blank) => counts.blank += 1,
            Record::Skipped(Skipped::Header) => counts.header += 1,
            record => {
                counts.records += 1;
                return self.judge(origin, record);
            }
        }
        Ok(())
    }

    fn reject(&mut self, origin: Origin, invalid: Invalid, excerpt: &[u8]) {
        self.out.reject(origin, invalid, excerpt);
    }

    fn seen(&mut self) -> &mut FieldsSeen {
        &mut self.out.seen
    }
}

impl Judging<'_, '_> {
    /// Judge one record, whatever format it came in.
    ///
    /// # Errors
    /// Why the record is rejected.
    fn judge<'i>(
        &mut self,
        origin: Origin,
        record: Record<'i, Pending<'_, 'i>>,
    ) -> Result<(), Invalid> {
        match record {
            Record::Event { key, span, ranking } => {
                let out = &mut *self.out;
                take_event(self.config, self.judge, out, origin, (&key, span), ranking)
            }
            Record::Result(result) => {
                self.run_line(&result, origin);
                Ok(())
            }
            Record::LostResult { key, invalid } => Err(self.lost_line(&key, invalid, origin)),
            Record::Unplaced { query_id, invalid } => {
                Err(self.unplaced_line(&query_id, invalid, origin))
            }
            Record::Other => {
                self.out.counts.other_records += 1;
                Ok(())
            }
            Record::Invalid(invalid) => Err(invalid),
            // Not a record: counted by the caller.
            Record::Skipped(_) => Ok(()),
        }
    }

    /// Whether the run lines of `query` are wanted: on a second reading,
    /// only those of the queries read again.
    fn holds(&self, query: QueryIdx) -> bool {
        match self.config.trec {
            TrecLines::HoldOnly(queries) => queries[query as usize],
            TrecLines::RankEarly | TrecLines::HoldAll => true,
        }
    }

    /// A rejected record of `query_id`'s ranking in some run, of a ranking
    /// spread over records, that does not say which run (a run line cut
    /// before its tag, a result row whose run or stage is null): every
    /// ranking of the query in its input may have lost it, and is rejected
    /// whole once ranked.
    fn unplaced_line(&mut self, query_id: &str, invalid: Invalid, origin: Origin) -> Invalid {
        let Some(query) = self.last_query.find(self.config.labels, query_id) else {
            return invalid;
        };
        self.out.unplaced.push((origin.input, query));
        Invalid {
            detail: format!(
                "{}; its run is unknown, so every ranking of query '{query_id}' in this input \
                 is rejected whole",
                invalid.detail
            ),
            ..invalid
        }
    }

    /// A record of a ranking spread over records, rejected as `invalid`
    /// (its score or rank unusable, its doc id missing): its ranking lost a
    /// result. The ranking of a labeled query is then held with a mark, to
    /// be rejected whole once all its lines are gathered; the reject says so.
    fn lost_line(&mut self, key: &EventKey, invalid: Invalid, origin: Origin) -> Invalid {
        if !self
            .config
            .wants_stage(key.stage, &mut self.out.stages_seen)
        {
            return invalid;
        }
        let Some(query) = self.last_query.find(self.config.labels, &key.query_id) else {
            return invalid;
        };
        if self.holds(query) {
            let pair = self.out.pair(key.run, key.stage);
            self.trec.push(pair, query, origin, RunLine::lost());
        }
        let run = if key.run.is_empty() {
            String::new()
        } else {
            format!(" in run '{}'", key.run)
        };
        Invalid {
            detail: format!(
                "{}; the ranking of query '{}'{run} lost this line, so none of it is graded",
                invalid.detail, key.query_id
            ),
            ..invalid
        }
    }

    /// Count one result of a ranking spread over records (a run line, a
    /// Parquet row of one result) and hold it if its query is labeled.
    fn run_line(&mut self, result: &RunResult, origin: Origin) {
        let (config, out, key) = (self.config, &mut *self.out, &result.key);
        out.counts.events += 1;
        if !config.wants_stage(key.stage, &mut out.stages_seen) {
            out.counts.other_stage += 1;
            return;
        }
        // A ranking spread over records carries no permission data.
        out.counts.without_permissions += 1;
        if config.doc_of.is_some() && out.failed.is_none() {
            out.failed = Some(runs_refused());
        }
        let pair = out.pair(key.run, key.stage);
        match self.last_query.find(config.labels, &key.query_id) {
            None => out.counts.unlabeled += 1,
            Some(query) if !self.holds(query) => {}
            Some(query) => {
                let line = RunLine::new(config.labels, query, &result.doc_id, result.rank);
                self.trec.push(pair, query, origin, line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::options::{LogsFormat, RunName};
    use crate::grade::ranking::tests::labels;
    use crate::io::blocks::{lines, Block, Chunk, Header};
    use crate::logs::jsonl::LogFields;
    use crate::logs::otlp::SpanFields;
    use crate::logs::record::{RejectReason, EXCERPT_BYTES};
    use proptest::prelude::*;

    /// The header a CSV run's block is read with in these tests: its first
    /// line.
    const CSV_HEADER: &str = "query_id,doc_id,score,run";

    fn process(bytes: Vec<u8>, format: LogsFormat, stages: &[String]) -> BlockOutcome {
        let labels = labels();
        let file_runs = ["run".to_string()];
        let fields = LogFields::default();
        let config = JudgeConfig {
            labels: &labels,
            records: RecordOptions {
                fields: &fields,
                spans: &SpanFields::default(),
                run_name: RunName::Tag,
                file_runs: &file_runs,
                partitions: &[],
            },
            stages,
            duplicates: DuplicateDocs::Reject,
            doc_collections: None,
            trec: TrecLines::RankEarly,
            input_names: &[],
            pool_depth: None,
            doc_of: None,
        };
        let block = Block {
            input: 0,
            first_line: 1,
            bytes,
            format,
            header: (format == LogsFormat::Csv).then(|| Header {
                line: 1,
                text: CSV_HEADER.into(),
            }),
            numbers: Vec::new(),
        };
        BlockWorker::new(&config).process(&Chunk::Lines(block))
    }

    /// Every record ends up in exactly one place: each line but blank ones
    /// and a run's header, or each span of an OTLP line (whose record count
    /// is its spans').
    fn assert_accounted(out: &BlockOutcome, lines: usize, format: LogsFormat) {
        let c = out.counts;
        assert_eq!(out.failed, None);
        if format != LogsFormat::Otlp {
            assert_eq!(c.records + c.blank + c.header, lines as u64, "{c:?}");
        }
        let placed = c.unlabeled
            + c.other_stage
            + c.other_records
            + out.captures.len() as u64
            + out.trec.n_lines()
            + c.rejected;
        assert_eq!(c.records, placed, "{c:?}");
        assert_eq!(c.rejected, out.rejects.len() as u64);
    }

    /// JSON-ish lines built from pieces real logs contain, so that the
    /// parser sees near-valid records and not only noise.
    fn json_like() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"query_id\"",
            "\"results\"",
            "\"resourceSpans\"",
            "\"scopeSpans\"",
            "\"spans\"",
            "\"attributes\"",
            "\"key\"",
            "\"value\"",
            "\"stringValue\"",
            "\"intValue\"",
            "\"openinference.span.kind\"",
            "\"RETRIEVER\"",
            "\"retrieval.documents.0.document.id\"",
            "\"metadata\"",
            "\"{\\\"query_id\\\": \\\"q1\\\"}\"",
            "\"startTimeUnixNano\"",
            "\"stage\"",
            "\"run\"",
            "\"doc_id\"",
            "\"latency_ms\"",
            "\"q1\"",
            "\"q2\"",
            "\"a\"",
            "\"b\"",
            "1",
            "-2.5",
            "null",
            "true",
            "\"\\u00e9\"",
            "\"",
            "\\",
            " ",
            "\r",
            "\u{e9}",
            "\u{1F600}",
        ]);
        prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat().into_bytes())
    }

    fn any_line() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            json_like(),
            prop::collection::vec(
                any::<u8>().prop_filter("no newline", |b| *b != b'\n'),
                0..80
            ),
            Just(br#"{"query_id":"q1","results":["a","c","b"]}"#.to_vec()),
            Just(br#"{"query_id":"q1","results":["a","a"]}"#.to_vec()),
            Just(b"q1 Q0 a 1 2.5 run".to_vec()),
            Just(b"q1\ta\t1".to_vec()),
            Just(b"q1,a,2.5,run".to_vec()),
            Just(b"q1,\"a,b\",x,run".to_vec()),
            Just(
                concat!(
                    r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":["#,
                    r#"{"key":"openinference.span.kind","value":{"stringValue":"RETRIEVER"}},"#,
                    r#"{"key":"query_id","value":{"stringValue":"q1"}},"#,
                    r#"{"key":"retrieval.documents.0.document.id","value":{"stringValue":"a"}}"#,
                    r#"]},{"name":"llm"}]}]}]}"#
                )
                .as_bytes()
                .to_vec()
            ),
        ]
    }

    proptest! {
        /// No input panics the reader of any format of lines, and every
        /// line is graded, counted or rejected.
        #[test]
        fn any_bytes_are_accounted_for(raw_lines in prop::collection::vec(any_line(), 0..30), format in prop::sample::select(vec![LogsFormat::Jsonl, LogsFormat::Trec, LogsFormat::Msmarco, LogsFormat::Csv, LogsFormat::Otlp]), filter in any::<bool>()) {
            let mut bytes = raw_lines.join(&b'\n');
            if format == LogsFormat::Csv {
                bytes.splice(0..0, format!("{CSV_HEADER}\n").into_bytes());
            }
            let stages = if filter { vec!["final".to_string()] } else { Vec::new() };
            let out = process(bytes.clone(), format, &stages);
            assert_accounted(&out, lines(&bytes).count(), format);
            for reject in &out.rejects {
                prop_assert!(reject.excerpt.len() <= EXCERPT_BYTES);
            }
        }
    }

    /// A line not UTF-8 in a block of run lines is rejected on its own
    /// (the block's other lines are read as usual), and held as a line its
    /// ranking lost.
    #[test]
    fn a_trec_line_not_utf8_is_rejected_and_marks_its_ranking() {
        let mut bytes = b"q1 Q0 a 1 2.0 r\nq1 Q0 b 2 1.0 r\r\n".to_vec();
        bytes.extend_from_slice(b"q1 Q0 \xff 3 0.5 r\nq2 Q0 c 1 1.0 r");
        let out = process(bytes.clone(), LogsFormat::Trec, &[]);
        assert_eq!(out.trec.n_lines(), 3);
        assert_eq!(out.rejects.len(), 1);
        assert_eq!(out.rejects[0].origin.line, 3);
        assert_eq!(out.rejects[0].reason, RejectReason::InvalidUtf8);
        assert!(out.rejects[0]
            .detail
            .contains("the ranking of query 'q1' in run 'r' lost this line"));
        // The same lines in a block that is all UTF-8 are parsed alike.
        let valid = String::from_utf8_lossy(&bytes).replace('\u{fffd}', "x");
        let out = process(valid.into_bytes(), LogsFormat::Trec, &[]);
        assert_eq!((out.trec.n_lines(), out.rejects.len()), (4, 0));
        assert_accounted(&out, 4, LogsFormat::Trec);
    }

    #[test]
    fn a_capture_keeps_the_ranks_of_judged_documents() {
        let out = process(
            b"{\"query_id\":\"q1\",\"results\":[\"x\",\"b\",{\"id\":\"a\"}],\"latency_ms\":3}\n"
                .to_vec(),
            LogsFormat::Jsonl,
            &[],
        );
        assert_accounted(&out, 1, LogsFormat::Jsonl);
        let (_, _, capture) = &out.captures[0];
        let labels = labels();
        let found: Vec<(u32, &str)> = out.found
            [capture.found.start as usize..capture.found.end as usize]
            .iter()
            .map(|f| (f.rank, labels.doc_id(f.doc)))
            .collect();
        assert_eq!(found, [(2, "b"), (3, "a")]);
        assert_eq!((capture.n_results, capture.latency_ms), (3, Some(3.0)));
    }

    #[test]
    fn a_rejected_record_of_a_labeled_query_counts_against_its_key() {
        let lines = concat!(
            r#"{"query_id":"q1","results":["a"],"latency_ms":"slow"}"#,
            "\n",
            r#"{"query_id":"q1","stage":"rerank"}"#,
            "\n",
            r#"{"query_id":"unlabeled","results":"a"}"#,
        );
        let out = process(lines.as_bytes().to_vec(), LogsFormat::Jsonl, &[]);
        assert_accounted(&out, 3, LogsFormat::Jsonl);
        let keys: Vec<(&str, u32)> = out
            .rejected_keys
            .iter()
            .map(|&(pair, query)| (&*out.pairs[pair as usize].1, query))
            .collect();
        assert_eq!(
            keys,
            [("final", 0), ("rerank", 0)],
            "q1 is query 0; the unlabeled record has no key"
        );
        let reasons: Vec<RejectReason> = out.rejects.iter().map(|r| r.reason).collect();
        assert_eq!(
            reasons,
            [
                RejectReason::BadField,
                RejectReason::MissingResults,
                RejectReason::BadResults
            ]
        );
    }
}
