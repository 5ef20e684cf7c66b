//! Fixtures the generator's unit tests share: a corpus with its query
//! streams, drawn as `write_dataset` draws them, and the queries they give.

use rand::SeedableRng;
use rand_pcg::Pcg64;

use super::corpus::Corpus;
use super::queries::{QuerySpec, QueryStreams};

/// The corpus and query streams of `seed`, drawn in `write_dataset`'s order.
pub(super) fn corpus_and_streams(seed: u64, results: usize) -> (Corpus, QueryStreams) {
    let mut rng = Pcg64::seed_from_u64(seed);
    let corpus = Corpus::generate(&mut rng, results);
    let streams = QueryStreams::new(&mut rng);
    (corpus, streams)
}

/// The first `count` queries of the answer key.
pub(super) fn specs(corpus: &Corpus, streams: &QueryStreams, count: usize) -> Vec<QuerySpec> {
    (0..count)
        .map(|index| QuerySpec::draw(&mut streams.rng(index), corpus))
        .collect()
}

/// `count` as a share of `total`.
pub(super) fn share(count: usize, total: usize) -> f64 {
    count as f64 / total as f64
}
