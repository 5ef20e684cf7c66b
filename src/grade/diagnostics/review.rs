//! The review queue (`--review-queue`): once grouping has settled which
//! captures are graded, each labeled query's pooled documents
//! ([`super::pool`]) are merged over every run and stage into
//! review_queue.csv rows, best rank first: what to judge next.

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::grade::group::Grouped;
use crate::grade::score::GradeSettings;
use crate::labels::{LabelIndex, QueryIdx};

/// One row of review_queue.csv: an unjudged document of a labeled query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRow<'a> {
    /// The labeled query.
    pub query: QueryIdx,
    /// The document no label line of the query judges.
    pub doc_id: &'a str,
    /// The best rank any graded capture gave it.
    pub best_rank: u32,
    /// Runs with a graded capture that ranked it within the pool depth.
    pub runs: u32,
    /// Graded captures (any run and stage) that did.
    pub captures: u32,
}

/// Queries pooled at a time: the rows of one such range are held, never
/// the whole queue.
const QUERIES_AT_A_TIME: usize = 1 << 14;

/// Hand `write` the review queue a range of queries at a time, in query
/// id order: per query, its pooled documents by best rank, then id.
///
/// # Errors
/// What `write` returns.
pub fn queue<E>(
    grouped: &Grouped,
    labels: &LabelIndex,
    settings: &GradeSettings,
    mut write: impl FnMut(&[QueueRow<'_>]) -> Result<(), E>,
) -> Result<(), E> {
    let n = labels.queries().len();
    for start in (0..n).step_by(QUERIES_AT_A_TIME) {
        let queries = start as QueryIdx..n.min(start + QUERIES_AT_A_TIME) as QueryIdx;
        let rows: Vec<QueueRow> = queries
            .into_par_iter()
            .flat_map_iter(|query| query_pool(grouped, settings, query))
            .collect();
        write(&rows)?;
    }
    Ok(())
}

/// The pooled documents of one query over every graded capture.
fn query_pool<'g>(
    grouped: &'g Grouped,
    settings: &GradeSettings,
    query: QueryIdx,
) -> Vec<QueueRow<'g>> {
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
        .map(|(doc_id, (best_rank, runs, captures))| QueueRow {
            query,
            doc_id,
            best_rank,
            runs: runs.len() as u32,
            captures,
        })
        .collect();
    // Stable: equal ranks stay in id order.
    rows.sort_by_key(|row| row.best_rank);
    rows
}
