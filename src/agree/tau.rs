//! Kendall's tau-b: how far two answer keys order the same runs alike.
//! Runs are few, so every pair of them is compared.

use std::cmp::Ordering;

/// Means closer than this are tied: two runs whose per-query values are
/// the same, summed in another order, differ in the last bits of their
/// means, and must not count as ordered.
const TIED: f64 = 1e-12;

/// How `x` orders against `y`, equal within [`TIED`].
fn order(x: f64, y: f64) -> Ordering {
    if (x - y).abs() <= TIED {
        Ordering::Equal
    } else {
        x.total_cmp(&y)
    }
}

/// Kendall's tau-b of the paired values `(x, y)`, ties (within
/// [`TIED`]) counted as scipy's `kendalltau` counts them; `None` when it is
/// undefined: fewer than two pairs, or every `x` or every `y` the same.
pub fn kendall_tau_b(pairs: &[(f64, f64)]) -> Option<f64> {
    let (mut concordant, mut discordant) = (0i64, 0i64);
    let (mut tied_x, mut tied_y, mut all) = (0i64, 0i64, 0i64);
    for (i, &(xi, yi)) in pairs.iter().enumerate() {
        for &(xj, yj) in &pairs[i + 1..] {
            all += 1;
            let (dx, dy) = (order(xi, xj), order(yi, yj));
            tied_x += i64::from(dx.is_eq());
            tied_y += i64::from(dy.is_eq());
            if dx.is_ne() && dy.is_ne() {
                if dx == dy {
                    concordant += 1;
                } else {
                    discordant += 1;
                }
            }
        }
    }
    let denominator = (((all - tied_x) * (all - tied_y)) as f64).sqrt();
    (denominator > 0.0).then(|| (concordant - discordant) as f64 / denominator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tau_counts_concordant_and_discordant_pairs() {
        // Same order: 1; reversed: -1.
        let same = [(1.0, 10.0), (2.0, 20.0), (3.0, 30.0)];
        assert_eq!(kendall_tau_b(&same), Some(1.0));
        let reversed = [(1.0, 30.0), (2.0, 20.0), (3.0, 10.0)];
        assert_eq!(kendall_tau_b(&reversed), Some(-1.0));
        // One swap among four: 5 concordant, 1 discordant of 6 pairs.
        let one_swap = [(1.0, 1.0), (2.0, 3.0), (3.0, 2.0), (4.0, 4.0)];
        assert!((kendall_tau_b(&one_swap).unwrap() - 4.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn ties_shrink_the_denominator_as_tau_b_does() {
        // x = 1, 1, 2; y = 1, 2, 3. Pairs: (0,1) tied in x; (0,2) and
        // (1,2) concordant. tau-b = 2 / sqrt((3 - 1) * (3 - 0)).
        let tied = [(1.0, 1.0), (1.0, 2.0), (2.0, 3.0)];
        let expected = 2.0 / 6f64.sqrt();
        assert!((kendall_tau_b(&tied).unwrap() - expected).abs() < 1e-12);
    }

    #[test]
    fn means_apart_by_rounding_alone_are_tied() {
        // 0.1 + 0.2 + 0.3 and 0.3 + 0.2 + 0.1, each over 3.
        let x = (0.1 + 0.2 + 0.3) / 3.0;
        let y = (0.3 + 0.2 + 0.1) / 3.0;
        assert_ne!(x, y);
        assert_eq!(kendall_tau_b(&[(x, 0.5), (y, 0.7)]), None);
    }

    #[test]
    fn tau_is_undefined_without_two_runs_or_without_variety() {
        assert_eq!(kendall_tau_b(&[]), None);
        assert_eq!(kendall_tau_b(&[(1.0, 2.0)]), None);
        assert_eq!(kendall_tau_b(&[(1.0, 2.0), (1.0, 3.0)]), None);
    }
}
