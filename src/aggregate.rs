//! Stage 5, aggregate: the rows of each (run, stage) are averaged over
//! grouping sets — overall, per task, per language, per task × language —
//! as plain (macro) means over the queries that count (SPEC §4, §5).

use hashbrown::HashMap;
use rayon::prelude::*;

use crate::group::{GradeSettings, QueryRow, Status};
use crate::labels::LabelIndex;

/// A grouping set: a task and a language, `None` meaning any (`*`).
pub type SliceKey = (Option<u32>, Option<u32>);

/// The four grouping sets a query of `task` and `language` belongs to:
/// overall, its task, its language, its task × language.
pub fn slice_keys(task: u32, language: u32) -> [SliceKey; 4] {
    [
        (None, None),
        (Some(task), None),
        (None, Some(language)),
        (Some(task), Some(language)),
    ]
}

/// A sort key that puts grouping sets in the order of aggregates.csv:
/// overall first, then each task, each language and each task × language,
/// each group by name (`name` turns a slice index into its name).
pub fn slice_order<'a>(
    (task, language): SliceKey,
    name: impl Fn(u32) -> &'a str,
) -> (u8, Option<&'a str>, Option<&'a str>) {
    let level = match (task.is_some(), language.is_some()) {
        (false, false) => 0,
        (true, false) => 1,
        (false, true) => 2,
        (true, true) => 3,
    };
    (level, task.map(&name), language.map(&name))
}

/// The means and counts of one grouping set.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// The task, or `None` for all.
    pub task: Option<u32>,
    /// The language, or `None` for all.
    pub language: Option<u32>,
    /// Labeled queries in the set.
    pub queries: u64,
    /// Queries per status: ok, missing, invalid, no_answer.
    pub statuses: [u64; 4],
    /// Queries counted in the metric means.
    pub counted: u64,
    /// Queries shown a result outside the user's allowed collections.
    pub leaks: u64,
    metric_sums: Vec<f64>,
    latencies: Vec<f64>,
    context_sum: f64,
    context_n: u64,
}

impl Aggregate {
    fn new((task, language): SliceKey, n_scores: usize) -> Self {
        Aggregate {
            task,
            language,
            queries: 0,
            statuses: [0; 4],
            counted: 0,
            leaks: 0,
            metric_sums: vec![0.0; n_scores],
            latencies: Vec::new(),
            context_sum: 0.0,
            context_n: 0,
        }
    }

    fn add(&mut self, row: &QueryRow, settings: &GradeSettings) {
        self.queries += 1;
        self.statuses[status_index(row.status)] += 1;
        if let (true, Some(scores)) = (settings.counts_in_means(row.status), &row.scores) {
            self.counted += 1;
            for (sum, value) in self.metric_sums.iter_mut().zip(scores.iter()) {
                *sum += value;
            }
        }
        self.leaks += u64::from(row.unauthorized.is_some_and(|n| n > 0.0));
        self.latencies.extend(row.latency_ms);
        if let Some(tokens) = row.context_tokens {
            self.context_sum += tokens;
            self.context_n += 1;
        }
    }

    /// The mean of every metric column, or `None` when no query counts.
    pub fn means(&self) -> Option<Vec<f64>> {
        (self.counted > 0).then(|| {
            self.metric_sums
                .iter()
                .map(|sum| sum / self.counted as f64)
                .collect()
        })
    }

    /// The p-th percentile (0–100) of the latencies, linearly interpolated
    /// between closest ranks (numpy's default), if any latency was recorded.
    pub fn latency_percentile(&self, p: f64) -> Option<f64> {
        percentile(&self.latencies, p)
    }

    /// The mean context size, if any was recorded.
    pub fn context_tokens_mean(&self) -> Option<f64> {
        (self.context_n > 0).then(|| self.context_sum / self.context_n as f64)
    }

    /// The count for one status.
    pub fn status_count(&self, status: Status) -> u64 {
        self.statuses[status_index(status)]
    }
}

fn status_index(status: Status) -> usize {
    match status {
        Status::Ok => 0,
        Status::Missing => 1,
        Status::Invalid => 2,
        Status::NoAnswer => 3,
    }
}

/// The p-th percentile (0–100) of sorted values, linearly interpolated
/// between closest ranks (numpy's default); `None` when there are none.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let position = p / 100.0 * last as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    let fraction = position - below as f64;
    Some(sorted[below] + (sorted[above] - sorted[below]) * fraction)
}

/// Gathers the rows of one (run, stage) into its grouping sets, a range of
/// rows at a time.
pub struct Aggregator<'a> {
    labels: &'a LabelIndex,
    settings: &'a GradeSettings,
    sets: HashMap<SliceKey, Aggregate>,
}

impl<'a> Aggregator<'a> {
    /// No rows yet.
    pub fn new(labels: &'a LabelIndex, settings: &'a GradeSettings) -> Self {
        Aggregator {
            labels,
            settings,
            sets: HashMap::new(),
        }
    }

    /// Count one row in the four grouping sets it belongs to.
    pub fn add(&mut self, row: &QueryRow) {
        let q = &self.labels.queries()[row.query as usize];
        for key in slice_keys(q.task, q.language) {
            let n_scores = self.settings.n_scores();
            self.sets
                .entry(key)
                .or_insert_with(|| Aggregate::new(key, n_scores))
                .add(row, self.settings);
        }
    }

    /// The aggregates: overall first, then each task, each language and
    /// each task × language, each group sorted by name.
    pub fn finish(self) -> Vec<Aggregate> {
        let labels = self.labels;
        let mut aggregates: Vec<Aggregate> = self.sets.into_values().collect();
        let name = |slice: u32| labels.slice_name(slice);
        aggregates.sort_by(|a, b| {
            slice_order((a.task, a.language), name).cmp(&slice_order((b.task, b.language), name))
        });
        // Values equal under total_cmp are the same bits, so an unstable
        // sort gives the same order as a stable one, without its scratch;
        // the overall set alone holds a latency per captured query.
        aggregates
            .par_iter_mut()
            .for_each(|agg| agg.latencies.sort_unstable_by(f64::total_cmp));
        aggregates
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let values = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert_eq!(percentile(&values, 50.0), Some(3.0));
        let p95 = percentile(&values, 95.0).unwrap();
        assert!((p95 - 8.8).abs() < 1e-12, "{p95}");
        assert_eq!(percentile(&values, 100.0), Some(10.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
