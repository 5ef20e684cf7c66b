//! Prediction-powered inference (Angelopoulos et al. 2023, power-tuned as
//! in their PPI++): the mean of a metric over a set of queries, from every
//! query's value under a judge's labels (f) and the values under a human
//! key (y) of the n of them the humans grade, with a 95% interval that
//! holds whatever the judge's bias, provided the human-graded queries are
//! a random sample of the set (docs/guide.md, "Means from a judge's
//! labels, calibrated by a human sample").
//!
//! The estimand is the mean of y over the queries the humans find an
//! answer for, a ratio of two means over the set: of A·y and of A, A = 1
//! when the humans answer. Each is estimated with the judge's own answer
//! a and a·f as predictions, with one weight λ: over the N queries the
//! judge alone grades and the n others (kept apart, so that the two terms
//! are independent),
//!
//! T = λ·mean_N(a·f) + mean_n(A·y − λ·a·f),  S = λ·mean_N(a) + mean_n(A − λ·a),
//!
//! and θ = T / S. With u = A·(y − θ) and v = a·(f − θ), the delta method
//! gives Var θ ≈ (λ²·Var_N(v)/N + Var_n(u − λ·v)/n) / S², where the second
//! variance is taken as at least [`unseen_disagreement_variance`]: a
//! human sample without a disagreement does not show that there is none.
//! λ minimises that variance at the humans' own estimate (λ = 0), within
//! [0, 1]: Cov_n(u, v)/n / (Var_N(v)/N + Var_n(v)/n). The interval uses
//! Student's t with n − 1 degrees of freedom. When every query has an
//! answer under both keys, S = 1 and θ is the classic power-tuned mean.
//! Variances and covariances are the sample ones (n − 1 in the
//! denominator).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The intervals' coverage.
pub const CONFIDENCE: f64 = 0.95;

/// Fewer human-graded queries than this give no estimate (benches/
/// calibrate_sim.py: from 10 on, the intervals cover as promised).
pub const MIN_HUMAN_QUERIES: u64 = 10;

/// A query's value under one key, `None` when the key finds no relevant
/// document for it.
pub type Value = Option<f64>;

/// The values of one metric over one grouping set's queries, the judge-only
/// ones as running sums, added in a fixed order so that the estimate is
/// the same bits on every run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PpiSums {
    /// The queries the judge alone grades (N).
    judge_only: JudgeOnly,
    /// The human-graded queries' (judge, human) values, in query order.
    paired: Vec<(Value, Value)>,
}

/// Over the judge-only queries: how many, and over those the judge
/// answers, how many and Σf, Σf².
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct JudgeOnly {
    queries: u64,
    answered: f64,
    sum: f64,
    sum_sq: f64,
}

impl JudgeOnly {
    /// The sample variance of v = a·(f − θ) over these queries.
    fn variance_at(&self, theta: f64) -> f64 {
        let n = self.queries as f64;
        let sum = self.sum - theta * self.answered;
        let sum_sq = self.sum_sq - 2.0 * theta * self.sum + theta * theta * self.answered;
        ((sum_sq - sum * sum / n) / (n - 1.0)).max(0.0)
    }
}

/// A calibrated mean and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibrated {
    /// θ, clamped to [0, 1] where every metric lies.
    pub mean: f64,
    /// The interval's lower end, clamped to [0, 1].
    pub low: f64,
    /// The interval's upper end, clamped to [0, 1].
    pub high: f64,
    /// The weight the judge's values earned, λ in [0, 1]: 0 leaves the
    /// humans' mean, 1 trusts the judge as far as PPI ever does.
    pub lambda: f64,
}

/// The least variance of the human-graded queries' correction that n of
/// them leave: the variance of a disagreement over the metric's whole
/// range ([0, 1]) at the rate the sample cannot rule out by the rule of
/// succession, 1/(n + 2), whatever it shows. Without it, a sample in
/// which the humans agree with the judge everywhere (likely for a good
/// judge and a few dozen queries) would give the correction no variance
/// and the interval the judge-only term's width.
pub fn unseen_disagreement_variance(n: u64) -> f64 {
    let rate = 1.0 / (n as f64 + 2.0);
    rate * (1.0 - rate)
}

