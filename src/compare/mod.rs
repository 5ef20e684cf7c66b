//! `rgrade compare` (SPEC §7): one change at a time. Two grade outputs are
//! [`graded`] (read back), [`paired`] by (stage, query_id), compared per
//! grouping set and metric with paired statistics, checked against the
//! user's acceptance [`rules`], and written by [`output`].

pub mod graded;
pub mod output;
pub mod paired;
pub mod rules;

use rayon::prelude::*;

use paired::{MetricChange, Paired, StatSettings};

/// The first `shown` of `items`, comma separated, then "(+n more)" for
/// the rest: a long list of queries stays one readable line.
pub fn first_few(items: impl ExactSizeIterator<Item = String>, shown: usize) -> String {
    let total = items.len();
    let mut text = items.take(shown).collect::<Vec<_>>().join(", ");
    if total > shown {
        text.push_str(&format!(" (+{} more)", total - shown));
    }
    text
}

/// The comparison of one grouping set of one stage.
#[derive(Debug, Clone)]
pub struct SliceComparison {
    /// The stage, as an index into [`Paired::stages`].
    pub stage: usize,
    /// The task, or `None` for any.
    pub task: Option<u32>,
    /// The language, or `None` for any.
    pub language: Option<u32>,
    /// One change per metric compared, in the order asked.
    pub changes: Vec<MetricChange>,
}

/// Compare `metrics` on every grouping set of every stage: overall, each
/// task, each language, each task × language, in the order of
/// aggregates.csv. The Holm adjustment runs across the metrics of one set.
pub fn compare_slices(
    paired: &Paired,
    metrics: &[usize],
    settings: &StatSettings,
) -> Vec<SliceComparison> {
    let jobs: Vec<(usize, paired::GroupingSet)> = paired
        .stages
        .iter()
        .enumerate()
        .flat_map(|(stage, pairs)| {
            pairs
                .grouping_sets(&paired.names)
                .into_iter()
                .map(move |set| (stage, set))
        })
        .collect();
    jobs.into_par_iter()
        .map(|(stage, set)| SliceComparison {
            stage,
            task: set.task,
            language: set.language,
            changes: paired.stages[stage].changes(&set.members, metrics, settings),
        })
        .collect()
}
