//! The grouped result: the captures of every (run, stage), ready to grade
//! a range of queries at a time, and what grouping counted of them.

use serde::{Deserialize, Serialize};
use std::ops::Range;

use rayon::prelude::*;

use super::store::{CaptureStore, Slot, NO_CAPTURE};
use crate::base::failure::Setting;
use crate::base::options::RepeatPolicy;
use crate::grade::capture::{Capture, Found, Reject};
use crate::grade::score::{self, GradeSettings, QueryRow};
use crate::labels::{LabelIndex, QueryIdx};
use crate::logs::record::RejectReason;

/// The captures of one (run, stage), graded a range of queries at a time
/// so that only one range of rows is ever held.
#[derive(Debug, Serialize, Deserialize)]
pub struct PairSlots {
    /// The run.
    pub run: Box<str>,
    /// The stage.
    pub stage: Box<str>,
    /// One slot per labeled query, in query order.
    #[serde(with = "sparse")]
    pub(super) slots: Vec<Slot>,
}

/// The rows of a range of queries of one (run, stage).
#[derive(Debug)]
pub struct GradedRows {
    /// One row per labeled query of the range, in query order.
    pub rows: Vec<QueryRow>,
    /// Input records behind the graded captures.
    pub graded_records: u64,
}

impl PairSlots {
    /// How many labeled queries (and so rows) the pair has.
    pub fn n_queries(&self) -> usize {
        self.slots.len()
    }

    /// Whether `query` has any capture in this (run, stage), valid or
    /// rejected.
    pub fn touched(&self, query: QueryIdx) -> bool {
        self.slots[query as usize].total() > 0
    }

    /// Whether `query` has a valid capture in this (run, stage), graded or
    /// not (superseded, or rejected as a repeat).
    pub fn captured(&self, query: QueryIdx) -> bool {
        let slot = &self.slots[query as usize];
        slot.kept + slot.superseded > 0
    }

    /// The judged documents of each graded capture of `query` (none when
    /// the query is missing or invalid), in no particular order.
    pub fn graded_found<'a>(
        &self,
        query: QueryIdx,
        store: &'a CaptureStore,
        settings: &GradeSettings,
    ) -> impl Iterator<Item = &'a [Found]> + 'a {
        store
            .list(self.graded_head(query, settings))
            .map(|capture| store.found(capture))
    }

    /// The documents each graded capture of `query` pooled for judging
    /// (none when the query is missing or invalid), as (rank, id).
    pub fn graded_pooled<'a>(
        &self,
        query: QueryIdx,
        store: &'a CaptureStore,
        settings: &GradeSettings,
    ) -> impl Iterator<Item = (u32, &'a str)> + 'a {
        store
            .list(self.graded_head(query, settings))
            .flat_map(|capture| store.pooled(capture))
    }

    /// The first graded capture of `query`'s list, if any is graded.
    fn graded_head(&self, query: QueryIdx, settings: &GradeSettings) -> u32 {
        let slot = &self.slots[query as usize];
        if slot.grades_kept(settings.repeats) {
            slot.head
        } else {
            NO_CAPTURE
        }
    }

    /// Grade the queries in `range`, in parallel.
    pub fn grade(
        &self,
        range: Range<usize>,
        store: &CaptureStore,
        labels: &LabelIndex,
        settings: &GradeSettings,
    ) -> GradedRows {
        let outcomes: Vec<(QueryRow, u64)> = self.slots[range.clone()]
            .par_iter()
            .zip(range)
            .map(|(slot, query)| grade_slot(labels, store, query as QueryIdx, slot, settings))
            .collect();
        let mut graded = GradedRows {
            rows: Vec::with_capacity(outcomes.len()),
            graded_records: 0,
        };
        for (row, graded_records) in outcomes {
            graded.rows.push(row);
            graded.graded_records += graded_records;
        }
        graded
    }

    /// Under `--repeats error`, a reject for each kept capture of every
    /// query this (run, stage) captured more than once.
    pub(super) fn repeat_rejects(
        &self,
        store: &CaptureStore,
        labels: &LabelIndex,
        repeats: RepeatPolicy,
    ) -> Vec<Reject> {
        let slots = (0..).zip(&self.slots);
        let repeated = slots.filter(|(_, slot)| !slot.grades_kept(repeats));
        let mut rejects = Vec::new();
        for (query, slot) in repeated {
            let id = labels.query_id(query);
            let detail = repeat_detail(&self.run, &self.stage, id, slot.total());
            rejects.extend(store.list(slot.head).map(|capture| Reject {
                origin: capture.origin,
                reason: RejectReason::RepeatedCapture,
                detail: detail.clone(),
                excerpt: Vec::new(),
            }));
        }
        rejects
    }
}

