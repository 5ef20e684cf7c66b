//! Diagnostics, stale labels (docs/guide.md, "Diagnostics"): do the labels still match the
//! collection? A changed chunk-id scheme silently breaks an evaluation:
//! every labeled id stops appearing in results and recall drops for no
//! fault of the retriever.
//!
//! Two checks. Always: the captured queries whose results hold no judged
//! document at any depth, which is what a changed id scheme does to every
//! query, while pooled labels, which judge only part of what a run
//! returns, leave many labeled documents unreturned but no query without
//! a judged one; and, for information, the labeled documents that no valid
//! capture of their query returned. Both come from judging, which looks
//! every result up in the labels anyway. With
//! `--corpus FILE`: labeled ids missing from the collection snapshot,
//! streamed against a table of the labeled ids, so memory follows the
//! labels, not the corpus.

use std::io::BufRead;
use std::ops::AddAssign;

use anyhow::{bail, Context, Result};
use hashbrown::{HashMap, HashTable};
use rayon::prelude::*;

use crate::base::schema::{SliceStale, StaleLabels};
use crate::base::slices::{slice_keys, slice_order, SliceKey, ANY};
use crate::base::text::first_few;
use crate::grade::group::Grouped;
use crate::io::decompress::Source;
use crate::io::inputs::Input;
use crate::labels::{id_hash, LabelIndex, QueryIdx};

/// Unseen ids listed in summary.json.
const SAMPLE: usize = 20;

/// The stale-label counts of one query, or summed over a grouping set.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    /// Labeled documents (positive grades) of captured queries.
    labeled: u64,
    /// Of those, the ones no valid capture of their query returned.
    unseen: u64,
    /// Queries with a valid capture and a judged document.
    captured: u64,
    /// Of those, the ones whose valid captures returned no judged document.
    without_judged: u64,
}

impl AddAssign for Tally {
    fn add_assign(&mut self, other: Self) {
        self.labeled += other.labeled;
        self.unseen += other.unseen;
        self.captured += other.captured;
        self.without_judged += other.without_judged;
    }
}

/// Count the captured queries that returned no judged document, and the
/// labeled documents that no valid capture of their query returned. A
/// query no run captured is left out: its labels say nothing about the
/// collection, only about the logs' coverage; so is a query whose labels
/// judge no document, from the query counts.
pub fn measure(grouped: &Grouped, labels: &LabelIndex) -> StaleLabels {
    let seen = &grouped.seen_docs;
    let captured = |query: QueryIdx| grouped.pairs.iter().any(|pair| pair.captured(query));
    // Per query, on the workers: this runs on every grade, so it must not
    // add a serial pass over a million queries.
    let per_query: Vec<Tally> = (0..labels.queries().len() as QueryIdx)
        .into_par_iter()
        .map(|query| {
            if !captured(query) {
                return Tally::default();
            }
            let docs = labels.judged_docs(query);
            let unseen = docs.clone().filter(|&doc| !seen[doc as usize]).count();
            // A query whose labels judge nothing can return nothing judged.
            let judges_any = labels.judges_any(query);
            Tally {
                labeled: docs.len() as u64,
                unseen: unseen as u64,
                captured: u64::from(judges_any),
                without_judged: u64::from(judges_any && !grouped.returned_judged[query as usize]),
            }
        })
        .collect();
    // Summed per (task, language) cell, then per grouping set: every
    // grouping set of the labels gets a row, as in aggregates.csv.
    let mut cells: HashMap<(u32, u32), Tally> = HashMap::new();
    for (q, &tally) in labels.queries().iter().zip(&per_query) {
        *cells.entry((q.task, q.language)).or_default() += tally;
    }
    let mut sets: HashMap<SliceKey, Tally> = HashMap::new();
    for ((task, language), tally) in cells {
        for key in slice_keys(task, language) {
            *sets.entry(key).or_default() += tally;
        }
    }
    let sample = first_unseen(labels, seen, &per_query);
    let all = sets.get(&(None, None)).copied().unwrap_or_default();
    let name = |slice: u32| labels.slice_name(slice);
    let mut slices: Vec<(SliceKey, Tally)> = sets
        .into_iter()
        .filter(|((task, language), _)| task.is_some() || language.is_some())
        .collect();
    slices.sort_by(|a, b| slice_order(a.0, name).cmp(&slice_order(b.0, name)));
    let slice_name = |slice: Option<u32>| slice.map_or(ANY, name).to_string();
    StaleLabels {
        labeled: all.labeled,
        unseen: all.unseen,
        fraction: if all.labeled == 0 {
            0.0
        } else {
            all.unseen as f64 / all.labeled as f64
        },
        sample,
        by_slice: slices
            .into_iter()
            .map(|((task, language), tally)| SliceStale {
                task: slice_name(task),
                language: slice_name(language),
                labeled: tally.labeled,
                unseen: tally.unseen,
                queries_captured: tally.captured,
                queries_without_judged_results: tally.without_judged,
            })
            .collect(),
        queries_captured: all.captured,
        queries_without_judged_results: all.without_judged,
    }
}

