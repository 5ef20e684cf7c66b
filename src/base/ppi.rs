//! Prediction-powered inference (Angelopoulos et al. 2023, power-tuned as
//! in their PPI++): the mean of a metric over a set of queries graded
//! under a judge's labels (f), corrected by the n of them a human key also
//! grades (y), with a 95% interval that holds whatever the judge's bias,
//! provided the human-graded queries are a random sample of the set.
//!
//! The N other queries, graded by the judge alone, are the unlabeled
//! sample, kept apart from the n so that the two terms are independent:
//! θ = λ·mean_N(f) + mean_n(y − λ·f), with λ = (Cov_n(y, f)/n) /
//! (Var_N(f)/N + Var_n(f)/n), the λ that minimizes the estimate's variance
//! λ²·Var_N(f)/N + Var_n(y − λ·f)/n. λ = 0 is the human-only mean, λ = 1
//! the classic PPI estimate; a judge that tracks the humans well earns a
//! λ near 1 and a narrower interval than the human-only mean's. With fewer
//! than two judge-only queries, λ = 0. Variances and covariances are the
//! sample ones (n − 1 in the denominator).

/// The intervals' coverage.
pub const CONFIDENCE: f64 = 0.95;

/// The z value of a two-sided 95% normal interval.
const Z_95: f64 = 1.959_963_984_540_054;

/// Fewer human-graded queries than this give no estimate: the normal
/// approximation behind the interval needs a sample, not a handful.
pub const MIN_HUMAN_QUERIES: u64 = 10;

/// The running sums of one metric over one grouping set's queries, added
/// in a fixed order so the estimate is the same bits on every run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PpiSums {
    /// Queries graded under the judge's labels alone (N), and Σf, Σf².
    judge_only: Moments,
    /// The queries the human key grades too (n): Σf, Σf² over them, and
    /// Σy, Σy², Σy·f.
    paired_f: Moments,
    paired_y: Moments,
    paired_yf: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Moments {
    n: u64,
    sum: f64,
    sum_sq: f64,
}

impl Moments {
    fn add(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
        self.sum_sq += x * x;
    }

    fn mean(&self) -> f64 {
        self.sum / self.n as f64
    }

    /// The sample variance; never below 0 (rounding can take the textbook
    /// form there when every value is the same).
    fn variance(&self) -> f64 {
        let n = self.n as f64;
        ((self.sum_sq - n * self.mean() * self.mean()) / (n - 1.0)).max(0.0)
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
    /// The weight the judge's mean earned.
    pub lambda: f64,
}

impl PpiSums {
    /// Count a query that scored `judge` under the judge's labels and, if
    /// the human key grades it, `human` under the human key.
    pub fn add(&mut self, judge: f64, human: Option<f64>) {
        match human {
            Some(y) => {
                self.paired_f.add(judge);
                self.paired_y.add(y);
                self.paired_yf += y * judge;
            }
            None => self.judge_only.add(judge),
        }
    }

    /// The queries the human key grades too (n).
    pub fn human_queries(&self) -> u64 {
        self.paired_y.n
    }

