//! The capture store: every capture kept for grading, in flat arrays, and
//! the slot of each (run, stage, query) that lists its captures in it.

use serde::{Deserialize, Serialize};
use std::ops::Range;

use anyhow::Result;

use crate::base::options::RepeatPolicy;
use crate::grade::capture::{Capture, Found};
use crate::grade::diagnostics::pool::{PoolSource, PoolStore};
use crate::io::inputs::{Input, InputStats};

/// Marks the end of a slot's list of captures.
pub(super) const NO_CAPTURE: u32 = u32::MAX;

/// Every capture kept for grading, in flat arrays: no allocation per
/// capture. The captures of one key form a list through `next`. Indices
/// are u32: four billion captures would take hundreds of GB first.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct CaptureStore {
    captures: Vec<Capture>,
    next: Vec<u32>,
    found: Vec<Found>,
    pooled: PoolStore,
}

impl CaptureStore {
    /// Keep `capture` (whose documents are `found`, and whose pooled
    /// documents are in `pooled`) ahead of list `next`; returns its index,
    /// the new head of the list.
    pub(super) fn push(
        &mut self,
        mut capture: Capture,
        found: &[Found],
        pooled: PoolSource<'_>,
        next: u32,
    ) -> u32 {
        capture.found = self.keep_found(found);
        capture.pooled = self.pooled.keep(pooled, capture.pooled);
        self.captures.push(capture);
        self.next.push(next);
        (self.captures.len() - 1) as u32
    }

    /// Put `capture` in the place of capture `index`. The documents of the
    /// replaced capture stay behind, unused: replacing is rare.
    pub(super) fn replace(
        &mut self,
        index: u32,
        mut capture: Capture,
        found: &[Found],
        pooled: PoolSource<'_>,
    ) -> Capture {
        capture.found = self.keep_found(found);
        capture.pooled = self.pooled.keep(pooled, capture.pooled);
        std::mem::replace(&mut self.captures[index as usize], capture)
    }

    /// Room for `captures` more captures finding `found` more documents.
    /// Only address space is taken until captures arrive.
    pub(super) fn reserve(&mut self, captures: usize, found: usize) {
        self.captures.reserve(captures);
        self.next.reserve(captures);
        self.found.reserve(found);
    }

    fn keep_found(&mut self, found: &[Found]) -> Range<u32> {
        let start = self.found.len() as u32;
        self.found.extend_from_slice(found);
        start..self.found.len() as u32
    }

    /// The judged documents a kept capture found, by rank.
    pub(super) fn found(&self, capture: &Capture) -> &[Found] {
        &self.found[capture.found.start as usize..capture.found.end as usize]
    }

    /// The unjudged documents a kept capture pooled, as (rank, id).
    pub(super) fn pooled(&self, capture: &Capture) -> impl Iterator<Item = (u32, &str)> {
        self.pooled.get(capture.pooled.clone())
    }

    /// Read the ids of the documents that rankings of run lines pooled
    /// for review from `inputs` (`first`: their first readings); returns
    /// how many stay unread.
    ///
    /// # Errors
    /// An input cannot be read again, or changed since it was graded.
    pub(super) fn read_pooled_run_ids(
        &mut self,
        inputs: &[Input],
        first: &[InputStats],
    ) -> Result<u64> {
        self.pooled.read_run_ids(inputs, first)
    }

    /// Whether every index the store holds is in range, read from a
    /// partial grading: each capture's input below `inputs`, its documents
    /// below `docs`, its links and ranges within the store.
    pub(super) fn fits(&self, inputs: usize, docs: usize) -> bool {
        let in_range =
            |range: &Range<u32>, len: usize| range.start <= range.end && range.end as usize <= len;
        let capture_fits = |c: &Capture| {
            (c.origin.input as usize) < inputs
                && in_range(&c.found, self.found.len())
                && self.pooled.holds(c.pooled.clone())
        };
        self.next.len() == self.captures.len()
            && self.next.iter().all(|&i| self.links(i))
            && self.captures.iter().all(capture_fits)
            && self.found.iter().all(|f| (f.doc as usize) < docs)
    }

    /// Whether `index` ends a list or names a capture of the store.
    pub(super) fn links(&self, index: u32) -> bool {
        index == NO_CAPTURE || (index as usize) < self.captures.len()
    }

    /// Take in the captures of `other`, whose input indices follow ours
    /// after `input_offset`. Returns how far `other`'s capture indices
    /// moved, for the heads of its slots.
    pub(super) fn absorb(&mut self, other: CaptureStore, input_offset: u32) -> u32 {
        let capture_offset = self.captures.len() as u32;
        let found_offset = self.found.len() as u32;
        let pooled_offset = self.pooled.absorb(other.pooled);
        let shift = |range: Range<u32>, by: u32| range.start + by..range.end + by;
        for mut capture in other.captures {
            capture.origin.input += input_offset;
            capture.found = shift(capture.found, found_offset);
            capture.pooled = shift(capture.pooled, pooled_offset);
            self.captures.push(capture);
        }
        let next = other.next.into_iter();
        self.next.extend(next.map(|i| {
            if i == NO_CAPTURE {
                i
            } else {
                i + capture_offset
            }
        }));
        self.found.extend(other.found);
        capture_offset
    }