/// Everything gathered, ready to grade.
#[derive(Debug, Serialize, Deserialize)]
pub struct Grouped {
    /// The captures of each (run, stage), sorted by run then stage.
    pub pairs: Vec<PairSlots>,
    /// The captures the pairs' slots point into.
    pub store: CaptureStore,
    /// Input records set aside under `--repeats first|last`.
    pub superseded_records: u64,
    /// For each judged document of the labels, whether a valid capture of
    /// its query returned it (superseded, repeated or withheld from the
    /// user as unauthorized, it was still returned).
    #[serde(with = "sparse")]
    pub seen_docs: Vec<bool>,
    /// For each labeled query, whether a valid capture of it returned any
    /// document its labels judge, of any grade (counted as `seen_docs`).
    #[serde(with = "sparse")]
    pub returned_judged: Vec<bool>,
}

impl Grouped {
    /// The queries any (run, stage) captured, valid or not, each once, in
    /// query order.
    pub fn captured_queries(&self) -> Vec<QueryIdx> {
        let mut captured = vec![false; self.returned_judged.len()];
        for pair in &self.pairs {
            for (seen, slot) in captured.iter_mut().zip(&pair.slots) {
                *seen |= slot.total() > 0;
            }
        }
        (0..)
            .zip(captured)
            .filter(|(_, c)| *c)
            .map(|(q, _)| q)
            .collect()
    }

    /// Whether these captures can be groups of `labels`' queries, read
    /// from a partial grading: every index in range, so that grading them
    /// cannot go out of bounds.
    pub fn fits(&self, labels: &LabelIndex, inputs: usize) -> bool {
        let (queries, docs) = (labels.queries().len(), labels.n_judged_docs());
        let store = &self.store;
        self.seen_docs.len() == docs
            && self.returned_judged.len() == queries
            && store.fits(inputs, docs)
            && (self.pairs.iter())
                .all(|p| p.slots.len() == queries && p.slots.iter().all(|s| store.links(s.head)))
    }

    /// The same grouping, its captures stored in the order of its slots
    /// ([`CaptureStore::in_slot_order`]): what a partial grading writes.
    pub fn in_slot_order(mut self) -> Self {
        let slots = self.pairs.iter_mut().flat_map(|pair| pair.slots.iter_mut());
        self.store = self.store.in_slot_order(slots);
        self
    }

