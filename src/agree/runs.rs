//! The same logs graded under two answer keys: each run's mean under
//! each, and per metric and grouping set how alike the two keys order the
//! runs (Kendall's tau-b). A key can disagree on many pairs and still
//! pick the same winner; this is what decides whether it can stand in.

use std::collections::BTreeMap;

use super::tau::kendall_tau_b;
use crate::base::slices::ANY;
use crate::grade::graded::Graded;

/// One run's mean of one metric over one grouping set, under each key.
#[derive(Debug, Clone, PartialEq)]
pub struct RunMeans {
    /// The run.
    pub run: String,
    /// The stage.
    pub stage: String,
    /// The task, `*` for any.
    pub task: String,
    /// The language, `*` for any.
    pub language: String,
    /// The metric column, as in aggregates.csv.
    pub metric: String,
    /// The mean under the first key; `None` when no query counts there.
    pub mean_a: Option<f64>,
    /// The mean under the second key.
    pub mean_b: Option<f64>,
}

/// How alike the two keys order the runs on one metric and grouping set.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOrder {
    /// The stage.
    pub stage: String,
    /// The task, `*` for any.
    pub task: String,
    /// The language, `*` for any.
    pub language: String,
    /// The metric column.
    pub metric: String,
    /// Runs with a mean under both keys.
    pub runs: u64,
    /// Kendall's tau-b between the two orderings of those runs; `None`
    /// when undefined (fewer than two runs, or all alike under one key).
    pub kendall_tau: Option<f64>,
}

/// Both keys' view of the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RunsUnderBoth {
    /// Every run's means, by stage, grouping set and run.
    pub means: Vec<RunMeans>,
    /// Per stage, grouping set and metric, how alike the keys order the runs.
    pub orders: Vec<RunOrder>,
}

/// (stage, grouping set's level, task, language): grouping sets in
/// aggregates.csv's order within each stage.
type SetKey = (String, u8, String, String);

/// One (run, stage, grouping set)'s mean of each metric, in column order.
type Means = Vec<Option<f64>>;

/// Every (run, stage, grouping set)'s metric means under one key, by the
/// grouping set's names (each key names its own tasks and languages).
fn means_of(graded: &Graded) -> BTreeMap<(SetKey, String), Means> {
    let labels = &graded.labels;
    let width = graded.settings.n_scores();
    let mut means = BTreeMap::new();
    for pair in &graded.pairs {
        for aggregate in pair.aggregates.iter().filter(|a| a.split.is_none()) {
            let name = |slice: Option<u32>| slice.map_or(ANY, |s| labels.slice_name(s)).to_string();
            let level =
                u8::from(aggregate.task.is_some()) + 2 * u8::from(aggregate.language.is_some());
            let key = (
                pair.stage.to_string(),
                level,
                name(aggregate.task),
                name(aggregate.language),
            );
            let values = aggregate
                .means()
                .map_or(vec![None; width], |m| m.into_iter().map(Some).collect());
            means.insert((key, pair.run.to_string()), values);
        }
    }
    means
}

/// The runs of `a` and `b` (the same logs, graded with the same cutoffs
/// under each key) side by side.
pub fn runs_under_both(a: &Graded, b: &Graded) -> RunsUnderBoth {
    let metrics = a.settings.metric_columns();
    let (under_a, mut under_b) = (means_of(a), means_of(b));
    let mut joined: BTreeMap<(SetKey, String), (Means, Means)> = BTreeMap::new();
    for (key, values) in under_a {
        let other = under_b
            .remove(&key)
            .unwrap_or_else(|| vec![None; metrics.len()]);
        joined.insert(key, (values, other));
    }
    for (key, values) in under_b {
        joined.insert(key, (vec![None; metrics.len()], values));
    }
    let mut means = Vec::new();
    let mut by_set: BTreeMap<&SetKey, Vec<(&Means, &Means)>> = BTreeMap::new();
    for ((set, run), (values_a, values_b)) in &joined {
        by_set.entry(set).or_default().push((values_a, values_b));
        for (i, metric) in metrics.iter().enumerate() {
            means.push(RunMeans {
                run: run.clone(),
                stage: set.0.clone(),
                task: set.2.clone(),
                language: set.3.clone(),
                metric: metric.clone(),
                mean_a: values_a[i],
                mean_b: values_b[i],
            });
        }
    }
    let mut orders = Vec::new();
    for (set, runs) in by_set {
        for (i, metric) in metrics.iter().enumerate() {
            let pairs: Vec<(f64, f64)> = (runs.iter())
                .filter_map(|(values_a, values_b)| Some((values_a[i]?, values_b[i]?)))
                .collect();
            orders.push(RunOrder {
                stage: set.0.clone(),
                task: set.2.clone(),
                language: set.3.clone(),
                metric: metric.clone(),
                runs: pairs.len() as u64,
                kendall_tau: kendall_tau_b(&pairs),
            });
        }
    }
    RunsUnderBoth { means, orders }
}
