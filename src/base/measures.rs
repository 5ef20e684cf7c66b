//! Measures asked for by name (`--measures`): rgrade's, ir_measures' and
//! ranx's names read into one (metric, cutoff, relevance level,
//! persistence) each, named by rgrade's column name, and the measures
//! beyond the default six (R-precision, bpref, ERR, RBP and its residual,
//! F1, nDCG with exponential gain) computed over a ranking's judged
//! results.

use std::fmt;
use std::str::FromStr;

use crate::base::metrics::{discount, judged, score, Cutoff, Hit, Judgments, Metric};

/// One measure asked for by name (`--measures`): a metric, the cutoff it
/// reads to, the grade from which a document counts as relevant when it
/// is not `--min-rel`'s, and RBP's persistence.
///
/// Its `Display` is rgrade's name for it, the column header
/// (`precision(rel=2)@5`, `rbp(p=0.8)`, `bpref`); [`FromStr`] reads that
/// name back, and the names ir_measures and ranx give it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measure {
    /// What is computed.
    pub metric: Metric,
    /// Where it stops reading; [`Cutoff::All`] for the uncut metrics.
    pub cutoff: Cutoff,
    /// The lowest relevant grade, when the name sets one (`rel=2`).
    pub relevance_level: Option<i64>,
    /// RBP's persistence p, in (0, 1); `None` for the other metrics.
    pub persistence: Option<f64>,
}

/// RBP's persistence when a name gives none (ir_measures' and the
/// literature's default).
const DEFAULT_PERSISTENCE: f64 = 0.8;

/// The names `--measures` reads, as messages list them.
pub const MEASURE_NAMES: &str = "rgrade's column names (recall@10, rr@10, hit@10, precision@10, \
    ndcg@10, ap@10, ndcg_burges@10, f1@10, err@10, judged@10, rprec, bpref, rbp(p=0.8), \
    rbp_residual(p=0.8), precision(rel=2)@10), ir_measures' (R@100, RR@10, Success@10, \
    P(rel=2)@5, nDCG@10, AP, AP@100, ERR@10, Judged@10, Rprec, Bpref, RBP(p=0.8)) and ranx's \
    (recall@100, mrr@10, hit_rate@10, precision@5, ndcg@10, ndcg_burges@10, map, map@100, \
    f1@10, r-precision, bpref, rbp.80); a cutoff is @k or @all";

impl Measure {
    /// `metric` at `cutoff`, at `--min-rel`, RBP at its default
    /// persistence.
    pub(super) fn at(metric: Metric, cutoff: Cutoff) -> Measure {
        Measure {
            metric,
            cutoff,
            relevance_level: None,
            persistence: (matches!(metric, Metric::Rbp | Metric::RbpResidual))
                .then_some(DEFAULT_PERSISTENCE),
        }
    }

    /// The measures a list of names asks for, in order, each once: a
    /// name of RBP brings its residual right after it (as Moffat and
    /// Zobel's `rbp_eval` reports the two), unless the list names it. Each
    /// item may hold several names, comma separated (a comma within
    /// parentheses parts parameters: `RBP(p=0.9,rel=2)`).
    pub fn parse_list<S: AsRef<str>>(items: &[S]) -> Result<Vec<Measure>, String> {
        let mut measures: Vec<Measure> = Vec::new();
        for name in items.iter().flat_map(|item| split_names(item.as_ref())) {
            let measure: Measure = name.parse()?;
            let residual = (measure.metric == Metric::Rbp).then_some(Measure {
                metric: Metric::RbpResidual,
                relevance_level: None,
                ..measure
            });
            for measure in std::iter::once(measure).chain(residual) {
                if !measures.contains(&measure) {
                    measures.push(measure);
                }
            }
        }
        Ok(measures)
    }

