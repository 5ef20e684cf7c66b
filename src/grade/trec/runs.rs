//! TREC runs, between judging and grouping.
//!
//! The tools that write runs list each query's lines together, so a (run,
//! query) usually has all its lines in one block, one after another. The
//! worker that read the block ranks them there, and only what the ranking
//! found survives, as for a JSONL capture: memory then follows the number
//! of queries, not the size of the run.
//!
//! Yet a query's lines may be anywhere in a run, so such a ranking stands
//! only if no other block holds lines of its (run, query). Lines that may
//! go on in another block, at either edge of a block, are held until every
//! run is read, as what ranking needs of them (24 bytes a line), and then
//! ranked with the rest of their (run, query); so are lines broken up
//! within their block, and every line of a block not grouped by query. A
//! (run, query) ranked early that turns up in another block after all is
//! read a second time from its files, and ranked from its held lines.
//! Standard input cannot be read twice: when it is among the logs, every
//! labeled line is held.
//!
//! A line keeps a hash of its doc id, never the text. With
//! `--review-queue`, a ranking pools the lines of its unjudged documents
//! within the pool depth, and [`crate::grade::diagnostics::pool`] reads their ids again.

use std::borrow::Cow;
use std::ops::Range;

use rayon::prelude::*;

use crate::grade::capture::{Capture, Found, Reject};
use crate::grade::diagnostics::pool::PooledLine;
use crate::grade::trec::ranker::{RankRules, Ranked, Ranker, RunKey, RunLine, Stretch};
use crate::labels::{LabelIndex, QueryIdx};
use crate::logs::record::{Invalid, Origin, RejectReason};

/// How a worker treats the labeled lines of a TREC block.
#[derive(Debug, Clone, Copy)]
pub enum TrecLines<'a> {
    /// Rank the (run, query)s that a block holds whole; hold the rest.
    RankEarly,
    /// Hold every line: some input cannot be read a second time.
    HoldAll,
    /// Hold only the lines of the queries marked (by index): a second
    /// reading, for the (run, query)s whose lines were in several blocks.
    HoldOnly(&'a [bool]),
}

/// Why a (run, query), whose lines are in the inputs given, is rejected
/// whole before it is ranked, if it is.
pub type Refusal<'a> = dyn Fn(RunKey, &mut dyn Iterator<Item = u32>) -> Option<Invalid> + Sync + 'a;

/// A stretch whose lines are held, from `start` in its block's lines.
#[derive(Debug, Clone, Copy)]
struct HeldStretch {
    stretch: Stretch,
    start: u32,
}

impl HeldStretch {
    fn lines<'a>(&self, lines: &'a [RunLine]) -> &'a [RunLine] {
        &lines[self.start as usize..][..self.stretch.len as usize]
    }
}

/// A stretch ranked in the block that held all the lines of its (run, query).
#[derive(Debug, Clone)]
struct RankedStretch {
    stretch: Stretch,
    /// What the ranking found, or why it is rejected.
    ranking: Result<Ranking, Box<Invalid>>,
}

/// A ranked (run, query), and where its judged documents and its pooled
/// lines are in the block's lists.
#[derive(Debug, Clone)]
struct Ranking {
    ranked: Ranked,
    found: Range<u32>,
    pooled: Range<u32>,
}

/// The labeled TREC lines of one block: the (run, query)s it held whole,
/// ranked, and the lines of the others.
#[derive(Debug, Default)]
pub struct BlockRuns {
    lines: Vec<RunLine>,
    held: Vec<HeldStretch>,
    ranked: Vec<RankedStretch>,
    found: Vec<Found>,
    pooled: Vec<PooledLine>,
}

impl BlockRuns {
    /// Labeled lines, held or ranked, but those rejected when read.
    pub fn n_lines(&self) -> u64 {
        let held = (self.held.iter())
            .map(|h| h.lines(&self.lines).iter().filter(|l| !l.lost).count() as u64);
        let ranked = self.ranked.iter().map(|r| u64::from(r.stretch.len));
        held.chain(ranked).sum()
    }

    fn is_empty(&self) -> bool {
        self.held.is_empty() && self.ranked.is_empty()
    }

