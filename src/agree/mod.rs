//! Two answer keys compared on the (query, document) pairs both judge
//! (docs/guide.md, "How far two answer keys agree"): how many pairs each
//! key judges, the grade confusion matrix, Cohen's kappa on relevant or
//! not, kappa on grades (linear-weighted, unweighted and
//! quadratic-weighted) and Krippendorff's ordinal alpha, overall and per
//! grouping set,
//! and the pairs the keys grade differently, those of the queries whose
//! relevant documents they change most first.
//!
//! With logs, [`runs`] sets the runs' means under each key side by side.
//!
//! Grouping sets are the first key's (its task and language); the grade
//! categories are every grade either key gives a pair both judge, in
//! order, the same for every grouping set.

mod runs;
mod tau;

use std::collections::BTreeMap;

pub use crate::base::kappa::{cohen_kappa, krippendorff_alpha_ordinal, Weights};
pub use runs::{runs_under_both, RunMeans, RunOrder, RunsUnderBoth};

use crate::base::schema::KeyOverlap;
use crate::base::slices::{repeating, slice_keys, slice_order, SliceKey, ANY};
use crate::labels::{id_hash, LabelIndex, QueryIdx};

/// How two answer keys agree.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    /// The queries and pairs each key labels.
    pub overlap: KeyOverlap,
    /// The grade categories of the confusion matrix, in order.
    pub grades: Vec<i64>,
    /// Pairs both judge, by the first key's grade (row) and the second's
    /// (column), both indices into `grades`.
    pub confusion: Vec<Vec<u64>>,
    /// Agreement per grouping set, overall first, in aggregates.csv's order.
    pub slices: Vec<SliceAgreement>,
    /// The pairs both judge with different grades, those of the queries
    /// whose recall the keys can move most first, then by query and
    /// document id.
    pub disagreements: Vec<Disagreement>,
}

impl Agreement {
    /// The grouping sets as people read them: each set of queries once, a
    /// set that holds the same queries as a broader one (the task `(none)`
    /// of keys that name no task) left out; agreement_slices.csv keeps
    /// every set.
    pub fn distinct_slices(&self) -> impl Iterator<Item = &SliceAgreement> {
        let sets: Vec<([&str; 3], u64)> = (self.slices.iter())
            .map(|s| ([ANY, s.task.as_str(), s.language.as_str()], s.queries))
            .collect();
        let repeats = repeating(&sets);
        (self.slices.iter().zip(repeats))
            .filter(|(_, repeats)| !repeats)
            .map(|(slice, _)| slice)
    }
}

/// How the keys agree on the queries of one grouping set.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceAgreement {
    /// The task, `*` for any.
    pub task: String,
    /// The language, `*` for any.
    pub language: String,
    /// Queries both keys label.
    pub queries: u64,
    /// Pairs both judge.
    pub pairs: u64,
    /// Pairs both grade alike.
    pub same_grade: u64,
    /// Pairs both call relevant, or both not.
    pub same_relevance: u64,
    /// Cohen's kappa on relevant or not; `None` when undefined.
    pub relevance_kappa: Option<f64>,
    /// Linear-weighted kappa on the grades; `None` when undefined.
    pub grade_kappa: Option<f64>,
    /// Unweighted kappa on the grades, each grade a category of its own:
    /// what LLM-judge studies rank judges by; `None` when undefined.
    pub grade_kappa_unweighted: Option<f64>,
    /// Quadratic-weighted kappa on the grades; `None` when undefined.
    pub grade_kappa_quadratic: Option<f64>,
    /// Krippendorff's alpha on the grades as ordered categories; `None`
    /// when undefined.
    pub grade_alpha_ordinal: Option<f64>,
}

/// A pair both keys judge, graded differently.
#[derive(Debug, Clone, PartialEq)]
pub struct Disagreement {
    /// The query.
    pub query_id: String,
    /// The document.
    pub doc_id: String,
    /// The query's task in the first key.
    pub task: String,
    /// The query's language in the first key.
    pub language: String,
    /// The first key's grade.
    pub grade_a: i64,
    /// The second key's grade.
    pub grade_b: i64,
    /// Whether the first key counts the document relevant.
    pub relevant_a: bool,
    /// Whether the second key counts it relevant.
    pub relevant_b: bool,
    /// The most the query's recall can differ between the two keys, for
    /// any ranking (at a cutoff deep enough to hold its documents): how far
    /// the disagreement can move the query's metrics. 1 when only one key
    /// has a relevant document for the query, 0 when neither has.
    pub recall_shift: f64,
}

/// The pairs of one grouping set, as (first grade, second grade) counts.
type PairCounts = BTreeMap<(i64, i64), u64>;

