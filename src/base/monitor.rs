//! Alarms that stay valid however often they are checked: a mean watched
//! night after night against its baseline nights (`rgrade trend`,
//! docs/trend.md).
//!
//! Each watched night, a series' queries are paired with their own
//! baseline means, and a one-sided paired t-test over the queries asks
//! whether the night's expected quality fell below the baseline's: the
//! queries are the sampling unit, so a ranking that changed and stayed
//! changed is one draw of its query, not new evidence every night. The
//! nights share the chance of a false alarm by a spending rule, the t-th
//! watched night `α / (t (t + 1))`, which sums to `α` over any number of
//! nights and holds however the nights depend on each other (rankings
//! that persist, drift, or revert); the same rule shares `α` over labels
//! revisions, and Bonferroni over a revision's distinct series.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The share of a whole that the `index`-th of an unbounded sequence
/// (from 1) may spend: `1 / (index (index + 1))`. The shares sum to 1
/// however many there are, and none changes when more come.
pub fn spending_share(index: u32) -> f64 {
    let t = f64::from(index.max(1));
    1.0 / (t * (t + 1.0))
}

/// Labels revision `revision`'s share of `alpha`, the chance of any false
/// alarm over every revision.
pub fn revision_alpha(alpha: f64, revision: u32) -> f64 {
    alpha * spending_share(revision)
}

/// The p-value a series of a `family` of distinct series must reach to
/// alarm on its revision's `night`-th watched night, for a chance of any
/// false alarm of at most `revision_alpha` over the revision's series and
/// nights.
pub fn night_level(revision_alpha: f64, night: u32, family: usize) -> f64 {
    revision_alpha * spending_share(night) / family.max(1) as f64
}

/// One series' paired drops on one night, `d = baseline − value` per
/// query (positive: the query did worse than over the baseline nights),
/// added one at a time (Welford's mean and spread, so a tight spread
/// around a large drop is not lost to rounding).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Drops {
    n: u64,
    moved: u64,
    mean: f64,
    squares: f64,
}

impl Drops {
    /// Add one query's drop.
    pub fn add(&mut self, drop: f64) {
        self.n += 1;
        self.moved += u64::from(drop != 0.0);
        let delta = drop - self.mean;
        self.mean += delta / self.n as f64;
        self.squares += delta * (drop - self.mean);
    }

