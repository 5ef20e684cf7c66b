//! TREC runs, between judging and grouping: a query's lines may be anywhere
//! in a run, so its ranking is known only once every run has been read.
//!
//! Until then each labeled line is held as what ranking it takes, not as
//! text: its score, where its doc id falls among the query's judged ids
//! (all that trec_eval's tie-break, doc id descending, needs to place the
//! judged documents) and a 96-bit hash of the id that tells a repeated
//! document. That is 24 bytes a line, kept in the blocks they were read in:
//! on a large run these lines are most of the memory, and fresh memory
//! costs time.
//! Once read, every (run, query) is ranked on the worker pool.

use hashbrown::HashTable;
use rayon::prelude::*;

use crate::capture::{Capture, Found, Origin, Reject};
use crate::cli::DuplicateDocs;
use crate::labels::{DocPlace, LabelIndex, QueryIdx};
use crate::record::RejectReason;

/// One labeled line of a TREC run, reduced to what ranking it needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunLine {
    score: f64,
    /// 96 bits of the xxh3-128 of the doc id: two different ids of one
    /// ranking share them with odds of 1 in 2^96 (about 1e-29), so they
    /// stand for the text.
    id_hash: u64,
    id_hash_more: u32,
    place: DocPlace,
}

impl RunLine {
    /// The line of `query` that ranks `doc_id` at `score`.
    pub fn new(labels: &LabelIndex, query: QueryIdx, doc_id: &str, score: f64) -> Self {
        let hash = xxhash_rust::xxh3::xxh3_128(doc_id.as_bytes());
        RunLine {
            score,
            id_hash: hash as u64,
            id_hash_more: (hash >> 64) as u32,
            place: labels.place_doc(query, doc_id.as_bytes()),
        }
    }

    /// trec_eval's order: score descending, then doc id descending. The
    /// place orders a line against every judged id as the text would;
    /// lines that tie on both hold no judged document, and their order
    /// changes no judged document's rank.
    fn ranks_before(&self, other: &Self) -> std::cmp::Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| other.place.cmp(&self.place))
    }

    /// The same document: a judged one by its place, any other by its hash.
    fn same_doc(&self, other: &Self) -> bool {
        self.place == other.place
            && self.id_hash == other.id_hash
            && self.id_hash_more == other.id_hash_more
    }
}

/// Consecutive lines of one block that share a (run, query).
#[derive(Debug, Clone, Copy)]
struct Span {
    pair: u32,
    query: QueryIdx,
    /// The first line's origin; the others follow it line by line.
    origin: Origin,
    /// Where the lines are in the block's list.
    start: u32,
    len: u32,
}

impl Span {
    fn key(&self) -> (u32, QueryIdx) {
        (self.pair, self.query)
    }

    fn origin_of(&self, offset: u32) -> Origin {
        Origin {
            input: self.origin.input,
            line: self.origin.line + u64::from(offset),
        }
    }
}

/// The labeled TREC lines of one block. A run lists a query's lines
/// together, so a span usually covers a whole ranking.
#[derive(Debug, Default)]
pub struct BlockLines {
    lines: Vec<RunLine>,
    spans: Vec<Span>,
}

impl BlockLines {
    /// Add the line at `origin` of (pair, query).
    pub fn push(&mut self, pair: u32, query: QueryIdx, origin: Origin, line: RunLine) {
        let index = self.lines.len() as u32;
        match self.spans.last_mut() {
            Some(span) if span.key() == (pair, query) && span.origin_of(span.len) == origin => {
                span.len += 1;
            }
            _ => self.spans.push(Span {
                pair,
                query,
                origin,
                start: index,
                len: 1,
            }),
        }
        self.lines.push(line);
    }

    /// Lines held.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether no line is held.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The lines at their exact size, leaving this one empty with its
    /// capacity: a worker fills one such scratch block after block, so a
    /// run's lines cost their size and no growth.
    pub fn take_exact(&mut self) -> Self {
        let exact = BlockLines {
            lines: self.lines.clone(),
            spans: self.spans.clone(),
        };
        self.lines.clear();
        self.spans.clear();
        exact
    }
}

/// The TREC lines of every block read, until they can be ranked.
#[derive(Debug, Default)]
pub struct TrecRuns {
    blocks: Vec<BlockLines>,
}

/// Keys ranked per task on the worker pool.
const KEYS_AT_A_TIME: usize = 1 << 10;

