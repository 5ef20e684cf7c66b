//! Paired statistics for `rgrade compare` (docs/compare.md): given one delta per
//! query (candidate minus baseline), the randomization p-value of the mean
//! delta, its interval, the Holm adjustment across distinct hypotheses and
//! the wins / ties / losses count; and the percentile bootstrap of a mean
//! that the grade page's and trend's intervals use. The compare stage feeds these per (stage,
//! slice, metric) and writes what they return into `comparison.csv`.
//!
//! Metric deltas repeat a few values very often (0 above all; hit@k has
//! only -1, 0 and 1), so both procedures draw how many copies of each
//! frequent value are flipped or resampled, one binomial draw per value,
//! and visit only the rare values one by one: the same distribution, at a
//! fraction of the cost on a million queries.
//!
//! Every random result is reproducible: the work is cut into fixed chunks,
//! each with its own [`Pcg64`] seeded from (seed, chunk index), so the answer
//! depends on the seed only, never on the number of rayon threads.

use hashbrown::HashMap;
use rand::Rng;
use rand_distr::{Binomial, Distribution};
use rand_pcg::Pcg64;
use rayon::prelude::*;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A delta whose magnitude is at most this counts as a tie.
pub const TIE_EPSILON: f64 = 1e-12;

/// Permutations per chunk: each chunk has its own generator. Large enough
/// that building the subset-sum tables (see [`SignFlips::count_extreme`]) is cheap
/// next to the lookups, small enough to balance 10,000 permutations over
/// a few cores.
const PERM_CHUNK: usize = 256;
/// Random words (64 signs each) per block of deltas.
const BLOCK_WORDS: usize = 4;
/// Deltas per block: the block's subset-sum tables (64 KiB) stay in cache
/// while every permutation of the chunk visits them.
const BLOCK: usize = BLOCK_WORDS * 64;
/// Groups of 8 deltas per block, one 256-entry table each.
const GROUPS: usize = BLOCK / 8;
/// Resamples per bootstrap chunk.
const RESAMPLE_CHUNK: usize = 16;
/// Relative slack, times `sum |d_i|`, when comparing a permuted statistic
/// with the observed one, so that permutations that tie it exactly (common
/// with discrete metrics) are not lost to rounding.
const TIE_SLACK: f64 = 1e-10;
/// A binomial draw costs about as much as flipping this many deltas by
/// table lookups: |deltas| that occur this often are flipped in bulk.
const FLIP_BULK_COUNT: u64 = 1024;
/// A binomial draw costs about as much as this many random reads: deltas
/// that occur this often are resampled in bulk.
const RESAMPLE_BULK_COUNT: u64 = 32;
/// Salts that keep the p-value and bootstrap streams apart for one seed.
const SALT_PERMUTATION: u64 = 0x7065_726d_7574_6521;
const SALT_BOOTSTRAP: u64 = 0x626f_6f74_7374_7221;

/// Two-sided p-value of the paired sign-flip randomization test of the mean
/// delta, so `compare` can say whether a change is more than noise.
///
/// Under the null hypothesis (baseline and candidate are exchangeable per
/// query) each delta's sign is a coin flip. Each permutation flips the signs
/// at random; the p-value is `(1 + k) / (1 + permutations)` where `k` counts
/// permutations whose `|mean|` is at least the observed `|mean|` (less a
/// rounding slack of `1e-10 · Σ|d|`). It is never 0, and it is exactly
/// reproducible for a seed whatever the thread count.
///
/// Returns 1 for empty input, when every delta is zero, or with zero
/// permutations; NaN if a delta is not finite.
pub fn paired_randomization_p_value(deltas: &[f64], permutations: usize, seed: u64) -> f64 {
    randomization_p_value(deltas, permutations, seed, FLIP_BULK_COUNT)
}

/// [`paired_randomization_p_value`], flipping |deltas| that occur at least
/// `bulk_count` times in bulk.
fn randomization_p_value(deltas: &[f64], permutations: usize, seed: u64, bulk_count: u64) -> f64 {
    if deltas.iter().any(|d| !d.is_finite()) {
        return f64::NAN;
    }
    let abs_sum: f64 = deltas.iter().map(|d| d.abs()).sum();
    if deltas.is_empty() || permutations == 0 || abs_sum == 0.0 {
        return 1.0;
    }
    let total: f64 = deltas.iter().sum();
    let threshold = total.abs() - TIE_SLACK * abs_sum;
    // Flipping a zero changes nothing, and flipping signs of d or of |d|
    // gives the same distribution.
    let magnitudes = Split::new(
        deltas.iter().filter(|d| **d != 0.0).map(|d| d.abs()),
        bulk_count,
    );
    let rare_total: f64 = magnitudes.rare.iter().sum();
    // Zero padding adds nothing to any signed sum, and lets the kernel work
    // on whole blocks only.
    let mut padded = magnitudes.rare.clone();
    padded.resize(padded.len().div_ceil(BLOCK) * BLOCK, 0.0);
    let n_chunks = permutations.div_ceil(PERM_CHUNK);
    let extreme: usize = (0..n_chunks)
        .into_par_iter()
        .map(|chunk| {
            let count = PERM_CHUNK.min(permutations - chunk * PERM_CHUNK);
            let rng = chunk_rng(seed, SALT_PERMUTATION, chunk);
            let flips = SignFlips {
                frequent: &magnitudes.frequent,
                padded: &padded,
                total: rare_total,
            };
            flips.count_extreme(threshold, count, rng)
        })
        .sum();
    (1 + extreme) as f64 / (1 + permutations) as f64
}

