//! Pooling for the next round of judging (`--review-queue`): the
//! documents each capture ranked within the pool depth that no label line
//! of its query judges. Their ids are the only result text rgrade keeps,
//! only while the flag asks for them, and each id once however often it is
//! pooled. [`super::review`] merges them into the queue.
//!
//! A ranking built from run lines (TREC, MS MARCO) keeps no id text while
//! it is ranked: it pools the lines of its unjudged documents, whose ids
//! are read again from their files once every run is ranked.

use serde::{Deserialize, Serialize, Serializer};
use std::ops::Range;

use anyhow::{Context, Result};
use hashbrown::HashTable;

use crate::base::options::LogsFormat;
use crate::io::inputs::{Input, InputStats};
use crate::io::reread;
use crate::labels::id_hash;
use crate::logs::record::Origin;
use crate::logs::trec::TrecLine;

/// An unjudged document of a ranking built from run lines: its rank, and
/// the line that names it.
pub type PooledLine = (u32, Origin);

/// Where the documents some captures pooled are.
#[derive(Debug, Clone, Copy)]
pub enum PoolSource<'a> {
    /// Named by their ids, as search events name their results.
    Ids(&'a Pooled),
    /// Named by the run lines that rank them.
    Lines(&'a [PooledLine]),
}

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
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct PoolStore {
    /// (rank, id number), [`UNREAD`] for a run line's document until
    /// its id is read.
    docs: Vec<(u32, u32)>,
    ids: Interner,
    /// The run lines whose ids are still to read, with their documents'
    /// places in `docs`.
    unread: Vec<(Origin, u32)>,
}

/// The id number of a document whose id has not been read.
const UNREAD: u32 = u32::MAX;

impl PoolStore {
    /// Keep the documents of `range` in a block's `source`; returns where
    /// they are here.
    pub fn keep(&mut self, source: PoolSource<'_>, range: Range<u32>) -> Range<u32> {
        let start = self.docs.len() as u32;
        match source {
            PoolSource::Ids(pooled) => {
                for (rank, id) in pooled.get(range) {
                    let id = self.ids.intern(id);
                    self.docs.push((rank, id));
                }
            }
            PoolSource::Lines(lines) => {
                for &(rank, origin) in &lines[range.start as usize..range.end as usize] {
                    self.unread.push((origin, self.docs.len() as u32));
                    self.docs.push((rank, UNREAD));
                }
            }
        }
        start..self.docs.len() as u32
    }

    /// Take in the documents of `other`; returns where they start here.
    /// Its run lines must have been read ([`PoolStore::read_run_ids`]).
    pub fn absorb(&mut self, other: PoolStore) -> u32 {
        self.keep_from(&other, 0..other.docs.len() as u32).start
    }

    /// Keep the documents of `range` in `other`; returns where they are
    /// here. Its run lines must have been read ([`PoolStore::read_run_ids`]).
    pub fn keep_from(&mut self, other: &PoolStore, range: Range<u32>) -> Range<u32> {
        let start = self.docs.len() as u32;
        for &(rank, id) in &other.docs[range.start as usize..range.end as usize] {
            let id = if id == UNREAD {
                UNREAD
            } else {
                self.ids.intern(other.ids.get(id))
            };
            self.docs.push((rank, id));
        }
        start..self.docs.len() as u32
    }

    /// Whether `range` is within the documents held, each with an id held
    /// or yet to read.
    pub fn holds(&self, range: Range<u32>) -> bool {
        let ids = self.ids.ends.len() as u32;
        let docs = self.docs.get(range.start as usize..range.end as usize);
        docs.is_some_and(|docs| docs.iter().all(|&(_, id)| id == UNREAD || id < ids))
    }

    /// Read the ids of the pooled run lines from their inputs (`first`:
    /// what their first reading learned of each). Returns how many
    /// documents keep no id: those of inputs that cannot be read twice
    /// (stdin, a pipe) or are not lines (Parquet); they stay out of
    /// [`PoolStore::get`].
    ///
    /// # Errors
    /// An input cannot be read again, or changed since it was graded.
    pub fn read_run_ids(&mut self, inputs: &[Input], first: &[InputStats]) -> Result<u64> {
        let mut unread = std::mem::take(&mut self.unread);
        unread.sort_unstable();
        let mut left = 0;
        for lines in unread.chunk_by(|a, b| a.0.input == b.0.input) {
            let input = lines[0].0.input as usize;
            let format = first[input].format;
            let numbers: Vec<u64> = lines.iter().map(|(origin, _)| origin.line).collect();
            let mut next = lines.iter().peekable();
            let Self { docs, ids, .. } = self;
            let mut read_id = |number: u64, line: &[u8]| {
                let doc_id = TrecLine::parse(line, format).map(|line| line.doc_id);
                while let Some((_, doc)) = next.next_if(|(origin, _)| origin.line <= number) {
                    if let Ok(doc_id) = doc_id {
                        docs[*doc as usize].1 = ids.intern(doc_id);
                    }
                }
            };
            let read = format != LogsFormat::Parquet
                && reread::read_lines_again(&inputs[input], &first[input], &numbers, &mut read_id)
                    .context("reading runs again for the ids of the documents to review")?;
            if !read {
                left += lines.len() as u64;
            }
        }
        Ok(left)
    }

    /// The documents in `range` whose ids are known, as (rank, id).
    pub fn get(&self, range: Range<u32>) -> impl Iterator<Item = (u32, &str)> + '_ {
        self.docs[range.start as usize..range.end as usize]
            .iter()
            .filter(|&&(_, id)| id != UNREAD)
            .map(|&(rank, id)| (rank, self.ids.get(id)))
    }
}

/// Doc ids stored once each, numbered in order of first sight, found
/// again by hash and confirmed on the text. Stored as the ids back to
/// back; the table is built again when read.
#[derive(Debug, Default, Deserialize)]
#[serde(try_from = "(Vec<usize>, String)")]
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

impl Serialize for Interner {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (&self.ends, &self.text).serialize(serializer)
    }
}

impl TryFrom<(Vec<usize>, String)> for Interner {
    type Error = &'static str;

    fn try_from((ends, text): (Vec<usize>, String)) -> Result<Self, Self::Error> {
        let mut start = 0;
        for &end in &ends {
            if end < start || !text.is_char_boundary(end) {
                return Err("the pooled ids are not ids back to back");
            }
            start = end;
        }
        let mut interner = Interner::default();
        for i in 0..ends.len() as u32 {
            interner.intern(slice(&text, &ends, i));
        }
        Ok(interner)
    }
}

/// The `index`-th of the ids stored back to back in `text`, ending at `ends`.
fn slice<'t>(text: &'t str, ends: &[usize], index: u32) -> &'t str {
    let i = index as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &text[start..ends[i]]
}