impl TrecRuns {
    /// Keep a block's lines; `global` maps its pair indices to the run's.
    pub fn add(&mut self, mut block: BlockLines, global: impl Fn(u32) -> u32) {
        if block.is_empty() {
            return;
        }
        for span in &mut block.spans {
            span.pair = global(span.pair);
        }
        self.blocks.push(block);
    }

    /// Rank every (pair, query) on the current rayon pool, in key order.
    /// `repeated` gives the detail of a key whose capture repeats another
    /// and is rejected whole; a ranking with a repeated document is
    /// rejected whole under `DuplicateDocs::Reject`.
    pub fn rank(
        self,
        labels: &LabelIndex,
        duplicates: DuplicateDocs,
        repeated: &(dyn Fn(u32, QueryIdx) -> Option<String> + Sync),
    ) -> Vec<RankedRuns> {
        let mut spans: Vec<(&BlockLines, &Span)> = self
            .blocks
            .iter()
            .flat_map(|block| block.spans.iter().map(move |span| (block, span)))
            .collect();
        spans.par_sort_unstable_by_key(|(_, span)| (span.key(), span.origin));
        let keys: Vec<&[(&BlockLines, &Span)]> = spans
            .chunk_by(|(_, a), (_, b)| a.key() == b.key())
            .collect();
        keys.par_chunks(KEYS_AT_A_TIME)
            .map_init(Ranker::default, |ranker, keys| {
                let mut out = RankedRuns::default();
                for spans in keys {
                    ranker.gather(spans);
                    let key = spans[0].1.key();
                    match repeated(key.0, key.1) {
                        Some(detail) => {
                            ranker.reject_all(key, RejectReason::RepeatedCapture, &detail, &mut out)
                        }
                        None => ranker.rank(labels, key, duplicates, &mut out),
                    }
                }
                out
            })
            .collect()
    }
}

/// Rankings rebuilt from TREC runs, ready for the grouper.
#[derive(Debug, Default)]
pub struct RankedRuns {
    /// Judged captures: (pair, query, capture).
    pub captures: Vec<(u32, QueryIdx, Capture)>,
    /// The judged documents the captures found, back to back.
    pub found: Vec<Found>,
    /// (pair, query) keys whose capture was rejected.
    pub rejected_keys: Vec<(u32, QueryIdx)>,
    /// One reject per line of a rejected ranking.
    pub rejects: Vec<Reject>,
}

/// Ranks one (pair, query) at a time in reused scratch space.
#[derive(Default)]
struct Ranker {
    /// The key's lines with their origins, in input order, then ranked.
    lines: Vec<(RunLine, Origin)>,
    /// Positions of the documents seen so far, by hash.
    seen: HashTable<u32>,
    dropped: Vec<bool>,
}

impl Ranker {
    fn gather(&mut self, spans: &[(&BlockLines, &Span)]) {
        self.lines.clear();
        for (block, span) in spans {
            let lines = &block.lines[span.start as usize..(span.start + span.len) as usize];
            let origins = (0..span.len).map(|offset| span.origin_of(offset));
            self.lines.extend(lines.iter().copied().zip(origins));
        }
    }

    fn rank(
        &mut self,
        labels: &LabelIndex,
        (pair, query): (u32, QueryIdx),
        duplicates: DuplicateDocs,
        out: &mut RankedRuns,
    ) {
        // Gathered in input order, so the first line is the earliest.
        let origin = self.lines[0].1;
        // Stable: lines that tie keep input order.
        self.lines.sort_by(|(a, _), (b, _)| a.ranks_before(b));
        if let Err(detail) = self.mark_duplicates(labels, query, duplicates) {
            self.reject_all((pair, query), RejectReason::DuplicateDoc, &detail, out);
            return;
        }
        let start = out.found.len() as u32;
        let mut rank = 0;
        for ((line, _), _) in self.lines.iter().zip(&self.dropped).filter(|(_, &d)| !d) {
            rank += 1;
            if line.place.judged() {
                let doc = labels.judged_at(query, line.place);
                out.found.push(Found { rank, doc });
            }
        }
        let capture = Capture {
            origin,
            n_results: rank,
            records: self.lines.len() as u32,
            latency_ms: None,
            context_tokens: None,
            unauthorized: 0,
            found: start..out.found.len() as u32,
        };
        out.captures.push((pair, query, capture));
    }

