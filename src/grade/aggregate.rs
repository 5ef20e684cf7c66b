//! Stage 5, grade and aggregate: every (run, stage) is graded a range of
//! queries at a time, its rows handed to a [`RowSink`] as they come, and
//! averaged over grouping sets — overall, per task, per language, per task
//! × language — as plain (macro) means over the queries that count; with
//! a human key to calibrate against, each mean also gets its calibrated
//! estimate ([`crate::base::ppi`]).

use anyhow::Result;
use hashbrown::HashMap;
use rayon::prelude::*;

use crate::base::intervals::Z_975;
use crate::base::numbers::{percentile, FiniteSum};
use crate::base::ppi::{Calibrated, PpiSums};
use crate::base::schema::Status;
use crate::base::slices::{split_slice_keys, split_slice_order, SplitSliceKey};
use crate::grade::calibrate::{HumanScores, PairScores};
use crate::grade::group::Grouped;
use crate::grade::score::{GradeSettings, QueryRow};
use crate::labels::LabelIndex;

/// The means and counts of one grouping set.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// The split, or `None` for all.
    pub split: Option<u32>,
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
    /// How the set's answers split by their evidence.
    pub attribution: Attribution,
    metric_sums: Vec<f64>,
    /// Per metric column, the running mean and sum of squared deviations
    /// of the counted values (Welford's), for the spread of each mean: a
    /// set of equal values has none, exactly.
    metric_spreads: Vec<(f64, f64)>,
    judged_sums: Vec<f64>,
    latencies: Vec<f64>,
    context: FiniteSum,
    /// Per metric column, when calibrating; empty otherwise.
    calibration: Vec<PpiSums>,
}

impl Aggregate {
    fn new(
        (split, (task, language)): SplitSliceKey,
        settings: &GradeSettings,
        calibrating: bool,
    ) -> Self {
        Aggregate {
            split,
            task,
            language,
            queries: 0,
            statuses: [0; 4],
            counted: 0,
            leaks: 0,
            attribution: Attribution::default(),
            metric_sums: vec![0.0; settings.n_scores()],
            metric_spreads: vec![(0.0, 0.0); settings.n_scores()],
            judged_sums: vec![0.0; settings.judged_cutoffs().len()],
            latencies: Vec::new(),
            context: FiniteSum::default(),
            calibration: match calibrating {
                true => vec![PpiSums::default(); settings.n_scores()],
                false => Vec::new(),
            },
        }
    }

    /// Count `row`, whose query scored `human` under the human key when
    /// calibrating and that key grades it (`Some(None)` when it finds no
    /// answer).
    fn add(&mut self, row: &QueryRow, human: Option<Option<&[f64]>>, settings: &GradeSettings) {
        self.queries += 1;
        self.statuses[status_index(row.status)] += 1;
        let counted = row
            .scores
            .as_ref()
            .filter(|_| settings.counts_in_means(row.status));
        if let Some(scores) = counted {
            self.counted += 1;
            let n = self.counted as f64;
            for ((sum, (mean, squares)), &value) in (self.metric_sums.iter_mut())
                .zip(self.metric_spreads.iter_mut())
                .zip(scores.iter())
            {
                *sum += value;
                let delta = value - *mean;
                *mean += delta / n;
                *squares += delta * (value - *mean);
            }
            for (sum, value) in self.judged_sums.iter_mut().zip(row.judged.iter().flatten()) {
                *sum += value;
            }
        }
        if settings.counts_if_answered(row) {
            for (i, sums) in self.calibration.iter_mut().enumerate() {
                sums.add(counted.map(|f| f[i]), human.map(|y| y.map(|y| y[i])));
            }
        }
        if let (Status::Ok, Some(ok), Some(scores)) = (row.status, row.answer_ok, &row.scores) {
            // Every relevant document within the deepest cutoff; measured
            // by its recall when graded, else by the evidence it missed.
            let all_evidence = match settings.deepest_recall() {
                Some(recall) => scores[recall] >= 1.0,
                None => row.missed.is_empty(),
            };
            self.attribution.add(ok, all_evidence);
        }
        self.leaks += u64::from(row.unauthorized.is_some_and(|n| n > 0.0));
        self.latencies.extend(row.latency_ms);
        if let Some(tokens) = row.context_tokens {
            self.context.add(tokens);
        }
    }

    /// The mean of every metric column, or `None` when no query counts.
    pub fn means(&self) -> Option<Vec<f64>> {
        self.means_of(&self.metric_sums)
    }

    /// The half-width of each metric mean's 95% interval, `z·s/√n` (z the
    /// normal quantile [`Z_975`], s the sample standard deviation of the
    /// counted values), or `None` with fewer than two counted queries: how
    /// precisely the set's queries pin its means down.
    pub fn half_widths(&self) -> Option<Vec<f64>> {
        let n = self.counted as f64;
        (self.counted >= 2).then(|| {
            (self.metric_spreads.iter())
                .map(|&(_, squares)| Z_975 * (squares / (n - 1.0) / n).sqrt())
                .collect()
        })
    }

