//! Alarms that stay valid however often they are checked: a mean watched
//! night after night against a baseline (`rgrade trend`, docs/trend.md).
//!
//! Each night's per-query values are paired with the same queries'
//! baseline values, and the night bets against "no drop" with the paired
//! differences: its wealth is multiplied by `Π (1 − λ (d_q + m))`, where
//! `d_q` is a query's value that night less its baseline mean, `m` the
//! margin by which the baseline's own mean may sit too high, and `λ` a
//! bet sized from the night before (testing by betting, Waudby-Smith and
//! Ramdas 2023). While nothing dropped, a night's factor has expectation
//! at most 1, so the wealth is a nonnegative supermartingale over nights
//! and, by Ville's inequality, reaches `1/α` with probability at most `α`
//! however many nights are watched: no night needs a smaller level than
//! the first. After a drop the factors grow and the wealth compounds
//! across nights, so a drop too small to show in one night shows in a few.

/// The largest bet: the factor `1 − λ y` stays above 0.49 for any
/// difference `y ≤ 1 + m` with a margin below 1, so one night can never
/// wipe the wealth out.
pub const MAX_BET: f64 = 0.5;

/// The margin by which a mean of baseline values may exceed the mean it
/// estimates, with probability at most `alpha`: Bernstein's inequality for
/// a sum of independent terms of mean 0, each at most `largest_term` in
/// size, whose variances sum to `variance`.
///
/// Solves `alpha = exp(−m² / (2 (variance + largest_term m / 3)))` for
/// `m`. With no spread at all the margin is the Bernstein term alone,
/// `2 L largest_term / 3`.
pub fn bernstein_margin(variance: f64, largest_term: f64, alpha: f64) -> f64 {
    let log = (1.0 / alpha).ln();
    let linear = largest_term * log / 3.0;
    linear + (linear * linear + 2.0 * log * variance.max(0.0)).sqrt()
}

/// The baseline margin for one night's paired queries: each query `q`
/// contributes `count_q` baseline values, each scaled by `1 / (n count_q)`
/// in the mean of the `n` baseline means, with the variance its baseline
/// nights show.
#[derive(Debug, Clone, Copy, Default)]
pub struct MarginTerms {
    queries: usize,
    /// `Σ s_q² / count_q`.
    variance_over_count: f64,
    /// The fewest baseline values of any query.
    fewest_values: u32,
}

impl MarginTerms {
    /// Add a query with `count` baseline values whose sample variance is
    /// `variance`.
    pub fn add(&mut self, count: u32, variance: f64) {
        debug_assert!(count > 0);
        self.queries += 1;
        self.variance_over_count += variance / f64::from(count);
        self.fewest_values = if self.queries == 1 {
            count
        } else {
            self.fewest_values.min(count)
        };
    }

    /// The margin at level `alpha` (0 for no query).
    pub fn margin(&self, alpha: f64) -> f64 {
        if self.queries == 0 {
            return 0.0;
        }
        let n = self.queries as f64;
        let largest = 1.0 / (n * f64::from(self.fewest_values));
        bernstein_margin(self.variance_over_count / (n * n), largest, alpha)
    }
}

/// One series' wealth against "no drop", night after night.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wealth {
    /// The natural log of the wealth (0 at the start).
    pub log_wealth: f64,
    /// The bet of the next night.
    pub next_bet: f64,
}

impl Default for Wealth {
    /// No wealth won or lost, and no bet on the first night: nothing is
    /// known yet of how differences spread.
    fn default() -> Self {
        Wealth {
            log_wealth: 0.0,
            next_bet: 0.0,
        }
    }
}

/// One night's paired differences (each `d_q + m`), added one at a time.
#[derive(Debug, Clone, Copy)]
pub struct Night {
    bet: f64,
    log_factor: f64,
    n: usize,
    sum: f64,
    squares: f64,
}

impl Wealth {
    /// A night to add differences to, at the bet this wealth sized.
    pub fn night(&self) -> Night {
        Night {
            bet: self.next_bet,
            log_factor: 0.0,
            n: 0,
            sum: 0.0,
            squares: 0.0,
        }
    }

    /// The wealth after `night`, and the bet it sizes for the next one:
    /// the growth-optimal bet for differences spread as tonight's
    /// (`−mean / mean of squares`, GRAPA), kept within `[0, MAX_BET]`.
    pub fn after(&self, night: &Night) -> Wealth {
        let next_bet = if night.n == 0 || night.squares <= 0.0 {
            0.0
        } else {
            (-night.sum / night.squares).clamp(0.0, MAX_BET)
        };
        Wealth {
            log_wealth: self.log_wealth + night.log_factor,
            next_bet,
        }
    }
}