    /// This measure of one ranking: `found` holds every result the labels
    /// judge (any grade, zero and negative included), in rank order, of
    /// `retrieved` results in all.
    pub fn value(&self, found: &[Hit], judgments: &Judgments, retrieved: usize) -> f64 {
        let min_rel = self.relevance_level.unwrap_or(judgments.min_rel);
        let at_level = Judgments {
            n_relevant: (judgments.ideal_grades.iter())
                .filter(|&&grade| grade >= min_rel)
                .count(),
            min_rel,
            ..*judgments
        };
        let depth = self.cutoff.depth();
        let shown = || found.iter().filter(move |hit| hit.rank as usize <= depth);
        let relevant = |hit: &&Hit| hit.grade >= min_rel && hit.grade > 0;
        let p = self.persistence.unwrap_or(DEFAULT_PERSISTENCE);
        let default = |metric: Metric| {
            let at = Metric::ALL.iter().position(|&m| m == metric).unwrap_or(0);
            let positive = found.iter().copied().filter(|hit| hit.grade > 0);
            score(positive, &at_level, self.cutoff, retrieved)[at]
        };
        match self.metric {
            Metric::Recall
            | Metric::Rr
            | Metric::Hit
            | Metric::Precision
            | Metric::Ndcg
            | Metric::Ap => default(self.metric),
            Metric::NdcgBurges => ndcg_burges(shown(), judgments.ideal_grades, depth),
            Metric::F1 => {
                let (precision, recall) = (default(Metric::Precision), default(Metric::Recall));
                if precision + recall > 0.0 {
                    2.0 * precision * recall / (precision + recall)
                } else {
                    0.0
                }
            }
            Metric::Err => err(shown()),
            Metric::Rprec => {
                let r = at_level.n_relevant;
                let in_r = found.iter().filter(relevant);
                let in_r = in_r.take_while(|hit| hit.rank as usize <= r).count();
                if r > 0 {
                    in_r as f64 / r as f64
                } else {
                    0.0
                }
            }
            Metric::Bpref => bpref(found, &at_level),
            Metric::Rbp => {
                let weights = found
                    .iter()
                    .filter(relevant)
                    .map(|hit| rbp_weight(p, hit.rank));
                weights.sum()
            }
            Metric::RbpResidual => {
                1.0 - found.iter().map(|hit| rbp_weight(p, hit.rank)).sum::<f64>()
            }
            Metric::Judged => judged(found.iter().map(|hit| hit.rank), self.cutoff, retrieved),
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.metric.name())?;
        let params: Vec<String> = (self.persistence.map(|p| format!("p={p}")).into_iter())
            .chain(self.relevance_level.map(|rel| format!("rel={rel}")))
            .collect();
        if !params.is_empty() {
            write!(f, "({})", params.join(","))?;
        }
        if self.metric.takes_cutoff() {
            write!(f, "@{}", self.cutoff)?;
        }
        Ok(())
    }
}

impl FromStr for Measure {
    type Err = String;

    /// `name[(param=value,...)][@cutoff]`, the name in any case: rgrade's
    /// column name, ir_measures' or ranx's. No cutoff is the whole
    /// ranking (`map` is `ap@all`).
    fn from_str(text: &str) -> Result<Self, String> {
        let unknown = || format!("'{text}' is not a measure rgrade knows");
        let trimmed = text.trim();
        let (head, cutoff) = match trimmed.rsplit_once('@') {
            Some((head, cutoff)) => (head, Some(cutoff.parse::<Cutoff>()?)),
            None => (trimmed, None),
        };
        let (name, params) = match head.split_once('(') {
            Some((name, params)) => {
                let params = params.strip_suffix(')').ok_or_else(unknown)?;
                (name, params.split(',').map(str::trim).collect())
            }
            None => (head, Vec::new()),
        };
        let name = name.trim().to_ascii_lowercase();
        // ranx writes RBP's persistence in its name: rbp.95 is p = 0.95.
        let (name, ranx_persistence) = match name.strip_prefix("rbp.") {
            Some(digits) if digits.bytes().all(|b| b.is_ascii_digit()) => {
                ("rbp".to_string(), Some(format!("0.{digits}")))
            }
            _ => (name, None),
        };
        let metric = match name.as_str() {
            "recall" | "r" => Metric::Recall,
            "rr" | "mrr" | "recip_rank" => Metric::Rr,
            "hit" | "hit_rate" | "success" => Metric::Hit,
            "precision" | "p" => Metric::Precision,
            "ndcg" => Metric::Ndcg,
            "ap" | "map" => Metric::Ap,
            "ndcg_burges" => Metric::NdcgBurges,
            "f1" => Metric::F1,
            "err" => Metric::Err,
            "rprec" | "r-precision" | "r_precision" => Metric::Rprec,
            "bpref" => Metric::Bpref,
            "rbp" => Metric::Rbp,
            "rbp_residual" => Metric::RbpResidual,
            "judged" => Metric::Judged,
            _ => return Err(unknown()),
        };
        let mut measure = Measure::at(metric, cutoff.unwrap_or(Cutoff::All));
        if cutoff.is_some() && !metric.takes_cutoff() {
            return Err(format!(
                "'{text}': {} reads the whole ranking, without a cutoff",
                metric.name()
            ));
        }
        let persistence = ranx_persistence.into_iter().map(|p| format!("p={p}"));
        for param in params.iter().map(|p| p.to_string()).chain(persistence) {
            let (key, value) = param.split_once('=').ok_or_else(unknown)?;
            match (key.trim(), measure.persistence) {
                ("rel", _) if metric.takes_relevance_level() => {
                    let level = value.trim().parse::<i64>().ok().filter(|&rel| rel >= 1);
                    let level = level.ok_or_else(|| {
                        format!("'{text}': rel must be a whole number of at least 1")
                    })?;
                    measure.relevance_level = Some(level);
                }
                ("p", Some(_)) => {
                    let p = value
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|p| *p > 0.0 && *p < 1.0);
                    let p =
                        p.ok_or_else(|| format!("'{text}': p must be a number between 0 and 1"))?;
                    measure.persistence = Some(p);
                }
                _ => {
                    return Err(format!(
                        "'{text}': {} takes no parameter '{}'",
                        metric.name(),
                        key.trim()
                    ))
                }
            }
        }
        Ok(measure)
    }
}