    /// The mean `judged@k` at every cutoff, or `None` when no query counts.
    pub fn judged_means(&self) -> Option<Vec<f64>> {
        self.means_of(&self.judged_sums)
    }

    /// The queries of the calibration (those counted in the means, and
    /// those that would count but for having no answer in the judge's
    /// key) that the human key grades too, when calibrating.
    pub fn human_queries(&self) -> Option<u64> {
        self.calibration.first().map(PpiSums::human_queries)
    }

    /// Each metric column's calibrated mean (`None` with too few
    /// human-graded queries); nothing when not calibrating.
    pub fn calibrated(&self) -> impl Iterator<Item = Option<Calibrated>> + '_ {
        self.calibration.iter().map(PpiSums::calibrated)
    }

    fn means_of(&self, sums: &[f64]) -> Option<Vec<f64>> {
        (self.counted > 0).then(|| sums.iter().map(|sum| sum / self.counted as f64).collect())
    }

    /// The p-th percentile (0–100) of the latencies, linearly interpolated
    /// between closest ranks (numpy's default), if any latency was recorded.
    pub fn latency_percentile(&self, p: f64) -> Option<f64> {
        percentile(&self.latencies, p)
    }

    /// The mean context size, if any was recorded.
    pub fn context_tokens_mean(&self) -> Option<f64> {
        self.context.mean()
    }

    /// The grouping set: split, task and language.
    pub fn key(&self) -> SplitSliceKey {
        (self.split, (self.task, self.language))
    }

    /// The count for one status.
    pub fn status_count(&self, status: Status) -> u64 {
        self.statuses[status_index(status)]
    }
}

/// How a grouping set's answered queries split by their evidence: was a
/// wrong answer a retrieval failure (evidence missing from the top k of
/// the deepest cutoff) or a generation failure (all of it there)?
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attribution {
    /// Graded queries whose captures say whether the answer was acceptable.
    pub answered: u64,
    /// Of those, the acceptable answers.
    pub answer_ok: u64,
    /// Wrong answers whose evidence was not all retrieved (recall < 1).
    pub wrong_missing_evidence: u64,
    /// Wrong answers though all their evidence was retrieved (recall = 1).
    pub wrong_with_evidence: u64,
    /// Acceptable answers without all their evidence.
    pub ok_missing_evidence: u64,
}

impl Attribution {
    fn add(&mut self, ok: bool, all_evidence: bool) {
        self.answered += 1;
        self.answer_ok += u64::from(ok);
        self.wrong_missing_evidence += u64::from(!ok && !all_evidence);
        self.wrong_with_evidence += u64::from(!ok && all_evidence);
        self.ok_missing_evidence += u64::from(ok && !all_evidence);
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

/// The set of the queries of one value of one log field sliced by
/// (`slice_by`), over every task, language and split.
#[derive(Debug, Clone, PartialEq)]
pub struct LogSlice {
    /// The field, as its place in [`GradeSettings::slice_by`].
    pub field: usize,
    /// Its value ([`crate::base::slices::log_slice_value`]).
    pub value: Box<str>,
    /// The set's means and counts; its key is the overall one.
    pub aggregate: Aggregate,
}

/// Gathers the rows of one (run, stage) into its grouping sets, a range of
/// rows at a time.
pub struct Aggregator<'a> {
    labels: &'a LabelIndex,
    settings: &'a GradeSettings,
    /// The (run, stage)'s values under the human key, when calibrating.
    human: Option<&'a PairScores>,
    sets: HashMap<SplitSliceKey, Aggregate>,
    /// Per field sliced by, the set of each of its values.
    log_sets: Vec<HashMap<Box<str>, Aggregate>>,
}

impl<'a> Aggregator<'a> {
    /// No rows yet; `human` holds the values to calibrate against, if any.
    pub fn new(
        labels: &'a LabelIndex,
        settings: &'a GradeSettings,
        human: Option<&'a PairScores>,
    ) -> Self {
        Aggregator {
            labels,
            settings,
            human,
            sets: HashMap::new(),
            log_sets: vec![HashMap::new(); settings.slice_by.len()],
        }
    }

    /// Count one row in the grouping sets it belongs to.
    pub fn add(&mut self, row: &QueryRow) {
        let q = &self.labels.queries()[row.query as usize];
        let split = self.labels.split_of(row.query);
        let human = (self.human)
            .and_then(|pair| pair.get(&row.query))
            .map(Option::as_deref);
        for key in split_slice_keys(q.task, q.language, split) {
            self.sets
                .entry(key)
                .or_insert_with(|| Aggregate::new(key, self.settings, self.human.is_some()))
                .add(row, human, self.settings);
        }
        for (sets, value) in self.log_sets.iter_mut().zip(row.slices.iter()) {
            sets.entry_ref(value)
                .or_insert_with(|| Aggregate::new(OVERALL, self.settings, self.human.is_some()))
                .add(row, human, self.settings);
        }
    }