/// Compare the keys `a` and `b` (each counting a document relevant from
/// its own `--min-rel`).
pub fn agreement(a: &LabelIndex, b: &LabelIndex) -> Agreement {
    let mut counts = Agreement {
        overlap: KeyOverlap::default(),
        grades: Vec::new(),
        confusion: Vec::new(),
        slices: Vec::new(),
        disagreements: Vec::new(),
    };
    let mut by_slice: BTreeMap<SliceKey, (u64, PairCounts)> = BTreeMap::new();
    for query_a in 0..a.queries().len() as QueryIdx {
        let judged_a = a.every_judged_doc(query_a);
        let Some(query_b) = b.find_query(a.query_id(query_a).as_bytes()) else {
            counts.overlap.queries_a_only += 1;
            counts.overlap.pairs_a_only += judged_a.len() as u64;
            continue;
        };
        counts.overlap.queries_both += 1;
        let pairs = judged_pairs(a, query_a, b, query_b);
        counts.overlap.pairs_a_only += judged_a.len() as u64 - pairs.len() as u64;
        counts.overlap.pairs_b_only +=
            b.every_judged_doc(query_b).len() as u64 - pairs.len() as u64;
        counts.overlap.pairs_both += pairs.len() as u64;
        let labeled = &a.queries()[query_a as usize];
        for key in slice_keys(labeled.task, labeled.language) {
            let (queries, grades) = by_slice.entry(key).or_default();
            *queries += 1;
            for pair in &pairs {
                *grades
                    .entry((a.grade(pair.doc_a), b.grade(pair.doc_b)))
                    .or_default() += 1;
            }
        }
        counts
            .disagreements
            .extend(disagreements(a, query_a, b, query_b, &pairs));
    }
    counts.overlap.queries_b_only = b.queries().len() as u64 - counts.overlap.queries_both;
    counts.overlap.pairs_b_only += (0..b.queries().len() as QueryIdx)
        .filter(|&query_b| a.find_query(b.query_id(query_b).as_bytes()).is_none())
        .map(|query_b| b.every_judged_doc(query_b).len() as u64)
        .sum::<u64>();

    let overall = by_slice
        .get(&(None, None))
        .map(|(_, g)| g.clone())
        .unwrap_or_default();
    counts.grades = overall.keys().flat_map(|&(ga, gb)| [ga, gb]).collect();
    counts.grades.sort_unstable();
    counts.grades.dedup();
    counts.confusion = confusion(&overall, &counts.grades);
    let mut slices: Vec<(SliceKey, (u64, PairCounts))> = by_slice.into_iter().collect();
    slices.sort_by(|x, y| {
        slice_order(x.0, |s| a.slice_name(s)).cmp(&slice_order(y.0, |s| a.slice_name(s)))
    });
    counts.slices = (slices.into_iter())
        .map(|((task, language), (queries, grades))| {
            let name = |slice: Option<u32>| slice.map_or(ANY, |s| a.slice_name(s)).to_string();
            slice_agreement(
                name(task),
                name(language),
                queries,
                &grades,
                &counts.grades,
                a,
                b,
            )
        })
        .collect();
    counts.disagreements.sort_by(|x, y| {
        (y.recall_shift.total_cmp(&x.recall_shift))
            .then_with(|| x.query_id.cmp(&y.query_id))
            .then_with(|| x.doc_id.cmp(&y.doc_id))
    });
    counts
}

/// A document both keys judge for one query: its index in each.
struct JudgedPair {
    doc_a: u32,
    doc_b: u32,
}

/// The documents both keys judge for a query, in the first key's order.
fn judged_pairs(
    a: &LabelIndex,
    query_a: QueryIdx,
    b: &LabelIndex,
    query_b: QueryIdx,
) -> Vec<JudgedPair> {
    a.every_judged_doc(query_a)
        .filter_map(|doc_a| {
            let id = a.doc_id(doc_a).as_bytes();
            let doc_b = b.find_doc(query_b, id, id_hash(id))?;
            Some(JudgedPair { doc_a, doc_b })
        })
        .collect()
}

/// The most a query's recall can differ between the keys. A ranking
/// holding `a_only` of the documents only the first key calls relevant and
/// `common` of those both call relevant, among `n_a` and `n_b` relevant
/// under each, scores (a_only + common) / n_a under the first and common /
/// n_b under the second: the difference is largest when the ranking holds
/// every document that only the first key counts, and the common ones if
/// they weigh more under the first key (n_a < n_b); and the other way
/// round. Computed on whole numbers, then divided once.
fn recall_shift(n_a: u64, n_b: u64, common: u64) -> f64 {
    match (n_a, n_b) {
        (0, 0) => 0.0,
        (0, _) | (_, 0) => 1.0,
        _ => {
            let toward =
                |n: u64, other: u64| (n - common) * other + common * other.saturating_sub(n);
            toward(n_a, n_b).max(toward(n_b, n_a)) as f64 / (n_a * n_b) as f64
        }
    }
}