/// A sample split for drawing: the values that occur at least a given
/// number of times, tallied, and all other values one by one.
#[derive(Debug, Clone, PartialEq)]
struct Split {
    /// Each frequent value (ascending; `-0.0` counts as `0.0`) and how
    /// often it occurs.
    frequent: Vec<(f64, u64)>,
    /// The other values, in input order.
    rare: Vec<f64>,
}

impl Split {
    fn new(values: impl Iterator<Item = f64>, min_count: u64) -> Split {
        // Adding 0.0 turns -0.0 into 0.0 and leaves every other value.
        let values: Vec<f64> = values.map(|v| v + 0.0).collect();
        if (values.len() as u64) < min_count {
            return Split {
                frequent: Vec::new(),
                rare: values,
            };
        }
        let mut counts: HashMap<u64, u64> = HashMap::new();
        for value in &values {
            *counts.entry(value.to_bits()).or_default() += 1;
        }
        let mut frequent: Vec<(f64, u64)> = counts
            .iter()
            .filter(|(_, &count)| count >= min_count)
            .map(|(&bits, &count)| (f64::from_bits(bits), count))
            .collect();
        frequent.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let rare = values
            .into_iter()
            .filter(|v| counts[&v.to_bits()] < min_count)
            .collect();
        Split { frequent, rare }
    }
}

/// The sign-flip statistic `Σ s_i d_i` of a split sample: its frequent
/// values in bulk, its rare values through subset-sum tables.
struct SignFlips<'a> {
    /// Frequent magnitudes: the `c` deltas of magnitude `v` add
    /// `v (2B - c)`, with `B ~ Binomial(c, 1/2)` of them positive, exactly
    /// as `c` independent sign flips would.
    frequent: &'a [(f64, u64)],
    /// The rare deltas, zero-padded to whole blocks.
    padded: &'a [f64],
    /// The sum of the rare deltas.
    total: f64,
}

impl SignFlips<'_> {
    /// Counts, among `count` random sign assignments drawn from `rng`,
    /// those whose `|Σ s_i d_i|` reaches `threshold`.
    ///
    /// With `S` the sum of the rare deltas whose sign bit is set, their
    /// part of `Σ s_i d_i` is `2S - total`, so we only need subset sums.
    /// For every group of 8 deltas we tabulate all 256 subset sums once per
    /// block and chunk; a permutation then costs one table lookup per 8
    /// deltas (one byte of a random word) instead of 8 sign flips. Eight
    /// independent accumulators hide the add latency.
    fn count_extreme(&self, threshold: f64, count: usize, mut rng: Pcg64) -> usize {
        let bulk: Vec<(f64, i64, Binomial)> = self
            .frequent
            .iter()
            .map(|&(v, c)| {
                (
                    v,
                    c as i64,
                    Binomial::new(c, 0.5).expect("1/2 is a probability"),
                )
            })
            .collect();
        let frequent_sums: Vec<f64> = (0..count)
            .map(|_| {
                bulk.iter()
                    .map(|(v, c, positive)| v * (2 * positive.sample(&mut rng) as i64 - c) as f64)
                    .sum()
            })
            .collect();
        let mut set_sums = vec![0.0; count];
        let mut tables = vec![[0.0f64; 256]; GROUPS];
        for block in self.padded.chunks_exact(BLOCK) {
            for (table, group) in tables.iter_mut().zip(block.chunks_exact(8)) {
                table[0] = 0.0;
                for (k, &d) in group.iter().enumerate() {
                    let half = 1usize << k;
                    for m in 0..half {
                        table[m + half] = table[m] + d;
                    }
                }
            }
            for set_sum in set_sums.iter_mut() {
                let mut acc = [0.0f64; 8];
                for word_tables in tables.chunks_exact(8) {
                    let bits = rng.next_u64();
                    for (b, (a, table)) in acc.iter_mut().zip(word_tables).enumerate() {
                        *a += table[usize::from((bits >> (8 * b)) as u8)];
                    }
                }
                *set_sum += acc.iter().sum::<f64>();
            }
        }
        frequent_sums
            .iter()
            .zip(&set_sums)
            .filter(|&(frequent, set_sum)| {
                (frequent + 2.0 * set_sum - self.total).abs() >= threshold
            })
            .count()
    }
}

/// Fewer deltas than this get no interval of their mean: the interval's
/// coverage is checked from 10 queries up (benches/runs/, "Compare's
/// intervals on small slices"), and below that a skewed sample can hide
/// most of the change.
pub const INTERVAL_MIN_QUERIES: usize = 10;