/// The names of a comma-separated list, split at the commas outside
/// parentheses; blank names are left out.
fn split_names(list: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0i32;
    let mut start = 0;
    let mut names = Vec::new();
    for (at, byte) in list.bytes().enumerate() {
        match byte {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b',' if depth == 0 => {
                names.push(&list[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    names.push(&list[start..]);
    names.into_iter().filter(|name| !name.trim().is_empty())
}

/// nDCG with the exponential gain 2^grade - 1 over the judged results
/// `shown` within `depth`, against the ideal ranking of `ideal_grades`
/// (ranx's `ndcg_burges`); 0 when no grade is positive.
fn ndcg_burges<'a>(
    shown: impl Iterator<Item = &'a Hit>,
    ideal_grades: &[i64],
    depth: usize,
) -> f64 {
    let gain = |grade: i64| 2f64.powi(grade.clamp(0, 62) as i32) - 1.0;
    let dcg: f64 = shown
        .map(|hit| gain(hit.grade) * discount(hit.rank as usize))
        .sum();
    let ideal: f64 = (ideal_grades.iter().take(depth).enumerate())
        .map(|(i, &grade)| gain(grade) * discount(i + 1))
        .sum();
    if ideal > 0.0 {
        dcg / ideal
    } else {
        0.0
    }
}

/// The highest grade ERR tells apart, as gdeval (which ir_measures runs
/// for `ERR@k`) fixes it: a grade stops the reader with chance
/// (2^g - 1) / 2^4, higher grades counting as 4.
const ERR_MAX_GRADE: i64 = 4;

/// Expected reciprocal rank over the judged results `shown` (in rank
/// order): the chance the reader stops at each rank, over the rank.
fn err<'a>(shown: impl Iterator<Item = &'a Hit>) -> f64 {
    let top = 2f64.powi(ERR_MAX_GRADE as i32);
    let mut going_on = 1.0;
    let mut expected = 0.0;
    for hit in shown.filter(|hit| hit.grade > 0) {
        let stop = (2f64.powi(hit.grade.min(ERR_MAX_GRADE) as i32) - 1.0) / top;
        expected += going_on * stop / f64::from(hit.rank);
        going_on *= 1.0 - stop;
    }
    expected
}

/// bpref as trec_eval computes it: each relevant result earns 1 less the
/// share of judged non-relevant results above it (at most |R| of them,
/// over min(|R|, N), N the judged non-relevant documents), summed over
/// |R|; unjudged results are passed over.
fn bpref(judged: &[Hit], judgments: &Judgments) -> f64 {
    let r = judgments.n_relevant;
    let nonrelevant = judgments.n_judged - r;
    let mut above = 0usize;
    let mut sum = 0.0;
    for hit in judged {
        if hit.grade >= judgments.min_rel && hit.grade > 0 {
            sum += match above {
                0 => 1.0,
                _ => 1.0 - above.min(r) as f64 / r.min(nonrelevant) as f64,
            };
        } else {
            above += 1;
        }
    }
    if r > 0 {
        sum / r as f64
    } else {
        0.0
    }
}

/// The weight RBP gives a 1-based rank: (1 - p) p^(rank - 1).
fn rbp_weight(p: f64, rank: u32) -> f64 {
    (1.0 - p) * p.powf(f64::from(rank) - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const EPS: f64 = 1e-12;

    /// The ranking every new measure is worked out on by hand: labels
    /// a:3, b:0, c:1, d:2, e:0 (five judged, positive grades 3, 2, 1);
    /// six results b a x c e y, x and y unjudged, d never retrieved.
    fn worked_measure(name: &str) -> f64 {
        let found = [(1, 0), (2, 3), (4, 1), (5, 0)].map(|(rank, grade)| Hit { rank, grade });
        let ideal = [3, 2, 1];
        let judgments = Judgments {
            n_relevant: 3,
            ideal_grades: &ideal,
            n_judged: 5,
            min_rel: 1,
        };
        let measure: Measure = name.parse().unwrap();
        measure.value(&found, &judgments, 6)
    }

    #[test]
    fn new_measures_by_hand() {
        let cases = [
            // R = {a, c, d}: 1 of the top 3 is relevant.
            ("Rprec", 1.0 / 3.0),
            // R = {a, d}: a is in the top 2.
            ("Rprec(rel=2)", 0.5),
            // N = 2 judged non-relevant (b, e). b sits above a and c:
            // each earns 1 - min(1, 3) / min(3, 2) = 1/2; (1/2 + 1/2) / 3.
            ("bpref", 1.0 / 3.0),
            // At rel=2, R = {a, d}, N = 3 (b, c, e); a has b above it:
            // 1 - 1 / min(2, 3) = 1/2, over |R| = 2.
            ("Bpref(rel=2)", 0.25),
            // Relevant ranks 2 and 4: 0.2 (0.8 + 0.8^3).
            ("RBP(p=0.8)", 0.2 * (0.8 + 0.512)),
            ("rbp.80", 0.2 * (0.8 + 0.512)),
            ("RBP(p=0.8,rel=2)", 0.2 * 0.8),
            // Unjudged ranks 3 and 6, 0.2 (0.8^2 + 0.8^5), and past the
            // end 0.8^6: 0.193536 + 0.262144.
            ("rbp_residual(p=0.8)", 0.193536 + 0.262144),
            // a (grade 3) stops the reader with 7/16 at rank 2; c
            // (grade 1) with 1/16 at rank 4, after 9/16 went on.
            ("ERR@10", 7.0 / 32.0 + (9.0 / 16.0) * (1.0 / 16.0) / 4.0),
            ("ERR@3", 7.0 / 32.0),
            // Gains 2^3 - 1 at rank 2 and 2^1 - 1 at rank 4, over the
            // ideal 7, 3, 1 at ranks 1 to 3.
            (
                "ndcg_burges@5",
                (7.0 / 3f64.log2() + 1.0 / 5f64.log2()) / (7.0 + 3.0 / 3f64.log2() + 0.5),
            ),
            // P@5 = 2/5, R@5 = 2/3: 2 P R / (P + R) = (8/15) / (16/15).
            ("f1@5", 0.5),
            ("f1@1", 0.0),
            // At rel=2 only a counts: 1 of 5 shown, 1 of {a, d} found.
            ("P(rel=2)@5", 0.2),
            ("R(rel=2)@5", 0.5),
            // Four of the top five are judged.
            ("Judged@5", 0.8),
            // The default metrics read as `score` computes them.
            ("recall@5", 2.0 / 3.0),
            ("RR@10", 0.5),
            ("AP", (1.0 / 2.0 + 2.0 / 4.0) / 3.0),
        ];
        for (name, want) in cases {
            let got = worked_measure(name);
            assert!((got - want).abs() < EPS, "{name}: got {got}, want {want}");
        }
    }

    #[test]
    fn measures_read_by_every_tool_s_name() {
        let cases = [
            ("nDCG@10", "ndcg@10"),
            ("P(rel=2)@5", "precision(rel=2)@5"),
            ("R@100", "recall@100"),
            ("RR@10", "rr@10"),
            ("AP", "ap@all"),
            ("AP@100", "ap@100"),
            ("RBP(p=0.8)", "rbp(p=0.8)"),
            ("RBP(rel=2, p=0.5)", "rbp(p=0.5,rel=2)"),
            ("RBP", "rbp(p=0.8)"),
            ("Judged@10", "judged@10"),
            ("Rprec", "rprec"),
            ("Bpref", "bpref"),
            ("ERR@10", "err@10"),
            ("Success@1", "hit@1"),
            ("ndcg_burges@10", "ndcg_burges@10"),
            ("mrr@10", "rr@10"),
            ("recall@100", "recall@100"),
            ("precision@5", "precision@5"),
            ("map", "ap@all"),
            ("map@100", "ap@100"),
            ("r-precision", "rprec"),
            ("f1@10", "f1@10"),
            ("hit_rate@10", "hit@10"),
            ("rbp.95", "rbp(p=0.95)"),
            ("recall@all", "recall@all"),
        ];
        for (name, column) in cases {
            let measure: Measure = name.parse().unwrap();
            assert_eq!(measure.to_string(), column, "{name}");
            // A column name reads back as itself.
            assert_eq!(column.parse::<Measure>(), Ok(measure), "{column}");
        }
        for wrong in [
            "foo@10",
            "Rprec@10",
            "P(rel=0)@5",
            "RBP(p=1.5)",
            "nDCG(rel=2)@10",
            "P@0",
            "P(rel=2",
            "ERR(p=0.5)@10",
        ] {
            assert!(wrong.parse::<Measure>().is_err(), "{wrong}");
        }
    }

    /// RBP brings its residual; a measure named twice, by any name, is one
    /// column; commas within parentheses part parameters.
    #[test]
    fn measure_lists_expand_rbp_and_name_each_measure_once() {
        let names = |items: &[&str]| -> Vec<String> {
            let measures = Measure::parse_list(items).unwrap();
            measures.iter().map(ToString::to_string).collect()
        };
        assert_eq!(
            names(&["RBP(p=0.9,rel=2),nDCG@10", "ndcg@10", "rbp_residual(p=0.9)"]),
            ["rbp(p=0.9,rel=2)", "rbp_residual(p=0.9)", "ndcg@10"]
        );
        assert_eq!(names(&["map, P@5,"]), ["ap@all", "precision@5"]);
        assert!(Measure::parse_list(&["nDCG@10,nope"]).is_err());
    }

    proptest! {
        /// Asked for by name, the default metrics are the values `score`
        /// gives, whatever the ranking, the grades (zero and negative
        /// ones too, which `score` is never given) and the cutoff.
        #[test]
        fn the_default_metrics_by_name_are_score_s(
            grades in proptest::collection::vec(-1i64..4, 0..30),
            label_grades in proptest::collection::vec(1i64..4, 0..10),
            min_rel in 1i64..4,
            cutoff in prop_oneof![(1usize..40).prop_map(Cutoff::At), Just(Cutoff::All)],
        ) {
            // A ranking of one result per entry of `grades`, judged where
            // the entry is not -1 (-1 standing for unjudged here).
            let found: Vec<Hit> = (grades.iter().enumerate())
                .filter(|&(_, &grade)| grade >= 0)
                .map(|(i, &grade)| Hit { rank: i as u32 + 1, grade })
                .collect();
            // Judged documents the ranking did not retrieve.
            let unretrieved = label_grades.len();
            let mut ideal: Vec<i64> = found.iter().map(|hit| hit.grade).chain(label_grades)
                .filter(|&grade| grade > 0).collect();
            ideal.sort_unstable_by(|a, b| b.cmp(a));
            let judgments = Judgments {
                n_relevant: ideal.iter().filter(|&&grade| grade >= min_rel).count(),
                ideal_grades: &ideal,
                n_judged: found.len() + unretrieved,
                min_rel,
            };
            let positive = found.iter().copied().filter(|hit| hit.grade > 0);
            let scores = score(positive, &judgments, cutoff, grades.len());
            for (i, metric) in Metric::ALL.into_iter().enumerate() {
                let by_name = Measure::at(metric, cutoff).value(&found, &judgments, grades.len());
                prop_assert_eq!(by_name, scores[i], "{}", metric.name());
            }
        }
    }
}
