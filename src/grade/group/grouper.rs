//! The grouping pass: captures taken in from the workers' block outcomes
//! (and TREC rankings, ranked once every run is read) per (run, stage,
//! query) under the repeat policy.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use hashbrown::{HashMap, HashSet};

use super::grouped::{repeat_detail, Grouped, PairSlots};
use super::store::{CaptureStore, Slot};
use crate::base::options::RepeatPolicy;
use crate::grade::capture::{Capture, EmptySpan, Found, Reject, RunStage};
use crate::grade::diagnostics::pool::PoolSource;
use crate::grade::judge::BlockOutcome;
use crate::grade::trec::ranker::{RankRules, RunKey};
use crate::grade::trec::runs::{SplitRuns, TrecRuns};
use crate::io::inputs::{Input, InputStats};
use crate::labels::{LabelIndex, QueryIdx};
use crate::logs::record::{Invalid, RejectReason};

/// Gathers captures from the workers' block outcomes.
#[derive(Debug)]
pub struct Grouper {
    policy: RepeatPolicy,
    n_queries: usize,
    pairs: Vec<RunStage>,
    pair_ids: HashMap<RunStage, u32>,
    slots: Vec<Vec<Slot>>,
    store: CaptureStore,
    trec: TrecRuns,
    superseded_records: u64,
    seen_docs: Vec<bool>,
    /// For each pair whose TREC ranking dropped copies found in another
    /// input under `--duplicate-docs dedupe`, those inputs.
    fused: BTreeMap<u32, BTreeSet<u32>>,
    returned_judged: Vec<bool>,
    /// Capture spans that returned no document, held until every span is
    /// read ([`Grouper::take_empty_spans`]).
    empty_spans: Vec<EmptySpan>,
    /// Where each capture span of a labeled query sits in its trace:
    /// (pair, query, own place).
    span_ids: HashSet<(u32, QueryIdx, u64)>,
    /// (input, query) of rejected run lines whose run is unknown: every
    /// ranking of the query in that input may have lost them.
    unplaced: HashSet<(u32, QueryIdx)>,
}

impl Grouper {
    /// An empty grouper for the queries of `labels`.
    pub fn new(policy: RepeatPolicy, labels: &LabelIndex) -> Self {
        Grouper {
            policy,
            n_queries: labels.queries().len(),
            pairs: Vec::new(),
            pair_ids: HashMap::new(),
            slots: Vec::new(),
            store: CaptureStore::default(),
            trec: TrecRuns::default(),
            superseded_records: 0,
            seen_docs: vec![false; labels.n_judged_docs()],
            fused: BTreeMap::new(),
            returned_judged: vec![false; labels.queries().len()],
            empty_spans: Vec::new(),
            span_ids: HashSet::new(),
            unplaced: HashSet::new(),
        }
    }

    /// Take in one block's captures.
    pub fn merge(&mut self, outcome: &mut BlockOutcome) {
        let global: Vec<u32> = outcome
            .pairs
            .iter()
            .map(|pair| self.pair_id(pair))
            .collect();
        let to_global = |pair: u32| global[pair as usize];
        self.take_judged(
            to_global,
            &mut outcome.captures,
            (&outcome.found, PoolSource::Ids(&outcome.pooled)),
            &mut outcome.rejected_keys,
        );
        for &doc in &outcome.withheld {
            self.seen_docs[doc as usize] = true;
        }
        let span_ids = outcome.span_ids.drain(..);
        (self.span_ids).extend(span_ids.map(|(pair, query, own)| (to_global(pair), query, own)));
        self.unplaced.extend(outcome.unplaced.drain(..));
        let empty_spans = outcome.empty_spans.drain(..);
        (self.empty_spans).extend(empty_spans.map(|empty| EmptySpan {
            pair: to_global(empty.pair),
            ..empty
        }));
        self.trec.add(std::mem::take(&mut outcome.trec), to_global);
    }

    /// Decide the empty capture spans held, now that every span is read:
    /// one whose parent is another capture span of its (run, stage,
    /// query) is that capture's inner call, and set aside (graded, it would
    /// be a second, empty capture of the query); any other is taken in as
    /// an empty ranking. Returns each one's input and whether it was set
    /// aside, in input order.
    pub fn take_empty_spans(&mut self) -> Vec<(u32, bool)> {
        let mut empty_spans = std::mem::take(&mut self.empty_spans);
        empty_spans.sort_by_key(|empty| empty.capture.origin);
        let span_ids = std::mem::take(&mut self.span_ids);
        let nested = nested_spans(&empty_spans, &span_ids);
        let decided = empty_spans.into_iter().zip(nested).map(|(empty, nested)| {
            let input = empty.capture.origin.input;
            if !nested {
                let (pair, query) = (empty.pair, empty.query);
                self.add(pair, query, empty.capture, &[], PoolSource::Lines(&[]));
            }
            (input, nested)
        });
        decided.collect()
    }

