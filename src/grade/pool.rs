//! Pooling for the next round of judging (`--review-queue`): the
//! documents each capture ranked within the pool depth that no label line
//! of its query judges. Their ids are the only result text rgrade keeps,
//! only while the flag asks for them, and each id once however often it is
//! pooled. [`super::review`] merges them into the queue.

use std::ops::Range;

use hashbrown::HashTable;

use crate::labels::id_hash;

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
        (range.start..range.end).map(|i| (self.ranks[i as usize], slice(&self.text, &self.ends, i)))
    }
}

/// The documents pooled by every capture kept for grading: each one's
/// rank and id, the ids stored once each, however many captures of
/// however many queries, runs and stages ranked them.
#[derive(Debug, Default)]
pub struct PoolStore {
    docs: Vec<(u32, u32)>,
    ids: Interner,
}

impl PoolStore {
    /// Keep the documents of `range` in a block's `pooled`; returns where
    /// they are here.
    pub fn keep(&mut self, pooled: &Pooled, range: Range<u32>) -> Range<u32> {
        let start = self.docs.len() as u32;
        for (rank, id) in pooled.get(range) {
            let id = self.ids.intern(id);
            self.docs.push((rank, id));
        }
        start..self.docs.len() as u32
    }

    /// The documents in `range`, as (rank, id).
    pub fn get(&self, range: Range<u32>) -> impl Iterator<Item = (u32, &str)> + '_ {
        self.docs[range.start as usize..range.end as usize]
            .iter()
            .map(|&(rank, id)| (rank, self.ids.get(id)))
    }
}

/// Doc ids stored once each, numbered in order of first sight, found
/// again by hash and confirmed on the text.
#[derive(Debug, Default)]
struct Interner {
    table: HashTable<u32>,
    ends: Vec<usize>,
    text: String,
}

impl Interner {
    fn intern(&mut self, id: &str) -> u32 {
        let hash = id_hash(id.as_bytes());
        let (text, ends) = (&self.text, &self.ends);
        if let Some(&found) = self.table.find(hash, |&i| slice(text, ends, i) == id) {
            return found;
        }
        let index = self.ends.len() as u32;
        self.text.push_str(id);
        self.ends.push(self.text.len());
        let (text, ends) = (&self.text, &self.ends);
        self.table
            .insert_unique(hash, index, |&i| id_hash(slice(text, ends, i).as_bytes()));
        index
    }

    fn get(&self, index: u32) -> &str {
        slice(&self.text, &self.ends, index)
    }
}

/// The `index`-th of the ids stored back to back in `text`, ending at `ends`.
fn slice<'t>(text: &'t str, ends: &[usize], index: u32) -> &'t str {
    let i = index as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &text[start..ends[i]]
}