/// Why a mean delta has no interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoInterval {
    /// Fewer than [`INTERVAL_MIN_QUERIES`] deltas.
    TooFewQueries,
    /// Every delta is the same: nothing tells how far the mean could be
    /// from it (ten queries that all tie may still come from a change that
    /// moves one query in five).
    AllEqual,
}

impl std::fmt::Display for NoInterval {
    /// What the outputs print instead of an interval.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoInterval::TooFewQueries => "too few queries",
            NoInterval::AllEqual => "all deltas equal",
        })
    }
}

/// Interval of the mean delta at `confidence` (0.95), or why none is
/// valid, so `compare` shows how uncertain a delta is without promising
/// more than it can keep.
///
/// The Student t interval `mean ± t(n-1) · sd / sqrt(n)`, each end pushed
/// out as far as the same interval after Hall's transformation of the t
/// statistic (Hall, *On the removal of skewness by transformation*, JRSS
/// B 54, 1992) reaches: with `γ` the sample skewness, `a = γ / (3 √n)` and
/// `b = γ / (6 √n)`, that interval's ends are `mean - g⁻¹(±t) · sd / √n`
/// with `g⁻¹(x) = ((1 + 3a (x - b))^(1/3) - 1) / a`. Metric deltas are
/// often skewed (a change that fixes a few queries outright and leaves the
/// rest), and there the t interval alone is short on the side of the few;
/// where the skewness is only noise, the t interval keeps its coverage.
/// Together they cover the true mean delta at least 93% of the time at
/// 10–50 queries in every setting of benches/runs/, "Compare's intervals
/// on small slices". Deterministic: no resampling. A non-finite delta gives
/// NaN ends.
pub fn mean_delta_interval(deltas: &[f64], confidence: f64) -> Result<(f64, f64), NoInterval> {
    let n = deltas.len();
    if n < INTERVAL_MIN_QUERIES {
        return Err(NoInterval::TooFewQueries);
    }
    if deltas.iter().all(|&d| d == deltas[0]) {
        return Err(NoInterval::AllEqual);
    }
    let count = n as f64;
    let mean = deltas.iter().sum::<f64>() / count;
    let (squares, cubes) = deltas.iter().fold((0.0, 0.0), |(s2, s3), &d| {
        let c = d - mean;
        (s2 + c * c, s3 + c * c * c)
    });
    let sd = (squares / (count - 1.0)).sqrt();
    let standard_error = sd / count.sqrt();
    let t = StudentsT::new(0.0, 1.0, count - 1.0)
        .expect("at least 9 degrees of freedom")
        .inverse_cdf((1.0 + confidence) / 2.0);
    let skewness = cubes / count / sd.powi(3);
    let a = skewness / (3.0 * count.sqrt());
    let b = skewness / (6.0 * count.sqrt());
    let untransformed = |x: f64| {
        if a == 0.0 {
            x - b
        } else {
            ((1.0 + 3.0 * a * (x - b)).cbrt() - 1.0) / a
        }
    };
    let low = mean - t.max(untransformed(t)) * standard_error;
    let high = mean - (-t).min(untransformed(-t)) * standard_error;
    Ok((low, high))
}

/// Percentile bootstrap interval of a mean at `confidence` (e.g. 0.95), for
/// the grade page's and trend's intervals of small slices. (`compare`
/// no longer uses it: at 10–20 queries of skewed deltas it covers 85–90%,
/// benches/runs/, "Compare's intervals on small slices".)
///
/// Each resample draws `deltas.len()` indices with replacement; the bounds
/// are the `(1 - confidence) / 2` and `(1 + confidence) / 2` quantiles of
/// the resample means (linear interpolation between order statistics),
/// clamped to `[min, max]` of the deltas, where any mean must lie, so a
/// constant delta gets exactly that constant. Reproducible for a seed
/// whatever the thread count.
///
/// Empty input gives `(0, 0)`; zero resamples give the observed mean twice;
/// `confidence` is clamped to `[0, 1]` (NaN counts as 0); a non-finite
/// delta gives `(NaN, NaN)`.
///
/// Cost per resample: one binomial draw per distinct delta when they are
/// few (see the module doc), else one random draw and read per delta.
pub fn bootstrap_mean_interval(
    deltas: &[f64],
    resamples: usize,
    seed: u64,
    confidence: f64,
) -> (f64, f64) {
    bootstrap_interval(deltas, resamples, seed, confidence, RESAMPLE_BULK_COUNT)
}

