//! 95% intervals of a metric's mean over a slice's queries, for the bars of
//! the grade page and each night of `rgrade trend`: how far the mean could
//! move on another draw of queries.
//!
//! Small slices get the percentile bootstrap (compare's, 1,000 resamples,
//! a fixed seed), which respects the skew of a metric bunched at 0 or 1.
//! Above [`BOOTSTRAP_UP_TO`] queries the bootstrap distribution of a mean
//! of values in [0, 1] is normal to well within a pixel of any chart, so
//! the normal interval `mean ± z·s/√n` ([`Z_975`]) takes its place: the
//! same answer at no cost, where resampling a million queries a thousand
//! times per slice and metric would take longer than grading them.

use crate::base::stats::bootstrap_mean_interval;

/// Slices up to this many counted queries are bootstrapped.
pub const BOOTSTRAP_UP_TO: usize = 5_000;
/// Resamples of the bootstrap.
const RESAMPLES: usize = 1_000;
/// The bootstrap's seed: the same page for the same rows.
const SEED: u64 = 0;
/// Coverage of every interval.
const CONFIDENCE: f64 = 0.95;
/// The standard normal quantile of 97.5%.
pub const Z_975: f64 = 1.959_963_984_540_054;

/// How an interval was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Percentile bootstrap.
    Bootstrap,
    /// Normal approximation.
    Normal,
}

/// A mean and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanInterval {
    /// The mean.
    pub mean: f64,
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
    /// Values averaged.
    pub n: usize,
    /// How the interval was found.
    pub method: Method,
}

/// The values of one mean, added one at a time: their sum and spread
/// (Welford's), and the values themselves when they are few enough to be
/// bootstrapped, so a mean over a million queries keeps no copy of them.
#[derive(Debug, Clone)]
pub struct Gathered {
    n: usize,
    sum: f64,
    running_mean: f64,
    squares: f64,
    min: f64,
    max: f64,
    values: Option<Vec<f64>>,
}

impl Gathered {
    /// Ready for `n` values: keeps them if that is few enough to bootstrap.
    pub fn expecting(n: usize) -> Self {
        Gathered {
            n: 0,
            sum: 0.0,
            running_mean: 0.0,
            squares: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            values: (n <= BOOTSTRAP_UP_TO).then(|| Vec::with_capacity(n)),
        }
    }

    /// Add one value.
    pub fn add(&mut self, value: f64) {
        self.n += 1;
        self.sum += value;
        let step = value - self.running_mean;
        self.running_mean += step / self.n as f64;
        self.squares += step * (value - self.running_mean);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        if let Some(values) = &mut self.values {
            values.push(value);
        }
    }

    /// The mean and its 95% interval: bootstrapped when the values were
    /// kept and are few enough, else normal; `None` when there are none.
    pub fn interval(&self) -> Option<MeanInterval> {
        if self.n == 0 {
            return None;
        }
        let (n, mean) = (self.n, self.sum / self.n as f64);
        if let Some(values) = self.values.as_ref().filter(|v| v.len() <= BOOTSTRAP_UP_TO) {
            let (low, high) = bootstrap_mean_interval(values, RESAMPLES, SEED, CONFIDENCE);
            return Some(MeanInterval {
                mean,
                low,
                high,
                n,
                method: Method::Bootstrap,
            });
        }
        let spread = (self.squares.max(0.0) / (n - 1).max(1) as f64).sqrt();
        let half = Z_975 * spread / (n as f64).sqrt();
        Some(MeanInterval {
            mean,
            low: (mean - half).max(self.min),
            high: (mean + half).min(self.max),
            n,
            method: Method::Normal,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_pcg::Pcg64;

    /// The mean of `values` and its 95% interval.
    fn mean_interval(values: &[f64]) -> Option<MeanInterval> {
        let mut gathered = Gathered::expecting(values.len());
        values.iter().for_each(|&v| gathered.add(v));
        gathered.interval()
    }

    /// Reciprocal ranks as a retriever gives them: mostly 1 or 0, some in
    /// between, a skewed metric.
    fn reciprocal_ranks(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Pcg64::seed_from_u64(seed);
        (0..n)
            .map(|_| match rng.random_range(0..10) {
                0..=4 => 1.0,
                5..=7 => 0.0,
                _ => 1.0 / f64::from(rng.random_range(2..=10)),
            })
            .collect()
    }

    #[test]
    fn the_normal_interval_agrees_with_the_bootstrap_where_it_takes_over() {
        // At the switch, both ways give bounds within 0.003 of each other
        // (the bootstrap's own Monte Carlo error is about that), so no
        // chart shows a step between a slice just below and just above.
        let values = reciprocal_ranks(BOOTSTRAP_UP_TO, 7);
        let boot = mean_interval(&values).unwrap();
        assert_eq!(boot.method, Method::Bootstrap);
        let mut larger = values.clone();
        larger.push(boot.mean);
        let normal = mean_interval(&larger).unwrap();
        assert_eq!(normal.method, Method::Normal);
        assert!((boot.low - normal.low).abs() < 0.003, "{boot:?} {normal:?}");
        assert!(
            (boot.high - normal.high).abs() < 0.003,
            "{boot:?} {normal:?}"
        );
        assert!(boot.low < boot.mean && boot.mean < boot.high);
    }

    #[test]
    fn a_hand_computed_normal_interval() {
        // 3,000 zeros and 3,000 ones: mean 0.5, s = sqrt(6000 / 4 / 5999),
        // half width 1.96 s / sqrt(6000).
        let values: Vec<f64> = (0..6_000).map(|i| f64::from(i % 2)).collect();
        let interval = mean_interval(&values).unwrap();
        let s = (6_000.0 * 0.25 / 5_999.0_f64).sqrt();
        let half = Z_975 * s / 6_000.0_f64.sqrt();
        assert_eq!(interval.mean, 0.5);
        assert!((interval.low - (0.5 - half)).abs() < 1e-12);
        assert!((interval.high - (0.5 + half)).abs() < 1e-12);
        assert!((half - 0.01265).abs() < 1e-4);
    }

    #[test]
    fn gathering_more_values_than_expected_still_gives_an_interval() {
        // Expecting few, then given many: too many to bootstrap.
        let mut gathered = Gathered::expecting(2);
        for v in reciprocal_ranks(BOOTSTRAP_UP_TO + 1, 3) {
            gathered.add(v);
        }
        assert_eq!(gathered.interval().unwrap().method, Method::Normal);
    }

    #[test]
    fn constant_values_have_no_width_and_none_have_no_interval() {
        for n in [3, BOOTSTRAP_UP_TO + 10] {
            let interval = mean_interval(&vec![0.25; n]).unwrap();
            assert_eq!(
                (interval.low, interval.mean, interval.high),
                (0.25, 0.25, 0.25)
            );
        }
        assert_eq!(mean_interval(&[]), None);
    }
}
