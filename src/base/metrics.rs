//! The metric definitions (docs/reference.md, "Metrics"), pure and small so they can be checked
//! against a naive reference. Everything upstream reduces a ranking to the
//! positions of its judged documents; everything downstream only averages.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where the metrics stop reading a ranking: its top k results, or all of
/// it (`all`, trec_eval's uncut measures). `all` sorts after every k.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "CutoffText", into = "CutoffText")]
pub enum Cutoff {
    /// The top k results.
    At(usize),
    /// The whole ranking.
    All,
}

impl Cutoff {
    /// The deepest 1-based rank read.
    pub fn depth(self) -> usize {
        match self {
            Cutoff::At(k) => k,
            Cutoff::All => usize::MAX,
        }
    }
}

impl fmt::Display for Cutoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cutoff::At(k) => write!(f, "{k}"),
            Cutoff::All => f.write_str("all"),
        }
    }
}

impl FromStr for Cutoff {
    type Err = String;

    /// `all`, or a whole number of at least 1.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "all" {
            return Ok(Cutoff::All);
        }
        match text.parse::<usize>() {
            Ok(0) => Err("a cutoff must be at least 1".to_string()),
            Ok(k) => Ok(Cutoff::At(k)),
            Err(_) => Err(format!(
                "'{text}' is not a cutoff: a whole number of at least 1, or 'all'"
            )),
        }
    }
}

/// A cutoff as summary.json writes it: a number, or the word `all` (read
/// as `-k` reads a cutoff, so a number may come as text too).
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum CutoffText {
    At(usize),
    Word(String),
}

impl TryFrom<CutoffText> for Cutoff {
    type Error = String;

    fn try_from(text: CutoffText) -> Result<Self, Self::Error> {
        match text {
            CutoffText::At(k) => Ok(Cutoff::At(k)),
            // As `-k` reads it: `all`, or a number written as text.
            CutoffText::Word(word) => word.parse(),
        }
    }
}

impl From<Cutoff> for CutoffText {
    fn from(cutoff: Cutoff) -> Self {
        match cutoff {
            Cutoff::At(k) => CutoffText::At(k),
            Cutoff::All => CutoffText::Word("all".to_string()),
        }
    }
}

/// A judged document found in a ranking: its 1-based rank and its grade.
///
/// [`score`] is given only documents with a positive grade: unjudged and
/// grade-0 documents change none of the default metrics. The measures
/// that tell judged from unjudged results
/// ([`crate::base::measures::Measure::value`]: bpref, the
/// RBP residual, judged@k) are given every judged document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// 1-based position in the ranking (after any dedupe).
    pub rank: u32,
    /// The label's grade for this document.
    pub grade: i64,
}

/// The metrics rgrade computes. The first six are graded at every
/// cutoff by default ([`Metric::ALL`]); every one can be asked for by name
/// ([`crate::base::measures::Measure`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// |top_k ∩ R| / |R|.
    Recall,
    /// 1 / rank of the first relevant document within k, else 0.
    Rr,
    /// 1 if any relevant document is within k, else 0.
    Hit,
    /// |top_k ∩ R| / k, even when the ranking is shorter than k; at `all`,
    /// relevant retrieved over retrieved (trec_eval set_P).
    Precision,
    /// DCG@k / IDCG@k with the raw grade as gain (trec_eval ndcg_cut; at
    /// `all`, ndcg).
    Ndcg,
    /// Sum of precision@i at relevant ranks i <= k, over |R| (trec_eval
    /// map_cut; at `all`, map).
    Ap,
    /// nDCG@k with the exponential gain 2^grade - 1 (ranx `ndcg_burges`).
    NdcgBurges,
    /// The harmonic mean of precision@k and recall@k (ranx `f1`).
    F1,
    /// Expected reciprocal rank at k, the grade g stopping the reader with
    /// chance (2^g - 1) / 2^4 (gdeval, ir_measures `ERR@k`).
    Err,
    /// Precision at rank |R| (trec_eval `Rprec`).
    Rprec,
    /// Binary preference over judged documents (trec_eval `bpref`).
    Bpref,
    /// Rank-biased precision: (1 - p) times the sum of p^(i-1) over the
    /// relevant ranks i (Moffat and Zobel).
    Rbp,
    /// The most [`Metric::Rbp`] could still gain: the weight of the
    /// unjudged ranks and of every rank past the ranking's end.
    RbpResidual,
    /// The share of the top k the labels judge ([`judged`]).
    Judged,
}

