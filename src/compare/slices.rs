//! Every grouping set of every stage compared: overall, each task, each
//! language, each task × language (and each of those within each split),
//! metric by metric.

use rayon::prelude::*;

use super::paired::{self, MetricChange, Paired, StatSettings};

/// The comparison of one grouping set of one stage.
#[derive(Debug, Clone)]
pub struct SliceComparison {
    /// The stage, as an index into [`Paired::stages`].
    pub stage: usize,
    /// The split, or `None` for any.
    pub split: Option<u32>,
    /// The task, or `None` for any.
    pub task: Option<u32>,
    /// The language, or `None` for any.
    pub language: Option<u32>,
    /// One change per metric compared, in the order asked.
    pub changes: Vec<MetricChange>,
}

impl SliceComparison {
    /// Whether this is the set of every query of its stage.
    pub fn is_overall(&self) -> bool {
        self.split.is_none() && self.task.is_none() && self.language.is_none()
    }
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
            split: set.split,
            task: set.task,
            language: set.language,
            changes: paired.stages[stage].changes(&set.members, metrics, settings),
        })
        .collect()
}