    /// The aggregates: overall first, then each task, each language and
    /// each task × language, each group sorted by name; then the same
    /// within each split, splits by name. Then the sets of the log fields
    /// sliced by, field by field in the order given, each field's values
    /// in byte order.
    pub fn finish(self) -> (Vec<Aggregate>, Vec<LogSlice>) {
        let labels = self.labels;
        let mut aggregates: Vec<Aggregate> = self.sets.into_values().collect();
        let name = |slice: u32| labels.slice_name(slice);
        aggregates.sort_by_cached_key(|a| split_slice_order(a.key(), name));
        let mut log_slices: Vec<LogSlice> = (self.log_sets.into_iter().enumerate())
            .flat_map(|(field, sets)| {
                (sets.into_iter()).map(move |(value, aggregate)| LogSlice {
                    field,
                    value,
                    aggregate,
                })
            })
            .collect();
        log_slices.sort_unstable_by(|a, b| (a.field, &a.value).cmp(&(b.field, &b.value)));
        // Values equal under total_cmp are the same bits, so an unstable
        // sort gives the same order as a stable one, without its scratch;
        // the overall set alone holds a latency per captured query.
        (aggregates.par_iter_mut())
            .chain(log_slices.par_iter_mut().map(|slice| &mut slice.aggregate))
            .for_each(|agg| agg.latencies.sort_unstable_by(f64::total_cmp));
        (aggregates, log_slices)
    }
}

/// The grouping set of every query: all splits, tasks and languages.
const OVERALL: SplitSliceKey = (None, (None, None));

/// The aggregates of one (run, stage).
pub struct PairAggregates {
    /// The run.
    pub run: Box<str>,
    /// The stage.
    pub stage: Box<str>,
    /// Overall, per task, per language, per task × language.
    pub aggregates: Vec<Aggregate>,
    /// The sets of the log fields sliced by, apart: a reader of
    /// `aggregates` that knows nothing of them cannot take one for the
    /// overall set.
    pub log_slices: Vec<LogSlice>,
}

/// What grading every (run, stage) leaves besides per_query.csv.
pub struct GradedPairs {
    /// The aggregates of each (run, stage).
    pub aggregates: Vec<PairAggregates>,
    /// Rows with status ok.
    pub ok_rows: u64,
    /// Captures beyond the first of a (run, stage, query).
    pub repeats: u64,
    /// Records behind the graded captures.
    pub graded_records: u64,
}

/// Where graded rows go as they come, besides the aggregates: to
/// per_query.csv and the report's figures, or into a caller's memory.
/// Rows reach it in query order, one (run, stage) after another.
pub trait RowSink: Send {
    /// A (run, stage) of `rows` rows begins.
    fn begin_pair(&mut self, run: &str, stage: &str, rows: usize);

    /// The next rows of the (run, stage) begun last.
    ///
    /// # Errors
    /// The rows cannot be kept (an output cannot be written).
    fn rows(&mut self, run: &str, stage: &str, rows: &[QueryRow]) -> Result<()>;
}

/// Grade each (run, stage) a range of queries at a time, handing its rows
/// to `sink` (when there is one) and gathering its aggregates, calibrated
/// against `human` when given, so that rows never pile up here.
///
/// # Errors
/// The sink failed to keep rows.
pub fn grade_pairs(
    grouped: Grouped,
    labels: &LabelIndex,
    settings: &GradeSettings,
    mut sink: Option<&mut dyn RowSink>,
    human: Option<&HumanScores>,
) -> Result<GradedPairs> {
    const QUERIES_AT_A_TIME: usize = 1 << 14;
    let mut graded = GradedPairs {
        aggregates: Vec::new(),
        ok_rows: 0,
        repeats: 0,
        graded_records: 0,
    };
    // A (run, stage) the human key saw no capture of has no human values.
    let none_graded = PairScores::new();
    for pair in grouped.pairs {
        let human = human.map(|h| h.pair(&pair.run, &pair.stage).unwrap_or(&none_graded));
        let mut aggregator = Aggregator::new(labels, settings, human);
        if let Some(sink) = &mut sink {
            sink.begin_pair(&pair.run, &pair.stage, pair.n_queries());
        }
        let n = pair.n_queries();
        for start in (0..n).step_by(QUERIES_AT_A_TIME) {
            let range = start..n.min(start + QUERIES_AT_A_TIME);
            let chunk = pair.grade(range, &grouped.store, labels, settings);
            // The rows are kept while they are counted: the sums run in
            // query order, so the means do not depend on the thread count.
            let (kept, ()) = rayon::join(
                || match &mut sink {
                    Some(sink) => sink.rows(&pair.run, &pair.stage, &chunk.rows),
                    None => Ok(()),
                },
                || {
                    for row in &chunk.rows {
                        aggregator.add(row);
                        graded.ok_rows += u64::from(row.status == Status::Ok);
                        graded.repeats += u64::from(row.captures.saturating_sub(1));
                    }
                },
            );
            kept?;
            graded.graded_records += chunk.graded_records;
        }
        let (aggregates, log_slices) = aggregator.finish();
        graded.aggregates.push(PairAggregates {
            run: pair.run,
            stage: pair.stage,
            aggregates,
            log_slices,
        });
    }
    Ok(graded)
}
