//! Random choices that come out the same on every platform: they draw only
//! integers, so a seed gives the same data set everywhere.

use rand::RngExt;
use rand_pcg::Pcg64;

/// Any item of `items`, each as likely.
pub(super) fn pick<T: Copy>(rng: &mut Pcg64, items: &[T]) -> T {
    items[rng.random_range(0..items.len())]
}

/// An item of `table` with a chance proportional to its weight. Integer
/// weights, so the choice is the same on every platform.
pub(super) fn pick_weighted<T: Copy>(rng: &mut Pcg64, table: &[(T, u32)]) -> T {
    let total: u32 = table.iter().map(|&(_, weight)| weight).sum();
    let mut roll = rng.random_range(0..total);
    for &(item, weight) in table {
        if roll < weight {
            return item;
        }
        roll -= weight;
    }
    unreachable!("the roll is below the total weight")
}
