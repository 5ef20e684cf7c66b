//! Arithmetic the generator's statistical tests share. It imports nothing
//! from the generator, so the tests of any part can use it; fixtures that
//! draw a corpus and queries belong to queries.rs, which owns the query
//! streams.

/// `count` as a share of `total`.
pub(super) fn share(count: usize, total: usize) -> f64 {
    count as f64 / total as f64
}
