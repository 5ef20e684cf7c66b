//! The ranking model: a retriever that finds a judged chunk near the top,
//! deep in the ranking, or not at all, and fills the rest with unrelated
//! chunks, so recall@10 lands around 0.65; and a reranker that lightly
//! reshuffles the retriever's top candidates, lifting relevant chunks a
//! little, and keeps the top 10. Scores fall strictly with rank.

use std::ops::Range;

use rand::RngExt;
use rand_pcg::Pcg64;

use super::corpus::Corpus;
use super::queries::QuerySpec;

/// How many results the reranker keeps for the `final` stage.
pub(super) const FINAL_DEPTH: usize = 10;
/// How many of the retriever's results the reranker looks at.
pub(super) const RERANK_CANDIDATES: usize = 20;

/// Where a judged doc tends to land in the retriever's ranking, in percent.
struct Findability {
    /// Near the top (geometric depth from 0).
    top: u32,
    /// Somewhere in `DEEP`.
    deep: u32,
    // The rest is never retrieved.
}

const RELEVANT: Findability = Findability { top: 60, deep: 27 };
/// Judged-not-relevant docs were judged because some system retrieved them,
/// but they are found less often than relevant ones.
const JUDGED_NOT_RELEVANT: Findability = Findability { top: 25, deep: 45 };
/// Each next rank near the top is reached with this probability.
const TOP_CONTINUE: f64 = 0.6;
/// The depth of a doc found deep in the ranking.
const DEEP: Range<usize> = 2..40;
/// The deepest a doc found "near the top" can land.
const TOP_MAX_DEPTH: usize = 40;

/// The reranker sorts by `rank * SPREAD + noise`, plus a lag for docs that
/// are not relevant: a doc moves a few ranks, a relevant one more often up.
const RERANK_SPREAD: u32 = 4;
const RERANK_NOISE: Range<u32> = 0..12;
const RERANK_NOT_RELEVANT_LAG: u32 = 6;

/// How scores fall with rank, in units of 0.0001: the last result scores
/// within `floor`, and the gap above rank r averages `top_gap / (r + 1)`.
struct ScoreScale {
    floor: Range<u32>,
    top_gap: u32,
}

/// BM25-like scores: the top result around 10 to 20.
const BM25: ScoreScale = ScoreScale {
    floor: 30_000..80_000,
    top_gap: 15_000,
};
/// Cross-encoder-like scores between 0 and 1.
const RERANKER: ScoreScale = ScoreScale {
    floor: 500..2_000,
    top_gap: 1_200,
};

/// One result: a corpus chunk and its score in units of 0.0001.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Hit {
    pub(super) doc: u32,
    pub(super) score: u32,
}

impl Hit {
    /// `doc` at its rank, before the ranking's scores are drawn.
    fn unscored(doc: u32) -> Self {
        Hit { doc, score: 0 }
    }
}

/// A slot of the retrieved ranking that no judged doc took yet.
const EMPTY: u32 = u32::MAX;

/// A set of corpus docs that empties in constant time, so checking that a
/// ranking's docs are distinct costs nothing per query.
struct DocSet {
    /// `marks[doc] == generation` when `doc` is in the set.
    marks: Vec<u32>,
    generation: u32,
}

impl DocSet {
    fn new(corpus_len: u32) -> Self {
        DocSet {
            marks: vec![0; corpus_len as usize],
            generation: 1,
        }
    }

    fn clear(&mut self) {
        if self.generation == u32::MAX {
            self.marks.fill(0);
            self.generation = 0;
        }
        self.generation += 1;
    }

    /// Add `doc`; false when it was already there.
    fn insert(&mut self, doc: u32) -> bool {
        let mark = &mut self.marks[doc as usize];
        let added = *mark != self.generation;
        *mark = self.generation;
        added
    }
}

/// Draws the rankings of one query after another, reusing its buffers.
pub(super) struct RankingModel<'c> {
    pub(super) corpus: &'c Corpus,
    results: usize,
    /// The docs the current ranking holds or must not hold.
    taken: DocSet,
    retrieved: Vec<Hit>,
    rerank_order: Vec<(u32, u32)>,
    reranked: Vec<Hit>,
    /// A planted drop: the chance each relevant doc the retriever would
    /// find is lost, and the stream that decides.
    losing: Option<(f64, Pcg64)>,
}

impl<'c> RankingModel<'c> {
    pub(super) fn new(corpus: &'c Corpus, results: usize) -> Self {
        RankingModel {
            corpus,
            results,
            taken: DocSet::new(corpus.len()),
            retrieved: Vec::with_capacity(results),
            rerank_order: Vec::with_capacity(RERANK_CANDIDATES),
            reranked: Vec::with_capacity(FINAL_DEPTH),
            losing: None,
        }
    }

