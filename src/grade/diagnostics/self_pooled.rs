//! Diagnostics, runs that defined their own answer key (docs/guide.md,
//! "Where the labels came from"): a graded run that is the only run the
//! judging pools of some labeled queries came from. Documents only it
//! returned were judged there and no other run's were, so its scores on
//! those queries are biased upward against any run that was not pooled.

use std::collections::BTreeMap;

use crate::base::schema::SelfPooled;
use crate::labels::{LabelIndex, QueryIdx};

/// Each of `runs` (graded run names) that alone was pooled for some
/// labeled queries, by name, with its share of the queries whose labels
/// name their pool.
pub fn measure<'a>(
    labels: &LabelIndex,
    runs: impl IntoIterator<Item = &'a str>,
) -> Vec<SelfPooled> {
    let mut pooled = 0u64;
    let mut alone: BTreeMap<&str, u64> = BTreeMap::new();
    for query in 0..labels.queries().len() as QueryIdx {
        let Some(mut pool) = labels.pool(query) else {
            continue;
        };
        pooled += 1;
        if let (Some(run), None) = (pool.next(), pool.next()) {
            *alone.entry(run).or_default() += 1;
        }
    }
    let mut runs: Vec<&str> = runs.into_iter().collect();
    runs.sort_unstable();
    runs.dedup();
    (runs.into_iter())
        .filter_map(|run| {
            let queries = *alone.get(run)?;
            Some(SelfPooled {
                run: run.to_string(),
                queries,
                share: queries as f64 / pooled as f64,
            })
        })
        .collect()
}
