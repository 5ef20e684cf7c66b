//! One (run, stage, query) graded: its captures (those the repeat policy
//! keeps) become one row of per_query.csv, every metric at every cutoff
//! averaged over them, with its status and the evidence it missed.

use crate::base::measures::Measure;
use crate::base::metrics::{self, Cutoff, Hit, Metric};
use crate::base::numbers;
use crate::base::options::{MissingPolicy, RepeatPolicy};
use crate::base::schema::{self, Status};
use crate::base::slices::log_slice_value;
use crate::grade::capture::{Capture, Found};
use crate::labels::{LabelIndex, QueryIdx};

/// Where a capture's judged documents are.
pub type FoundOf<'a> = &'a dyn Fn(&Capture) -> &'a [Found];

/// How rows are graded.
#[derive(Debug, Clone)]
pub struct GradeSettings {
    /// Cutoffs, in the order given.
    pub ks: Vec<Cutoff>,
    /// The measures asked for by name (`--measures`), in column order;
    /// `None` grades the six default metrics at every cutoff, and
    /// `judged@k` at each after them.
    pub measures: Option<Vec<Measure>>,
    /// What a missing query scores.
    pub missing: MissingPolicy,
    /// What several captures of one key mean.
    pub repeats: RepeatPolicy,
    /// The log fields the rows are sliced by, as given: the names of
    /// their columns.
    pub slice_by: Vec<String>,
}

impl GradeSettings {
    /// Whether a row with this status counts in the metric means.
    pub fn counts_in_means(&self, status: Status) -> bool {
        match status {
            Status::Ok | Status::Invalid => true,
            Status::Missing => self.missing == MissingPolicy::Fail,
            Status::NoAnswer => false,
        }
    }

    /// Whether `row` would count in the means if its key answered its
    /// query: a `no_answer` row counts like the row its captures would
    /// make (`missing` without one), any other row as its status says.
    /// Calibration averages over these rows, the answered ones, whichever
    /// key finds the answer ([`crate::base::ppi`]).
    pub fn counts_if_answered(&self, row: &QueryRow) -> bool {
        match (row.status, row.captures) {
            (Status::NoAnswer, 0) => self.counts_in_means(Status::Missing),
            (Status::NoAnswer, _) => true,
            (status, _) => self.counts_in_means(status),
        }
    }

    /// Metric columns per row: six per cutoff, or one per measure asked.
    pub fn n_scores(&self) -> usize {
        match &self.measures {
            Some(measures) => measures.len(),
            None => self.ks.len() * Metric::ALL.len(),
        }
    }

    /// The names of the measures asked for, as their columns are named;
    /// `None` for the default metrics.
    pub fn asked(&self) -> Option<Vec<String>> {
        (self.measures.as_ref()).map(|measures| measures.iter().map(ToString::to_string).collect())
    }

    /// The metric columns' names, in order.
    pub fn metric_columns(&self) -> Vec<String> {
        schema::metric_names(&self.ks, self.asked().as_deref())
    }

    /// The cutoffs of the `judged@k` columns that follow the others
    /// ([`schema::judged_cutoffs`]).
    pub fn judged_cutoffs(&self) -> &[Cutoff] {
        schema::judged_cutoffs(&self.ks, self.measures.as_ref().map(|_| &[][..]))
    }

    /// Where a row's scores hold recall at the deepest cutoff: the
    /// evidence the answer could draw on; `None` when measures were asked
    /// for by name.
    pub fn deepest_recall(&self) -> Option<usize> {
        let deepest = (0..self.ks.len()).max_by_key(|&i| self.ks[i]).unwrap_or(0);
        self.measures
            .is_none()
            .then_some(deepest * Metric::ALL.len())
    }
}

/// One labeled query in one (run, stage): a row of per_query.csv.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryRow {
    /// The labeled query.
    pub query: QueryIdx,
    /// How it fared.
    pub status: Status,
    /// Captures seen for the key, rejected ones included.
    pub captures: u32,
    /// Results in the graded ranking (mean under `--repeats mean`).
    pub n_results: Option<f64>,
    /// Rank of the first relevant document at any depth (best over captures).
    pub first_rel_rank: Option<u32>,
    /// Latency in milliseconds (mean over the graded captures that have one).
    pub latency_ms: Option<f64>,
    /// Context size in tokens (mean over the graded captures that have one).
    pub context_tokens: Option<f64>,
    /// Results outside the user's allowed collections (mean over the
    /// graded captures).
    pub unauthorized: Option<f64>,
    /// Six metrics per cutoff, cutoffs in the order given; `None` where no
    /// value exists (no-answer, or missing under `--missing skip`).
    pub scores: Option<Box<[f64]>>,
    /// `judged@k` per cutoff, in the order given; `None` where `scores` is.
    pub judged: Option<Box<[f64]>>,
    /// Whether the answer built on the graded captures was acceptable, when
    /// they say: under `--repeats mean`, ok only if every capture that says
    /// was ok.
    pub answer_ok: Option<bool>,
    /// Relevant documents not in the top k of the largest cutoff (in any
    /// graded capture), as label doc indices sorted by id.
    pub missed: Vec<u32>,
    /// The query's value of each field sliced by, in the order of
    /// [`GradeSettings::slice_by`] ([`log_slice_value`]).
    pub slices: Box<[Box<str>]>,
}

