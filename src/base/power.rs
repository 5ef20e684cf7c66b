//! How many queries a paired comparison needs (docs/compare.md, "How many
//! queries"): the smallest change a paired t-test of `n` queries detects
//! with a given power, and the queries it needs to detect a given change,
//! from the spread of the per-query differences.
//!
//! Both use the approximation of topic set size design (Sakai 2016, after
//! Nagata): a two-sided paired t-test at level `α` with power `1 − β`
//! needs `n ≈ (z_{α/2} + z_β)² / Δ² + z_{α/2}² / 2` queries to detect a
//! standardized change `Δ = D / σ`, where the last term corrects the
//! normal approximation for the t-test's estimated spread. It comes within
//! a query of the exact noncentral-t answer from 10 queries up
//! (python/tests check it against statsmodels).

use statrs::distribution::{ContinuousCDF, Normal};

/// The power the figures are for, as is customary.
pub const POWER: f64 = 0.8;

/// The fewest queries a paired t-test can run on.
const FEWEST: f64 = 2.0;

/// The sample standard deviation of paired differences (`n − 1` in the
/// denominator); 0 for fewer than two.
pub fn spread(differences: &[f64]) -> f64 {
    let n = differences.len();
    if n < 2 {
        return 0.0;
    }
    let mean = differences.iter().sum::<f64>() / n as f64;
    let squares: f64 = differences.iter().map(|d| (d - mean) * (d - mean)).sum();
    (squares / (n - 1) as f64).sqrt()
}

/// `z_{α/2} + z_β` and `z_{α/2}²/2` for a two-sided level `alpha` and
/// `power`.
fn quantiles(alpha: f64, power: f64) -> (f64, f64) {
    let normal = Normal::standard();
    let z_alpha = normal.inverse_cdf(1.0 - alpha / 2.0);
    let z_beta = normal.inverse_cdf(power);
    (z_alpha + z_beta, z_alpha * z_alpha / 2.0)
}

/// The smallest mean difference a two-sided paired t-test of `n` queries
/// at level `alpha` detects with probability `power`, when the per-query
/// differences have standard deviation `spread`; `None` below two
/// queries.
pub fn minimum_detectable_effect(spread: f64, n: usize, alpha: f64, power: f64) -> Option<f64> {
    let (z, correction) = quantiles(alpha, power);
    let room = n as f64 - correction;
    (n as f64 >= FEWEST && room > 0.0).then(|| z * spread / room.sqrt())
}

/// The queries a two-sided paired t-test at level `alpha` needs to detect
/// a mean difference of `effect` with probability `power`, when the
/// per-query differences have standard deviation `spread`; `None` for an
/// effect that is not positive.
pub fn queries_to_detect(effect: f64, spread: f64, alpha: f64, power: f64) -> Option<u64> {
    if effect.is_nan() || effect <= 0.0 {
        return None;
    }
    let (z, correction) = quantiles(alpha, power);
    let n = (z * spread / effect).powi(2) + correction;
    Some(n.ceil().max(FEWEST) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_figures() {
        // z_.025 = 1.959964, z_.2 = 0.841621: (2.801585)² = 7.848879,
        // z²/2 = 1.920729.
        let n = queries_to_detect(0.05, 0.2, 0.05, POWER).unwrap();
        // 7.848879 × 16 + 1.920729 = 127.50: 128 queries.
        assert_eq!(n, 128);
        let mde = minimum_detectable_effect(0.2, 128, 0.05, POWER).unwrap();
        // 2.801585 × 0.2 / √(128 − 1.920729) = 0.560317 / 11.228503 = 0.049901.
        assert!((mde - 0.049_901).abs() < 1e-6, "{mde}");
        // The two agree: n queries detect the MDE at n.
        for n in [5, 30, 400] {
            let mde = minimum_detectable_effect(0.3, n, 0.05, POWER).unwrap();
            assert_eq!(
                queries_to_detect(mde * (1.0 + 1e-12), 0.3, 0.05, POWER),
                Some(n as u64)
            );
        }
    }

    #[test]
    fn spread_is_the_sample_standard_deviation() {
        assert_eq!(spread(&[]), 0.0);
        assert_eq!(spread(&[0.4]), 0.0);
        // Mean 0, squares 0.02: √(0.02 / 1).
        assert!((spread(&[0.1, -0.1]) - 0.02f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn edges() {
        assert_eq!(minimum_detectable_effect(0.2, 1, 0.05, POWER), None);
        assert_eq!(minimum_detectable_effect(0.0, 50, 0.05, POWER), Some(0.0));
        assert_eq!(queries_to_detect(0.0, 0.2, 0.05, POWER), None);
        assert_eq!(queries_to_detect(0.1, 0.0, 0.05, POWER), Some(2));
    }
}