impl Metric {
    /// Every metric graded by default, in the column order of
    /// per_query.csv.
    pub const ALL: [Metric; 6] = [
        Metric::Recall,
        Metric::Rr,
        Metric::Hit,
        Metric::Precision,
        Metric::Ndcg,
        Metric::Ap,
    ];

    /// The name used in column headers (`recall@10`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Recall => "recall",
            Metric::Rr => "rr",
            Metric::Hit => "hit",
            Metric::Precision => "precision",
            Metric::Ndcg => "ndcg",
            Metric::Ap => "ap",
            Metric::NdcgBurges => "ndcg_burges",
            Metric::F1 => "f1",
            Metric::Err => "err",
            Metric::Rprec => "rprec",
            Metric::Bpref => "bpref",
            Metric::Rbp => "rbp",
            Metric::RbpResidual => "rbp_residual",
            Metric::Judged => "judged",
        }
    }

    /// Whether it reads the ranking to a cutoff (`@k`); the others read
    /// it whole.
    pub(super) fn takes_cutoff(self) -> bool {
        !matches!(
            self,
            Metric::Rprec | Metric::Bpref | Metric::Rbp | Metric::RbpResidual
        )
    }

    /// Whether it counts documents as relevant or not at a grade
    /// (`rel=N`, `--min-rel`); the others weigh every grade.
    pub(super) fn takes_relevance_level(self) -> bool {
        !matches!(
            self,
            Metric::Ndcg | Metric::NdcgBurges | Metric::Err | Metric::RbpResidual | Metric::Judged
        )
    }
}

/// What the answer key says about one query, as the metrics need it.
#[derive(Debug, Clone, Copy)]
pub struct Judgments<'a> {
    /// |R|: judged documents with grade >= min-rel.
    pub n_relevant: usize,
    /// Every positive grade in the labels, highest first (the ideal ranking).
    pub ideal_grades: &'a [i64],
    /// Every judged document, whatever its grade (zero and negative
    /// grades too): bpref's judged non-relevant documents are these less
    /// the relevant ones.
    pub n_judged: usize,
    /// The lowest grade that counts as relevant.
    pub min_rel: i64,
}

/// One value per metric, in [`Metric::ALL`] order.
pub type Scores = [f64; 6];

/// Score one ranking of `retrieved` results at `cutoff`.
///
/// `hits` must come in rank order. A query without relevant documents at
/// min-rel scores as trec_eval's `-l` scores it: 0 on every binary metric,
/// and its nDCG from the raw grades. One without any positive grade has no
/// defined score; callers keep such no-answer queries out of the means, and
/// this returns zeros for them rather than dividing by zero.
pub fn score(
    hits: impl IntoIterator<Item = Hit>,
    judgments: &Judgments,
    cutoff: Cutoff,
    retrieved: usize,
) -> Scores {
    let depth = cutoff.depth();
    let mut relevant_in_k = 0usize;
    let mut first_relevant = None;
    let mut dcg = 0.0;
    let mut precision_sum = 0.0;
    for hit in hits
        .into_iter()
        .take_while(|hit| hit.rank as usize <= depth)
    {
        dcg += hit.grade as f64 * discount(hit.rank as usize);
        if hit.grade >= judgments.min_rel {
            relevant_in_k += 1;
            first_relevant.get_or_insert(hit.rank);
            precision_sum += relevant_in_k as f64 / hit.rank as f64;
        }
    }
    // Over |R|, 0 when no grade reaches min-rel (trec_eval's `-l`).
    let per_relevant = |count: f64| {
        if judgments.n_relevant > 0 {
            count / judgments.n_relevant as f64
        } else {
            0.0
        }
    };
    let ideal = ideal_dcg(judgments.ideal_grades, depth);
    let precision_over = match cutoff {
        Cutoff::At(k) => k,
        Cutoff::All => retrieved,
    };
    [
        per_relevant(relevant_in_k as f64),
        first_relevant.map_or(0.0, |rank| 1.0 / rank as f64),
        if relevant_in_k > 0 { 1.0 } else { 0.0 },
        if precision_over > 0 {
            relevant_in_k as f64 / precision_over as f64
        } else {
            0.0
        },
        if ideal > 0.0 { dcg / ideal } else { 0.0 },
        per_relevant(precision_sum),
    ]
}

