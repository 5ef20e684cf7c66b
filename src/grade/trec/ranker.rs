//! One (run, query) of a TREC run ranked as trec_eval ranks it: its lines
//! (each reduced to what ranking needs) sorted by score, then doc id,
//! descending; repeated documents rejected or dropped; the ranks of its
//! judged documents kept, and the lines of its unjudged ones pooled.

use hashbrown::HashTable;

use crate::base::failure::Setting;
use crate::base::options::DuplicateDocs;
use crate::grade::capture::Found;
use crate::grade::diagnostics::pool::PooledLine;
use crate::labels::{DocPlace, LabelIndex, QueryIdx};
use crate::logs::record::{trec_order, Invalid, Origin, RankKey, RejectReason};

/// How lines become a ranking: what it does with a document listed
/// twice, the inputs' names its reject details cite, and how deep it pools
/// unjudged documents.
#[derive(Debug, Clone, Copy)]
pub struct RankRules<'a> {
    /// Reject the ranking, or keep the first copy.
    pub duplicates: DuplicateDocs,
    /// Each input's name, by index.
    pub input_names: &'a [String],
    /// With `--review-queue`, the depth within which the lines of unjudged
    /// documents are pooled: their ids are read again from those lines.
    pub pool_depth: Option<usize>,
}

impl RankRules<'_> {
    /// Where a line is, as `file:line`.
    pub fn place(&self, origin: Origin) -> String {
        let name = self.input_names.get(origin.input as usize);
        format!("{}:{}", name.map_or("?", String::as_str), origin.line)
    }
}

/// A (run, query) of one run: the run's pair index and the query.
pub type RunKey = (u32, QueryIdx);

/// One labeled line of a TREC run, reduced to what ranking it needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunLine {
    /// What ranks it, higher first.
    pub key: RankKey,
    /// 96 bits of the xxh3-128 of the doc id: two different ids of one
    /// ranking share them with odds of 1 in 2^96 (about 1e-29), so they
    /// stand for the text.
    id_hash: u64,
    id_hash_more: u32,
    /// Where its doc id sorts among the query's judged ones, and whether
    /// it is one.
    pub place: DocPlace,
    /// A line rejected when read (a score that is no number, a rank below
    /// 1, no doc id): its ranking lost a result, and is rejected whole
    /// rather than graded with the documents below it moved up. The line
    /// itself is in the rejects already.
    pub lost: bool,
}

impl RunLine {
    /// The line of `query` that ranks `doc_id` by `key`.
    pub fn new(labels: &LabelIndex, query: QueryIdx, doc_id: &str, key: RankKey) -> Self {
        let hash = xxhash_rust::xxh3::xxh3_128(doc_id.as_bytes());
        RunLine {
            key,
            id_hash: hash as u64,
            id_hash_more: (hash >> 64) as u32,
            place: labels.place_doc(query, doc_id.as_bytes()),
            lost: false,
        }
    }

    /// A line of a ranking that was rejected when read: it only marks
    /// its ranking as incomplete.
    pub fn lost() -> Self {
        RunLine {
            key: RankKey::rank(u32::MAX),
            id_hash: 0,
            id_hash_more: 0,
            place: DocPlace::new(0, false),
            lost: true,
        }
    }

    /// trec_eval's order: score descending, then doc id descending. The
    /// place orders a line against every judged id as the text would;
    /// lines that tie on both hold no judged document, and their order
    /// changes no judged document's rank.
    fn ranks_before(&self, other: &Self) -> std::cmp::Ordering {
        trec_order((self.key, self.place), (other.key, other.place))
    }

    /// The same document: a judged one by its place, any other by its hash.
    fn same_doc(&self, other: &Self) -> bool {
        self.place == other.place
            && self.id_hash == other.id_hash
            && self.id_hash_more == other.id_hash_more
    }
}

/// Consecutive lines of one (run, query) in the input.
#[derive(Debug, Clone, Copy)]
pub struct Stretch {
    /// The run's pair index.
    pub pair: u32,
    /// The labeled query.
    pub query: QueryIdx,
    /// The first line's origin; the others follow it line by line.
    pub origin: Origin,
    /// How many lines.
    pub len: u32,
}

impl Stretch {
    /// The (run, query) it is of.
    pub fn key(&self) -> RunKey {
        (self.pair, self.query)
    }

    /// Where the line after the stretch is.
    pub fn next_origin(&self) -> Origin {
        Origin::line(self.origin.input, self.origin.line + u64::from(self.len))
    }

    /// Where each of its lines is.
    pub fn origins(&self) -> impl Iterator<Item = Origin> {
        let first = self.origin;
        (0..u64::from(self.len)).map(move |offset| Origin::line(first.input, first.line + offset))
    }
}

/// What a ranking shows besides its judged documents by rank.
#[derive(Debug, Clone, Copy)]
pub struct Ranked {
    /// Results after any dedupe.
    pub n_results: u32,
    /// Whether any result is judged, of any grade.
    pub returned_judged: bool,
}