    /// Take in the captures of `other`, grouped over other inputs of the
    /// same labels, whose input indices follow ours after `input_offset`
    /// (or, for parts of the same inputs, are ours). A (run, stage,
    /// query) captured in both is resolved by `repeats` as one grouping
    /// of all the inputs would have: the earlier or later capture by
    /// time, then input order, under `first` and `last`; every capture
    /// under `mean` (and `error`, which the caller refuses first: the
    /// shards rejected nothing as a repeat of the other's).
    pub fn absorb(&mut self, other: Grouped, input_offset: u32, repeats: RepeatPolicy) {
        let capture_offset = self.store.absorb(other.store, input_offset);
        for theirs in other.pairs {
            let key = (&theirs.run, &theirs.stage);
            let at = match self
                .pairs
                .binary_search_by(|p| (&p.run, &p.stage).cmp(&key))
            {
                Ok(at) => at,
                Err(at) => {
                    let slots = vec![Slot::default(); theirs.slots.len()];
                    let (run, stage) = (theirs.run.clone(), theirs.stage.clone());
                    self.pairs.insert(at, PairSlots { run, stage, slots });
                    at
                }
            };
            let ours = &mut self.pairs[at].slots;
            for (slot, mut taken) in ours.iter_mut().zip(theirs.slots) {
                if taken.head != NO_CAPTURE {
                    taken.head += capture_offset;
                }
                self.superseded_records += self.store.join(slot, taken, repeats);
            }
        }
        self.superseded_records += other.superseded_records;
        for (ours, theirs) in [
            (&mut self.seen_docs, other.seen_docs),
            (&mut self.returned_judged, other.returned_judged),
        ] {
            for (ours, theirs) in ours.iter_mut().zip(theirs) {
                *ours |= theirs;
            }
        }
    }

    /// When the logs held no readable record at all, a single unnamed run
    /// at stage `default_stage`, every query missing.
    pub fn add_a_pair_if_none(&mut self, default_stage: &str, labels: &LabelIndex) {
        if self.pairs.is_empty() {
            self.pairs.push(PairSlots {
                run: "".into(),
                stage: default_stage.into(),
                slots: vec![Slot::default(); labels.queries().len()],
            });
        }
    }
}

/// Grade one slot: its row, and the records behind the captures graded.
/// A repeated key under `--repeats error` grades none: its captures are
/// rejected ([`Grouped::repeat_rejects`]).
fn grade_slot(
    labels: &LabelIndex,
    store: &CaptureStore,
    query: QueryIdx,
    slot: &Slot,
    settings: &GradeSettings,
) -> (QueryRow, u64) {
    let total = slot.total();
    // In origin order, whatever order the captures arrived in.
    let (single, many): ([&Capture; 1], Vec<&Capture>);
    let kept: &[&Capture] = match slot.kept {
        0 => &[],
        1 => {
            single = [store.capture(slot.head)];
            &single
        }
        _ => {
            many = {
                let mut kept: Vec<&Capture> = store.list(slot.head).collect();
                kept.sort_by_key(|c| c.origin);
                kept
            };
            &many
        }
    };
    let graded: &[&Capture] = if slot.grades_kept(settings.repeats) {
        kept
    } else {
        &[]
    };
    score::row(labels, query, total, graded, &|c| store.found(c), settings)
}

/// The reject detail of a (run, stage, query) captured `total` times
/// under `repeats` error.
pub(super) fn repeat_detail(run: &str, stage: &str, query: &str, total: u32) -> String {
    format!(
        "run '{run}', stage '{stage}', query '{query}' was captured {total} times ({})",
        Setting::Repeats.given("error")
    )
}

/// A long vector of mostly default values (a slot per labeled query, a
/// flag per judged document), stored as its length and the places that
/// hold something else: a shard of the logs captures few of the queries.
mod sparse {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T, S>(values: &[T], serializer: S) -> Result<S::Ok, S::Error>
    where
        T: Default + PartialEq + Serialize,
        S: Serializer,
    {
        let default = T::default();
        let set: Vec<(u32, &T)> = (0..).zip(values).filter(|(_, v)| **v != default).collect();
        (values.len(), set).serialize(serializer)
    }

    pub fn deserialize<'de, T, D>(deserializer: D) -> Result<Vec<T>, D::Error>
    where
        T: Default + Clone + Deserialize<'de>,
        D: Deserializer<'de>,
    {
        let (len, set): (usize, Vec<(u32, T)>) = Deserialize::deserialize(deserializer)?;
        let mut values = vec![T::default(); len];
        for (at, value) in set {
            let slot = values
                .get_mut(at as usize)
                .ok_or_else(|| serde::de::Error::custom("a place beyond the length"))?;
            *slot = value;
        }
        Ok(values)
    }
}