/// The first [`SAMPLE`] distinct unseen ids, in query order (by id within
/// a query).
fn first_unseen(labels: &LabelIndex, seen: &[bool], per_query: &[Tally]) -> Vec<String> {
    let mut sample: Vec<String> = Vec::new();
    let with_unseen = per_query.iter().enumerate().filter(|(_, t)| t.unseen > 0);
    for (query, _) in with_unseen {
        let mut ids: Vec<&str> = labels
            .judged_docs(query as QueryIdx)
            .filter(|&doc| !seen[doc as usize])
            .map(|doc| labels.doc_id(doc))
            .collect();
        ids.sort_unstable();
        for id in ids {
            if sample.len() == SAMPLE {
                return sample;
            }
            if !sample.iter().any(|s| s == id) {
                sample.push(id.to_string());
            }
        }
    }
    sample
}

/// The labeled ids missing from a collection snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingFromCorpus {
    /// Distinct labeled ids not in the corpus, in byte order.
    pub ids: Vec<String>,
    /// Distinct labeled ids checked.
    pub labeled: usize,
}

/// Read the corpus (one doc id a line; plain, gzip or zstd) and list the
/// labeled ids it lacks. Lines are trimmed; blank lines are skipped.
///
/// # Errors
/// The corpus cannot be read.
pub fn check_corpus(labels: &LabelIndex, corpus: &Input) -> Result<MissingFromCorpus> {
    // Every distinct labeled id once, by hash; confirmed on the text.
    let mut ids: Vec<&str> = Vec::new();
    let mut table: HashTable<u32> = HashTable::new();
    for query in 0..labels.queries().len() as QueryIdx {
        for doc in labels.judged_docs(query) {
            let id = labels.doc_id(doc);
            let hash = id_hash(id.as_bytes());
            if table.find(hash, |&i| ids[i as usize] == id).is_none() {
                table.insert_unique(hash, ids.len() as u32, |&i| {
                    id_hash(ids[i as usize].as_bytes())
                });
                ids.push(id);
            }
        }
    }
    let mut in_corpus = vec![false; ids.len()];
    let name = corpus.name();
    let mut source = Source::open(corpus).with_context(|| format!("{name}: cannot open"))?;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = source
            .read_until(b'\n', &mut line)
            .with_context(|| format!("{name}: cannot read"))?;
        if read == 0 {
            break;
        }
        let id = line.trim_ascii();
        if id.is_empty() {
            continue;
        }
        if let Some(&i) = table.find(id_hash(id), |&i| ids[i as usize].as_bytes() == id) {
            in_corpus[i as usize] = true;
        }
    }
    let mut missing: Vec<String> = ids
        .iter()
        .zip(&in_corpus)
        .filter(|(_, &found)| !found)
        .map(|(id, _)| id.to_string())
        .collect();
    missing.sort_unstable();
    Ok(MissingFromCorpus {
        labeled: ids.len(),
        ids: missing,
    })
}

/// Fail, before any log is read, when labels were reviewed against
/// another collection version than `version`: their judgments may name
/// chunks that changed since. A label that names no version is another
/// version too: the check is that every label was reviewed against this one.
///
/// # Errors
/// Labels of another version or of none, counted, with a few named.
pub fn require_collection_version(labels: &LabelIndex, version: &str) -> Result<()> {
    const EXAMPLES: usize = 5;
    let other: Vec<String> = (0..labels.queries().len() as QueryIdx)
        .filter_map(|query| {
            let named = labels.collection_version(query);
            (named != Some(version)).then(|| {
                format!(
                    "{} ({})",
                    labels.query_id(query),
                    named.unwrap_or("no collection_version")
                )
            })
        })
        .collect();
    if other.is_empty() {
        return Ok(());
    }
    bail!(
        "{}: {} of {} labeled queries were not reviewed against collection version '{version}' \
         ({}): {}; review them against it, or grade the version they name",
        labels.source.given_path().display(),
        other.len(),
        labels.queries().len(),
        crate::base::failure::Setting::CollectionVersion,
        first_few(other.into_iter(), EXAMPLES)
    )
}