    fn found_of(&self, ranking: &Ranking) -> &[Found] {
        &self.found[ranking.found.start as usize..ranking.found.end as usize]
    }

    fn pooled_of(&self, ranking: &Ranking) -> &[PooledLine] {
        &self.pooled[ranking.pooled.start as usize..ranking.pooled.end as usize]
    }

    /// Everything at its exact size, leaving this one empty with its
    /// capacity: a worker fills one such scratch block after block, so the
    /// blocks kept until every run is read cost their size and no growth.
    fn take_exact(&mut self) -> Self {
        let exact = BlockRuns {
            lines: self.lines.clone(),
            held: self.held.clone(),
            ranked: self.ranked.clone(),
            found: self.found.clone(),
            pooled: self.pooled.clone(),
        };
        self.lines.clear();
        self.held.clear();
        self.ranked.clear();
        self.found.clear();
        self.pooled.clear();
        exact
    }
}

/// A worker's scratch space for the TREC lines of the block it reads.
#[derive(Debug, Default)]
pub struct BlockScratch {
    /// The block's labeled lines as read.
    lines: Vec<RunLine>,
    /// Where they are: runs of consecutive lines of one (run, query).
    stretches: Vec<HeldStretch>,
    /// The stretches' indices, sorted by (run, query).
    by_key: Vec<u32>,
    ranker: Ranker,
    /// What the block hands on.
    done: BlockRuns,
}

impl BlockScratch {
    /// Add the line at `origin` of (pair, query).
    pub fn push(&mut self, pair: u32, query: QueryIdx, origin: Origin, line: RunLine) {
        let start = self.lines.len() as u32;
        match self.stretches.last_mut() {
            Some(last)
                if last.stretch.key() == (pair, query) && last.stretch.next_origin() == origin =>
            {
                last.stretch.len += 1;
            }
            _ => self.stretches.push(HeldStretch {
                stretch: Stretch {
                    pair,
                    query,
                    origin,
                    len: 1,
                },
                start,
            }),
        }
        self.lines.push(line);
    }

    /// Finish the block. With `rank_early`, a (run, query) with one stretch
    /// in the block, away from both edges and whole (no line of it
    /// rejected when read), is ranked here; the other stretches are held, each
    /// (run, query)'s lines together. A block whose stretches
    /// average under two lines is not grouped by query (a run sorted by
    /// score, say): its (run, query)s would almost all turn up in other
    /// blocks and be read again, so all its lines are held.
    pub fn finish(
        &mut self,
        labels: &LabelIndex,
        rules: RankRules<'_>,
        rank_early: bool,
    ) -> BlockRuns {
        let stretches = &self.stretches;
        if !rank_early || self.lines.len() < 2 * stretches.len() {
            // Everything held, as read.
            std::mem::swap(&mut self.done.lines, &mut self.lines);
            std::mem::swap(&mut self.done.held, &mut self.stretches);
            return self.done.take_exact();
        }
        let edges = [stretches.first(), stretches.last()].map(|s| s.map(|s| s.stretch.key()));
        self.by_key.clear();
        self.by_key.extend(0..stretches.len() as u32);
        self.by_key
            .sort_by_key(|&i| stretches[i as usize].stretch.key());
        let key_of = |i: &u32| stretches[*i as usize].stretch.key();
        for group in self.by_key.chunk_by(|a, b| key_of(a) == key_of(b)) {
            let only = stretches[group[0] as usize];
            let whole = || !only.lines(&self.lines).iter().any(|l| l.lost);
            if group.len() == 1 && !edges.contains(&Some(only.stretch.key())) && whole() {
                let ranker = &mut self.ranker;
                ranker.gather([(only.stretch, only.lines(&self.lines))]);
                let BlockRuns { found, pooled, .. } = &mut self.done;
                let ranking = ranker
                    .rank(labels, only.stretch.query, rules)
                    .map(|ranked| Ranking {
                        ranked,
                        found: append(found, ranker.found()),
                        pooled: append(pooled, ranker.pooled()),
                    });
                self.done.ranked.push(RankedStretch {
                    stretch: only.stretch,
                    ranking: ranking.map_err(Box::new),
                });
            } else {
                for &i in group {
                    let held = stretches[i as usize];
                    let start = self.done.lines.len() as u32;
                    self.done.lines.extend_from_slice(held.lines(&self.lines));
                    self.done.held.push(HeldStretch { start, ..held });
                }
            }
        }
        self.lines.clear();
        self.stretches.clear();
        self.done.take_exact()
    }
}