    /// Lose each relevant doc of the next rankings with probability
    /// `rate`, decided by `rng` (a stream of its own, so the rankings
    /// draw as they would without the drop); `None` loses none.
    pub(super) fn lose(&mut self, losing: Option<(f64, Pcg64)>) {
        self.losing = losing;
    }

    /// The retriever's ranking of `results` distinct chunks: the judged docs
    /// where they were found, unrelated chunks everywhere else, scores
    /// strictly descending.
    pub(super) fn retrieve(&mut self, rng: &mut Pcg64, spec: &QuerySpec) -> &[Hit] {
        self.retrieved.clear();
        self.retrieved.resize(self.results, Hit::unscored(EMPTY));
        self.taken.clear();
        // Judged docs the retriever misses must not come back as filler.
        for judged in spec.judged() {
            self.taken.insert(judged.doc);
        }
        for judged in spec.judged() {
            let Some(depth) = draw_depth(rng, judged.grade) else {
                continue;
            };
            let lost = match &mut self.losing {
                Some((rate, losses)) => judged.grade > 0 && losses.random_bool(*rate),
                None => false,
            };
            if !lost {
                self.place(judged.doc, depth);
            }
        }
        for hit in self.retrieved.iter_mut().filter(|hit| hit.doc == EMPTY) {
            hit.doc = loop {
                let doc = rng.random_range(0..self.corpus.len());
                if self.taken.insert(doc) {
                    break doc;
                }
            };
        }
        assign_scores(rng, &BM25, &mut self.retrieved);
        &self.retrieved
    }

    /// The reranker's top results, drawn from the last `retrieve`.
    pub(super) fn rerank(&mut self, rng: &mut Pcg64, spec: &QuerySpec) -> &[Hit] {
        self.rerank_order.clear();
        let candidates = self.retrieved.len().min(RERANK_CANDIDATES);
        for (rank, hit) in self.retrieved[..candidates].iter().enumerate() {
            let lag = if spec.is_relevant(hit.doc) {
                0
            } else {
                RERANK_NOT_RELEVANT_LAG
            };
            let key = rank as u32 * RERANK_SPREAD + rng.random_range(RERANK_NOISE) + lag;
            self.rerank_order.push((key, rank as u32));
        }
        // Keys tie-break on the original rank: unique, so an unstable sort
        // is deterministic (and does not allocate).
        self.rerank_order.sort_unstable();
        self.reranked.clear();
        let kept = candidates.min(FINAL_DEPTH);
        for &(_, rank) in &self.rerank_order[..kept] {
            let doc = self.retrieved[rank as usize].doc;
            self.reranked.push(Hit::unscored(doc));
        }
        assign_scores(rng, &RERANKER, &mut self.reranked);
        &self.reranked
    }

    /// Put `doc` at `depth`, or at the next free slot below it when another
    /// judged doc is there; nowhere when the ranking ends first.
    fn place(&mut self, doc: u32, depth: usize) {
        let free = self
            .retrieved
            .get_mut(depth..)
            .and_then(|below| below.iter_mut().find(|hit| hit.doc == EMPTY));
        if let Some(hit) = free {
            hit.doc = doc;
        }
    }
}

/// Where the retriever ranks a judged doc (0 is the top), or `None` when it
/// does not find it at all.
fn draw_depth(rng: &mut Pcg64, grade: u8) -> Option<usize> {
    let findability = if grade > 0 {
        &RELEVANT
    } else {
        &JUDGED_NOT_RELEVANT
    };
    let roll = rng.random_range(0..100);
    if roll < findability.top {
        let mut depth = 0;
        while depth < TOP_MAX_DEPTH && rng.random_bool(TOP_CONTINUE) {
            depth += 1;
        }
        Some(depth)
    } else if roll < findability.top + findability.deep {
        Some(rng.random_range(DEEP))
    } else {
        None
    }
}