/// Ranks one (pair, query) at a time in reused scratch space.
#[derive(Debug, Default)]
pub struct Ranker {
    /// The key's lines with their origins, in input order, then ranked.
    lines: Vec<(RunLine, Origin)>,
    /// Positions of the documents seen so far, by hash.
    seen: HashTable<u32>,
    dropped: Vec<bool>,
    /// The judged documents of the key being ranked.
    found: Vec<Found>,
    /// Its unjudged documents within the pool depth, by their lines.
    pooled: Vec<PooledLine>,
    /// The inputs of a copy dropped under `DuplicateDocs::Dedupe` and of
    /// the copy it repeats, when they differ: two runs fused into one.
    fused: Option<(u32, u32)>,
}

impl Ranker {
    /// Take the lines of stretches, in input order.
    pub fn gather<'a>(&mut self, stretches: impl IntoIterator<Item = (Stretch, &'a [RunLine])>) {
        self.lines.clear();
        for (stretch, lines) in stretches {
            self.lines
                .extend(lines.iter().copied().zip(stretch.origins()));
        }
    }

    /// Rank the gathered lines of `query`, leaving its judged documents
    /// (any grade) in `found` and the lines of its unjudged ones within
    /// the pool depth in `pooled`; returns what else the ranking shows, or
    /// why it is rejected: a line of it was rejected when read, or a
    /// document repeats under `DuplicateDocs::Reject`.
    pub fn rank(
        &mut self,
        labels: &LabelIndex,
        query: QueryIdx,
        rules: RankRules<'_>,
    ) -> Result<Ranked, Invalid> {
        self.fused = None;
        if let Some((_, origin)) = self.lines.iter().find(|(line, _)| line.lost) {
            let detail = format!(
                "{} of this ranking of query '{}' was rejected when read; graded without it, \
                 the documents below it would move up, so the whole ranking is rejected",
                rules.place(*origin),
                labels.query_id(query)
            );
            return Err(Invalid::new(RejectReason::IncompleteRanking, detail));
        }
        // Stable: lines that tie keep input order.
        self.lines.sort_by(|(a, _), (b, _)| a.ranks_before(b));
        self.mark_duplicates(labels, query, rules)
            .map_err(|detail| Invalid::new(RejectReason::DuplicateDoc, detail))?;
        self.found.clear();
        self.pooled.clear();
        let pool_depth = rules.pool_depth.unwrap_or(0);
        let mut ranked = Ranked {
            n_results: 0,
            returned_judged: false,
        };
        let kept = self.lines.iter().zip(&self.dropped).filter(|(_, &d)| !d);
        for ((line, origin), _) in kept {
            ranked.n_results += 1;
            let rank = ranked.n_results;
            if line.place.judged() {
                ranked.returned_judged = true;
                let doc = labels.judged_at(query, line.place);
                self.found.push(Found { rank, doc });
            } else if rank as usize <= pool_depth {
                self.pooled.push((rank, *origin));
            }
        }
        Ok(ranked)
    }

    /// Mark every later copy of a document as dropped, or fail with the
    /// reject's detail under `DuplicateDocs::Reject`.
    fn mark_duplicates(
        &mut self,
        labels: &LabelIndex,
        query: QueryIdx,
        rules: RankRules<'_>,
    ) -> Result<(), String> {
        self.dropped.clear();
        self.dropped.resize(self.lines.len(), false);
        self.seen.clear();
        let lines = &self.lines;
        let hash = |i: u32| lines[i as usize].0.id_hash;
        for (later, (line, origin)) in lines.iter().enumerate() {
            let same = |&earlier: &u32| lines[earlier as usize].0.same_doc(line);
            let Some(&earlier) = self.seen.find(line.id_hash, same) else {
                self.seen
                    .insert_unique(line.id_hash, later as u32, |&i| hash(i));
                continue;
            };
            let first = lines[earlier as usize].1;
            if rules.duplicates == DuplicateDocs::Dedupe {
                self.dropped[later] = true;
                if first.input != origin.input {
                    self.fused.get_or_insert((first.input, origin.input));
                }
                continue;
            }
            let doc = if line.place.judged() {
                format!(
                    "doc '{}'",
                    labels.doc_id(labels.judged_at(query, line.place))
                )
            } else {
                "a doc id".to_string()
            };
            // Two runs written with the same tag (a tool's default) merge
            // into one ranking full of duplicates: say so.
            let hint = if lines.iter().any(|(_, o)| o.input != first.input) {
                format!(
                    "; its lines come from several files: do two runs share a tag? \
                     {} keeps them apart",
                    Setting::RunName.given("file")
                )
            } else {
                String::new()
            };
            return Err(format!(
                "{doc} appears at positions {} and {} ({} and {}; the whole ranking of \
                 this query and run is rejected{hint})",
                earlier + 1,
                later + 1,
                rules.place(first),
                rules.place(*origin)
            ));
        }
        Ok(())
    }

    /// The judged documents (any grade) of the ranking last ranked.
    pub fn found(&self) -> &[Found] {
        &self.found
    }

    /// The lines of its unjudged documents within the pool depth.
    pub fn pooled(&self) -> &[PooledLine] {
        &self.pooled
    }

    /// The inputs of a copy dropped as a duplicate and of the copy it
    /// repeats, when they differ: two runs fused into one.
    pub fn fused(&self) -> Option<(u32, u32)> {
        self.fused
    }
}
