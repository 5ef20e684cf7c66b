//! Pooling for the next round of judging (`--review-queue`): the
//! documents each capture ranked within the pool depth that no label line
//! of its query judges. Their ids are the only result text rgrade keeps,
//! and only while the flag asks for them; once grouping has settled which
//! captures are graded, each query's pool is merged into review_queue.csv
//! rows, best rank first.

use std::collections::BTreeMap;
use std::ops::Range;

use rayon::prelude::*;

use crate::grade::group::{GradeSettings, Grouped};
use crate::labels::{LabelIndex, QueryIdx};

/// Unjudged documents within the pool depth, back to back: each one's
/// rank, and where its id ends in one string of ids.
#[derive(Debug, Default, Clone)]
pub struct Pooled {
    ranks: Vec<u32>,
    ends: Vec<usize>,
    text: String,
}

impl Pooled {
    /// Documents held.
    pub fn len(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    /// Hold the document `id`, ranked at `rank`.
    pub fn push(&mut self, rank: u32, id: &str) {
        self.text.push_str(id);
        self.ranks.push(rank);
        self.ends.push(self.text.len());
    }

    /// The documents in `range`, as (rank, id).
    pub fn get(&self, range: Range<u32>) -> impl Iterator<Item = (u32, &str)> + '_ {
        (range.start as usize..range.end as usize).map(|i| {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            (self.ranks[i], &self.text[start..self.ends[i]])
        })
    }

    /// Hold the documents of `range` in `other` too; returns where they are here.
    pub fn copy_from(&mut self, other: &Pooled, range: Range<u32>) -> Range<u32> {
        let start = self.len();
        for (rank, id) in other.get(range) {
            self.push(rank, id);
        }
        start..self.len()
    }

    /// Drop every document, keeping the memory.
    pub fn clear(&mut self) {
        self.ranks.clear();
        self.ends.clear();
        self.text.clear();
    }
}

/// One row of review_queue.csv: an unjudged document of a labeled query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRow {
    /// The labeled query.
    pub query: QueryIdx,
    /// The document no label line of the query judges.
    pub doc_id: String,
    /// The best rank any graded capture gave it.
    pub best_rank: u32,
    /// Runs with a graded capture that ranked it within the pool depth.
    pub runs: u32,
    /// Graded captures (any run and stage) that did.
    pub captures: u32,
}

/// The review queue: per labeled query in id order, its pooled documents
/// by best rank, then id.
pub fn queue(grouped: &Grouped, labels: &LabelIndex, settings: &GradeSettings) -> Vec<QueueRow> {
    (0..labels.queries().len() as QueryIdx)
        .into_par_iter()
        .flat_map_iter(|query| query_pool(grouped, settings, query))
        .collect()
}

/// The pooled documents of one query over every graded capture.
fn query_pool(grouped: &Grouped, settings: &GradeSettings, query: QueryIdx) -> Vec<QueueRow> {
    // doc id → (best rank, runs seen, captures).
    let mut docs: BTreeMap<&str, (u32, Vec<&str>, u32)> = BTreeMap::new();
    for pair in &grouped.pairs {
        for (rank, id) in pair.graded_pooled(query, &grouped.store, settings) {
            let (best, runs, captures) = docs.entry(id).or_insert((rank, Vec::new(), 0));
            *best = (*best).min(rank);
            if !runs.contains(&&*pair.run) {
                runs.push(&pair.run);
            }
            *captures += 1;
        }
    }
    let mut rows: Vec<QueueRow> = docs
        .into_iter()
        .map(|(id, (best_rank, runs, captures))| QueueRow {
            query,
            doc_id: id.to_string(),
            best_rank,
            runs: runs.len() as u32,
            captures,
        })
        .collect();
    // Stable: equal ranks stay in id order.
    rows.sort_by_key(|row| row.best_rank);
    rows
}
