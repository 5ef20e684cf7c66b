//! Diagnostics, stage loss (docs/guide.md, "Diagnostics"): where evidence disappears between
//! the stages of a pipeline. For every (run, query) and every pair of
//! consecutive stages of `--stage-order` that graded it, the query's
//! relevant documents found anywhere in the first stage's results are
//! checked against the next stage's results; those missing there were
//! lost.

use std::collections::BTreeMap;

use hashbrown::HashMap;
use rayon::prelude::*;

use crate::base::slices::{slice_keys, slice_order, SliceKey};
use crate::grade::group::{Grouped, PairSlots};
use crate::grade::score::GradeSettings;
use crate::labels::{LabelIndex, QueryIdx};

/// What one query lost from one stage to the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryLoss {
    /// The query.
    pub query: QueryIdx,
    /// Relevant documents found in the first stage's results.
    pub relevant_found: u32,
    /// Those missing from the next stage's results, as label doc indices
    /// sorted by id.
    pub lost: Vec<u32>,
}

/// Totals over one grouping set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossTotals {
    /// The task, or `None` for all.
    pub task: Option<u32>,
    /// The language, or `None` for all.
    pub language: Option<u32>,
    /// Relevant documents found in the first stage, summed over queries.
    pub relevant_found: u64,
    /// Of those, the ones the next stage lost.
    pub lost: u64,
}

impl LossTotals {
    /// Lost over found, if anything was found.
    pub fn lost_rate(&self) -> Option<f64> {
        (self.relevant_found > 0).then(|| self.lost as f64 / self.relevant_found as f64)
    }
}

/// One run's step from a stage to the next.
#[derive(Debug, Clone)]
pub struct Transition {
    /// The run.
    pub run: Box<str>,
    /// The earlier stage.
    pub from: Box<str>,
    /// The later stage.
    pub to: Box<str>,
    /// Every query with relevant documents for which these two stages
    /// were consecutive among its graded stages, in query order.
    pub queries: Vec<QueryLoss>,
    /// Overall, per task, per language, per task × language, as in
    /// aggregates.csv.
    pub totals: Vec<LossTotals>,
}

/// The stage-loss report.
#[derive(Debug, Clone)]
pub struct StageLoss {
    /// Every transition of every run, by run then stage order.
    pub transitions: Vec<Transition>,
    /// Stages of `--stage-order` that no run graded.
    pub unseen_stages: Vec<String>,
}

/// Measure what each run lost between consecutive stages of `order`. Each
/// (run, query) steps through the stages of `order` that graded it, so a
/// query (or a run) without `rerank` is checked from `retrieve` to `final`.
pub fn measure(
    grouped: &Grouped,
    labels: &LabelIndex,
    settings: &GradeSettings,
    order: &[String],
) -> StageLoss {
    let mut runs: Vec<&str> = grouped.pairs.iter().map(|p| &*p.run).collect();
    runs.dedup();
    let pair = |run: &str, stage: &str| {
        grouped
            .pairs
            .iter()
            .find(|p| &*p.run == run && &*p.stage == stage)
    };
    let n_queries = labels.queries().len() as QueryIdx;
    let mut transitions = Vec::new();
    for run in runs {
        let stages: Vec<&PairSlots> = order.iter().filter_map(|s| pair(run, s)).collect();
        let losses: Vec<(usize, usize, QueryLoss)> = (0..n_queries)
            .into_par_iter()
            .flat_map_iter(|query| query_losses(grouped, labels, settings, query, &stages))
            .collect();
        // Collected in query order; bucketed in stage order.
        let mut steps: BTreeMap<(usize, usize), Vec<QueryLoss>> = BTreeMap::new();
        for (from, to, loss) in losses {
            steps.entry((from, to)).or_default().push(loss);
        }
        transitions.extend(steps.into_iter().map(|((from, to), queries)| Transition {
            run: run.into(),
            from: stages[from].stage.clone(),
            to: stages[to].stage.clone(),
            totals: totals(labels, &queries),
            queries,
        }));
    }
    let unseen_stages = order
        .iter()
        .filter(|stage| !grouped.pairs.iter().any(|p| &*p.stage == stage.as_str()))
        .cloned()
        .collect();
    StageLoss {
        transitions,
        unseen_stages,
    }
}

/// What one query with relevant documents lost between each pair of its
/// consecutive graded stages (indices into `stages`).
fn query_losses(
    grouped: &Grouped,
    labels: &LabelIndex,
    settings: &GradeSettings,
    query: QueryIdx,
    stages: &[&PairSlots],
) -> Vec<(usize, usize, QueryLoss)> {
    if labels.queries()[query as usize].n_relevant == 0 {
        return Vec::new();
    }
    // Relevant documents found at any depth of any graded capture.
    let relevant_in = |pair: &PairSlots| -> Option<Vec<u32>> {
        let mut found: Vec<u32> = Vec::new();
        let mut graded = false;
        for capture in pair.graded_found(query, &grouped.store, settings) {
            graded = true;
            found.extend(
                capture
                    .iter()
                    .filter(|f| labels.is_relevant(f.doc))
                    .map(|f| f.doc),
            );
        }
        found.sort_unstable();
        found.dedup();
        graded.then_some(found)
    };
    let graded: Vec<(usize, Vec<u32>)> = stages
        .iter()
        .enumerate()
        .filter_map(|(i, pair)| relevant_in(pair).map(|found| (i, found)))
        .collect();
    graded
        .windows(2)
        .map(|step| {
            let ((from, before), (to, after)) = (&step[0], &step[1]);
            let mut lost: Vec<u32> = before
                .iter()
                .copied()
                .filter(|doc| after.binary_search(doc).is_err())
                .collect();
            lost.sort_by(|&a, &b| labels.doc_id(a).cmp(labels.doc_id(b)));
            let loss = QueryLoss {
                query,
                relevant_found: before.len() as u32,
                lost,
            };
            (*from, *to, loss)
        })
        .collect()
}

/// Sums over the grouping sets, in the order of aggregates.csv.
fn totals(labels: &LabelIndex, queries: &[QueryLoss]) -> Vec<LossTotals> {
    let mut sets: HashMap<SliceKey, LossTotals> = HashMap::new();
    for loss in queries {
        let q = &labels.queries()[loss.query as usize];
        for (task, language) in slice_keys(q.task, q.language) {
            let set = sets.entry((task, language)).or_insert(LossTotals {
                task,
                language,
                relevant_found: 0,
                lost: 0,
            });
            set.relevant_found += u64::from(loss.relevant_found);
            set.lost += loss.lost.len() as u64;
        }
    }
    let mut totals: Vec<LossTotals> = sets.into_values().collect();
    let name = |slice: u32| labels.slice_name(slice);
    totals.sort_by(|a, b| {
        slice_order((a.task, a.language), name).cmp(&slice_order((b.task, b.language), name))
    });
    totals
}