    /// Take in judged captures, whose documents are in `found` and
    /// `pooled`, and keys whose capture was rejected; `global` maps their
    /// pairs to ours.
    fn take_judged(
        &mut self,
        global: impl Fn(u32) -> u32,
        captures: &mut Vec<(u32, QueryIdx, Capture)>,
        (found, pooled): (&[Found], PoolSource<'_>),
        rejected_keys: &mut Vec<(u32, QueryIdx)>,
    ) {
        for (pair, query, capture) in captures.drain(..) {
            let found = &found[capture.found.start as usize..capture.found.end as usize];
            self.add(global(pair), query, capture, found, pooled);
        }
        for (pair, query) in rejected_keys.drain(..) {
            self.slot(global(pair), query).rejected += 1;
        }
    }

    fn pair_id(&mut self, pair: &RunStage) -> u32 {
        if let Some(&id) = self.pair_ids.get(pair) {
            return id;
        }
        let id = self.pairs.len() as u32;
        self.pairs.push(pair.clone());
        self.pair_ids.insert(pair.clone(), id);
        self.slots.push(vec![Slot::default(); self.n_queries]);
        // Room for a capture of every query as each (run, stage) appears:
        // growing by doubling instead would copy the store, and fault its
        // pages in, many times over. Only address space is taken until
        // captures arrive.
        self.store.reserve(self.n_queries, self.seen_docs.len());
        id
    }

    fn slot(&mut self, pair: u32, query: QueryIdx) -> &mut Slot {
        &mut self.slots[pair as usize][query as usize]
    }

    fn add(
        &mut self,
        pair: u32,
        query: QueryIdx,
        capture: Capture,
        found: &[Found],
        pooled: PoolSource<'_>,
    ) {
        for f in found {
            self.seen_docs[f.doc as usize] = true;
        }
        self.returned_judged[query as usize] |= capture.returned_judged;
        let slot = &mut self.slots[pair as usize][query as usize];
        let kept = self.store.list(slot.head).next();
        let replace = match (self.policy, kept) {
            (RepeatPolicy::First, Some(kept)) => Some(capture.order() < kept.order()),
            (RepeatPolicy::Last, Some(kept)) => Some(capture.order() > kept.order()),
            _ => None,
        };
        match replace {
            None => {
                slot.head = self.store.push(capture, found, pooled, slot.head);
                slot.kept += 1;
            }
            Some(replace) => {
                let set_aside = if replace {
                    self.store.replace(slot.head, capture, found, pooled)
                } else {
                    capture
                };
                slot.superseded += 1;
                self.superseded_records += u64::from(set_aside.records);
            }
        }
    }

    /// Take in the TREC lines of `split`'s keys alone from a block read a
    /// second time.
    pub fn merge_again(&mut self, outcome: BlockOutcome, split: &SplitRuns) {
        let global: Vec<Option<u32>> = outcome
            .pairs
            .iter()
            .map(|pair| self.pair_ids.get(pair).copied())
            .collect();
        self.trec
            .add_again(outcome.trec, |pair| global[pair as usize], &split.keys);
    }

    /// Rank the TREC runs read so far (score descending, ties by doc id
    /// descending, as trec_eval does) on the current rayon pool, and take
    /// each in as a capture. A ranking rejected for a duplicate doc, or as
    /// a repeat, gives one reject per line, added to `rejects`. Returned
    /// are the (run, query)s ranked early in one block whose lines turned
    /// out to be in others too: they need a second reading
    /// ([`Grouper::merge_again`]) and another call.
    pub fn rank_trec_runs(
        &mut self,
        labels: &LabelIndex,
        rules: RankRules<'_>,
        rejects: &mut Vec<Reject>,
    ) -> SplitRuns {
        let runs = std::mem::take(&mut self.trec);
        let sorted = runs.sort();
        for batch in sorted.batches() {
            let refused = |key, inputs: &mut dyn Iterator<Item = u32>| {
                self.refusal(labels, rules, key, inputs)
            };
            for mut chunk in batch.rank(labels, rules, &refused) {
                self.take_judged(
                    |pair| pair,
                    &mut chunk.captures,
                    (&chunk.found, PoolSource::Lines(&chunk.pooled)),
                    &mut chunk.rejected_keys,
                );
                rejects.append(&mut chunk.rejects);
                for (pair, first, copy) in chunk.fused {
                    self.fused.entry(pair).or_default().extend([first, copy]);
                }
            }
        }
        sorted.into_split()
    }

    /// Read the ids of the documents that rankings of run lines pooled
    /// for review from `inputs` (`first`: their first readings); returns
    /// how many stay unread, their inputs unable to give them again.
    ///
    /// # Errors
    /// An input cannot be read again, or changed since it was graded.
    pub fn read_pooled_run_ids(&mut self, inputs: &[Input], first: &[InputStats]) -> Result<u64> {
        self.store.read_pooled_run_ids(inputs, first)
    }

    /// The runs whose TREC rankings dropped copies of documents found in
    /// another input, each with those inputs: runs of several files that
    /// share a tag, fused into one by `--duplicate-docs dedupe`.
    pub fn fused_runs(&self) -> Vec<(&str, Vec<u32>)> {
        self.fused
            .iter()
            .map(|(&pair, inputs)| {
                let (run, _) = &self.pairs[pair as usize];
                (&run[..], inputs.iter().copied().collect())
            })
            .collect()
    }

    /// Why the TREC ranking of `key`, whose lines are in `inputs`, is
    /// rejected whole before it is ranked, if it is: it repeats a JSONL
    /// capture under `--repeats error`, or one of those inputs lost a line
    /// of its query whose run is unknown (a line cut short), which any
    /// ranking of the query there may have lost.
    fn refusal(
        &self,
        labels: &LabelIndex,
        rules: RankRules<'_>,
        (pair, query): RunKey,
        mut inputs: &mut dyn Iterator<Item = u32>,
    ) -> Option<Invalid> {
        if let Some(detail) = self.repeat_of(labels, pair, query) {
            return Some(Invalid::new(RejectReason::RepeatedCapture, detail));
        }
        let input = (&mut inputs).find(|&input| self.unplaced.contains(&(input, query)))?;
        let name = rules
            .input_names
            .get(input as usize)
            .map_or("?", String::as_str);
        let detail = format!(
            "a line of query '{}' in {name} that names no run was rejected; any ranking of \
             the query there may have lost it, so each is rejected whole",
            labels.query_id(query)
        );
        Some(Invalid::new(RejectReason::IncompleteRanking, detail))
    }

    /// The reject detail of a TREC ranking of (pair, query) that repeats a
    /// JSONL capture, under `--repeats error`. The other captures are
    /// rejected when the slot is graded.
    fn repeat_of(&self, labels: &LabelIndex, pair: u32, query: QueryIdx) -> Option<String> {
        let total = self.slots[pair as usize][query as usize].total();
        (self.policy == RepeatPolicy::Error && total > 0).then(|| {
            let (run, stage) = &self.pairs[pair as usize];
            repeat_detail(run, stage, labels.query_id(query), total + 1)
        })
    }

    /// Hand over the captures of every (run, stage), sorted by run then
    /// stage, and under `--repeats error` a reject for each kept capture
    /// of every key captured more than once.
    pub fn finish(self, labels: &LabelIndex) -> (Grouped, Vec<Reject>) {
        let mut pairs: Vec<PairSlots> = self
            .pairs
            .into_iter()
            .zip(self.slots)
            .map(|((run, stage), slots)| PairSlots { run, stage, slots })
            .collect();
        pairs.sort_by(|a, b| (&a.run, &a.stage).cmp(&(&b.run, &b.stage)));
        let rejects = (pairs.iter())
            .flat_map(|pair| pair.repeat_rejects(&self.store, labels, self.policy))
            .collect();
        let grouped = Grouped {
            pairs,
            store: self.store,
            superseded_records: self.superseded_records,
            seen_docs: self.seen_docs,
            returned_judged: self.returned_judged,
        };
        (grouped, rejects)
    }
}

/// Which of `empty` (capture spans that returned nothing) sit inside
/// another capture span of their key: their parent is in `captured` (the
/// places of every capture span of a labeled query, rejected ones
/// included) and is not themselves; or their parent is another empty one
/// whose own parents lead, without a loop, to a span that is no capture
/// or to a capture's place. A span its own parent, or empty spans that are
/// each other's parents, name no real parent, and are captures of their own.
fn nested_spans(empty: &[EmptySpan], captured: &HashSet<(u32, QueryIdx, u64)>) -> Vec<bool> {
    let by_place: HashMap<(u32, QueryIdx, u64), usize> = (empty.iter().enumerate())
        .filter_map(|(i, e)| Some(((e.pair, e.query, e.own?), i)))
        .collect();
    // The empty span that is each one's parent, if any.
    let parent_of = |i: usize| {
        let e = &empty[i];
        let parent = e.parent.filter(|&parent| Some(parent) != e.own)?;
        Some(
            by_place
                .get(&(e.pair, e.query, parent))
                .copied()
                .ok_or(parent),
        )
    };
    // Whether i's line of empty parents ends (in no span, or in a capture
    // that is not empty), rather than going round.
    let ends = |i: usize| {
        let mut at = i;
        for _ in 0..empty.len() {
            match parent_of(at) {
                Some(Ok(next)) => at = next,
                _ => return true,
            }
        }
        false
    };
    (0..empty.len())
        .map(|i| match parent_of(i) {
            None => false,
            Some(Err(parent)) => {
                let e = &empty[i];
                captured.contains(&(e.pair, e.query, parent))
            }
            Some(Ok(_)) => ends(i),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::metrics::Cutoff;
    use crate::base::options::MissingPolicy;
    use crate::grade::diagnostics::pool::Pooled;
    use crate::grade::score::GradeSettings;
    use crate::logs::record::Origin;

    /// Queries `a`, `b` and `c`, each judging `d1` (grade 1).
    fn labels() -> LabelIndex {
        let queries = ["a", "b", "c"].map(|q| (q, None, None, vec![("d1", 1)]));
        LabelIndex::from_queries(queries, 1).unwrap()
    }

    /// The grouping of one capture of each query in `queries`, read from
    /// input 0, finding its judged document at rank `rank`.
    fn grouped(labels: &LabelIndex, queries: &[QueryIdx], rank: u32) -> Grouped {
        let mut grouper = Grouper::new(RepeatPolicy::Error, labels);
        let pair = grouper.pair_id(&("bm25".into(), "final".into()));
        for &query in queries {
            let capture = Capture {
                origin: Origin::line(0, u64::from(query) + 1),
                n_results: 3,
                records: 1,
                latency_ms: None,
                context_tokens: None,
                unauthorized: 0,
                answer_ok: None,
                time: None,
                slices: Box::default(),
                pooled: 0..0,
                found: 0..1,
                returned_judged: true,
            };
            let doc = labels
                .find_doc(query, b"d1", crate::labels::id_hash(b"d1"))
                .unwrap();
            let found = [Found { rank, doc }];
            grouper.add(
                pair,
                query,
                capture,
                &found,
                PoolSource::Ids(&Pooled::default()),
            );
        }
        grouper.finish(labels).0
    }

    fn first_ranks(grouped: &Grouped, settings: &GradeSettings) -> Vec<Option<u32>> {
        let pair = &grouped.pairs[0];
        (0..3)
            .map(|q| {
                let mut found = pair.graded_found(q, &grouped.store, settings);
                found.next().map(|f| f[0].rank)
            })
            .collect()
    }

    #[test]
    fn groupings_of_apart_queries_absorb_into_one() {
        let labels = labels();
        let settings = GradeSettings {
            ks: vec![Cutoff::At(3)],
            measures: None,
            missing: MissingPolicy::Fail,
            repeats: RepeatPolicy::Error,
            slice_by: Vec::new(),
        };
        let mut merged = grouped(&labels, &[0], 1);
        let other = grouped(&labels, &[2], 3);
        assert!(merged.fits(&labels, 1) && other.fits(&labels, 1));
        merged.absorb(other, 1, RepeatPolicy::Error);
        assert_eq!(merged.captured_queries(), [0, 2]);
        assert_eq!(first_ranks(&merged, &settings), [Some(1), None, Some(3)]);
        assert!(merged.fits(&labels, 2), "the second capture reads input 1");
        assert!(!merged.fits(&labels, 1), "an input beyond those listed");
        let fewer = LabelIndex::from_queries([("a", None, None, vec![("d1", 1)])], 1).unwrap();
        assert!(!merged.fits(&fewer, 2), "labels of other queries");
    }
}