/// Append `items` to `list`; returns where they are in it.
fn append<T: Copy>(list: &mut Vec<T>, items: &[T]) -> Range<u32> {
    let start = list.len() as u32;
    list.extend_from_slice(items);
    start..list.len() as u32
}

/// (run, query)s ranked early whose lines turned out to be in other blocks
/// too: their lines must be read again.
#[derive(Debug, Default)]
pub struct SplitRuns {
    /// The (run, query)s, sorted.
    pub keys: Vec<RunKey>,
    /// The inputs that hold their lines, sorted.
    pub inputs: Vec<u32>,
}

/// The TREC lines of every block read, until they can be ranked.
#[derive(Debug, Default)]
pub struct TrecRuns {
    blocks: Vec<BlockRuns>,
}

/// Keys ranked per task on the worker pool.
const KEYS_AT_A_TIME: usize = 1 << 10;

/// A held or ranked stretch, with the block it is in.
#[derive(Clone, Copy)]
enum Entry<'a> {
    Held(&'a BlockRuns, &'a HeldStretch),
    Ranked(&'a BlockRuns, &'a RankedStretch),
}

impl Entry<'_> {
    fn stretch(&self) -> &Stretch {
        match self {
            Entry::Held(_, held) => &held.stretch,
            Entry::Ranked(_, ranked) => &ranked.stretch,
        }
    }

    /// The origins of the stretch's lines that were not rejected when read:
    /// only a held stretch can hold such lines.
    fn kept_origins(&self) -> impl Iterator<Item = Origin> + '_ {
        let lines = match self {
            Entry::Held(block, held) => Some(held.lines(&block.lines)),
            Entry::Ranked(..) => None,
        };
        let lost = move |i: usize| lines.is_some_and(|lines| lines[i].lost);
        (self.stretch().origins().enumerate())
            .filter(move |&(i, _)| !lost(i))
            .map(|(_, origin)| origin)
    }
}

impl TrecRuns {
    /// Keep a block's runs; `global` maps its pair indices to the run's.
    pub fn add(&mut self, mut block: BlockRuns, global: impl Fn(u32) -> u32) {
        let held = block.held.iter_mut().map(|h| &mut h.stretch);
        let ranked = block.ranked.iter_mut().map(|r| &mut r.stretch);
        for stretch in held.chain(ranked) {
            stretch.pair = global(stretch.pair);
        }
        if !block.is_empty() {
            self.blocks.push(block);
        }
    }

    /// Keep the held lines of `keys` (sorted) alone from a block read a
    /// second time; `global` maps its pair indices to the run's, if known.
    pub fn add_again(
        &mut self,
        mut block: BlockRuns,
        global: impl Fn(u32) -> Option<u32>,
        keys: &[RunKey],
    ) {
        block.ranked.clear();
        block.held.retain_mut(|held| {
            let Some(pair) = global(held.stretch.pair) else {
                return false;
            };
            held.stretch.pair = pair;
            keys.binary_search(&held.stretch.key()).is_ok()
        });
        self.add(block, |pair| pair);
    }

    /// Sort the stretches of every (run, query) together, and find those
    /// ranked early in one block whose lines are in others too.
    pub fn sort(&self) -> SortedRuns<'_> {
        let n = self.blocks.iter().map(|b| b.held.len() + b.ranked.len());
        let mut entries: Vec<Entry> = Vec::with_capacity(n.sum());
        for block in &self.blocks {
            entries.extend(block.held.iter().map(|h| Entry::Held(block, h)));
            entries.extend(block.ranked.iter().map(|r| Entry::Ranked(block, r)));
        }
        entries.par_sort_unstable_by_key(|e| (e.stretch().key(), e.stretch().origin));
        let mut split = SplitRuns::default();
        for entries in entries.chunk_by(same_key).filter(|e| is_split(e)) {
            split.keys.push(entries[0].stretch().key());
            split
                .inputs
                .extend(entries.iter().map(|e| e.stretch().origin.input));
        }
        split.inputs.sort_unstable();
        split.inputs.dedup();
        SortedRuns { entries, split }
    }
}