/// [`bootstrap_mean_interval`], resampling deltas that occur at least
/// `bulk_count` times in bulk.
fn bootstrap_interval(
    deltas: &[f64],
    resamples: usize,
    seed: u64,
    confidence: f64,
    bulk_count: u64,
) -> (f64, f64) {
    if deltas.is_empty() {
        return (0.0, 0.0);
    }
    if deltas.iter().any(|d| !d.is_finite()) {
        return (f64::NAN, f64::NAN);
    }
    let n = deltas.len();
    let lo = deltas.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = deltas.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if resamples == 0 {
        let mean = (deltas.iter().sum::<f64>() / n as f64).clamp(lo, hi);
        return (mean, mean);
    }
    let split = Split::new(deltas.iter().copied(), bulk_count);
    let n_chunks = resamples.div_ceil(RESAMPLE_CHUNK);
    let mut means: Vec<f64> = (0..n_chunks)
        .into_par_iter()
        .flat_map_iter(|chunk| {
            let count = RESAMPLE_CHUNK.min(resamples - chunk * RESAMPLE_CHUNK);
            let mut rng = chunk_rng(seed, SALT_BOOTSTRAP, chunk);
            (0..count)
                .map(|_| resample_mean(&split, n as u64, &mut rng))
                .collect::<Vec<_>>()
        })
        .collect();
    means.sort_unstable_by(f64::total_cmp);
    let confidence = if confidence > 0.0 {
        confidence.min(1.0)
    } else {
        0.0
    };
    let tail = (1.0 - confidence) / 2.0;
    let low = quantile(&means, tail).clamp(lo, hi);
    let high = quantile(&means, 1.0 - tail).clamp(lo, hi);
    (low, high)
}

/// The mean of one resample of `n` draws with replacement. How many draws
/// land on each frequent value, and how many on the rare ones, is
/// multinomial: one binomial draw per frequent value, conditioned on the
/// draws left. The draws left then pick rare values uniformly.
fn resample_mean(split: &Split, n: u64, rng: &mut Pcg64) -> f64 {
    let (mut draws_left, mut weight_left) = (n, n);
    let mut sum = 0.0;
    for &(value, count) in &split.frequent {
        if draws_left == 0 {
            break;
        }
        let share = count as f64 / weight_left as f64;
        let drawn = Binomial::new(draws_left, share)
            .expect("a share of the weight left is a probability")
            .sample(rng);
        sum += value * drawn as f64;
        draws_left -= drawn;
        weight_left -= count;
    }
    (sum + sum_of_draws(&split.rare, draws_left, rng)) / n as f64
}

/// The sum of `draws` values picked uniformly with replacement.
fn sum_of_draws(values: &[f64], draws: u64, rng: &mut Pcg64) -> f64 {
    let n = values.len() as u64;
    let mut acc = [0.0f64; 4];
    for draw in 0..draws {
        // Lemire's multiply-shift: an index in 0..n, with a bias of at most
        // n / 2^64.
        let index = ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as usize;
        acc[draw as usize % 4] += values[index];
    }
    acc.iter().sum()
}

/// The `q` quantile of sorted, non-empty `values`, interpolating linearly
/// between order statistics (type 7, the default of R and numpy).
fn quantile(values: &[f64], q: f64) -> f64 {
    let position = q * (values.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(values.len() - 1);
    let weight = position - below as f64;
    let (a, b) = (values[below], values[above]);
    if weight == 0.0 || a == b {
        a
    } else {
        a + weight * (b - a)
    }
}

/// Holm–Bonferroni adjusted p-values, in the input order, so `compare` can
/// test several metrics at once and still bound the family-wise error.
///
/// Step-down: the i-th smallest of m p-values is multiplied by `m - i`
/// (i from 0), made monotone by a running maximum, and capped at 1. A NaN
/// p-value counts in m, sorts last and stays NaN.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut adjusted = vec![f64::NAN; m];
    let mut running = 0.0f64;
    for (rank, &index) in order.iter().enumerate() {
        let p = p_values[index];
        if p.is_nan() {
            continue;
        }
        running = running.max(((m - rank) as f64 * p).min(1.0));
        adjusted[index] = running;
    }
    adjusted
}

/// For each item, the index of the first item equal to it (its own index
/// when no earlier one is): metrics whose per-query deltas are equal test
/// one hypothesis, and [`holm_distinct`] counts it once.
pub fn first_equal<T: PartialEq>(items: &[T]) -> Vec<usize> {
    (0..items.len())
        .map(|i| (0..i).find(|&j| items[j] == items[i]).unwrap_or(i))
        .collect()
}

/// Holm-adjusted p-values over distinct hypotheses: test `i` repeats test
/// `same_as[i]` (itself when it is the first of its kind, as
/// [`first_equal`] gives). Only the first of each kind is in the family,
/// and a repeat gets its adjusted p: counting one hypothesis twice (rr@10
/// and rr@100 when every first relevant document is within rank 10)
/// would raise every adjusted p for nothing. The family's size is
/// [`distinct_count`].
pub fn holm_distinct(p_values: &[f64], same_as: &[usize]) -> Vec<f64> {
    let distinct: Vec<usize> = (0..p_values.len()).filter(|&i| same_as[i] == i).collect();
    let firsts: Vec<f64> = distinct.iter().map(|&i| p_values[i]).collect();
    let adjusted = holm(&firsts);
    same_as
        .iter()
        .map(|first| {
            let at = distinct
                .binary_search(first)
                .expect("a repeated test names the first of its kind");
            adjusted[at]
        })
        .collect()
}

/// How many distinct tests `same_as` (as [`first_equal`] gives) holds.
pub fn distinct_count(same_as: &[usize]) -> usize {
    same_as.iter().enumerate().filter(|&(i, &f)| i == f).count()
}

