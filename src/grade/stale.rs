//! Diagnostics, stale labels (docs/guide.md, "Diagnostics"): do the labels still match the
//! collection? A changed chunk-id scheme silently breaks an evaluation:
//! every labeled id stops appearing in results and recall drops for no
//! fault of the retriever.
//!
//! Two checks. Always: the labeled documents of captured queries that no
//! valid capture of their query returned at any depth, from the judged
//! documents the pipeline finds anyway (so it costs nothing per result). With
//! `--corpus FILE`: labeled ids missing from the collection snapshot,
//! streamed against a table of the labeled ids, so memory follows the
//! labels, not the corpus.

use std::io::BufRead;
use std::path::Path;

use anyhow::{bail, Context, Result};
use hashbrown::{HashMap, HashTable};
use rayon::prelude::*;

use crate::grade::group::Grouped;
use crate::grade::read::{Input, Source};
use crate::labels::{id_hash, LabelIndex, QueryIdx};
use crate::output;
use crate::output::schema::{SliceStale, StaleLabels};
use crate::slices::ANY;
use crate::slices::{slice_keys, slice_order, SliceKey};

/// Unseen ids listed in summary.json.
const SAMPLE: usize = 20;
/// Above this unseen fraction, stderr warns.
pub const WARN_FRACTION: f64 = 0.5;

/// Count the labeled documents that no valid capture of their query
/// returned. A query no run captured is left out: its labels say nothing
/// about the collection, only about the logs' coverage.
pub fn measure(grouped: &Grouped, labels: &LabelIndex) -> StaleLabels {
    let seen = &grouped.seen_docs;
    let captured = |query: QueryIdx| grouped.pairs.iter().any(|pair| pair.captured(query));
    // (labeled, unseen) per query, on the workers: this runs on every
    // grade, so it must not add a serial pass over a million queries.
    let per_query: Vec<(u64, u64)> = (0..labels.queries().len() as QueryIdx)
        .into_par_iter()
        .map(|query| {
            if !captured(query) {
                return (0, 0);
            }
            let docs = labels.judged_docs(query);
            let unseen = docs.clone().filter(|&doc| !seen[doc as usize]).count();
            (docs.len() as u64, unseen as u64)
        })
        .collect();
    // Summed per (task, language) cell, then per grouping set: every
    // grouping set of the labels gets a row, as in aggregates.csv.
    let mut cells: HashMap<(u32, u32), (u64, u64)> = HashMap::new();
    for (q, &(labeled, unseen)) in labels.queries().iter().zip(&per_query) {
        let cell = cells.entry((q.task, q.language)).or_default();
        cell.0 += labeled;
        cell.1 += unseen;
    }
    let mut sets: HashMap<SliceKey, (u64, u64)> = HashMap::new();
    for ((task, language), (labeled, unseen)) in cells {
        for key in slice_keys(task, language) {
            let set = sets.entry(key).or_default();
            set.0 += labeled;
            set.1 += unseen;
        }
    }
    let sample = first_unseen(labels, seen, &per_query);
    let (labeled, unseen) = sets.get(&(None, None)).copied().unwrap_or_default();
    let name = |slice: u32| labels.slice_name(slice);
    let mut slices: Vec<(SliceKey, (u64, u64))> = sets
        .into_iter()
        .filter(|((task, language), _)| task.is_some() || language.is_some())
        .collect();
    slices.sort_by(|a, b| slice_order(a.0, name).cmp(&slice_order(b.0, name)));
    let slice_name = |slice: Option<u32>| slice.map_or(ANY, name).to_string();
    StaleLabels {
        labeled,
        unseen,
        fraction: if labeled == 0 {
            0.0
        } else {
            unseen as f64 / labeled as f64
        },
        sample,
        by_slice: slices
            .into_iter()
            .map(|((task, language), (labeled, unseen))| SliceStale {
                task: slice_name(task),
                language: slice_name(language),
                labeled,
                unseen,
            })
            .collect(),
    }
}

/// The first [`SAMPLE`] distinct unseen ids, in query order (by id within
/// a query).
fn first_unseen(labels: &LabelIndex, seen: &[bool], per_query: &[(u64, u64)]) -> Vec<String> {
    let mut sample: Vec<String> = Vec::new();
    let with_unseen = per_query.iter().enumerate().filter(|(_, c)| c.1 > 0);
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

/// Fail, before any log is read, when labeled doc ids are missing from the
/// collection snapshot `corpus`: a changed id scheme would grade every
/// query 0. With an output directory, all of them are listed there in
/// labels_missing_from_corpus.txt.
///
/// # Errors
/// The corpus cannot be read, or lacks labeled ids.
pub fn require_corpus(labels: &LabelIndex, corpus: &Path, out: Option<&Path>) -> Result<()> {
    const EXAMPLES: usize = 5;
    let missing = check_corpus(labels, &Input::File(corpus.to_path_buf()))?;
    if missing.ids.is_empty() {
        return Ok(());
    }
    let listed = match out {
        Some(dir) => {
            let path = output::corpus::write_missing(dir, &missing.ids)?;
            format!("all are listed in {}", path.display())
        }
        None => "use -o DIR to list them all".to_string(),
    };
    let examples: Vec<&str> = missing
        .ids
        .iter()
        .take(EXAMPLES)
        .map(String::as_str)
        .collect();
    bail!(
        "{}: {} of {} labeled doc ids are not in the corpus (e.g. {}); {listed}. \
         Were the labels made for another snapshot or id scheme?",
        corpus.display(),
        missing.ids.len(),
        missing.labeled,
        examples.join(", ")
    )
}