fn same_key(a: &Entry, b: &Entry) -> bool {
    a.stretch().key() == b.stretch().key()
}

/// Whether the stretches of one (run, query) hold one ranked early in its
/// block and others besides.
fn is_split(entries: &[Entry]) -> bool {
    entries.len() > 1 && entries.iter().any(|e| matches!(e, Entry::Ranked(..)))
}

/// The stretches of every (run, query), sorted by key and origin.
pub struct SortedRuns<'a> {
    entries: Vec<Entry<'a>>,
    split: SplitRuns,
}

/// Stretches ranked per batch: the grouper takes in one batch's captures
/// before the next is ranked, so they reuse the same memory.
const SPANS_AT_A_TIME: usize = 1 << 16;

impl<'a> SortedRuns<'a> {
    /// The stretches in batches of whole (run, query)s, to rank one by one.
    pub fn batches(&self) -> impl Iterator<Item = RunBatch<'_>> {
        let entries = &self.entries[..];
        let mut start = 0;
        std::iter::from_fn(move || {
            let rest = entries.get(start..).filter(|rest| !rest.is_empty())?;
            let mut len = rest.len().min(SPANS_AT_A_TIME);
            while len < rest.len() && same_key(&rest[len - 1], &rest[len]) {
                len += 1;
            }
            start += len;
            Some(RunBatch(&rest[..len]))
        })
    }

    /// The (run, query)s left unranked, to be read again.
    pub fn into_split(self) -> SplitRuns {
        self.split
    }
}