    /// Mark every later copy of a document as dropped, or fail with the
    /// reject's detail under `DuplicateDocs::Reject`.
    fn mark_duplicates(
        &mut self,
        labels: &LabelIndex,
        query: QueryIdx,
        duplicates: DuplicateDocs,
    ) -> Result<(), String> {
        self.dropped.clear();
        self.dropped.resize(self.lines.len(), false);
        self.seen.clear();
        let lines = &self.lines;
        let hash = |i: u32| lines[i as usize].0.id_hash;
        for (later, (line, origin)) in lines.iter().enumerate() {
            let same = |&earlier: &u32| lines[earlier as usize].0.same_doc(line);
            let Some(&earlier) = self.seen.find(line.id_hash, same) else {
                self.seen
                    .insert_unique(line.id_hash, later as u32, |&i| hash(i));
                continue;
            };
            if duplicates == DuplicateDocs::Dedupe {
                self.dropped[later] = true;
                continue;
            }
            let doc = if line.place.judged() {
                format!(
                    "doc '{}'",
                    labels.doc_id(labels.judged_at(query, line.place))
                )
            } else {
                "a doc id".to_string()
            };
            let first = lines[earlier as usize].1;
            // Two runs written with the same tag (a tool's default) merge
            // into one ranking full of duplicates: say so.
            let hint = if lines.iter().any(|(_, o)| o.input != first.input) {
                "; its lines come from several files: do two runs share a tag?"
            } else {
                ""
            };
            return Err(format!(
                "{doc} appears at positions {} and {} (lines {} and {}; the whole ranking of \
                 this query and run is rejected{hint})",
                earlier + 1,
                later + 1,
                first.line,
                origin.line
            ));
        }
        Ok(())
    }

    /// Reject the key's capture, one reject per line: each line of a TREC
    /// ranking is a record.
    fn reject_all(
        &self,
        key: (u32, QueryIdx),
        reason: RejectReason,
        detail: &str,
        out: &mut RankedRuns,
    ) {
        out.rejected_keys.push(key);
        out.rejects
            .extend(self.lines.iter().map(|&(_, origin)| Reject {
                origin,
                reason,
                detail: detail.to_string(),
                excerpt: Vec::new(),
            }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rank one query's run, given as (doc id, score) lines, against
    /// labels judging `b` and `d`.
    fn rank(lines: &[(&str, f64)], duplicates: DuplicateDocs) -> (LabelIndex, RankedRuns) {
        let labels =
            LabelIndex::from_queries([("q", None, None, vec![("b", 1), ("d", 2)])], 1).unwrap();
        let mut block = BlockLines::default();
        for (i, &(doc, score)) in lines.iter().enumerate() {
            let origin = Origin {
                input: 0,
                line: i as u64 + 1,
            };
            block.push(0, 0, origin, RunLine::new(&labels, 0, doc, score));
        }
        let mut runs = TrecRuns::default();
        runs.add(block.take_exact(), |pair| pair);
        let mut ranked = runs.rank(&labels, duplicates, &|_, _| None);
        (labels, ranked.remove(0))
    }

    #[test]
    fn a_held_line_takes_24_bytes() {
        assert_eq!(std::mem::size_of::<RunLine>(), 24);
    }

    #[test]
    fn ties_are_broken_by_doc_id_descending_without_the_text() {
        let lines = [
            ("c", 1.0),
            ("b", 1.0),
            ("e", 1.0),
            ("d", 1.0),
            ("a", 1.0),
            ("c", 0.5),
            ("f", 2.0),
        ];
        // trec_eval's order: f, then e d c b a at 1.0; the lower c is dropped.
        let (labels, ranked) = rank(&lines, DuplicateDocs::Dedupe);
        let found: Vec<(u32, &str)> = ranked
            .found
            .iter()
            .map(|f| (f.rank, labels.doc_id(f.doc)))
            .collect();
        assert_eq!(found, [(3, "d"), (5, "b")]);
        let capture = &ranked.captures[0].2;
        assert_eq!((capture.n_results, capture.records), (6, 7));
        assert_eq!(capture.origin.line, 1);

        let (_, ranked) = rank(&lines, DuplicateDocs::Reject);
        assert!(ranked.captures.is_empty());
        assert_eq!(ranked.rejected_keys, [(0, 0)]);
        assert_eq!(ranked.rejects.len(), lines.len(), "every line is rejected");
        let detail = &ranked.rejects[0].detail;
        assert!(
            detail.contains("a doc id appears at positions 4 and 7 (lines 1 and 6;"),
            "{detail}"
        );
    }
}