/// The sample mean and variance of `values`.
fn mean_variance(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let squares: f64 = values.iter().map(|x| (x - mean) * (x - mean)).sum();
    (mean, squares / (n - 1.0))
}

/// The sample covariance of paired values.
fn covariance(x: &[f64], y: &[f64]) -> f64 {
    let (mx, my) = (mean_variance(x).0, mean_variance(y).0);
    let s: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    s / (x.len() as f64 - 1.0)
}

/// a·(x − θ): a value's deviation from θ, 0 without an answer.
fn pseudo(value: Value, theta: f64) -> f64 {
    value.map_or(0.0, |x| x - theta)
}

/// A value and its answer indicator (a·x, a).
fn answered(value: Value) -> (f64, f64) {
    value.map_or((0.0, 0.0), |x| (x, 1.0))
}

impl PpiSums {
    /// Count a query that scored `judge` under the judge's labels and, if
    /// the human key grades it, `human` under the human key.
    pub fn add(&mut self, judge: Value, human: Option<Value>) {
        match human {
            Some(y) => self.paired.push((judge, y)),
            None => {
                let only = &mut self.judge_only;
                only.queries += 1;
                if let Some(f) = judge {
                    only.answered += 1.0;
                    only.sum += f;
                    only.sum_sq += f * f;
                }
            }
        }
    }

    /// The queries the human key grades too (n), with an answer or not.
    pub fn human_queries(&self) -> u64 {
        self.paired.len() as u64
    }

    /// θ and S at weight `lambda`, or `None` when S is not positive (no
    /// answered query to average over).
    fn ratio(&self, lambda: f64) -> Option<(f64, f64)> {
        let n = self.paired.len() as f64;
        let (mut total, mut share) = (0.0, 0.0);
        for &(f, y) in &self.paired {
            let ((af, a), (ay, h)) = (answered(f), answered(y));
            total += (ay - lambda * af) / n;
            share += (h - lambda * a) / n;
        }
        if lambda > 0.0 {
            let only = &self.judge_only;
            total += lambda * only.sum / only.queries as f64;
            share += lambda * only.answered / only.queries as f64;
        }
        (share > 0.0).then_some((total / share, share))
    }

    /// u and v at θ over the human-graded queries.
    fn pseudo_values(&self, theta: f64) -> (Vec<f64>, Vec<f64>) {
        (self.paired.iter())
            .map(|&(f, y)| (pseudo(y, theta), pseudo(f, theta)))
            .unzip()
    }