/// The pairs of one query graded differently, with the query's recall shift.
fn disagreements(
    a: &LabelIndex,
    query_a: QueryIdx,
    b: &LabelIndex,
    query_b: QueryIdx,
    pairs: &[JudgedPair],
) -> Vec<Disagreement> {
    let n_a = a.relevant_docs(query_a).count() as u64;
    let n_b = b.relevant_docs(query_b).count() as u64;
    let common = (pairs.iter())
        .filter(|p| a.is_relevant(p.doc_a) && b.is_relevant(p.doc_b))
        .count() as u64;
    let recall_shift = recall_shift(n_a, n_b, common);
    let labeled = &a.queries()[query_a as usize];
    (pairs.iter())
        .filter(|pair| a.grade(pair.doc_a) != b.grade(pair.doc_b))
        .map(|pair| Disagreement {
            query_id: a.query_id(query_a).to_string(),
            doc_id: a.doc_id(pair.doc_a).to_string(),
            task: a.slice_name(labeled.task).to_string(),
            language: a.slice_name(labeled.language).to_string(),
            grade_a: a.grade(pair.doc_a),
            grade_b: b.grade(pair.doc_b),
            relevant_a: a.is_relevant(pair.doc_a),
            relevant_b: b.is_relevant(pair.doc_b),
            recall_shift,
        })
        .collect()
}

/// The confusion matrix of `pairs` over `grades`.
fn confusion(pairs: &PairCounts, grades: &[i64]) -> Vec<Vec<u64>> {
    let mut matrix = vec![vec![0; grades.len()]; grades.len()];
    // Every grade of a grouping set's pairs is one of all pairs' grades.
    let at = |grade: i64| {
        (grades.binary_search(&grade)).expect("a pair's grade among the matrix's grades")
    };
    for (&(ga, gb), &count) in pairs {
        matrix[at(ga)][at(gb)] += count;
    }
    matrix
}

/// One grouping set's figures, from its pairs' grades.
fn slice_agreement(
    task: String,
    language: String,
    queries: u64,
    pairs: &PairCounts,
    grades: &[i64],
    a: &LabelIndex,
    b: &LabelIndex,
) -> SliceAgreement {
    let relevant = |grade: i64, key: &LabelIndex| key.counts_as_relevant(grade);
    let mut relevance = vec![vec![0; 2]; 2];
    for (&(ga, gb), &count) in pairs {
        relevance[usize::from(relevant(ga, a))][usize::from(relevant(gb, b))] += count;
    }
    let count_where = |same: &dyn Fn(i64, i64) -> bool| -> u64 {
        (pairs.iter())
            .filter(|((ga, gb), _)| same(*ga, *gb))
            .map(|(_, c)| c)
            .sum()
    };
    let by_grade = confusion(pairs, grades);
    SliceAgreement {
        task,
        language,
        queries,
        pairs: pairs.values().sum(),
        same_grade: count_where(&|ga, gb| ga == gb),
        same_relevance: count_where(&|ga, gb| relevant(ga, a) == relevant(gb, b)),
        relevance_kappa: cohen_kappa(&relevance, Weights::Unweighted),
        grade_kappa: cohen_kappa(&by_grade, Weights::Linear),
        grade_kappa_unweighted: cohen_kappa(&by_grade, Weights::Unweighted),
        grade_kappa_quadratic: cohen_kappa(&by_grade, Weights::Quadratic),
        grade_alpha_ordinal: krippendorff_alpha_ordinal(&rated_twice(&by_grade)),
    }
}