/// Stretches of whole (run, query)s, sorted by key and origin.
pub struct RunBatch<'a>(&'a [Entry<'a>]);

impl RunBatch<'_> {
    /// Rank every (pair, query) of the batch on the current rayon pool, in
    /// key order, but those left to read again. `refused` says why a key,
    /// given the inputs its lines are in, is rejected whole before it is
    /// ranked (its capture repeats another; a line of its query whose run
    /// is unknown was lost in one of those inputs); a ranking with a
    /// repeated document is rejected whole under `DuplicateDocs::Reject`.
    pub fn rank(
        &self,
        labels: &LabelIndex,
        rules: RankRules<'_>,
        refused: &Refusal<'_>,
    ) -> Vec<RankedRuns> {
        let keys: Vec<&[Entry]> = self.0.chunk_by(same_key).filter(|e| !is_split(e)).collect();
        keys.par_chunks(KEYS_AT_A_TIME)
            .map_init(Ranker::default, |ranker, keys| {
                let mut out = RankedRuns::default();
                for entries in keys {
                    take(ranker, labels, entries, rules, refused, &mut out);
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
    /// The lines of the unjudged documents the captures pooled, back to back.
    pub pooled: Vec<PooledLine>,
    /// (pair, query) keys whose capture was rejected.
    pub rejected_keys: Vec<RunKey>,
    /// One reject per line of a rejected ranking.
    pub rejects: Vec<Reject>,
    /// Pairs whose ranking dropped a copy of a document found in another
    /// input, with the two inputs.
    pub fused: Vec<(u32, u32, u32)>,
}

impl RankedRuns {
    /// The capture of `key`, built from `records` lines of which the
    /// earliest is at `origin`, whose judged documents are `found` and
    /// whose pooled lines are `pooled`.
    fn capture(
        &mut self,
        (pair, query): RunKey,
        origin: Origin,
        records: u32,
        ranked: Ranked,
        (found, pooled): (&[Found], &[PooledLine]),
    ) {
        let capture = Capture {
            origin,
            n_results: ranked.n_results,
            records,
            latency_ms: None,
            context_tokens: None,
            unauthorized: 0,
            answer_ok: None,
            // A run line carries no capture time.
            time: None,
            slices: Box::default(),
            pooled: append(&mut self.pooled, pooled),
            found: append(&mut self.found, found),
            returned_judged: ranked.returned_judged,
        };
        self.captures.push((pair, query, capture));
    }

    /// Reject the capture of `key`, one reject per line: each line of a
    /// TREC ranking is a record.
    fn reject(
        &mut self,
        key: RunKey,
        origins: impl Iterator<Item = Origin>,
        reason: RejectReason,
        detail: &str,
    ) {
        self.rejected_keys.push(key);
        self.rejects.extend(origins.map(|origin| Reject {
            origin,
            reason,
            detail: detail.to_string(),
            excerpt: Vec::new(),
        }));
    }
}

/// Turn the stretches of one key, sorted by origin, into its capture or
/// its rejects in `out`.
fn take(
    ranker: &mut Ranker,
    labels: &LabelIndex,
    entries: &[Entry],
    rules: RankRules<'_>,
    refused: &Refusal<'_>,
    out: &mut RankedRuns,
) {
    let first = entries[0].stretch();
    let key = first.key();
    let records = entries.iter().map(|e| e.stretch().len).sum();
    // Lines rejected when read are in the rejects already.
    let origins = || entries.iter().flat_map(Entry::kept_origins);
    let mut inputs = entries.iter().map(|e| e.stretch().origin.input);
    if let Some(invalid) = refused(key, &mut inputs) {
        out.reject(key, origins(), invalid.reason, &invalid.detail);
        return;
    }
    type Documents<'d> = (&'d [Found], &'d [PooledLine]);
    let ranking: Result<(Ranked, Documents), Cow<Invalid>> = match entries {
        [Entry::Ranked(block, ranked)] => match &ranked.ranking {
            Ok(r) => Ok((r.ranked, (block.found_of(r), block.pooled_of(r)))),
            Err(invalid) => Err(Cow::Borrowed(invalid)),
        },
        _ => {
            // Only held stretches: a key ranked early has no other.
            ranker.gather(entries.iter().filter_map(|e| match e {
                Entry::Held(block, held) => Some((held.stretch, held.lines(&block.lines))),
                Entry::Ranked(..) => None,
            }));
            let ranked = ranker.rank(labels, key.1, rules);
            if let Some((first, copy)) = ranker.fused() {
                out.fused.push((key.0, first, copy));
            }
            ranked
                .map(|ranked| (ranked, (ranker.found(), ranker.pooled())))
                .map_err(Cow::Owned)
        }
    };
    match ranking {
        Ok((ranked, documents)) => out.capture(key, first.origin, records, ranked, documents),
        Err(invalid) => out.reject(key, origins(), invalid.reason, &invalid.detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::options::DuplicateDocs;
    use crate::logs::record::RankKey;

    /// Rules for the one input of these tests, `run.trec`, pooling nothing.
    fn rules(duplicates: DuplicateDocs) -> RankRules<'static> {
        static NAMES: std::sync::LazyLock<[String; 1]> =
            std::sync::LazyLock::new(|| ["run.trec".to_string()]);
        RankRules {
            duplicates,
            input_names: &NAMES[..],
            pool_depth: None,
        }
    }

    /// Labels of queries `q0`, `q1` and `q2`, each judging `b` and `d`.
    fn labels() -> LabelIndex {
        let judged = || vec![("b", 1), ("d", 2)];
        let queries = ["q0", "q1", "q2"].map(|q| (q, None, None, judged()));
        LabelIndex::from_queries(queries, 1).unwrap()
    }

    /// One block of run lines (query, doc id, score) from `first_line`.
    fn block(
        labels: &LabelIndex,
        first_line: u64,
        lines: &[(QueryIdx, &str, f64)],
        rank_early: bool,
    ) -> BlockRuns {
        block_ranked_by(
            labels,
            first_line,
            lines,
            rank_early,
            rules(DuplicateDocs::Reject),
        )
    }

    fn block_ranked_by(
        labels: &LabelIndex,
        first_line: u64,
        lines: &[(QueryIdx, &str, f64)],
        rank_early: bool,
        rules: RankRules<'_>,
    ) -> BlockRuns {
        let mut scratch = BlockScratch::default();
        for (offset, &(query, doc, score)) in (0..).zip(lines) {
            let origin = Origin::line(0, first_line + offset);
            let key = RankKey::score(score);
            scratch.push(0, query, origin, RunLine::new(labels, query, doc, key));
        }
        scratch.finish(labels, rules, rank_early)
    }

    fn rank_blocks(labels: &LabelIndex, blocks: Vec<BlockRuns>) -> (RankedRuns, SplitRuns) {
        rank_blocks_by(labels, blocks, rules(DuplicateDocs::Reject))
    }

    fn rank_blocks_by(
        labels: &LabelIndex,
        blocks: Vec<BlockRuns>,
        rules: RankRules<'_>,
    ) -> (RankedRuns, SplitRuns) {
        let mut runs = TrecRuns::default();
        for block in blocks {
            runs.add(block, |pair| pair);
        }
        let sorted = runs.sort();
        let ranked = sorted
            .batches()
            .flat_map(|batch| batch.rank(labels, rules, &|_, _| None));
        let mut all = RankedRuns::default();
        for chunk in ranked {
            for &(pair, query, ref c) in &chunk.captures {
                let found = &chunk.found[c.found.start as usize..c.found.end as usize];
                let ranked = Ranked {
                    n_results: c.n_results,
                    returned_judged: c.returned_judged,
                };
                let pooled = &chunk.pooled[c.pooled.start as usize..c.pooled.end as usize];
                all.capture((pair, query), c.origin, c.records, ranked, (found, pooled));
            }
            all.rejected_keys.extend(chunk.rejected_keys);
            all.rejects.extend(chunk.rejects);
        }
        (all, sorted.into_split())
    }

    /// Each capture as (query, origin line, records, results, found ranks).
    fn captures(ranked: &RankedRuns) -> Vec<(QueryIdx, u64, u32, u32, Vec<u32>)> {
        let mut captures: Vec<_> = ranked
            .captures
            .iter()
            .map(|(_, query, c)| {
                let found = &ranked.found[c.found.start as usize..c.found.end as usize];
                let ranks = found.iter().map(|f| f.rank).collect();
                (*query, c.origin.line, c.records, c.n_results, ranks)
            })
            .collect();
        captures.sort_by_key(|c| c.0);
        captures
    }

    #[test]
    fn a_held_line_takes_24_bytes() {
        assert_eq!(std::mem::size_of::<RunLine>(), 24);
    }

    #[test]
    fn ties_are_broken_by_doc_id_descending_without_the_text() {
        let labels = labels();
        let lines = [
            ("c", 1.0),
            ("b", 1.0),
            ("e", 1.0),
            ("d", 1.0),
            ("a", 1.0),
            ("c", 0.5),
            ("f", 2.0),
        ]
        .map(|(doc, score)| (0, doc, score));
        let mut runs = TrecRuns::default();
        runs.add(block(&labels, 1, &lines, false), |pair| pair);
        let sorted = runs.sort();
        let batch = sorted.batches().next().unwrap();
        let ranked = batch
            .rank(&labels, rules(DuplicateDocs::Dedupe), &|_, _| None)
            .remove(0);
        // trec_eval's order: f, then e d c b a at 1.0; the lower c is dropped.
        let found: Vec<(u32, &str)> = ranked
            .found
            .iter()
            .map(|f| (f.rank, labels.doc_id(f.doc)))
            .collect();
        assert_eq!(found, [(3, "d"), (5, "b")]);
        let capture = &ranked.captures[0].2;
        assert_eq!((capture.n_results, capture.records), (6, 7));
        assert_eq!(capture.origin.line, 1);

        let (ranked, _) = rank_blocks(&labels, vec![block(&labels, 1, &lines, false)]);
        assert!(ranked.captures.is_empty());
        assert_eq!(ranked.rejected_keys, [(0, 0)]);
        assert_eq!(ranked.rejects.len(), lines.len(), "every line is rejected");
        let detail = &ranked.rejects[0].detail;
        assert!(
            detail.contains("a doc id appears at positions 4 and 7 (run.trec:1 and run.trec:6;"),
            "{detail}"
        );
    }

    #[test]
    fn a_query_whole_in_its_block_is_ranked_there_and_the_rest_held() {
        let labels = labels();
        let lines = [
            (0, "a", 1.0),
            (0, "b", 2.0),
            (1, "d", 1.0),
            (1, "x", 3.0),
            (1, "b", 2.0),
            (2, "d", 5.0),
        ];
        let early = block(&labels, 1, &lines, true);
        // q0 and q2 are at the block's edges: their lines may go on.
        assert_eq!(early.ranked.len(), 1);
        assert_eq!(early.ranked[0].stretch.query, 1);
        assert_eq!((early.lines.len(), early.n_lines()), (3, 6));
        let next = block(&labels, 7, &[(2, "b", 6.0), (0, "z", 0.0)], true);

        let (held_all, split) = rank_blocks(
            &labels,
            vec![
                block(&labels, 1, &lines, false),
                block(&labels, 7, &[(2, "b", 6.0), (0, "z", 0.0)], false),
            ],
        );
        assert!(split.keys.is_empty());
        let (ranked, split) = rank_blocks(&labels, vec![early, next]);
        assert!(split.keys.is_empty());
        let expected = vec![
            (0, 1, 3, 3, vec![1]),
            (1, 3, 3, 3, vec![2, 3]),
            (2, 6, 2, 2, vec![1, 2]),
        ];
        assert_eq!(captures(&ranked), expected);
        assert_eq!(captures(&held_all), expected);
    }

    #[test]
    fn a_query_ranked_early_and_found_elsewhere_is_left_to_read_again() {
        let labels = labels();
        let lines = [
            (0, "a", 1.0),
            (0, "c", 1.0),
            (1, "d", 1.0),
            (1, "e", 1.0),
            (2, "b", 1.0),
            (2, "f", 1.0),
        ];
        let later = [
            (0, "g", 1.0),
            (0, "h", 1.0),
            (1, "b", 2.0),
            (1, "i", 2.0),
            (0, "j", 1.0),
        ];
        let (ranked, split) = rank_blocks(
            &labels,
            vec![
                block(&labels, 1, &lines, true),
                block(&labels, 10, &later, true),
            ],
        );
        // q1 was ranked early in the first block, and the second has more of it.
        assert_eq!(split.keys, [(0, 1)]);
        assert_eq!(split.inputs, [0]);
        let queries: Vec<QueryIdx> = captures(&ranked).iter().map(|c| c.0).collect();
        assert_eq!(
            queries,
            [0, 2],
            "q0 from held stretches of two blocks, q2 ranked"
        );
    }

    #[test]
    fn unjudged_lines_within_the_pool_depth_are_pooled_by_their_lines() {
        let labels = labels();
        let rules = RankRules {
            pool_depth: Some(4),
            ..rules(DuplicateDocs::Reject)
        };
        // q1 ranks x b y d z: x and y are unjudged within depth 4, z is not.
        let lines = [
            (0, "a", 1.0),
            (1, "d", 1.0),
            (1, "x", 3.0),
            (1, "z", 0.5),
            (1, "b", 2.0),
            (1, "y", 1.5),
            (2, "b", 1.0),
        ];
        let pooled_lines = |ranked: &RankedRuns, query: QueryIdx| -> Vec<(u32, u64)> {
            let (_, _, capture) = ranked.captures.iter().find(|c| c.1 == query).unwrap();
            let range = capture.pooled.start as usize..capture.pooled.end as usize;
            ranked.pooled[range]
                .iter()
                .map(|(rank, o)| (*rank, o.line))
                .collect()
        };
        let early = block_ranked_by(&labels, 1, &lines, true, rules);
        assert_eq!(early.ranked.len(), 1, "q1 is ranked in its block");
        let held = block_ranked_by(&labels, 1, &lines, false, rules);
        for block in [early, held] {
            let (ranked, _) = rank_blocks_by(&labels, vec![block], rules);
            assert_eq!(pooled_lines(&ranked, 1), [(1, 3), (3, 6)]);
            assert_eq!(pooled_lines(&ranked, 0), [(1, 1)]);
            assert_eq!(pooled_lines(&ranked, 2), []);
        }
        let (unpooled, _) = rank_blocks(&labels, vec![block(&labels, 1, &lines, true)]);
        assert!(unpooled.pooled.is_empty(), "no pool depth, nothing pooled");
    }

    #[test]
    fn a_block_not_grouped_by_query_is_held_whole() {
        let labels = labels();
        let lines = [(0, "a", 1.0), (1, "d", 1.0), (2, "b", 1.0), (0, "c", 1.0)];
        let block = block(&labels, 1, &lines, true);
        assert!(block.ranked.is_empty(), "stretches of one line: all held");
        assert_eq!(block.lines.len(), lines.len());
    }
}