    /// The λ that minimises θ's variance at `theta`, within [0, 1]; 0
    /// with fewer than two judge-only queries or no spread to weigh.
    fn power_tuned(&self, theta: f64) -> f64 {
        if self.judge_only.queries < 2 {
            return 0.0;
        }
        let n = self.paired.len() as f64;
        let (u, v) = self.pseudo_values(theta);
        let spread = self.judge_only.variance_at(theta) / self.judge_only.queries as f64
            + mean_variance(&v).1 / n;
        if spread > 0.0 {
            (covariance(&u, &v) / n / spread).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// The calibrated mean, or `None` with fewer than
    /// [`MIN_HUMAN_QUERIES`] human-graded queries or none the humans
    /// answer.
    pub fn calibrated(&self) -> Option<Calibrated> {
        let n = self.human_queries();
        if n < MIN_HUMAN_QUERIES {
            return None;
        }
        let (humans_alone, _) = self.ratio(0.0)?;
        let lambda = self.power_tuned(humans_alone);
        let (theta, share) = self.ratio(lambda)?;
        let (u, v) = self.pseudo_values(theta);
        let rest: Vec<f64> = u.iter().zip(&v).map(|(u, v)| u - lambda * v).collect();
        let rest_variance = mean_variance(&rest).1.max(unseen_disagreement_variance(n));
        let judge_variance = if lambda > 0.0 {
            self.judge_only.variance_at(theta) / self.judge_only.queries as f64
        } else {
            0.0
        };
        let variance =
            (lambda * lambda * judge_variance + rest_variance / n as f64) / share.powi(2);
        let half = t_quantile(n) * variance.sqrt();
        let unit = |x: f64| x.clamp(0.0, 1.0);
        Some(Calibrated {
            mean: unit(theta),
            low: unit(theta - half),
            high: unit(theta + half),
            lambda,
        })
    }
}

/// The two-sided [`CONFIDENCE`] quantile of Student's t with n − 1
/// degrees of freedom.
fn t_quantile(n: u64) -> f64 {
    let t = StudentsT::new(0.0, 1.0, n as f64 - 1.0).expect("n ≥ 2 degrees of freedom");
    t.inverse_cdf(0.5 + CONFIDENCE / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(values: &[(Value, Option<Value>)]) -> PpiSums {
        let mut sums = PpiSums::default();
        for &(f, y) in values {
            sums.add(f, y);
        }
        sums
    }

    /// A deterministic stream of uniform draws in [0, 1).
    fn uniform(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// The estimate by its definition, from the values themselves: the
    /// ratio of the two prediction-powered means, λ from the pseudo-values
    /// at the humans' own ratio, the delta-method variance.
    fn naive(values: &[(Value, Option<Value>)]) -> (f64, f64, f64) {
        let alone: Vec<Value> = values
            .iter()
            .filter(|v| v.1.is_none())
            .map(|v| v.0)
            .collect();
        let paired: Vec<(Value, Value)> = (values.iter())
            .filter_map(|&(f, y)| y.map(|y| (f, y)))
            .collect();
        let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
        let cov = |xs: &[f64], ys: &[f64]| {
            let (mx, my) = (mean(xs), mean(ys));
            let s: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
            s / (xs.len() as f64 - 1.0)
        };
        let value = |v: Value| v.unwrap_or(0.0);
        let indicator = |v: Value| f64::from(u8::from(v.is_some()));
        let of = |f: &dyn Fn(&(Value, Value)) -> f64| paired.iter().map(f).collect::<Vec<f64>>();
        let solve = |lambda: f64| {
            let total = lambda * mean(&alone.iter().map(|&f| value(f)).collect::<Vec<_>>())
                + mean(&of(&|&(f, y)| value(y) - lambda * value(f)));
            let share = lambda * mean(&alone.iter().map(|&f| indicator(f)).collect::<Vec<_>>())
                + mean(&of(&|&(f, y)| indicator(y) - lambda * indicator(f)));
            (total / share, share)
        };
        let deviation = |v: Value, theta: f64| v.map_or(0.0, |x| x - theta);
        let (big, n) = (alone.len() as f64, paired.len() as f64);
        let (theta0, _) = solve(0.0);
        let u0 = of(&|&(_, y)| deviation(y, theta0));
        let v0 = of(&|&(f, _)| deviation(f, theta0));
        let alone0: Vec<f64> = alone.iter().map(|&f| deviation(f, theta0)).collect();
        let lambda =
            (cov(&u0, &v0) / n / (cov(&alone0, &alone0) / big + cov(&v0, &v0) / n)).clamp(0.0, 1.0);
        let (theta, share) = solve(lambda);
        let rest = of(&|&(f, y)| deviation(y, theta) - lambda * deviation(f, theta));
        let alone_v: Vec<f64> = alone.iter().map(|&f| deviation(f, theta)).collect();
        let floor = 1.0 / (n + 2.0) * (1.0 - 1.0 / (n + 2.0));
        let var = (lambda * lambda * cov(&alone_v, &alone_v) / big
            + cov(&rest, &rest).max(floor) / n)
            / (share * share);
        (theta, var.sqrt() * t_quantile(n as u64), lambda)
    }

    #[test]
    fn the_t_quantiles_are_the_tables() {
        // t_{0.975} with 9 and 29 degrees of freedom.
        assert!((t_quantile(10) - 2.262_157_163).abs() < 1e-8);
        assert!((t_quantile(30) - 2.045_229_642).abs() < 1e-8);
    }

    #[test]
    fn matches_the_definition_on_random_values() {
        let mut next = uniform(7);
        let mut values = Vec::new();
        for i in 0..500 {
            let y = next();
            // A judge that overrates, with noise; a tenth of the queries
            // without an answer for the humans, of which half the judge
            // answers; some the judge alone leaves unanswered.
            let f = (y + 0.2 * next()).min(1.0);
            let (f, y) = match i % 10 {
                3 => (Some(f), None),
                6 => (None, None),
                8 => (None, Some(y)),
                _ => (Some(f), Some(y)),
            };
            values.push((f, (i % 5 < 2).then_some(y)));
        }
        let got = sums(&values).calibrated().unwrap();
        let (theta, half, lambda) = naive(&values);
        assert!((got.mean - theta).abs() < 1e-12, "{} vs {theta}", got.mean);
        assert!((got.low - (theta - half)).abs() < 1e-12);
        assert!((got.high - (theta + half)).abs() < 1e-12);
        assert!((got.lambda - lambda).abs() < 1e-12);
        assert!(
            lambda > 0.5,
            "a judge that tracks the humans earns weight: {lambda}"
        );
    }

    /// `n` copies of a (judge, human) pair, or of a judge-only value.
    fn copies(n: usize, judge: Value, human: Option<Value>) -> Vec<(Value, Option<Value>)> {
        vec![(judge, human); n]
    }

    #[test]
    fn a_hand_computed_case() {
        let got = sums(&[
            (Some(1.0), Some(Some(1.0))),
            (Some(0.0), Some(Some(1.0))),
            (Some(1.0), None),
            (Some(1.0), None),
        ]);
        assert_eq!(got.human_queries(), 2);
        assert_eq!(got.calibrated(), None, "two human queries are too few");

        // Ten human queries, y = f but for one the judge overrated (f = 1,
        // y = 0): over n = 10, f has six 1s, y five: Σf = 6, Σy = 5, Σyf = 5,
        // so Cov = (5 − 10·0.5·0.6)/9 = 2/9, Var f = (6 − 3.6)/9 = 2.4/9,
        // Var y = 2.5/9. Ten judge-only queries, eight 1s: mean 0.8,
        // Var = (8 − 6.4)/9 = 1.6/9.
        // λ = (2/9/10) / (1.6/9/10 + 2.4/9/10) = 1/2;
        // θ = ½·0.8 + 0.5 − ½·0.6 = 0.6;
        // Var(y − f/2) = 2.5/9 − 2/9 + ¼·2.4/9 = 1.1/9, above the floor
        // (1/12)(11/12); Var θ = ¼·1.6/90 + 1.1/90 = 1/60.
        let values = [
            copies(5, Some(1.0), Some(Some(1.0))),
            copies(1, Some(1.0), Some(Some(0.0))),
            copies(4, Some(0.0), Some(Some(0.0))),
            copies(8, Some(1.0), None),
            copies(2, Some(0.0), None),
        ]
        .concat();
        let got = sums(&values).calibrated().unwrap();
        let half = 2.262_157_162_8 * (1.0_f64 / 60.0).sqrt();
        assert!((got.lambda - 0.5).abs() < 1e-12, "{}", got.lambda);
        assert!((got.mean - 0.6).abs() < 1e-12, "{}", got.mean);
        assert!((got.low - (0.6 - half)).abs() < 1e-9);
        assert!((got.high - (0.6 + half)).abs() < 1e-9);
    }

    #[test]
    fn a_hand_computed_ratio_with_queries_the_humans_do_not_answer() {
        // Ten human-graded queries: four both call 1, two both call 0,
        // two only the judge answers (1), two neither answers; ten
        // judge-only queries, eight at 1 and two without an answer.
        let values = [
            copies(4, Some(1.0), Some(Some(1.0))),
            copies(2, Some(0.0), Some(Some(0.0))),
            copies(2, Some(1.0), Some(None)),
            copies(2, None, Some(None)),
            copies(8, Some(1.0), None),
            copies(2, None, None),
        ]
        .concat();
        // The humans alone: θ₀ = 4/6 = 2/3. At θ₀, u = A(y − θ₀) is four
        // 1/3s and two −2/3s; v = a(f − θ₀) adds two 1/3s: mean u = 0,
        // mean v = 1/15, Σuv = 4/9 + 8/9, Cov = (4/3)/9 = 4/27,
        // Var_n v = (14/9 − 10/225)/9 = 68/405; judge-only v, eight 1/3s
        // and two 0s: Var_N = (8/9 − 10·(4/15)²)/9 = 8/405.
        // λ = (4/27)/(8/405 + 68/405) = 15/19.
        let lambda: f64 = 15.0 / 19.0;
        // T = λ·0.8 + 0.4 − λ·0.6, S = λ·0.8 + 0.6 − λ·0.8 = 0.6.
        let share: f64 = 0.6;
        let theta = (0.4 + 0.2 * lambda) / share;
        assert!((theta - 53.0 / 57.0).abs() < 1e-15);
        // At θ: u − λv, in 1/1083s, is 16 (four), −212 (two), −60 (two),
        // 0 (two): Σ = −480, Σ² = 98112, so Var = (98112 − 23040)/9
        // /1083², below the floor (1/12)(11/12), which holds. Judge-only
        // v: eight 4/57s and two 0s, Var_N = (128 − 102.4)/3249/9.
        assert!((98112.0 - 23040.0) / 9.0 / 1083.0_f64.powi(2) < 11.0 / 144.0);
        let judge = (128.0 - 102.4) / 3249.0 / 9.0;
        let variance = (lambda * lambda * judge / 10.0 + 11.0 / 144.0 / 10.0) / (share * share);
        let half = 2.262_157_162_8 * f64::sqrt(variance);
        let got = sums(&values).calibrated().unwrap();
        assert!((got.lambda - lambda).abs() < 1e-12, "{}", got.lambda);
        assert!((got.mean - theta).abs() < 1e-12, "{}", got.mean);
        assert!((got.low - (theta - half)).abs() < 1e-9, "{got:?}");
        assert_eq!(got.high, 1.0);
    }

    #[test]
    fn a_constant_judge_leaves_the_human_mean() {
        let values: Vec<(Value, Option<Value>)> = (0..30)
            .map(|i| (Some(1.0), (i < 12).then_some(Some(f64::from(i % 2)))))
            .collect();
        let got = sums(&values).calibrated().unwrap();
        assert_eq!(got.lambda, 0.0);
        assert!((got.mean - 0.5).abs() < 1e-12);
        // The human-only interval: 0.5 ± t₁₁·sqrt(Var/12), Var = 3/11.
        let half = 2.200_985_160_1 * (3.0 / 11.0 / 12.0_f64).sqrt();
        assert!((got.high - (0.5 + half)).abs() < 1e-9);
    }

    #[test]
    fn agreement_everywhere_still_leaves_an_interval() {
        // Humans and judge agree on all twelve reviewed queries, all 1:
        // no sample variance, but the floor (1/14)(13/14) over 12.
        let values = [
            copies(12, Some(1.0), Some(Some(1.0))),
            copies(40, Some(1.0), None),
        ]
        .concat();
        let got = sums(&values).calibrated().unwrap();
        assert_eq!((got.mean, got.high), (1.0, 1.0));
        let half = 2.200_985_160_1 * (13.0 / 196.0 / 12.0_f64).sqrt();
        assert!((got.low - (1.0 - half)).abs() < 1e-9, "{got:?}");
    }

    #[test]
    fn no_answer_among_the_humans_gives_no_estimate() {
        let values = copies(12, Some(1.0), Some(None));
        assert_eq!(sums(&values).calibrated(), None);
    }

    /// How often the interval of `n` human-graded queries, drawn at random
    /// from the population `(judge, human)`, covers the humans' mean over
    /// their answered queries, and the mean estimate's bias.
    fn coverage(population: &[(Value, Value)], n: usize, reps: usize, seed: u64) -> (f64, f64) {
        let answered: Vec<f64> = population.iter().filter_map(|p| p.1).collect();
        let truth = answered.iter().sum::<f64>() / answered.len() as f64;
        let mut next = uniform(seed);
        let mut order: Vec<usize> = (0..population.len()).collect();
        let (mut covered, mut total) = (0, 0.0);
        for _ in 0..reps {
            // The first n of a partial Fisher–Yates shuffle.
            for i in 0..n {
                let j = i + (next() * (order.len() - i) as f64) as usize;
                order.swap(i, j);
            }
            let mut sampled = vec![false; population.len()];
            order[..n].iter().for_each(|&i| sampled[i] = true);
            let mut sums = PpiSums::default();
            for (&(f, y), &in_sample) in population.iter().zip(&sampled) {
                sums.add(f, in_sample.then_some(y));
            }
            let got = sums.calibrated().unwrap();
            covered += usize::from(got.low <= truth && truth <= got.high);
            total += got.mean;
        }
        (covered as f64 / reps as f64, total / reps as f64 - truth)
    }

    /// A thousand queries' rr@10 under the humans: the first relevant
    /// document at rank 1 to 10, or none retrieved (0).
    fn human_rr(next: &mut impl FnMut() -> f64) -> Vec<f64> {
        (0..1000)
            .map(|_| {
                let rank = (next() * 14.0) as u32 + 1;
                if rank > 10 {
                    0.0
                } else {
                    1.0 / f64::from(rank)
                }
            })
            .collect()
    }

    #[test]
    fn intervals_cover_for_a_near_perfect_judge() {
        // The judge agrees with the humans but on 3% of the queries, hard
        // ones where it finds a relevant document first and the humans
        // none: most samples of 30 show no disagreement at all. Without
        // the floor, those samples got the judge-only term's width and
        // about three intervals in four covered.
        let mut next = uniform(11);
        let y = human_rr(&mut next);
        let mut fooled = 0;
        let population: Vec<(Value, Value)> = (y.iter())
            .map(|&y| {
                let fool = y == 0.0 && fooled < 30;
                fooled += usize::from(fool);
                (Some(if fool { 1.0 } else { y }), Some(y))
            })
            .collect();
        assert_eq!(fooled, 30);
        let (covered, bias) = coverage(&population, 30, 1000, 3);
        assert!(covered >= 0.93, "coverage {covered}");
        assert!(bias.abs() < 0.01, "bias {bias}");
    }

    #[test]
    fn intervals_cover_for_a_biased_judge() {
        // The judge calls a document ranked first relevant on 30% of the
        // queries the humans score below 1.
        let mut next = uniform(12);
        let y = human_rr(&mut next);
        let population: Vec<(Value, Value)> = (y.iter())
            .map(|&y| (Some(if next() < 0.3 { 1.0 } else { y }), Some(y)))
            .collect();
        let (covered, bias) = coverage(&population, 30, 1000, 4);
        assert!(covered >= 0.93, "coverage {covered}");
        assert!(bias.abs() < 0.01, "bias {bias}");
    }

    #[test]
    fn means_stay_unbiased_when_the_humans_find_no_answer() {
        // A fifth of the queries have no answer for the humans, and the
        // judge finds one there, scoring them like the others; a mean
        // that let those queries stay in the judge-only term was biased
        // by the judge's mean there over the share of the rest.
        let mut next = uniform(13);
        let y = human_rr(&mut next);
        let population: Vec<(Value, Value)> = (y.iter())
            .map(|&y| {
                let f = if next() < 0.1 { 1.0 - y } else { y };
                if next() < 0.2 {
                    (Some(0.5 + 0.5 * next()), None)
                } else {
                    (Some(f), Some(y))
                }
            })
            .collect();
        let (covered, bias) = coverage(&population, 30, 1000, 5);
        assert!(covered >= 0.93, "coverage {covered}");
        assert!(bias.abs() < 0.01, "bias {bias}");
    }
}