/// The row of `query`, of `total` captures (rejected ones included) of
/// which `graded` are graded, in origin order; and the records behind the
/// graded captures.
pub fn row(
    labels: &LabelIndex,
    query: QueryIdx,
    total: u32,
    graded: &[&Capture],
    found: FoundOf,
    settings: &GradeSettings,
) -> (QueryRow, u64) {
    let q = &labels.queries()[query as usize];
    let status = if !q.has_answer() {
        Status::NoAnswer
    } else if !graded.is_empty() {
        Status::Ok
    } else if total > 0 {
        Status::Invalid
    } else {
        Status::Missing
    };
    let depth = settings.ks.iter().map(|k| k.depth()).max().unwrap_or(0);
    let zeros = |n: usize| Some(vec![0.0; n].into_boxed_slice());
    let (scores, judged) = match status {
        Status::Ok => (
            Some(mean_scores(labels, query, graded, found, settings)),
            Some(mean_judged(graded, found, settings)),
        ),
        Status::Invalid => (
            zeros(settings.n_scores()),
            zeros(settings.judged_cutoffs().len()),
        ),
        Status::Missing if settings.counts_in_means(status) => (
            zeros(settings.n_scores()),
            zeros(settings.judged_cutoffs().len()),
        ),
        Status::Missing | Status::NoAnswer => (None, None),
    };
    let missed = if status == Status::NoAnswer {
        Vec::new()
    } else {
        missed_docs(labels, query, graded, found, depth)
    };
    let row = QueryRow {
        query,
        status,
        captures: total,
        n_results: mean_of(graded.iter().map(|c| Some(c.n_results as f64))),
        first_rel_rank: graded
            .iter()
            .filter_map(|&c| first_relevant(labels, found(c)))
            .min(),
        latency_ms: mean_of(graded.iter().map(|c| c.latency_ms)),
        context_tokens: mean_of(graded.iter().map(|c| c.context_tokens)),
        unauthorized: mean_of(graded.iter().map(|c| Some(f64::from(c.unauthorized)))),
        scores,
        judged,
        answer_ok: graded
            .iter()
            .filter_map(|c| c.answer_ok)
            .reduce(|all_ok, ok| all_ok && ok),
        missed,
        slices: (0..settings.slice_by.len())
            .map(|field| {
                let values = graded.iter().map(|c| c.slices.get(field)?.as_deref());
                log_slice_value(values).into()
            })
            .collect(),
    };
    let graded_records = graded.iter().map(|c| u64::from(c.records)).sum();
    (row, graded_records)
}

/// The mean of the present values, if any.
fn mean_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    numbers::mean(values.flatten())
}

/// The judged documents of a capture with a positive grade, the only ones
/// the metrics see, with their grades.
fn hits<'a>(labels: &'a LabelIndex, found: &'a [Found]) -> impl Iterator<Item = Hit> + 'a {
    found
        .iter()
        .map(|f| Hit {
            rank: f.rank,
            grade: labels.grade(f.doc),
        })
        .filter(|hit| hit.grade > 0)
}

fn first_relevant(labels: &LabelIndex, found: &[Found]) -> Option<u32> {
    found
        .iter()
        .find(|f| labels.is_relevant(f.doc))
        .map(|f| f.rank)
}

/// `judged@k` at every cutoff, averaged over the graded captures.
fn mean_judged(captures: &[&Capture], found: FoundOf, settings: &GradeSettings) -> Box<[f64]> {
    let judged_of = |capture: &Capture| -> Vec<f64> {
        let ranks = || found(capture).iter().map(|f| f.rank);
        (settings.judged_cutoffs().iter())
            .map(|&k| metrics::judged(ranks(), k, capture.n_results as usize))
            .collect()
    };
    mean_per_column(captures, settings.judged_cutoffs().len(), judged_of)
}

/// The mean of each column of the values `of` gives each capture; each
/// column sums its values in one order, whatever order the captures came in.
fn mean_per_column(
    captures: &[&Capture],
    columns: usize,
    of: impl Fn(&Capture) -> Vec<f64>,
) -> Box<[f64]> {
    if let [capture] = captures {
        return of(capture).into_boxed_slice();
    }
    let all: Vec<Vec<f64>> = captures.iter().map(|c| of(c)).collect();
    (0..columns)
        .map(|i| numbers::mean(all.iter().map(|values| values[i])).unwrap_or(0.0))
        .collect()
}

/// Every metric at every cutoff, averaged over the graded captures (one,
/// except under `--repeats mean`).
fn mean_scores(
    labels: &LabelIndex,
    query: QueryIdx,
    captures: &[&Capture],
    found: FoundOf,
    settings: &GradeSettings,
) -> Box<[f64]> {
    let judgments = labels.judgments(query);
    let scores_of = |capture: &Capture| -> Vec<f64> {
        let found = found(capture);
        let retrieved = capture.n_results as usize;
        if let Some(measures) = &settings.measures {
            let judged: Vec<Hit> = (found.iter())
                .map(|f| Hit {
                    rank: f.rank,
                    grade: labels.grade(f.doc),
                })
                .collect();
            let value = |measure: &Measure| measure.value(&judged, &judgments, retrieved);
            return measures.iter().map(value).collect();
        }
        settings
            .ks
            .iter()
            .flat_map(|&k| metrics::score(hits(labels, found), &judgments, k, retrieved))
            .collect()
    };
    mean_per_column(captures, settings.n_scores(), scores_of)
}

/// Relevant documents that some graded capture did not rank within `depth`
/// (all of them when nothing was graded), sorted by id.
fn missed_docs(
    labels: &LabelIndex,
    query: QueryIdx,
    captures: &[&Capture],
    found: FoundOf,
    depth: usize,
) -> Vec<u32> {
    let mut missed: Vec<u32> = labels
        .relevant_docs(query)
        .filter(|&doc| {
            captures.is_empty()
                || captures.iter().any(|c| {
                    !found(c)
                        .iter()
                        .any(|f| f.doc == doc && f.rank as usize <= depth)
                })
        })
        .collect();
    missed.sort_by(|&a, &b| labels.doc_id(a).cmp(labels.doc_id(b)));
    missed
}