/// Each pair of `confusion` as an item two raters rated, in the form
/// [`krippendorff_alpha_ordinal`] takes.
fn rated_twice(confusion: &[Vec<u64>]) -> Vec<(Vec<u64>, u64)> {
    let categories = confusion.len();
    let mut items = Vec::new();
    for (i, row) in confusion.iter().enumerate() {
        for (j, &count) in row.iter().enumerate().filter(|(_, &count)| count > 0) {
            let mut counts = vec![0; categories];
            counts[i] += 1;
            counts[j] += 1;
            items.push((counts, count));
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query's id, task and judged documents with their grades.
    type Label = (&'static str, &'static str, &'static [(&'static str, i64)]);

    fn key(queries: &[Label]) -> LabelIndex {
        LabelIndex::from_queries(
            queries
                .iter()
                .map(|&(id, task, docs)| (id, Some(task), Some("en"), docs.to_vec())),
            1,
        )
        .unwrap()
    }

    #[test]
    fn pairs_are_counted_where_both_keys_judge() {
        let a = key(&[
            ("q1", "howto", &[("d1", 2), ("d2", 0), ("d3", 1)]),
            ("q2", "howto", &[("d1", 1)]),
            ("q3", "faq", &[("d9", 1)]),
        ]);
        let b = key(&[
            ("q1", "other", &[("d1", 2), ("d2", 1), ("d4", 3)]),
            ("q2", "howto", &[("d1", 1), ("d5", 0)]),
            ("q4", "faq", &[("d1", 1), ("d2", 1)]),
        ]);
        let got = agreement(&a, &b);
        assert_eq!(
            (
                got.overlap.queries_both,
                got.overlap.queries_a_only,
                got.overlap.queries_b_only
            ),
            (2, 1, 1)
        );
        // Both: q1/d1, q1/d2, q2/d1. A only: q1/d3, q3/d9. B only: q1/d4,
        // q2/d5, q4/d1, q4/d2.
        assert_eq!(
            (
                got.overlap.pairs_both,
                got.overlap.pairs_a_only,
                got.overlap.pairs_b_only
            ),
            (3, 2, 4)
        );
        assert_eq!(got.grades, [0, 1, 2]);
        assert_eq!(got.confusion, [vec![0, 1, 0], vec![0, 1, 0], vec![0, 0, 1]]);
        // One disagreement: q1/d2, 0 against 1. q1's relevant documents
        // are d1, d3 under a and d1, d2, d4 under b: a ranking of d3 alone
        // scores 1/2 under a and 0 under b, one of d3 and d1 1 against
        // 1/3, so the recall shift is 2/3.
        assert_eq!(got.disagreements.len(), 1);
        let d = &got.disagreements[0];
        assert_eq!((d.query_id.as_str(), d.doc_id.as_str()), ("q1", "d2"));
        assert_eq!(
            (d.grade_a, d.grade_b, d.relevant_a, d.relevant_b),
            (0, 1, false, true)
        );
        assert_eq!(d.recall_shift, 2.0 / 3.0);
        // The slices are the first key's: q1 and q2 are both howto.
        let names: Vec<(&str, &str)> = (got.slices.iter())
            .map(|s| (s.task.as_str(), s.language.as_str()))
            .collect();
        assert_eq!(
            names,
            [("*", "*"), ("howto", "*"), ("*", "en"), ("howto", "en")]
        );
        let overall = &got.slices[0];
        assert_eq!(
            (
                overall.queries,
                overall.pairs,
                overall.same_grade,
                overall.same_relevance
            ),
            (2, 3, 2, 2)
        );
    }

    #[test]
    fn disagreements_come_from_the_queries_that_shift_most_first() {
        let a = key(&[
            ("q1", "t", &[("d1", 1), ("d2", 1), ("d3", 1), ("d4", 2)]),
            ("q2", "t", &[("d1", 1), ("d2", 1)]),
        ]);
        let b = key(&[
            ("q1", "t", &[("d1", 1), ("d2", 1), ("d3", 1), ("d4", 1)]),
            ("q2", "t", &[("d1", 0), ("d2", 1)]),
        ]);
        let got = agreement(&a, &b);
        let order: Vec<(&str, &str, f64)> = (got.disagreements.iter())
            .map(|d| (d.query_id.as_str(), d.doc_id.as_str(), d.recall_shift))
            .collect();
        // q2 loses one of its two relevant documents (a ranking of d1
        // scores 1/2 under a, 0 under b); q1 only regrades one.
        assert_eq!(order, [("q2", "d1", 0.5), ("q1", "d4", 0.0)]);
    }

    #[test]
    fn the_recall_shift_is_the_largest_difference_any_ranking_shows() {
        // Every ranking of documents drawn from a's relevant set {0, 1},
        // b's {1, 2} and an unjudged 3, against the closed form.
        let a = [0u32, 1];
        let b = [1u32, 2];
        let mut largest: f64 = 0.0;
        for subset in 0u32..16 {
            let held = |d: u32| subset & (1 << d) != 0;
            let recall =
                |set: &[u32]| set.iter().filter(|&&d| held(d)).count() as f64 / set.len() as f64;
            largest = largest.max((recall(&a) - recall(&b)).abs());
        }
        assert_eq!(recall_shift(2, 2, 1), largest);
        assert_eq!(recall_shift(2, 3, 1), 2.0 / 3.0);
        assert_eq!(recall_shift(3, 3, 3), 0.0);
        assert_eq!((recall_shift(0, 2, 0), recall_shift(0, 0, 0)), (1.0, 0.0));
    }
}
