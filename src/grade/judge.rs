//! Stage 3, judge: each parsed record is matched against the label index on
//! the worker that parsed it. Only the facts needed to grade survive — the
//! ranks of judged documents and a few numbers per capture — so memory
//! follows the number of labeled queries, not the bytes of the logs.

use std::borrow::Cow;

use simd_json::prelude::Writable;

use crate::base::options::{DuplicateDocs, LogsFormat, RunName};
use crate::grade::capture::{Capture, EmptySpan, Found, LineCounts, Reject, RunStage};
use crate::grade::diagnostics::permissions::{
    outside, DocCollections, Leak, Outside, LEAKS_LISTED,
};
use crate::grade::diagnostics::pool::Pooled;
use crate::grade::ranking::RankingJudge;
use crate::grade::trec::ranker::{RankRules, RunLine};
use crate::grade::trec::runs::{BlockRuns, BlockScratch, TrecLines};
use crate::grade::units::{DocOf, RUNS_REFUSED};
use crate::io::blocks::{is_blank, line_ranges, Block, Chunk, MAX_LINE};
use crate::io::json::JsonParser;
use crate::labels::{LabelIndex, QueryIdx};
use crate::logs::csv_run::{BadCsvLine, CsvRun};
use crate::logs::jsonl::{Event, LogFields};
use crate::logs::otlp::{for_each_span, SpanFields, SpanRecord};
use crate::logs::parquet::rows::{for_each_batch, RowRecord};
use crate::logs::parquet::RowGroup;
use crate::logs::read::LogChunk;
use crate::logs::record::{EventKey, Invalid, Origin, RejectReason, SpanIds, DEFAULT_STAGE};
use crate::logs::trec::{BadRunLine, RankKey, TrecLine};

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
    /// Why the chunk could not be read at all (a Parquet row group that
    /// does not decode, a CSV run's header that cannot be read): the whole
    /// input is then in error.
    pub failed: Option<String>,
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
    /// Where JSONL records keep their fields.
    pub fields: &'a LogFields,
    /// Stages to grade; empty means all.
    pub stages: &'a [String],
    /// What to do with a doc id listed twice.
    pub duplicates: DuplicateDocs,
    /// Each doc's collection, for results that name none.
    pub doc_collections: Option<&'a DocCollections>,
    /// What becomes of labeled TREC lines.
    pub trec: TrecLines<'a>,
    /// What names a TREC run.
    pub run_name: RunName,
    /// Each input's name as a run: its file name without extensions.
    pub file_runs: &'a [String],
    /// Each input's name, for reject details that cite two places.
    pub input_names: &'a [String],
    /// Where spans keep what a capture needs.
    pub spans: &'a SpanFields,
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

    /// The run of a line from `input` in `format` tagged `tag`.
    fn run_of<'t>(&'t self, tag: &'t str, format: LogsFormat, input: u32) -> &'t str {
        if format == LogsFormat::Msmarco || self.run_name == RunName::File {
            &self.file_runs[input as usize]
        } else {
            tag
        }
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
    /// Whether the record named the user's allowed collections.
    with_permissions: bool,
    /// The results outside them.
    outside: Vec<Outside>,
}