impl Night {
    /// Add one query's difference `y = d + m`.
    pub fn add(&mut self, y: f64) {
        self.log_factor += (-self.bet * y).ln_1p();
        self.n += 1;
        self.sum += y;
        self.squares += y * y;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_pcg::Pcg64;

    #[test]
    fn the_margin_solves_bernsteins_bound() {
        for (variance, largest, alpha) in [(1e-4, 1e-3, 0.01), (0.0, 0.01, 0.05), (0.02, 0.1, 1e-6)]
        {
            let m = bernstein_margin(variance, largest, alpha);
            let bound = (-m * m / (2.0 * (variance + largest * m / 3.0))).exp();
            assert!(
                (bound - alpha).abs() < 1e-12 * alpha.max(1e-300) + 1e-15,
                "{bound} {alpha}"
            );
        }
        // Hand computed: L = ln 20, no spread, terms of 1/300: 2 L / 900.
        let m = bernstein_margin(0.0, 1.0 / 300.0, 0.05);
        assert!((m - 2.0 * 20f64.ln() / 900.0).abs() < 1e-15);
    }

    #[test]
    fn margin_terms_scale_each_query_by_its_count() {
        let mut terms = MarginTerms::default();
        terms.add(4, 0.04);
        terms.add(2, 0.02);
        // Σ s²/c = 0.01 + 0.01 = 0.02 over n² = 4; largest term 1/(2·2).
        let expected = bernstein_margin(0.02 / 4.0, 0.25, 0.01);
        assert_eq!(terms.margin(0.01), expected);
        assert_eq!(MarginTerms::default().margin(0.01), 0.0);
    }

    #[test]
    fn a_night_multiplies_the_wealth_by_its_factors_and_sizes_the_next_bet() {
        let wealth = Wealth {
            log_wealth: 0.5,
            next_bet: 0.25,
        };
        let mut night = wealth.night();
        for y in [-0.5, 0.1, -0.2] {
            night.add(y);
        }
        let after = wealth.after(&night);
        let product: f64 = [-0.5f64, 0.1, -0.2]
            .iter()
            .map(|y| 1.0 - 0.25 * y)
            .product();
        assert!((after.log_wealth - (0.5 + product.ln())).abs() < 1e-12);
        // GRAPA: −Σy / Σy² = 0.6 / 0.30, clamped to MAX_BET.
        assert_eq!(after.next_bet, MAX_BET);
        let mut gentle = wealth.night();
        for y in [-0.1, 0.3, -0.25] {
            gentle.add(y);
        }
        let bet = wealth.after(&gentle).next_bet;
        assert!((bet - 0.05 / 0.1625).abs() < 1e-12, "{bet}");
        // A night that rose bets nothing on the next.
        let mut rose = wealth.night();
        rose.add(0.2);
        assert_eq!(wealth.after(&rose).next_bet, 0.0);
    }

    /// The guarantee itself: stable nights (differences of mean ≥ 0, here
    /// exactly 0 with a margin of 0) reach 1/α in at most about α of many
    /// series watched for 60 nights.
    #[test]
    fn stable_series_rarely_reach_one_over_alpha() {
        let alpha: f64 = 0.1;
        let mut rng = Pcg64::seed_from_u64(7);
        let series = 2_000;
        let mut alarms = 0;
        for _ in 0..series {
            let mut wealth = Wealth {
                next_bet: MAX_BET,
                ..Wealth::default()
            };
            let mut alarmed = false;
            for _ in 0..60 {
                let mut night = wealth.night();
                for _ in 0..40 {
                    let d: f64 = if rng.random_bool(0.5) { 0.3 } else { -0.3 };
                    night.add(d);
                }
                wealth = wealth.after(&night);
                alarmed |= wealth.log_wealth >= (1.0 / alpha).ln();
            }
            alarms += usize::from(alarmed);
        }
        let rate = alarms as f64 / series as f64;
        // Ville's bound is α; 3 standard errors of slack for the draw.
        assert!(
            rate <= alpha + 3.0 * (alpha * (1.0 - alpha) / series as f64).sqrt(),
            "{rate}"
        );
    }

    /// And its point: a drop compounds across nights until it shows.
    #[test]
    fn a_drop_compounds_to_an_alarm() {
        let mut wealth = Wealth::default();
        let mut nights = 0;
        let mut rng = Pcg64::seed_from_u64(3);
        while wealth.log_wealth < (1.0 / 0.001f64).ln() {
            let mut night = wealth.night();
            for _ in 0..100 {
                let d = if rng.random_bool(0.1) { -0.5 } else { 0.0 };
                night.add(d);
            }
            wealth = wealth.after(&night);
            nights += 1;
            assert!(nights < 10, "no alarm after {nights} nights");
        }
        assert!(nights >= 2, "the first night bets nothing");
    }
}