/// How many queries a change improved, left alone and hurt: the average
/// can hide a few large losses, so `compare` always reports the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WinsTiesLosses {
    /// Queries whose delta is above [`TIE_EPSILON`].
    pub wins: usize,
    /// Queries whose |delta| is at most [`TIE_EPSILON`] (or is NaN).
    pub ties: usize,
    /// Queries whose delta is below `-TIE_EPSILON`.
    pub losses: usize,
}

/// Counts wins, ties and losses over per-query deltas; a delta within
/// [`TIE_EPSILON`] of zero is a tie, so rounding noise is not a win.
pub fn wins_ties_losses(deltas: &[f64]) -> WinsTiesLosses {
    let mut counts = WinsTiesLosses::default();
    for &d in deltas {
        if d > TIE_EPSILON {
            counts.wins += 1;
        } else if d < -TIE_EPSILON {
            counts.losses += 1;
        } else {
            counts.ties += 1;
        }
    }
    counts
}

/// The generator of one chunk: a pure function of (seed, salt, chunk), so
/// chunk results do not depend on which thread runs them. PCG's streams
/// keep the chunks' sequences independent.
fn chunk_rng(seed: u64, salt: u64, chunk: usize) -> Pcg64 {
    let state = (u128::from(salt) << 64) | u128::from(seed);
    Pcg64::new(state, chunk as u128)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The exact two-sided p-value: all 2^n sign assignments.
    fn exact_p_value(deltas: &[f64]) -> f64 {
        let n = deltas.len();
        let observed: f64 = deltas.iter().sum::<f64>().abs();
        let extreme = (0u32..1 << n)
            .filter(|mask| {
                let s: f64 = deltas
                    .iter()
                    .enumerate()
                    .map(|(i, d)| if mask >> i & 1 == 1 { *d } else { -d })
                    .sum();
                s.abs() >= observed - 1e-12
            })
            .count();
        extreme as f64 / (1u64 << n) as f64
    }

    /// The sign-flip kernel without tables: bit j of word w of a block
    /// flips delta 64w + j, drawing words in the same order as
    /// [`SignFlips::count_extreme`].
    fn naive_count_extreme(padded: &[f64], threshold: f64, count: usize, mut rng: Pcg64) -> usize {
        let mut sums = vec![0.0; count];
        for block in padded.chunks_exact(BLOCK) {
            for sum in sums.iter_mut() {
                for word in block.chunks_exact(64) {
                    let bits = rng.next_u64();
                    for (j, d) in word.iter().enumerate() {
                        *sum += if bits >> j & 1 == 1 { *d } else { -d };
                    }
                }
            }
        }
        sums.iter().filter(|s| s.abs() >= threshold).count()
    }

    /// A p-value and an interval as bits, to compare them exactly.
    fn bits((p, (low, high)): (f64, (f64, f64))) -> [u64; 3] {
        [p.to_bits(), low.to_bits(), high.to_bits()]
    }

    fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a small rayon pool can be built in tests")
            .install(f)
    }

    #[test]
    fn p_value_matches_exact_enumeration() {
        for deltas in [
            vec![1.0, 2.0, -0.5, 3.0],
            vec![0.3, -0.1, 0.2, 0.25, -0.05, 0.4, 0.1],
            // More than one group of 8 and ties between sign assignments.
            vec![1.0, 1.0, -1.0, 1.0, 0.0, 1.0, -1.0, 1.0, 1.0, 0.5, -0.5],
        ] {
            let exact = exact_p_value(&deltas);
            let estimate = paired_randomization_p_value(&deltas, 200_000, 7);
            assert!(
                (estimate - exact).abs() < 0.01,
                "deltas {deltas:?}: exact {exact}, estimate {estimate}"
            );
        }
        assert_eq!(exact_p_value(&[1.0, 2.0, -0.5, 3.0]), 0.25);
    }

    #[test]
    fn p_value_edge_cases() {
        assert_eq!(paired_randomization_p_value(&[], 100, 0), 1.0);
        assert_eq!(paired_randomization_p_value(&[0.0; 10], 100, 0), 1.0);
        assert_eq!(paired_randomization_p_value(&[1.0; 10], 0, 0), 1.0);
        assert!(paired_randomization_p_value(&[1.0, f64::NAN], 100, 0).is_nan());
        // 20 equal positive deltas: only the all-plus and all-minus sign
        // assignments reach the observed mean, so p is at its floor.
        let p = paired_randomization_p_value(&[0.5; 20], 999, 3);
        assert!(p < 0.005, "p = {p}");
    }

    #[test]
    fn p_value_depends_on_seed_only() {
        let deltas: Vec<f64> = (0..1000)
            .map(|i| ((i * 37 % 101) as f64 - 49.0) / 50.0)
            .collect();
        let a = paired_randomization_p_value(&deltas, 1000, 11);
        let b = paired_randomization_p_value(&deltas, 1000, 11);
        let c = paired_randomization_p_value(&deltas, 1000, 12);
        assert_eq!(a, b);
        assert!(a > 0.0 && a <= 1.0 && c > 0.0 && c <= 1.0);
    }

    #[test]
    fn holm_known_list() {
        let adjusted = holm(&[0.01, 0.04, 0.03, 0.005]);
        let expected = [0.03, 0.06, 0.06, 0.02];
        for (got, want) in adjusted.iter().zip(expected) {
            assert!(
                (got - want).abs() < 1e-12,
                "got {adjusted:?}, want {expected:?}"
            );
        }
        assert_eq!(holm(&[]), Vec::<f64>::new());
        assert_eq!(holm(&[0.5, 0.9]), vec![1.0, 1.0]);
        let with_nan = holm(&[0.01, f64::NAN]);
        assert_eq!(with_nan[0], 0.02);
        assert!(with_nan[1].is_nan());
    }

    #[test]
    fn holm_counts_equal_tests_once() {
        // Tests 0 and 2 are one hypothesis: the family is {0.01, 0.04}, so
        // 0.01 is doubled and 0.04 kept, and test 2 takes test 0's value.
        let same_as = first_equal(&[vec![1.0, 0.0], vec![0.5, 0.5], vec![1.0, 0.0]]);
        assert_eq!(same_as, [0, 1, 0]);
        assert_eq!(distinct_count(&same_as), 2);
        assert_eq!(
            holm_distinct(&[0.01, 0.04, 0.01], &same_as),
            [0.02, 0.04, 0.02]
        );
        // With every test distinct it is plain Holm.
        assert_eq!(
            holm_distinct(&[0.01, 0.04, 0.03], &[0, 1, 2]),
            holm(&[0.01, 0.04, 0.03])
        );
        assert_eq!(first_equal::<f64>(&[]), Vec::<usize>::new());
    }

    #[test]
    fn mean_delta_interval_by_hand() {
        // Symmetric deltas (skewness 0): the Student t interval,
        // 0 ± t(0.975, 9) · sqrt(2/9) / sqrt(10), t(0.975, 9) = 2.262157.
        let mut symmetric = vec![0.0; 8];
        symmetric.extend([-1.0, 1.0]);
        let (low, high) = mean_delta_interval(&symmetric, 0.95).unwrap();
        let half = 2.262_157_163 * (2.0f64 / 9.0).sqrt() / 10f64.sqrt();
        assert!(
            (low + half).abs() < 1e-8 && (high - half).abs() < 1e-8,
            "({low}, {high})"
        );

        // Two wins of 1 among ten: mean 0.2, sd sqrt(1.6 / 9) = 0.421637,
        // standard error 0.133333, skewness (0.96 / 10) / sd³ = 1.280722,
        // so a = 0.135 and b = 0.0675. The low end is the t interval's,
        // 0.2 - 2.262157 · 0.133333 = -0.101621 (Hall's is -0.033217); the
        // high end is Hall's, 0.2 - (cbrt(1 + 3a(-2.262157 - b)) - 1) / a
        // · 0.133333 = 0.808695, past the t interval's 0.501621.
        let mut two_wins = vec![0.0; 8];
        two_wins.extend([1.0, 1.0]);
        let (low, high) = mean_delta_interval(&two_wins, 0.95).unwrap();
        assert!((low - -0.101_621).abs() < 1e-6, "low {low}");
        assert!((high - 0.808_695).abs() < 1e-6, "high {high}");
        // Mirrored deltas mirror the interval.
        let mirrored: Vec<f64> = two_wins.iter().map(|d| -d).collect();
        let (m_low, m_high) = mean_delta_interval(&mirrored, 0.95).unwrap();
        assert!((m_low + high).abs() < 1e-12 && (m_high + low).abs() < 1e-12);
    }

    #[test]
    fn no_interval_from_too_few_or_equal_deltas() {
        assert_eq!(
            mean_delta_interval(&[0.5, -0.5, 1.0], 0.95),
            Err(NoInterval::TooFewQueries)
        );
        assert_eq!(
            mean_delta_interval(&[0.0; 9], 0.95),
            Err(NoInterval::TooFewQueries)
        );
        assert_eq!(
            mean_delta_interval(&[0.25; 40], 0.95),
            Err(NoInterval::AllEqual)
        );
        assert!(mean_delta_interval(&[0.0; 10], 0.95).is_err());
        let mut one_win = vec![0.0; 9];
        one_win.push(1.0);
        let (low, high) = mean_delta_interval(&one_win, 0.95).unwrap();
        assert!(low < 0.1 && 0.1 < high, "({low}, {high})");
    }

    /// Coverage at 10 queries of deltas with a true mean of 0.25, drawn
    /// from -1, -0.5, 0, 0.5 and 1 (probabilities 0.1, 0.1, 0.3, 0.2,
    /// 0.3), over 2,000 fixed-seed samples: compare's interval covers at
    /// least 93% (about 96% expected); the percentile bootstrap it
    /// replaced covers about 88% of the same samples, below 93%.
    #[test]
    fn interval_covers_at_ten_queries_where_the_percentile_bootstrap_did_not() {
        const VALUES: [(f64, f64); 5] =
            [(-1.0, 0.1), (-0.5, 0.1), (0.0, 0.3), (0.5, 0.2), (1.0, 0.3)];
        let truth: f64 = VALUES.iter().map(|(v, p)| v * p).sum();
        let mut rng = chunk_rng(46, 0, 0);
        let (mut given, mut covered, mut bootstrap_covered) = (0, 0, 0);
        for trial in 0..2_000u64 {
            let deltas: Vec<f64> = (0..10)
                .map(|_| {
                    let mut u: f64 = rng.random();
                    VALUES
                        .iter()
                        .find(|(_, p)| {
                            u -= p;
                            u < 0.0
                        })
                        .map_or(1.0, |(v, _)| *v)
                })
                .collect();
            let Ok((low, high)) = mean_delta_interval(&deltas, 0.95) else {
                continue;
            };
            given += 1;
            covered += usize::from(low <= truth && truth <= high);
            let (low, high) = bootstrap_mean_interval(&deltas, 1_000, trial, 0.95);
            bootstrap_covered += usize::from(low <= truth && truth <= high);
        }
        assert!(given >= 1_990, "{given} of 2,000 samples had an interval");
        let coverage = covered as f64 / given as f64;
        let bootstrap_coverage = bootstrap_covered as f64 / given as f64;
        assert!(coverage >= 0.93, "coverage {coverage}");
        assert!(
            bootstrap_coverage < 0.93,
            "the percentile bootstrap covered {bootstrap_coverage}: the test no longer tells them apart"
        );
    }

    #[test]
    fn split_tallies_frequent_values_and_keeps_the_rest_in_order() {
        let values = [2.0, -0.0, 5.0, 0.0, 2.0, 7.0, 0.0, 2.0];
        let split = Split::new(values.into_iter(), 3);
        assert_eq!(split.frequent, vec![(0.0, 3), (2.0, 3)]);
        assert_eq!(split.rare, vec![5.0, 7.0]);
        // Too few values for any to be frequent.
        let split = Split::new([1.0, 1.0].into_iter(), 3);
        assert_eq!((split.frequent.len(), split.rare), (0, vec![1.0, 1.0]));
    }

    #[test]
    fn bulk_flips_match_exact_enumeration() {
        // Repeated magnitudes with bulk_count 2: every value but the
        // singletons is flipped by a binomial draw.
        let samples: [&[f64]; 4] = [
            &[
                1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 0.5, 1.0, 1.0, -0.25, 1.0, 1.0,
            ],
            &[
                0.5, -0.5, 0.5, 0.5, 0.0, 0.0, 0.5, -0.5, 0.5, 0.5, 0.5, 0.5, 0.5,
            ],
            &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
            &[
                0.2, -0.2, 0.7, 0.7, -0.7, 0.2, 0.2, 0.9, 0.2, 0.2, 0.7, 0.2, 0.2, 0.3,
            ],
        ];
        for deltas in samples {
            let exact = exact_p_value(deltas);
            let estimate = randomization_p_value(deltas, 200_000, 11, 2);
            assert!(
                (exact - estimate).abs() < 0.01,
                "{deltas:?}: exact {exact}, estimate {estimate}"
            );
        }
    }

    #[test]
    fn bulk_flips_match_the_binomial_tail_on_a_large_sample() {
        // 5,100 wins and 4,900 losses of 1: the exact two-sided p-value is
        // P(|2B - 10000| >= 200) with B ~ Binomial(10000, 1/2).
        let mut deltas = vec![1.0; 5_100];
        deltas.extend(vec![-1.0; 4_900]);
        let n = deltas.len() as u64;
        let ln_choose =
            |k: u64| -> f64 { (1..=k).map(|i| ((n - k + i) as f64 / i as f64).ln()).sum() };
        let exact: f64 = (0..=n)
            .filter(|&k| (2 * k as i64 - n as i64).abs() >= 200)
            .map(|k| (ln_choose(k) - n as f64 * 2f64.ln()).exp())
            .sum();
        let estimate = paired_randomization_p_value(&deltas, 100_000, 3);
        assert!(
            (exact - estimate).abs() < 0.01,
            "exact {exact}, estimate {estimate}"
        );
    }

    #[test]
    fn bulk_resampling_matches_resampling_one_by_one() {
        // Few distinct values: the bulk draw and the plain draw sample the
        // same distribution, so their intervals agree up to Monte Carlo noise.
        let deltas: Vec<f64> = (0..3_000)
            .map(|i| {
                [0.0, 0.0, 0.0, 1.0, -1.0, 0.5, 0.0, 1.0][i % 8]
                    + if i % 97 == 0 { 0.03 } else { 0.0 }
            })
            .collect();
        let bulk = bootstrap_interval(&deltas, 4_000, 5, 0.95, 2);
        let plain = bootstrap_interval(&deltas, 4_000, 5, 0.95, u64::MAX);
        let width = plain.1 - plain.0;
        assert!(width > 0.0);
        assert!(
            (bulk.0 - plain.0).abs() < 0.1 * width,
            "{bulk:?} vs {plain:?}"
        );
        assert!(
            (bulk.1 - plain.1).abs() < 0.1 * width,
            "{bulk:?} vs {plain:?}"
        );
    }

    #[test]
    fn bootstrap_edge_cases() {
        assert_eq!(bootstrap_mean_interval(&[], 100, 0, 0.95), (0.0, 0.0));
        assert_eq!(bootstrap_mean_interval(&[1.0, 3.0], 0, 0, 0.95), (2.0, 2.0));
        let (low, high) = bootstrap_mean_interval(&[1.0, f64::INFINITY], 10, 0, 0.95);
        assert!(low.is_nan() && high.is_nan());
    }

    #[test]
    fn bootstrap_covers_the_mean() {
        let deltas: Vec<f64> = (0..400).map(|i| (i % 7) as f64 / 10.0 - 0.2).collect();
        let mean = deltas.iter().sum::<f64>() / deltas.len() as f64;
        let (low, high) = bootstrap_mean_interval(&deltas, 2000, 5, 0.95);
        assert!(low < mean && mean < high, "{low} < {mean} < {high}");
        // The standard error is about 0.2 / sqrt(400) = 0.01.
        assert!(high - low > 0.02 && high - low < 0.06, "({low}, {high})");
        let (narrow_low, narrow_high) = bootstrap_mean_interval(&deltas, 2000, 5, 0.5);
        assert!(low < narrow_low && narrow_high < high);
    }

    #[test]
    fn wins_ties_losses_counts() {
        let counts = wins_ties_losses(&[0.5, -0.25, 0.0, 1e-13, -1e-13, 2e-12, f64::NAN]);
        assert_eq!(
            counts,
            WinsTiesLosses {
                wins: 2,
                ties: 4,
                losses: 1
            }
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn identical_runs_give_p_one(n in 0usize..300, seed: u64) {
            prop_assert_eq!(paired_randomization_p_value(&vec![0.0; n], 500, seed), 1.0);
        }

        #[test]
        fn consistent_improvement_is_significant(
            deltas in prop::collection::vec(0.5f64..=1.0, 200),
            seed: u64,
        ) {
            let p = paired_randomization_p_value(&deltas, 2000, seed);
            prop_assert!(p < 0.01, "p = {}", p);
        }

        #[test]
        fn constant_delta_gives_a_point_interval(
            c in -10.0f64..10.0,
            n in 1usize..200,
            seed: u64,
        ) {
            prop_assert_eq!(bootstrap_mean_interval(&vec![c; n], 200, seed, 0.95), (c, c));
        }

        #[test]
        fn holm_is_monotone_capped_and_not_below_raw(
            ps in prop::collection::vec(0.0f64..=1.0, 0..20),
        ) {
            let adjusted = holm(&ps);
            let mut order: Vec<usize> = (0..ps.len()).collect();
            order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
            for pair in order.windows(2) {
                prop_assert!(adjusted[pair[0]] <= adjusted[pair[1]]);
            }
            for (raw, adj) in ps.iter().zip(&adjusted) {
                prop_assert!(raw <= adj && *adj <= 1.0);
            }
        }

        #[test]
        fn table_kernel_matches_naive_sign_flips(
            ints in prop::collection::vec(-3i32..=3, 1..700),
            count in 1usize..40,
            seed: u64,
        ) {
            // Small integers keep every sum exact, so the counts must agree
            // exactly, ties included.
            let mut padded: Vec<f64> = ints.iter().map(|&i| f64::from(i)).collect();
            let total: f64 = padded.iter().sum();
            padded.resize(padded.len().div_ceil(BLOCK) * BLOCK, 0.0);
            let threshold = total.abs();
            let flips = SignFlips { frequent: &[], padded: &padded, total };
            let fast = flips.count_extreme(threshold, count, chunk_rng(seed, 1, 0));
            let naive = naive_count_extreme(&padded, threshold, count, chunk_rng(seed, 1, 0));
            prop_assert_eq!(fast, naive);
        }

        #[test]
        fn thread_count_does_not_change_bulk_results(
            picks in prop::collection::vec(0usize..4, 1000..2500),
            seed: u64,
        ) {
            // Few distinct values, each frequent: both procedures draw in bulk.
            let deltas: Vec<f64> = picks.iter().map(|&i| [-1.0, 0.0, 0.5, 1.0][i]).collect();
            let run = || {
                (
                    randomization_p_value(&deltas, 700, seed, 200),
                    bootstrap_mean_interval(&deltas, 100, seed, 0.95),
                )
            };
            prop_assert_eq!(bits(in_pool(1, run)), bits(in_pool(2, run)));
        }

        #[test]
        fn thread_count_does_not_change_results(
            deltas in prop::collection::vec(-1.0f64..1.0, 0..600),
            seed: u64,
        ) {
            let run = || {
                (
                    paired_randomization_p_value(&deltas, 700, seed),
                    bootstrap_mean_interval(&deltas, 100, seed, 0.95),
                )
            };
            prop_assert_eq!(bits(in_pool(1, run)), bits(in_pool(2, run)));
        }
    }
}