/// Judge one search event of `key`, whose `body` is read only once its
/// key is known: a body that cannot be read still counts as a capture of
/// a labeled query, so a query whose every capture is rejected is
/// invalid, not missing.
fn take_event<'i>(
    config: &JudgeConfig,
    judge: &mut RankingJudge,
    out: &mut BlockOutcome,
    origin: Origin,
    (key, span): (&EventKey<'i>, Option<SpanIds>),
    body: impl FnOnce() -> Result<EventBody<'i>, Invalid>,
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
    let event = body().inspect_err(|_| out.rejected_keys.extend(labeled))?;
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

fn too_long() -> Invalid {
    Invalid {
        reason: RejectReason::LineTooLong,
        detail: format!("the line is longer than {} MiB", MAX_LINE >> 20),
    }
}

/// A worker: parses and judges blocks with its own reusable scratch.
pub struct BlockWorker<'a> {
    config: &'a JudgeConfig<'a>,
    parser: JsonParser,
    judge: RankingJudge,
    /// TREC lines of the current block.
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

/// Where the fields of a block's lines are when it is a CSV run.
///
/// # Errors
/// A CSV run without a header, or whose header names a column rgrade
/// does not know: the input cannot be read.
fn csv_run(block: &Block) -> Result<Option<CsvRun>, String> {
    if block.format != LogsFormat::Csv {
        return Ok(None);
    }
    let Some(header) = &block.header else {
        return Err(
            "a CSV run's first line must be its header, naming query_id (or q_id), \
                    doc_id, and score or rank"
                .to_string(),
        );
    };
    CsvRun::from_header(&header.text)
        .map(Some)
        .map_err(|err| format!("line {}: {err}", header.line))
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

    /// Parse and judge every line of a chunk.
    pub fn process(&mut self, chunk: &LogChunk) -> BlockOutcome {
        let mut out = BlockOutcome {
            stages_seen: vec![false; self.config.stages.len()],
            ..BlockOutcome::default()
        };
        match chunk {
            &Chunk::Oversized {
                input,
                line,
                ref head,
            } => {
                out.input = input;
                out.counts.records += 1;
                out.reject(Origin::line(input, line), too_long(), head);
            }
            Chunk::Lines(block) => {
                out.input = block.input;
                match csv_run(block) {
                    Ok(csv) => self.lines(block, csv.as_ref(), &mut out),
                    Err(err) => out.failed = Some(err),
                }
                self.finish_runs(&mut out);
            }
            Chunk::Rows(group) => {
                out.input = group.input;
                if let Err(err) = self.row_group(group, &mut out) {
                    out.failed = Some(format!(
                        "cannot read (truncated or corrupt Parquet?): {err}"
                    ));
                }
                self.finish_runs(&mut out);
            }
        }
        out
    }

    /// Parse and judge every line of a block; `csv` says where a CSV
    /// run's fields are.
    fn lines(&mut self, block: &Block, csv: Option<&CsvRun>, out: &mut BlockOutcome) {
        let run_file = matches!(
            block.format,
            LogsFormat::Trec | LogsFormat::Msmarco | LogsFormat::Csv
        );
        // A run file's block is checked as UTF-8 once, not line by line.
        let text = run_file
            .then(|| std::str::from_utf8(&block.bytes).ok())
            .flatten();
        for (offset, range) in line_ranges(&block.bytes).enumerate() {
            let line = &block.bytes[range.clone()];
            let origin = Origin::line(block.input, block.line_number(offset));
            if is_blank(line) {
                out.counts.blank += 1;
                continue;
            }
            if block.header.as_ref().is_some_and(|h| h.line == origin.line) {
                out.counts.header += 1;
                continue;
            }
            let judged = if line.len() > MAX_LINE {
                Err(too_long())
            } else if block.format == LogsFormat::Otlp {
                match self.otlp_line(line, origin, out) {
                    Ok(records) => {
                        out.counts.records += records;
                        continue;
                    }
                    Err(invalid) => Err(invalid),
                }
            } else if let Some(csv) = csv {
                let text = text.and_then(|text| text.get(range));
                self.csv_line(csv, line, text, origin, out)
            } else if run_file {
                let text = text.and_then(|text| text.get(range));
                let parsed = match text {
                    Some(text) => TrecLine::parse_text(text, block.format),
                    None => TrecLine::parse(line, block.format),
                };
                match parsed {
                    Ok(parsed) => {
                        self.trec_line(parsed, block.format, origin, out);
                        Ok(())
                    }
                    Err(bad) => Err(self.bad_trec_line(bad, block.format, origin, out)),
                }
            } else {
                self.json_line(line, origin, out)
            };
            out.counts.records += 1;
            if let Err(invalid) = judged {
                out.reject(origin, invalid, line);
            }
        }
    }

    /// Rank or hold the run lines of the chunk just read.
    fn finish_runs(&mut self, out: &mut BlockOutcome) {
        let config = self.config;
        let rank_early = matches!(config.trec, TrecLines::RankEarly);
        out.trec = self
            .trec
            .finish(config.labels, config.rank_rules(), rank_early);
    }

    /// Judge every row of a Parquet row group or a part of a table: a
    /// search event as a JSONL line is, a result row as a run line is.
    ///
    /// # Errors
    /// The row group cannot be decoded.
    fn row_group(&mut self, group: &RowGroup, out: &mut BlockOutcome) -> Result<(), String> {
        let config = self.config;
        for_each_batch(group, config.spans, |batch| {
            for row in 0..batch.len() {
                let origin = batch.origin(row);
                out.counts.records += 1;
                let taken = batch.read(row).and_then(|record| match record {
                    RowRecord::Event(key) => {
                        let span = batch.span_ids(row);
                        take_event(config, &mut self.judge, out, origin, (&key, span), || {
                            batch.ranking(row).map(|ranking| EventBody {
                                docs: ranking.docs,
                                latency_ms: ranking.latency_ms,
                                context_tokens: ranking.context_tokens,
                                answer_ok: ranking.answer_ok,
                                with_permissions: false,
                                outside: Vec::new(),
                            })
                        })
                    }
                    RowRecord::Result { key, doc_id, rank } => {
                        self.run_line(&key, &doc_id, rank, origin, out);
                        Ok(())
                    }
                    RowRecord::LostResult { key, invalid } => {
                        Err(self.lost_line(&key, invalid, origin, out))
                    }
                    RowRecord::Unplaced { query_id, invalid } => {
                        Err(self.unplaced_line(&query_id, invalid, origin, out))
                    }
                    RowRecord::Other => {
                        out.counts.other_records += 1;
                        Ok(())
                    }
                });
                if let Err(invalid) = taken {
                    out.reject(origin, batch.locate(row, invalid), &batch.excerpt(row));
                }
            }
        })
    }

    fn json_line(
        &mut self,
        line: &[u8],
        origin: Origin,
        out: &mut BlockOutcome,
    ) -> Result<(), Invalid> {
        let config = self.config;
        let judge = &mut self.judge;
        self.parser.parse(line, |root| {
            let key = EventKey::from_value(root, config.fields)?;
            take_event(config, judge, out, origin, (&key, None), || {
                let event = Event::from_value(root, config.fields)?;
                let docs: Vec<Cow<str>> = event.doc_ids(config.fields).collect::<Result<_, _>>()?;
                let outside = match &event.allowed {
                    Some(allowed) => outside(
                        allowed,
                        event.collections(config.fields),
                        &docs,
                        config.doc_collections,
                    )?,
                    None => Vec::new(),
                };
                Ok(EventBody {
                    docs,
                    latency_ms: event.latency_ms,
                    context_tokens: event.context_tokens,
                    answer_ok: event.answer_ok,
                    with_permissions: event.allowed.is_some(),
                    outside,
                })
            })
        })?
    }

    /// Judge each span of an OTLP export line; returns how many records
    /// the line counts for: its spans, or itself when it holds none.
    ///
    /// # Errors
    /// The line is no trace export: it is rejected whole.
    fn otlp_line(
        &mut self,
        line: &[u8],
        origin: Origin,
        out: &mut BlockOutcome,
    ) -> Result<u64, Invalid> {
        let config = self.config;
        let judge = &mut self.judge;
        self.parser.parse(line, |root| {
            let mut item = 0;
            let spans = for_each_span(root, config.spans, |span, record| {
                item += 1;
                let origin = Origin { item, ..origin };
                let taken = match record {
                    SpanRecord::Other => {
                        out.counts.other_records += 1;
                        Ok(())
                    }
                    SpanRecord::Invalid(invalid) => Err(invalid),
                    SpanRecord::Capture(key, ids, ranking) => {
                        take_event(config, judge, out, origin, (&key, Some(ids)), || {
                            ranking.map(|ranking| EventBody {
                                docs: ranking.docs,
                                latency_ms: ranking.latency_ms,
                                context_tokens: None,
                                answer_ok: None,
                                with_permissions: false,
                                outside: Vec::new(),
                            })
                        })
                    }
                };
                if let Err(invalid) = taken {
                    let invalid = Invalid {
                        detail: format!("span {item}, {}", invalid.detail),
                        ..invalid
                    };
                    out.reject(origin, invalid, span.encode().as_bytes());
                }
            })?;
            if spans == 0 {
                // An export of no span is a record that carries no event.
                out.counts.other_records += 1;
            }
            Ok(spans.max(1))
        })?
    }

    /// Whether the TREC lines of `query` are wanted: on a second reading,
    /// only those of the queries read again.
    fn holds(&self, query: QueryIdx) -> bool {
        match self.config.trec {
            TrecLines::HoldOnly(queries) => queries[query as usize],
            TrecLines::RankEarly | TrecLines::HoldAll => true,
        }
    }

    /// Count a parsed run line and hold it if its query is labeled.
    fn trec_line(
        &mut self,
        parsed: TrecLine,
        format: LogsFormat,
        origin: Origin,
        out: &mut BlockOutcome,
    ) {
        let key = EventKey {
            query_id: Cow::Borrowed(parsed.query_id),
            stage: DEFAULT_STAGE,
            run: self.config.run_of(parsed.run, format, origin.input),
        };
        self.run_line(&key, parsed.doc_id, parsed.key, origin, out);
    }

    /// Judge a line of a CSV run (`text` when the block is UTF-8).
    fn csv_line(
        &mut self,
        csv: &CsvRun,
        line: &[u8],
        text: Option<&str>,
        origin: Origin,
        out: &mut BlockOutcome,
    ) -> Result<(), Invalid> {
        let Some(text) = text.or_else(|| std::str::from_utf8(line).ok()) else {
            // What the line names of its ranking, where those fields are
            // valid UTF-8, places the loss.
            let lossy = String::from_utf8_lossy(line);
            let readable = |field: &str| !field.contains(char::REPLACEMENT_CHARACTER);
            let (query_id, place) = match csv.parse(&lossy) {
                Ok(line) => (Some(line.query_id), Some((line.run, line.stage))),
                Err(bad) => (bad.query_id, bad.place),
            };
            let bad = BadCsvLine {
                invalid: Invalid::new(RejectReason::InvalidUtf8, "the line is not valid UTF-8"),
                query_id: query_id.filter(|q| readable(q)),
                place: place
                    .filter(|(run, stage)| readable(run) && stage.as_deref().is_none_or(readable)),
            };
            return Err(self.bad_csv_line(bad, origin, out));
        };
        match csv.parse(text) {
            Ok(parsed) => {
                let config = self.config;
                let key = EventKey {
                    query_id: parsed.query_id,
                    stage: parsed.stage.as_deref().unwrap_or(DEFAULT_STAGE),
                    run: config.run_of(&parsed.run, LogsFormat::Csv, origin.input),
                };
                self.run_line(&key, &parsed.doc_id, parsed.key, origin, out);
                Ok(())
            }
            Err(bad) => Err(self.bad_csv_line(bad, origin, out)),
        }
    }

    /// Why a CSV run line is rejected; a line that names its ranking (its
    /// query, run and stage) is also a line that ranking lost, and one that
    /// names its query alone is a line every ranking of the query may
    /// have lost.
    fn bad_csv_line(&mut self, bad: BadCsvLine, origin: Origin, out: &mut BlockOutcome) -> Invalid {
        let Some(query_id) = bad.query_id else {
            return bad.invalid;
        };
        let Some((run, stage)) = bad.place else {
            return self.unplaced_line(&query_id, bad.invalid, origin, out);
        };
        let config = self.config;
        let key = EventKey {
            query_id,
            stage: stage.as_deref().unwrap_or(DEFAULT_STAGE),
            run: config.run_of(&run, LogsFormat::Csv, origin.input),
        };
        self.lost_line(&key, bad.invalid, origin, out)
    }

    /// Why a run line is rejected; a line whose fields name its ranking
    /// (its query, and its tag unless runs are named after their files)
    /// is also a line that ranking lost.
    fn bad_trec_line(
        &mut self,
        bad: BadRunLine,
        format: LogsFormat,
        origin: Origin,
        out: &mut BlockOutcome,
    ) -> Invalid {
        let by_file = format == LogsFormat::Msmarco || self.config.run_name == RunName::File;
        let tag = bad.tag.or(by_file.then_some(""));
        let Some(query_id) = bad.query_id else {
            return bad.invalid;
        };
        let Some(tag) = tag else {
            return self.unplaced_line(query_id, bad.invalid, origin, out);
        };
        let key = EventKey {
            query_id: Cow::Borrowed(query_id),
            stage: DEFAULT_STAGE,
            run: self.config.run_of(tag, format, origin.input),
        };
        self.lost_line(&key, bad.invalid, origin, out)
    }

    /// A rejected record of `query_id`'s ranking in some run, of a ranking
    /// spread over records, that does not say which run (a run line cut
    /// before its tag, a result row whose run or stage is null): every
    /// ranking of the query in its input may have lost it, and is rejected
    /// whole once ranked.
    fn unplaced_line(
        &mut self,
        query_id: &str,
        invalid: Invalid,
        origin: Origin,
        out: &mut BlockOutcome,
    ) -> Invalid {
        let Some(query) = self.last_query.find(self.config.labels, query_id) else {
            return invalid;
        };
        out.unplaced.push((origin.input, query));
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
    fn lost_line(
        &mut self,
        key: &EventKey,
        invalid: Invalid,
        origin: Origin,
        out: &mut BlockOutcome,
    ) -> Invalid {
        if !self.config.wants_stage(key.stage, &mut out.stages_seen) {
            return invalid;
        }
        let Some(query) = self.last_query.find(self.config.labels, &key.query_id) else {
            return invalid;
        };
        if self.holds(query) {
            let pair = out.pair(key.run, key.stage);
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
    fn run_line(
        &mut self,
        key: &EventKey,
        doc_id: &str,
        rank: RankKey,
        origin: Origin,
        out: &mut BlockOutcome,
    ) {
        out.counts.events += 1;
        if !self.config.wants_stage(key.stage, &mut out.stages_seen) {
            out.counts.other_stage += 1;
            return;
        }
        // A ranking spread over records carries no permission data.
        out.counts.without_permissions += 1;
        if self.config.doc_of.is_some() && out.failed.is_none() {
            out.failed = Some(RUNS_REFUSED.to_string());
        }
        let pair = out.pair(key.run, key.stage);
        match self.last_query.find(self.config.labels, &key.query_id) {
            None => out.counts.unlabeled += 1,
            Some(query) if !self.holds(query) => {}
            Some(query) => {
                let line = RunLine::new(self.config.labels, query, doc_id, rank);
                self.trec.push(pair, query, origin, line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::ranking::tests::labels;
    use crate::io::blocks::{lines, Block};
    use crate::logs::record::EXCERPT_BYTES;
    use proptest::prelude::*;

    fn process(bytes: Vec<u8>, format: LogsFormat, stages: &[String]) -> BlockOutcome {
        let labels = labels();
        let fields = LogFields::default();
        let config = JudgeConfig {
            labels: &labels,
            fields: &fields,
            stages,
            duplicates: DuplicateDocs::Reject,
            doc_collections: None,
            trec: TrecLines::RankEarly,
            run_name: RunName::Tag,
            file_runs: &[],
            input_names: &[],
            spans: &SpanFields::default(),
            pool_depth: None,
            doc_of: None,
        };
        let block = Block {
            input: 0,
            first_line: 1,
            bytes,
            format,
            header: None,
            numbers: Vec::new(),
        };
        BlockWorker::new(&config).process(&Chunk::Lines(block))
    }

    /// Every record ends up in exactly one place: each non-blank line, or
    /// each span of an OTLP line (whose record count is its spans').
    fn assert_accounted(out: &BlockOutcome, lines: usize, format: LogsFormat) {
        let c = out.counts;
        if format != LogsFormat::Otlp {
            assert_eq!(c.records + c.blank, lines as u64, "{c:?}");
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
        /// No input panics the parser, and every line is graded, counted or rejected.
        #[test]
        fn any_bytes_are_accounted_for(raw_lines in prop::collection::vec(any_line(), 0..30), format in prop::sample::select(vec![LogsFormat::Jsonl, LogsFormat::Trec, LogsFormat::Otlp]), filter in any::<bool>()) {
            let bytes = raw_lines.join(&b'\n');
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