/// Give `hits` strictly descending scores on `scale`, so no two results tie
/// (a TREC reader re-sorts by score and would reorder ties).
fn assign_scores(rng: &mut Pcg64, scale: &ScoreScale, hits: &mut [Hit]) {
    let mut score = rng.random_range(scale.floor.clone());
    for (rank, hit) in hits.iter_mut().enumerate().rev() {
        hit.score = score;
        score += 1 + rng.random_range(0..=2 * scale.top_gap / (rank as u32 + 1));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::gen::queries::{corpus_and_streams, specs};
    use crate::gen::testing::share;

    fn assert_distinct_and_descending(hits: &[Hit]) {
        let docs: HashSet<u32> = hits.iter().map(|hit| hit.doc).collect();
        assert_eq!(docs.len(), hits.len(), "a doc twice in {hits:?}");
        assert!(
            hits.windows(2).all(|pair| pair[0].score > pair[1].score),
            "{hits:?}"
        );
    }

    #[test]
    fn doc_set_empties_in_constant_time_even_when_generations_wrap() {
        let mut set = DocSet::new(3);
        assert!(set.insert(1) && !set.insert(1));
        set.clear();
        assert!(set.insert(1));
        set.generation = u32::MAX - 1;
        set.insert(2);
        set.clear();
        assert!(set.insert(0) && set.insert(2) && !set.insert(0));
        set.clear();
        assert_eq!(set.generation, 1);
        assert!(set.insert(0) && set.insert(1) && set.insert(2));
    }

    #[test]
    fn rankings_hold_distinct_docs_with_descending_scores() {
        for results in [1, 3, 10, 100] {
            let (corpus, streams) = corpus_and_streams(2, results);
            let mut model = RankingModel::new(&corpus, results);
            for (index, spec) in specs(&corpus, &streams, 500).iter().enumerate() {
                let mut rng = streams.rng(index);
                let retrieved = model.retrieve(&mut rng, spec).to_vec();
                assert_eq!(retrieved.len(), results);
                assert_distinct_and_descending(&retrieved);
                let reranked = model.rerank(&mut rng, spec);
                assert_eq!(reranked.len(), results.min(FINAL_DEPTH));
                assert_distinct_and_descending(reranked);
                let candidates = &retrieved[..results.min(RERANK_CANDIDATES)];
                assert!(reranked
                    .iter()
                    .all(|hit| candidates.iter().any(|c| c.doc == hit.doc)));
            }
        }
    }

    #[test]
    fn a_query_does_not_depend_on_the_queries_before_it() {
        let (corpus, streams) = corpus_and_streams(5, 10);
        let mut model = RankingModel::new(&corpus, 10);
        let mut draw = |index| {
            let mut rng = streams.rng(index);
            let spec = QuerySpec::draw(&mut rng, &corpus);
            let retrieved = model.retrieve(&mut rng, &spec).to_vec();
            let reranked = model.rerank(&mut rng, &spec).to_vec();
            (spec, retrieved, reranked)
        };
        let alone = draw(7);
        for index in 0..7 {
            draw(index);
        }
        assert_eq!(draw(7), alone);
        assert_ne!(draw(8), alone);
    }

    #[test]
    fn relevant_docs_land_near_the_top_deep_or_nowhere() {
        let results = 100;
        let (corpus, streams) = corpus_and_streams(3, results);
        let mut model = RankingModel::new(&corpus, results);
        let (mut recall_at_10, mut answerable) = (0.0, 0);
        let (mut at_top, mut deeper_than_10, mut absent, mut relevant) = (0, 0, 0, 0);
        for (index, spec) in specs(&corpus, &streams, 3000).iter().enumerate() {
            let ranking = model.retrieve(&mut streams.rng(index), spec);
            let rank_of = |doc| ranking.iter().position(|hit| hit.doc == doc);
            let relevant_ranks: Vec<_> = spec
                .judged()
                .iter()
                .filter(|j| j.grade > 0)
                .map(|j| rank_of(j.doc))
                .collect();
            if relevant_ranks.is_empty() {
                continue;
            }
            answerable += 1;
            let found_in_10 = relevant_ranks
                .iter()
                .filter(|rank| rank.is_some_and(|r| r < 10))
                .count();
            recall_at_10 += share(found_in_10, relevant_ranks.len());
            relevant += relevant_ranks.len();
            at_top += relevant_ranks
                .iter()
                .filter(|&&rank| rank == Some(0))
                .count();
            deeper_than_10 += relevant_ranks
                .iter()
                .filter(|rank| rank.is_some_and(|r| r >= 10))
                .count();
            absent += relevant_ranks.iter().filter(|rank| rank.is_none()).count();
        }
        let recall_at_10 = recall_at_10 / answerable as f64;
        assert!(
            (0.6..0.8).contains(&recall_at_10),
            "recall@10 {recall_at_10}"
        );
        assert!(
            share(at_top, relevant) > 0.2,
            "{at_top} of {relevant} at rank 1"
        );
        assert!(
            share(deeper_than_10, relevant) > 0.1,
            "{deeper_than_10} of {relevant} below 10"
        );
        assert!(
            (0.05..0.25).contains(&share(absent, relevant)),
            "{absent} of {relevant} absent"
        );
    }
}