    /// The queries paired.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The one-sided p-value of "no drop" (the queries' expected drop is
    /// at most 0): Student's t with n − 1 degrees of freedom, never below
    /// `2^−k` for the k queries that moved at all, the least any test of
    /// their signs can give (a handful of queries that moved alike say
    /// no more than that). `None` with fewer than two queries.
    pub fn p_value(&self) -> Option<f64> {
        if self.n < 2 {
            return None;
        }
        let n = self.n as f64;
        let floor = 0.5f64.powi(self.moved.min(1100) as i32);
        let spread = (self.squares.max(0.0) / (n - 1.0)).sqrt();
        let t_test = if spread > 0.0 {
            let t = self.mean / (spread / n.sqrt());
            // n ≥ 2, so the degrees of freedom are valid.
            StudentsT::new(0.0, 1.0, n - 1.0).map_or(1.0, |student| student.sf(t))
        } else if self.mean > 0.0 {
            // Every query dropped by the same amount: the floor says how
            // much that is worth.
            0.0
        } else {
            1.0
        };
        Some(t_test.max(floor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_pcg::Pcg64;

    #[test]
    fn shares_sum_to_one_and_levels_split_alpha() {
        assert_eq!(spending_share(1), 0.5);
        assert_eq!(spending_share(2), 1.0 / 6.0);
        let sum: f64 = (1..=10_000).map(spending_share).sum();
        assert!((sum - (1.0 - 1.0 / 10_001.0)).abs() < 1e-12, "{sum}");
        // α 0.05, revision 1 (1/2), night 2 (1/6), 6 series.
        let level = night_level(revision_alpha(0.05, 1), 2, 6);
        assert!((level - 0.05 / 2.0 / 6.0 / 6.0).abs() < 1e-18, "{level}");
    }

    /// Hand computed: drops 0.3, −0.1, 0.2 have mean 0.4/3 and sample
    /// variance 0.39/9, so t = 0.4 √(3/0.39) with 2 degrees of freedom,
    /// whose upper tail is (1 − t / √(t² + 2)) / 2, about 0.19: over the
    /// floor of 1/8 for three queries that moved.
    #[test]
    fn p_is_students_upper_tail() {
        let mut drops = Drops::default();
        for d in [0.3, -0.1, 0.2] {
            drops.add(d);
        }
        let t = 0.4 * (3.0f64 / 0.39).sqrt();
        let expected = (1.0 - t / (t * t + 2.0).sqrt()) / 2.0;
        let p = drops.p_value().unwrap();
        assert!((p - expected).abs() < 1e-12, "{p} {expected}");
        assert!(expected > 0.125);
        assert_eq!(drops.count(), 3);
        // Drops 0.3, 0.1, 0.2: t = 2√3, a tail of about 0.037, under the
        // floor of 1/8 that three signs can give.
        let mut alike = Drops::default();
        for d in [0.3, 0.1, 0.2] {
            alike.add(d);
        }
        assert_eq!(alike.p_value(), Some(0.125));
    }

    #[test]
    fn few_or_alike_queries_say_little() {
        let mut one = Drops::default();
        one.add(0.9);
        assert_eq!(one.p_value(), None);
        // Two queries that lost their hit alike: no spread, a floor of 1/4.
        let mut alike = Drops::default();
        alike.add(1.0);
        alike.add(1.0);
        assert_eq!(alike.p_value(), Some(0.25));
        // Nothing moved, or everything rose alike: no evidence at all.
        let mut still = Drops::default();
        still.add(0.0);
        still.add(0.0);
        assert_eq!(still.p_value(), Some(1.0));
        let mut rose = Drops::default();
        rose.add(-0.2);
        rose.add(-0.2);
        assert_eq!(rose.p_value(), Some(1.0));
    }

    /// The level holds: queries whose values persist across nights (most
    /// differences exactly 0, a few redrawn) and whose expected quality
    /// never moves reject at about the nominal rate or below, at a level
    /// as small as a family's share.
    #[test]
    fn stable_queries_reject_at_most_at_the_level() {
        let mut rng = Pcg64::seed_from_u64(11);
        let (trials, queries, level) = (20_000, 40, 0.01);
        let mut rejected = 0;
        for _ in 0..trials {
            let mut drops = Drops::default();
            for _ in 0..queries {
                // One query in five redrawn: its value and its baseline
                // are two draws of one skewed distribution.
                let d = if rng.random_bool(0.2) {
                    let draw = |rng: &mut Pcg64| if rng.random_bool(0.3) { 1.0 } else { 0.1 };
                    draw(&mut rng) - draw(&mut rng)
                } else {
                    0.0
                };
                drops.add(d);
            }
            rejected += usize::from(drops.p_value().unwrap() <= level);
        }
        let rate = rejected as f64 / trials as f64;
        let slack = 3.0 * (level * (1.0 - level) / trials as f64).sqrt();
        assert!(rate <= level + slack, "{rate}");
    }

    /// The whole rule, on histories built to break a test that piles
    /// nights up: each night one query in twenty draws a new value and
    /// keeps it (expected quality never moves), values skewed and mostly
    /// alike from night to night, four series of 120 and 40 queries, a
    /// week of baseline and 23 watched nights. The share of histories
    /// with any alarm stays within α.
    #[test]
    fn rankings_that_persist_keep_the_family_wise_rate() {
        let (alpha, histories, series) = (0.05, 400, 4);
        let mut rng = Pcg64::seed_from_u64(17);
        let draw = |rng: &mut Pcg64| match rng.random_range(0..10) {
            0..3 => 0.0,
            3..6 => 1.0,
            _ => rng.random_range(0.0..1.0),
        };
        let mut alarmed = 0;
        for _ in 0..histories {
            let mut values: Vec<f64> = (0..120).map(|_| draw(&mut rng)).collect();
            let mut baseline = vec![0.0; 120];
            let mut any = false;
            for night in 1..=30u32 {
                for value in &mut values {
                    if rng.random_bool(0.05) {
                        *value = draw(&mut rng);
                    }
                }
                if night <= 7 {
                    for (b, v) in baseline.iter_mut().zip(&values) {
                        *b += v / 7.0;
                    }
                    continue;
                }
                let level = night_level(revision_alpha(alpha, 1), night - 7, series);
                // The overall set, then three slices of 40.
                for queries in [0..120, 0..40, 40..80, 80..120] {
                    let mut drops = Drops::default();
                    for q in queries {
                        drops.add(baseline[q] - values[q]);
                    }
                    any |= drops.p_value().is_some_and(|p| p <= level);
                }
            }
            alarmed += usize::from(any);
        }
        let rate = alarmed as f64 / histories as f64;
        let slack = 3.0 * (alpha * (1.0 - alpha) / histories as f64).sqrt();
        assert!(rate <= alpha + slack, "{rate}");
    }

    /// And a drop of a quarter of the queries is found at a family's level.
    #[test]
    fn a_drop_of_part_of_the_queries_is_found() {
        let mut rng = Pcg64::seed_from_u64(5);
        let mut drops = Drops::default();
        for q in 0..43 {
            let d = if q < 15 {
                0.215 + rng.random_range(-0.2..0.2)
            } else {
                rng.random_range(-0.006..0.006)
            };
            drops.add(d);
        }
        assert!(drops.p_value().unwrap() < night_level(revision_alpha(0.05, 1), 1, 6));
    }
}