    /// Join `theirs`, the slot of the same (run, stage, query) in a
    /// grouping absorbed ([`CaptureStore::absorb`]), into `ours`, as one
    /// grouping of both would have kept them under `repeats`: under
    /// `first` and `last` the earlier or later capture by
    /// [`Capture::order`] is kept and the other set aside; otherwise both
    /// lists are kept. Returns the input records set aside.
    pub(super) fn join(&mut self, ours: &mut Slot, theirs: Slot, repeats: RepeatPolicy) -> u64 {
        let mut set_aside_records = 0;
        ours.head = match (ours.head, theirs.head) {
            (NO_CAPTURE, head) | (head, NO_CAPTURE) => head,
            (mine, other) => match repeats {
                RepeatPolicy::First | RepeatPolicy::Last => {
                    let (a, b) = (self.capture(mine).order(), self.capture(other).order());
                    let other_wins = match repeats {
                        RepeatPolicy::First => b < a,
                        _ => b > a,
                    };
                    let (kept, set_aside) = match other_wins {
                        true => (other, mine),
                        false => (mine, other),
                    };
                    set_aside_records = u64::from(self.capture(set_aside).records);
                    ours.kept -= 1;
                    ours.superseded += 1;
                    kept
                }
                RepeatPolicy::Mean | RepeatPolicy::Error => {
                    let mut tail = other;
                    while self.next[tail as usize] != NO_CAPTURE {
                        tail = self.next[tail as usize];
                    }
                    self.next[tail as usize] = mine;
                    other
                }
            },
        };
        ours.kept += theirs.kept;
        ours.rejected += theirs.rejected;
        ours.superseded += theirs.superseded;
        set_aside_records
    }

    /// The same captures, stored slot by slot in the order `slots` come
    /// and, within a slot, by [`Capture::order`]; each slot's head moves
    /// with its list. The order the workers handed captures over in, which
    /// varies with the thread count, leaves no trace, so a partial grading
    /// is the same bytes at any thread count. Documents of replaced
    /// captures are dropped.
    pub(super) fn in_slot_order<'s>(&self, slots: impl Iterator<Item = &'s mut Slot>) -> Self {
        let mut ordered = CaptureStore::default();
        for slot in slots {
            let mut list: Vec<&Capture> = self.list(slot.head).collect();
            list.sort_by_key(|capture| capture.order());
            slot.head = NO_CAPTURE;
            for capture in list.into_iter().rev() {
                let mut kept = capture.clone();
                kept.found = ordered.keep_found(self.found(capture));
                kept.pooled = ordered
                    .pooled
                    .keep_from(&self.pooled, capture.pooled.clone());
                ordered.captures.push(kept);
                ordered.next.push(slot.head);
                slot.head = (ordered.captures.len() - 1) as u32;
            }
        }
        ordered
    }

    /// The capture at `index`, the head of a list.
    pub(super) fn capture(&self, index: u32) -> &Capture {
        &self.captures[index as usize]
    }

    /// The captures of the list starting at `head`.
    pub(super) fn list(&self, head: u32) -> impl Iterator<Item = &Capture> {
        std::iter::successors((head != NO_CAPTURE).then_some(head), |&i| {
            Some(self.next[i as usize]).filter(|&next| next != NO_CAPTURE)
        })
        .map(|i| &self.captures[i as usize])
    }
}

/// Captures of one (run, stage, query).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct Slot {
    /// The first of the captures to grade, linked in the store.
    pub(super) head: u32,
    /// Captures to grade (one at most under `first` and `last`).
    pub(super) kept: u32,
    /// Captures rejected while judging or as repeats.
    pub(super) rejected: u32,
    /// Captures set aside under `first` and `last`.
    pub(super) superseded: u32,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            head: NO_CAPTURE,
            kept: 0,
            rejected: 0,
            superseded: 0,
        }
    }
}

impl Slot {
    /// Every capture of the key, rejected and set aside ones included.
    pub(super) fn total(&self) -> u32 {
        self.kept + self.rejected + self.superseded
    }

    /// Whether the kept captures are graded: under `--repeats error` a
    /// repeated key has all its captures rejected instead.
    pub(super) fn grades_kept(&self, repeats: RepeatPolicy) -> bool {
        !(repeats == RepeatPolicy::Error && self.total() > 1)
    }
}