    /// The calibrated mean, or `None` with fewer than
    /// [`MIN_HUMAN_QUERIES`] human-graded queries.
    pub fn calibrated(&self) -> Option<Calibrated> {
        let n = self.paired_y.n;
        if n < MIN_HUMAN_QUERIES {
            return None;
        }
        let n = n as f64;
        let var_f = self.paired_f.variance();
        let cov = (self.paired_yf - n * self.paired_y.mean() * self.paired_f.mean()) / (n - 1.0);
        // Without two judge-only queries, or with judge values all alike,
        // there is nothing to weigh: the human mean alone.
        let (lambda, judge_term, judge_variance) = if self.judge_only.n >= 2 {
            let n_judge = self.judge_only.n as f64;
            let var_judge = self.judge_only.variance() / n_judge;
            let spread = var_judge + var_f / n;
            let lambda = if spread > 0.0 { cov / n / spread } else { 0.0 };
            (lambda, self.judge_only.mean(), var_judge)
        } else {
            (0.0, 0.0, 0.0)
        };
        let mean = lambda * judge_term + self.paired_y.mean() - lambda * self.paired_f.mean();
        let var_rest =
            (self.paired_y.variance() - 2.0 * lambda * cov + lambda * lambda * var_f).max(0.0);
        let half = Z_95 * (lambda * lambda * judge_variance + var_rest / n).sqrt();
        let unit = |x: f64| x.clamp(0.0, 1.0);
        Some(Calibrated {
            mean: unit(mean),
            low: unit(mean - half),
            high: unit(mean + half),
            lambda,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(judge: &[f64], human: &[Option<f64>]) -> PpiSums {
        let mut sums = PpiSums::default();
        for (&f, &y) in judge.iter().zip(human) {
            sums.add(f, y);
        }
        sums
    }

    /// The estimate by its definition, from the values themselves.
    fn naive(judge: &[f64], human: &[Option<f64>]) -> (f64, f64, f64) {
        let judge_only: Vec<f64> = judge
            .iter()
            .zip(human)
            .filter_map(|(&f, y)| y.is_none().then_some(f))
            .collect();
        let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
        let cov = |xs: &[f64], ys: &[f64]| {
            let (mx, my) = (mean(xs), mean(ys));
            let s: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
            s / (xs.len() as f64 - 1.0)
        };
        let (f_n, y_n): (Vec<f64>, Vec<f64>) = judge
            .iter()
            .zip(human)
            .filter_map(|(&f, &y)| y.map(|y| (f, y)))
            .unzip();
        let (big, n) = (judge_only.len() as f64, f_n.len() as f64);
        let var_judge = cov(&judge_only, &judge_only) / big;
        let lambda = (cov(&y_n, &f_n) / n) / (var_judge + cov(&f_n, &f_n) / n);
        let rest: Vec<f64> = y_n.iter().zip(&f_n).map(|(y, f)| y - lambda * f).collect();
        let theta = lambda * mean(&judge_only) + mean(&rest);
        let var = lambda * lambda * var_judge + cov(&rest, &rest) / n;
        (theta, var.sqrt() * Z_95, lambda)
    }

    #[test]
    fn matches_the_definition_on_random_values() {
        let mut state = 7_u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut judge = Vec::new();
        let mut human = Vec::new();
        for i in 0..500 {
            let y = next();
            // A judge that overrates, with noise.
            judge.push((y + 0.2 * next()).min(1.0));
            human.push((i % 5 == 0).then_some(y));
        }
        let got = sums(&judge, &human).calibrated().unwrap();
        let (theta, half, lambda) = naive(&judge, &human);
        assert!((got.mean - theta).abs() < 1e-12, "{} vs {theta}", got.mean);
        assert!((got.low - (theta - half)).abs() < 1e-12);
        assert!((got.high - (theta + half)).abs() < 1e-12);
        assert!((got.lambda - lambda).abs() < 1e-12);
        assert!(
            lambda > 0.5,
            "a judge that tracks the humans earns weight: {lambda}"
        );
    }

    #[test]
    fn a_hand_computed_case() {
        let got = sums(&[1.0, 0.0, 1.0, 1.0], &[Some(1.0), Some(1.0), None, None]);
        assert_eq!(got.human_queries(), 2);
        assert_eq!(got.calibrated(), None, "two human queries are too few");

        // Ten human queries, y = f but for one the judge overrated (f = 1,
        // y = 0): over n = 10, f has six 1s, y five: Σf = 6, Σy = 5, Σyf = 5,
        // so Cov = (5 − 10·0.5·0.6)/9 = 2/9, Var f = (6 − 3.6)/9 = 2.4/9,
        // Var y = 2.5/9. Ten judge-only queries, eight 1s: mean 0.8,
        // Var = (8 − 6.4)/9 = 1.6/9.
        // λ = (2/9/10) / (1.6/9/10 + 2.4/9/10) = 1/2;
        // θ = ½·0.8 + 0.5 − ½·0.6 = 0.6;
        // Var θ = ¼·1.6/90 + (2.5/9 − 2/9 + ¼·2.4/9)/10 = 4/900 + 11/900 = 1/60.
        let judge = [[1.0; 6].as_slice(), &[0.0; 4], &[1.0; 8], &[0.0; 2]].concat();
        let human: Vec<Option<f64>> = [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
            .into_iter()
            .map(Some)
            .chain([None; 10])
            .collect();
        let got = sums(&judge, &human).calibrated().unwrap();
        let half = Z_95 * (1.0_f64 / 60.0).sqrt();
        assert!((got.lambda - 0.5).abs() < 1e-12, "{}", got.lambda);
        assert!((got.mean - 0.6).abs() < 1e-12, "{}", got.mean);
        assert!((got.low - (0.6 - half)).abs() < 1e-12);
        assert!((got.high - (0.6 + half)).abs() < 1e-12);
    }

    #[test]
    fn a_constant_judge_leaves_the_human_mean() {
        let judge = [1.0; 30];
        let human: Vec<Option<f64>> = (0..30)
            .map(|i| (i < 12).then_some(f64::from(i % 2)))
            .collect();
        let got = sums(&judge, &human).calibrated().unwrap();
        assert_eq!(got.lambda, 0.0);
        assert!((got.mean - 0.5).abs() < 1e-12);
        // The human-only interval: 0.5 ± z·sqrt(Var/12), Var = 3/11.
        let half = Z_95 * (3.0 / 11.0 / 12.0_f64).sqrt();
        assert!((got.high - (0.5 + half)).abs() < 1e-12);
    }

    #[test]
    fn the_interval_stays_within_the_unit_range() {
        let judge = [1.0; 12];
        let human = [Some(1.0); 12];
        let got = sums(&judge, &human).calibrated().unwrap();
        assert_eq!((got.mean, got.low, got.high), (1.0, 1.0, 1.0));
        let human: Vec<Option<f64>> = (0..12).map(|i| Some(f64::from(u8::from(i > 0)))).collect();
        let got = sums(&judge, &human).calibrated().unwrap();
        assert!(got.high <= 1.0 && got.low < got.mean);
    }
}
