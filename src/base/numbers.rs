//! Means that stay finite and do not depend on the order of their terms:
//! finite inputs never give an infinite output (a mean of huge latencies
//! included), and the same values in another order give the same bits.

/// 2^-64: scaling by a power of two is exact, so a scaled sum rounds as
/// the plain one does, but stays finite for any finite terms.
const SCALE_DOWN: f64 = 1.0 / 18_446_744_073_709_551_616.0;
/// 2^64, undoing [`SCALE_DOWN`].
const SCALE_UP: f64 = 18_446_744_073_709_551_616.0;

/// A running sum whose mean stays finite for finite terms.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FiniteSum {
    plain: f64,
    scaled: f64,
    n: u64,
}

impl FiniteSum {
    /// Add a term.
    pub fn add(&mut self, value: f64) {
        self.plain += value;
        self.scaled += value * SCALE_DOWN;
        self.n += 1;
    }

    /// The mean of the terms added, `None` when there are none: the plain
    /// sum over the count, unless that sum overflowed, then the scaled one.
    pub fn mean(&self) -> Option<f64> {
        let n = self.n as f64;
        match self.n {
            0 => None,
            _ if self.plain.is_finite() => Some(self.plain / n),
            _ => Some(self.scaled / n * SCALE_UP),
        }
    }
}

/// The mean of `values`, summed in ascending order so that their order
/// does not matter; `None` when there are none.
pub fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut values = values.into_iter();
    let first = values.next()?;
    // One value, the usual case, is its own mean: nothing to gather.
    let Some(second) = values.next() else {
        return Some(first);
    };
    let mut values: Vec<f64> = [first, second].into_iter().chain(values).collect();
    values.sort_unstable_by(f64::total_cmp);
    let mut sum = FiniteSum::default();
    values.into_iter().for_each(|value| sum.add(value));
    sum.mean()
}

/// The point a `fraction` of the way from `low` to `high`, finite for
/// finite ends however far apart they are.
pub fn between(low: f64, high: f64, fraction: f64) -> f64 {
    let value = low + (high - low) * fraction;
    if value.is_finite() {
        value
    } else {
        low * (1.0 - fraction) + high * fraction
    }
}

/// The p-th percentile (0–100) of sorted values, linearly interpolated
/// between closest ranks (numpy's default); `None` when there are none.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let position = p / 100.0 * last as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    let fraction = position - below as f64;
    Some(between(sorted[below], sorted[above], fraction))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_of_huge_values_stay_finite() {
        assert_eq!(mean([f64::MAX, f64::MAX]), Some(f64::MAX));
        assert_eq!(mean([f64::MAX, -f64::MAX]), Some(0.0));
        let big = mean([1.7e308, 1.7e308, 1.6e308]).unwrap();
        assert!((big - 1.6666666666666667e308).abs() < 1e294, "{big:e}");
        assert_eq!(mean([]), None);
    }

    #[test]
    fn a_mean_does_not_depend_on_the_order_of_its_values() {
        let values = [0.1, 0.2, 0.3, 1e-17, 0.7];
        let once = mean(values).unwrap();
        for order in [[4, 3, 2, 1, 0], [2, 0, 4, 1, 3], [1, 3, 0, 4, 2]] {
            assert_eq!(
                mean(order.map(|i| values[i])).unwrap().to_bits(),
                once.to_bits()
            );
        }
    }

    #[test]
    fn ordinary_means_are_the_plain_sum_over_the_count() {
        let values = [0.25, 1.0 / 3.0, 0.5, 17.0];
        let plain = values.iter().sum::<f64>() / 4.0;
        assert_eq!(mean(values), Some(plain));
        let mut sum = FiniteSum::default();
        values.iter().for_each(|&v| sum.add(v));
        assert_eq!(sum.mean(), Some(plain));
    }

    #[test]
    fn points_between_far_ends_stay_finite() {
        assert_eq!(between(-1.7e308, 1.7e308, 0.5), 0.0);
        assert_eq!(between(1.0, 3.0, 0.25), 1.5);
        assert!(between(-f64::MAX, f64::MAX, 0.9).is_finite());
    }

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let values = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert_eq!(percentile(&values, 50.0), Some(3.0));
        let p95 = percentile(&values, 95.0).unwrap();
        assert!((p95 - 8.8).abs() < 1e-12, "{p95}");
        assert_eq!(percentile(&values, 100.0), Some(10.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