/// `judged@k`, the share of the top k results the labels judge (any
/// grade): |top_k ∩ judged| / |top_k|, where |top_k| is k, or fewer when
/// the ranking is shorter (ir_measures' Judged@k: the label coverage of
/// what was shown); at `all`, judged over retrieved; 0 for an empty
/// ranking. `judged_ranks` are the 1-based ranks of the judged results,
/// in order.
pub fn judged(
    judged_ranks: impl IntoIterator<Item = u32>,
    cutoff: Cutoff,
    retrieved: usize,
) -> f64 {
    let shown = cutoff.depth().min(retrieved);
    let in_k = judged_ranks
        .into_iter()
        .take_while(|&rank| rank as usize <= shown)
        .count();
    if shown == 0 {
        0.0
    } else {
        in_k as f64 / shown as f64
    }
}

/// The DCG of the best possible ranking, cut at k.
fn ideal_dcg(ideal_grades: &[i64], k: usize) -> f64 {
    ideal_grades
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, &grade)| grade as f64 * discount(i + 1))
        .sum()
}

/// The DCG discount at a 1-based rank: 1 / log2(rank + 1).
pub(super) fn discount(rank: usize) -> f64 {
    1.0 / ((rank + 1) as f64).log2()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    const EPS: f64 = 1e-12;

    fn judgments(grades: &[i64], min_rel: i64) -> (usize, Vec<i64>) {
        let mut ideal: Vec<i64> = grades.iter().copied().filter(|&g| g > 0).collect();
        ideal.sort_unstable_by(|a, b| b.cmp(a));
        (grades.iter().filter(|&&g| g >= min_rel).count(), ideal)
    }

    /// The scores at `k` of a ranking whose judged documents are `hits`
    /// and that is exactly as long as it needs to be to hold them.
    fn scores_of(hits: &[(u32, i64)], grades: &[i64], min_rel: i64, k: usize) -> Scores {
        let retrieved = hits.iter().map(|&(rank, _)| rank as usize).max();
        scores_at(hits, grades, min_rel, Cutoff::At(k), retrieved.unwrap_or(0))
    }

    fn scores_at(
        hits: &[(u32, i64)],
        grades: &[i64],
        min_rel: i64,
        cutoff: Cutoff,
        retrieved: usize,
    ) -> Scores {
        let hits: Vec<Hit> = hits
            .iter()
            .map(|&(rank, grade)| Hit { rank, grade })
            .collect();
        let (n_relevant, ideal) = judgments(grades, min_rel);
        score(
            hits,
            &Judgments {
                n_relevant,
                ideal_grades: &ideal,
                n_judged: grades.len(),
                min_rel,
            },
            cutoff,
            retrieved,
        )
    }

    fn assert_close(got: Scores, want: Scores) {
        for (metric, (g, w)) in Metric::ALL.iter().zip(got.iter().zip(want.iter())) {
            assert!((g - w).abs() < 1e-9, "{}: got {g}, want {w}", metric.name());
        }
    }

    /// The worked example of the README, at k = 3.
    #[test]
    fn worked_example() {
        // q_export: export_csv at rank 1 of 1 relevant.
        let export = scores_of(&[(1, 1)], &[1], 1, 3);
        // q_reset: reset_steps at 2, reset_limits at 3, of 2 relevant.
        let reset = scores_of(&[(2, 1), (3, 1)], &[1, 1], 1, 3);
        // q_sharing: share_roles at 2; share_limits not retrieved.
        let sharing = scores_of(&[(2, 1)], &[1, 1], 1, 3);
        assert_eq!((export[0], export[1]), (1.0, 1.0));
        assert_eq!((reset[0], reset[1]), (1.0, 0.5));
        assert_eq!((sharing[0], sharing[1]), (0.5, 0.5));
        let mean_recall = (export[0] + reset[0] + sharing[0]) / 3.0;
        let mrr = (export[1] + reset[1] + sharing[1]) / 3.0;
        assert_eq!(format!("{mean_recall:.3} {mrr:.3}"), "0.833 0.667");
        // The other metrics of q_reset, by hand: precision 2/3;
        // ap (1/2 + 2/3) / 2; ndcg (1/log2 3 + 1/2) / (1 + 1/log2 3).
        let l3 = 3f64.log2();
        assert_close(
            reset,
            [
                1.0,
                0.5,
                1.0,
                2.0 / 3.0,
                (1.0 / l3 + 0.5) / (1.0 + 1.0 / l3),
                (0.5 + 2.0 / 3.0) / 2.0,
            ],
        );
    }

    #[test]
    fn graded_ndcg_uses_raw_grades_even_below_min_rel() {
        // Grades 3 and 1 judged; min-rel 2 makes only the 3 relevant.
        // Ranking puts the grade-1 doc first and the grade-3 doc second.
        let got = scores_of(&[(1, 1), (2, 3)], &[3, 1], 2, 2);
        let dcg = 1.0 + 3.0 / 3f64.log2();
        let idcg = 3.0 + 1.0 / 3f64.log2();
        assert_close(got, [1.0, 0.5, 1.0, 0.5, dcg / idcg, 0.5]);
    }

    #[test]
    fn cutoff_beyond_the_ranking_still_divides_precision_by_k() {
        let got = scores_of(&[(1, 1)], &[1, 1], 1, 10);
        assert_close(
            got,
            [0.5, 1.0, 1.0, 0.1, 1.0 / (1.0 + 1.0 / 3f64.log2()), 0.5],
        );
    }

    /// trec_eval's uncut measures, by hand: a ranking of 5 whose relevant
    /// documents (grades 2 and 1, of 3 relevant with grades 2, 1, 1) sit at
    /// ranks 2 and 5.
    #[test]
    fn the_whole_ranking_at_all() {
        let got = scores_at(&[(2, 2), (5, 1)], &[2, 1, 1], 1, Cutoff::All, 5);
        let l = |rank: f64| (rank + 1.0).log2();
        let dcg = 2.0 / l(2.0) + 1.0 / l(5.0);
        let idcg = 2.0 / l(1.0) + 1.0 / l(2.0) + 1.0 / l(3.0);
        assert_close(
            got,
            [
                2.0 / 3.0,
                0.5,
                1.0,
                2.0 / 5.0,
                dcg / idcg,
                (1.0 / 2.0 + 2.0 / 5.0) / 3.0,
            ],
        );
        // set_P of an empty ranking is 0, not a division by zero.
        assert_close(scores_at(&[], &[1], 1, Cutoff::All, 0), [0.0; 6]);
    }

    #[test]
    fn cutoffs_read_and_print_as_given() {
        assert_eq!("all".parse(), Ok(Cutoff::All));
        assert_eq!("10".parse(), Ok(Cutoff::At(10)));
        assert!("0".parse::<Cutoff>().is_err());
        assert!("ALL".parse::<Cutoff>().is_err());
        assert!(Cutoff::At(usize::MAX) < Cutoff::All);
        let cutoffs = [Cutoff::At(10), Cutoff::All];
        let json = serde_json::to_string(&cutoffs).unwrap();
        assert_eq!(json, r#"[10,"all"]"#);
        assert_eq!(serde_json::from_str::<Vec<Cutoff>>(&json).unwrap(), cutoffs);
        assert!(serde_json::from_str::<Cutoff>(r#""most""#).is_err());
    }

    /// judged@k by hand: a ranking of 4 whose ranks 1 and 3 are judged.
    /// Past the ranking's end, the results shown are all there is.
    #[test]
    fn judged_counts_judged_results_over_those_shown() {
        assert_eq!(judged([1, 3], Cutoff::At(1), 4), 1.0);
        assert_eq!(judged([1, 3], Cutoff::At(2), 4), 0.5);
        assert_eq!(judged([1, 3], Cutoff::At(3), 4), 2.0 / 3.0);
        assert_eq!(judged([1, 3], Cutoff::At(10), 4), 0.5);
        assert_eq!(judged([1, 3], Cutoff::All, 4), 0.5);
        assert_eq!(judged([], Cutoff::All, 0), 0.0);
        assert_eq!(judged([], Cutoff::At(5), 0), 0.0);
    }

    #[test]
    fn hits_beyond_k_do_not_count() {
        assert_close(scores_of(&[(4, 1)], &[1], 1, 3), [0.0; 6]);
    }

    /// trec_eval `-l 3` on grades 1 and 2 ranked first and second: no
    /// document reaches the level, so every binary metric is 0, and nDCG@2
    /// keeps the graded gains: (1 + 2/log2 3) / (2 + 1/log2 3) = 0.8597...
    /// (pytrec_eval's `ndcg_cut_2` at `relevance_level=3` prints
    /// 0.8597186998521972).
    #[test]
    fn grades_below_min_rel_score_zero_but_keep_their_gain() {
        let log3 = 3f64.log2();
        let ndcg = (1.0 + 2.0 / log3) / (2.0 + 1.0 / log3);
        let scores = scores_of(&[(1, 1), (2, 2)], &[1, 2], 3, 2);
        assert_close(scores, [0.0, 0.0, 0.0, 0.0, ndcg, 0.0]);
        assert!((scores[4] - 0.8597186998521972).abs() < EPS);
        // At -l 2 the grade-2 document at rank 2 counts: recall 1/1, rr 1/2,
        // hit 1, precision@2 1/2, AP (1/2)/1; nDCG is the same.
        let scores = scores_of(&[(1, 1), (2, 2)], &[1, 2], 2, 2);
        assert_close(scores, [1.0, 0.5, 1.0, 0.5, ndcg, 0.5]);
    }

    #[test]
    fn no_relevant_documents_scores_zero_instead_of_nan() {
        assert_close(scores_of(&[], &[], 1, 5), [0.0; 6]);
    }

    /// A deliberately naive model: walk the full ranking of doc ids and
    /// look each one up in the label map.
    fn reference(
        ranking: &[u32],
        labels: &HashMap<u32, i64>,
        min_rel: i64,
        cutoff: Cutoff,
    ) -> Scores {
        let relevant = |d: &u32| labels.get(d).is_some_and(|&g| g >= min_rel);
        let n_relevant = labels.values().filter(|&&g| g >= min_rel).count() as f64;
        let per_relevant = |x: f64| {
            if n_relevant > 0.0 {
                x / n_relevant
            } else {
                0.0
            }
        };
        let (k, precision_over) = match cutoff {
            Cutoff::At(k) => (k, k),
            Cutoff::All => (ranking.len(), ranking.len()),
        };
        let top: Vec<u32> = ranking.iter().take(k).copied().collect();
        let found = top.iter().filter(|d| relevant(d)).count() as f64;
        let rr = top
            .iter()
            .position(relevant)
            .map_or(0.0, |i| 1.0 / (i + 1) as f64);
        let mut ap = 0.0;
        for i in 0..top.len() {
            if relevant(&top[i]) {
                let above = top[..=i].iter().filter(|d| relevant(d)).count() as f64;
                ap += above / (i + 1) as f64;
            }
        }
        let gain = |d: &u32| labels.get(d).copied().unwrap_or(0).max(0) as f64;
        let dcg: f64 = top
            .iter()
            .enumerate()
            .map(|(i, d)| gain(d) / ((i + 2) as f64).log2())
            .sum();
        let mut ideal: Vec<f64> = labels.values().map(|&g| g.max(0) as f64).collect();
        ideal.sort_by(|a, b| b.total_cmp(a));
        let ideal_depth = if cutoff == Cutoff::All {
            ideal.len()
        } else {
            k
        };
        let idcg: f64 = ideal
            .iter()
            .take(ideal_depth)
            .enumerate()
            .map(|(i, g)| g / ((i + 2) as f64).log2())
            .sum();
        [
            per_relevant(found),
            rr,
            if found > 0.0 { 1.0 } else { 0.0 },
            if precision_over > 0 {
                found / precision_over as f64
            } else {
                0.0
            },
            if idcg > 0.0 { dcg / idcg } else { 0.0 },
            per_relevant(ap),
        ]
    }

    proptest! {
        /// Random rankings over a small doc universe, random graded labels
        /// (including zero and negative grades), cutoffs past the end.
        #[test]
        fn matches_the_naive_reference(
            universe in 1u32..40,
            ranking_seed in proptest::collection::vec(0u32..1000, 0..30),
            label_seed in proptest::collection::vec((0u32..1000, -1i64..4), 1..12),
            min_rel in 1i64..4,
            cutoff in prop_oneof![(1usize..40).prop_map(Cutoff::At), Just(Cutoff::All)],
        ) {
            let mut ranking: Vec<u32> = Vec::new();
            for d in ranking_seed.iter().map(|d| d % universe) {
                if !ranking.contains(&d) { ranking.push(d); }
            }
            let labels: HashMap<u32, i64> =
                label_seed.iter().map(|&(d, g)| (d % universe, g)).collect();
            prop_assume!(labels.values().any(|&g| g > 0));

            let hits: Vec<Hit> = ranking.iter().enumerate()
                .filter_map(|(i, d)| labels.get(d).filter(|&&g| g > 0)
                    .map(|&grade| Hit { rank: i as u32 + 1, grade }))
                .collect();
            let grades: Vec<i64> = labels.values().copied().collect();
            let (n_relevant, ideal) = judgments(&grades, min_rel);
            let judgments = Judgments { n_relevant, ideal_grades: &ideal, n_judged: grades.len(), min_rel };
            let got = score(hits.iter().copied(), &judgments, cutoff, ranking.len());
            let want = reference(&ranking, &labels, min_rel, cutoff);
            // judged@k is precision at the depth actually shown, with
            // every judged document relevant.
            let judged_ranks = ranking.iter().enumerate()
                .filter(|(_, d)| labels.contains_key(d))
                .map(|(i, _)| i as u32 + 1);
            let lowest = labels.values().min().copied().unwrap_or(0);
            let shown = match cutoff {
                Cutoff::At(k) if k <= ranking.len() => cutoff,
                _ => Cutoff::All,
            };
            let judged_want = reference(&ranking, &labels, lowest, shown)[3];
            let judged_got = judged(judged_ranks, cutoff, ranking.len());
            prop_assert!((judged_got - judged_want).abs() < EPS, "judged {judged_got} want {judged_want}");
            for (g, w) in got.iter().zip(want.iter()) {
                prop_assert!((g - w).abs() < EPS, "got {:?} want {:?}", got, want);
            }
        }
    }
}
