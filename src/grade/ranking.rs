//! A ranking judged: its doc ids checked for repeats (rejected, or the
//! later copies dropped), mapped to their documents under `--unit doc`
//! ([`crate::grade::units`]) and looked up in the label index, leaving the
//! ranks of its judged documents, the results withheld from grading, and,
//! for the review queue, its unjudged documents. One judge per worker,
//! reused, so a ranking costs no allocation but what it leaves.

use std::ops::Range;

use hashbrown::HashTable;

use crate::base::options::DuplicateDocs;
use crate::grade::capture::Found;
use crate::grade::diagnostics::permissions::Outside;
use crate::grade::diagnostics::pool::Pooled;
use crate::grade::units::{DocOf, Folded, Scratch};
use crate::labels::{id_hash, LabelIndex, QueryIdx};
use crate::logs::record::{Invalid, RejectReason};

/// What survives of a judged ranking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// Results kept (after any dedupe).
    pub n_results: u32,
    /// Of those, the ones outside the user's allowed collections.
    pub unauthorized: u32,
    /// Where its judged documents are in the found list.
    pub found: Range<u32>,
    /// Whether it returned any judged document, of any grade.
    pub returned_judged: bool,
    /// What mapping its ids to documents did, under `--unit doc`.
    pub folded: Folded,
}

/// Checks a ranking for duplicates and finds its judged documents.
/// Reused across records so a ranking costs no allocation but its result.
#[derive(Debug)]
pub struct RankingJudge {
    /// What to do with a doc id listed twice: fixed for a whole run.
    duplicates: DuplicateDocs,
    hashes: Vec<u64>,
    /// A filter of the hashes seen so far in a short ranking: a doc id
    /// whose bit is clear cannot have been seen, so only the few whose bit
    /// is set look back for an earlier copy.
    seen_bits: [u64; SEEN_WORDS],
    /// Positions of the doc ids seen so far in a long ranking, by hash.
    seen: HashTable<u32>,
    dropped: Vec<bool>,
    /// How result ids name their documents, under `--unit doc`.
    doc_of: Option<DocOf>,
    /// Under `--unit doc`, where each result's document id is in its id.
    documents: Vec<Range<u32>>,
    scratch: Scratch,
}

/// Words in [`RankingJudge::seen_bits`]: 4,096 bits.
const SEEN_WORDS: usize = 64;

/// The longest ranking checked for repeats with the filter; a longer one
/// would set most of its bits, and uses a hash table.
const FILTERED_RANKING: usize = 256;

impl RankingJudge {
    /// A judge that handles repeated doc ids as `duplicates` says and,
    /// given `doc_of`, grades each result as the document it is a chunk of.
    pub fn new(duplicates: DuplicateDocs, doc_of: Option<DocOf>) -> Self {
        RankingJudge {
            duplicates,
            hashes: Vec::new(),
            seen_bits: [0; SEEN_WORDS],
            seen: HashTable::new(),
            dropped: Vec::new(),
            doc_of,
            documents: Vec::new(),
            scratch: Scratch::default(),
        }
    }

    /// The id result `i` of `docs` is graded as: its document's, under
    /// `--unit doc`.
    fn id<'d, S: AsRef<str>>(&self, docs: &'d [S], i: usize) -> &'d str {
        let id = docs[i].as_ref();
        match self.documents.get(i) {
            Some(span) => &id[span.start as usize..span.end as usize],
            None => id,
        }
    }

    /// Under `--unit doc`, map every result not dropped to its document
    /// (its hash with it), and drop each later chunk of a document ranked
    /// already. Equal hashes are confirmed on the text.
    fn fold_chunks<S: AsRef<str>>(&mut self, docs: &[S]) -> Folded {
        self.documents.clear();
        let Some(doc_of) = &self.doc_of else {
            return Folded::default();
        };
        let mut folded = Folded::default();
        self.seen.clear();
        let Self {
            hashes,
            documents,
            dropped,
            seen,
            scratch,
            ..
        } = self;
        for (i, doc) in docs.iter().enumerate() {
            let id = doc.as_ref();
            let span = doc_of.document_span(id, scratch).unwrap_or_else(|| {
                folded.unmapped += u32::from(!dropped[i]);
                0..id.len()
            });
            documents.push(span.start as u32..span.end as u32);
            if dropped[i] {
                continue;
            }
            let document = &id[span];
            let hash = id_hash(document.as_bytes());
            hashes[i] = hash;
            let text = |at: u32| {
                let (id, span) = (docs[at as usize].as_ref(), &documents[at as usize]);
                &id[span.start as usize..span.end as usize]
            };
            let same =
                |&earlier: &u32| hashes[earlier as usize] == hash && text(earlier) == document;
            if seen.find(hash, same).is_some() {
                dropped[i] = true;
                folded.later_chunks += 1;
            } else {
                seen.insert_unique(hash, i as u32, |&at| hashes[at as usize]);
            }
        }
        folded
    }

    /// Judge the ranking `docs` of `query`: append its judged documents, by
    /// rank, to `found` and return what survives of it. Results `outside`
    /// the user's allowed collections keep their rank but are never
    /// graded: judged ones go to `withheld` instead.
    ///
    /// # Errors
    /// `duplicate_doc` when a doc id repeats under `--duplicate-docs
    /// reject`; `found` and `withheld` are then unchanged.
    pub fn judge<S: AsRef<str>>(
        &mut self,
        labels: &LabelIndex,
        query: QueryIdx,
        docs: &[S],
        outside: &[Outside],
        found: &mut Vec<Found>,
        withheld: &mut Vec<u32>,
    ) -> Result<Judged, Invalid> {
        self.hashes.clear();
        self.hashes
            .extend(docs.iter().map(|d| id_hash(d.as_ref().as_bytes())));
        self.mark_duplicates(docs)?;
        let folded = self.fold_chunks(docs);
        let start = found.len() as u32;
        let mut rank = 0u32;
        let mut unauthorized = 0u32;
        let mut returned_judged = false;
        let mut outside = outside.iter().map(|o| o.position).peekable();
        for i in 0..docs.len() {
            let is_outside = outside.next_if_eq(&i).is_some();
            if self.dropped[i] {
                continue;
            }
            rank += 1;
            unauthorized += u32::from(is_outside);
            let (doc, hash) = (self.id(docs, i).as_bytes(), self.hashes[i]);
            if let Some(doc) = labels.find_doc(query, doc, hash) {
                returned_judged = true;
                if is_outside {
                    // Seen, but never graded: neither relevant nor judged.
                    withheld.push(doc);
                } else {
                    found.push(Found { rank, doc });
                }
            }
        }
        Ok(Judged {
            n_results: rank,
            unauthorized,
            found: start..found.len() as u32,
            returned_judged,
            folded,
        })
    }

    /// Pool the documents of the ranking `docs` last judged (for `query`)
    /// that rank within `depth` and that no label line of the query judges;
    /// returns where they are in `pooled`. Results `outside` the user's
    /// allowed collections are never graded, so never pooled either.
    pub fn pool<S: AsRef<str>>(
        &self,
        labels: &LabelIndex,
        query: QueryIdx,
        docs: &[S],
        outside: &[Outside],
        depth: usize,
        pooled: &mut Pooled,
    ) -> Range<u32> {
        let start = pooled.len();
        let mut outside = outside.iter().map(|o| o.position).peekable();
        let mut rank = 0u32;
        for i in 0..docs.len() {
            let is_outside = outside.next_if_eq(&i).is_some();
            if self.dropped[i] {
                continue;
            }
            rank += 1;
            if rank as usize > depth {
                break;
            }
            let id = self.id(docs, i);
            if !is_outside
                && labels
                    .find_doc(query, id.as_bytes(), self.hashes[i])
                    .is_none()
            {
                pooled.push(rank, id);
            }
        }
        start..pooled.len()
    }

    /// Mark every repeat of an earlier doc id as dropped, or fail. Equal
    /// hashes are confirmed on the text, so a collision drops nothing.
    fn mark_duplicates<S: AsRef<str>>(&mut self, docs: &[S]) -> Result<(), Invalid> {
        self.dropped.clear();
        self.dropped.resize(docs.len(), false);
        let repeats = if docs.len() <= FILTERED_RANKING {
            self.filtered_repeats(docs)
        } else {
            self.table_repeats(docs)
        };
        for (earlier, later) in repeats {
            if self.duplicates == DuplicateDocs::Reject {
                return Err(Invalid {
                    reason: RejectReason::DuplicateDoc,
                    detail: format!(
                        "doc '{}' appears at positions {} and {}",
                        docs[later].as_ref(),
                        earlier + 1,
                        later + 1
                    ),
                });
            }
            self.dropped[later] = true;
        }
        Ok(())
    }

    /// Each repeated doc id of a short ranking as (first position, later
    /// position), in order of the later one.
    fn filtered_repeats<S: AsRef<str>>(&mut self, docs: &[S]) -> Vec<(usize, usize)> {
        let hashes = &self.hashes;
        let bit = |hash: u64| ((hash >> 6) as usize % SEEN_WORDS, 1u64 << (hash & 63));
        let mut repeats = Vec::new();
        for (later, &hash) in hashes.iter().enumerate() {
            let (word, mask) = bit(hash);
            if self.seen_bits[word] & mask != 0 {
                let doc = docs[later].as_ref();
                let earlier = (0..later).find(|&i| hashes[i] == hash && docs[i].as_ref() == doc);
                repeats.extend(earlier.map(|earlier| (earlier, later)));
            }
            self.seen_bits[word] |= mask;
        }
        for &hash in hashes {
            self.seen_bits[bit(hash).0] = 0;
        }
        repeats
    }

    /// [`Self::filtered_repeats`] for a ranking of any length.
    fn table_repeats<S: AsRef<str>>(&mut self, docs: &[S]) -> Vec<(usize, usize)> {
        self.seen.clear();
        let hashes = &self.hashes;
        let mut repeats = Vec::new();
        for (later, doc) in docs.iter().enumerate() {
            let hash = hashes[later];
            let same = |&earlier: &u32| {
                hashes[earlier as usize] == hash && docs[earlier as usize].as_ref() == doc.as_ref()
            };
            match self.seen.find(hash, same) {
                Some(&earlier) => repeats.push((earlier as usize, later)),
                None => {
                    self.seen
                        .insert_unique(hash, later as u32, |&i| hashes[i as usize]);
                }
            }
        }
        repeats
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// q1 judges a (grade 1) and b (grade 2); q2, of a task and language,
    /// judges nothing.
    pub(in crate::grade) fn labels() -> LabelIndex {
        let queries = [
            ("q1", None, None, vec![("a", 1), ("b", 2)]),
            ("q2", Some("howto"), Some("en"), vec![]),
        ];
        LabelIndex::from_queries(queries, 1).unwrap()
    }

    proptest! {
        /// Short rankings (the filter) and long ones (the table) find the
        /// repeats a naive look back finds: the first under reject, every
        /// one under dedupe.
        #[test]
        fn repeats_are_found_as_a_naive_look_back_finds_them(
            picks in prop::collection::vec(0..400usize, 0..600),
        ) {
            let labels = labels();
            let q1 = labels.find_query(b"q1").unwrap();
            let docs: Vec<String> = picks.iter().map(|p| match p {
                0 => "a".to_string(),
                1 => "b".to_string(),
                p => format!("doc-{p}"),
            }).collect();
            let first_of = |later: usize| (0..later).find(|&i| docs[i] == docs[later]);
            let first_repeat = (0..docs.len()).find_map(|later| first_of(later).map(|e| (e, later)));
            let rejected = RankingJudge::new(DuplicateDocs::Reject, None)
                .judge(&labels, q1, &docs, &[], &mut Vec::new(), &mut Vec::new());
            match first_repeat {
                Some((earlier, later)) => {
                    let detail = rejected.unwrap_err().detail;
                    let want = format!("doc '{}' appears at positions {} and {}", docs[later], earlier + 1, later + 1);
                    prop_assert_eq!(detail, want);
                }
                None => prop_assert!(rejected.is_ok()),
            }
            let kept: Vec<&String> = (0..docs.len()).filter(|&i| first_of(i).is_none()).map(|i| &docs[i]).collect();
            let want_ranks: Vec<u32> = (1..).zip(&kept).filter(|(_, d)| d.as_str() == "a" || d.as_str() == "b").map(|(rank, _)| rank).collect();
            let mut found = Vec::new();
            let judged = RankingJudge::new(DuplicateDocs::Dedupe, None)
                .judge(&labels, q1, &docs, &[], &mut found, &mut Vec::new())
                .unwrap();
            prop_assert_eq!(judged.n_results as usize, kept.len());
            prop_assert_eq!(found.iter().map(|f| f.rank).collect::<Vec<_>>(), want_ranks);
        }
        /// Under `--unit doc`, a ranking of chunks (some repeated, some
        /// without a document) ranks each document where a naive walk puts
        /// its first chunk, and counts what it folded.
        #[test]
        fn chunks_fold_into_their_documents_as_a_naive_walk_folds_them(
            picks in prop::collection::vec((0..40usize, 0..6usize), 0..300),
        ) {
            let labels = labels();
            let q1 = labels.find_query(b"q1").unwrap();
            // Documents a and b are judged; chunk 0 of a document has no
            // `#`, so it is its own document.
            let docs: Vec<String> = picks.iter().map(|&(doc, chunk)| {
                let doc = match doc { 0 => "a".to_string(), 1 => "b".to_string(), d => format!("d{d}") };
                if chunk == 0 { doc } else { format!("{doc}#{chunk}") }
            }).collect();
            let mut kept_ids: Vec<&str> = Vec::new();
            let mut documents: Vec<&str> = Vec::new();
            let (mut later, mut unmapped) = (0, 0);
            for id in &docs {
                if kept_ids.contains(&id.as_str()) {
                    continue;
                }
                kept_ids.push(id);
                let document = id.rfind('#').map_or_else(|| { unmapped += 1; id.as_str() }, |at| &id[..at]);
                if documents.contains(&document) {
                    later += 1;
                } else {
                    documents.push(document);
                }
            }
            let want_ranks: Vec<u32> = (1..).zip(&documents).filter(|(_, d)| ["a", "b"].contains(d)).map(|(rank, _)| rank).collect();
            let mut found = Vec::new();
            let judged = RankingJudge::new(DuplicateDocs::Dedupe, Some("#".parse().unwrap()))
                .judge(&labels, q1, &docs, &[], &mut found, &mut Vec::new())
                .unwrap();
            prop_assert_eq!(judged.n_results as usize, documents.len());
            prop_assert_eq!(found.iter().map(|f| f.rank).collect::<Vec<_>>(), want_ranks);
            prop_assert_eq!(judged.folded, Folded { later_chunks: later, unmapped });
        }
    }

    #[test]
    fn dedupe_keeps_the_first_occurrence_and_closes_the_gap() {
        let labels = labels();
        let q1 = labels.find_query(b"q1").unwrap();
        let docs = ["x", "a", "x", "b"];
        let mut found = Vec::new();
        let err = RankingJudge::new(DuplicateDocs::Reject, None)
            .judge(&labels, q1, &docs, &[], &mut found, &mut Vec::new())
            .unwrap_err();
        assert!(found.is_empty(), "a rejected ranking adds nothing");
        assert_eq!(err.reason, RejectReason::DuplicateDoc);
        assert!(
            err.detail.contains("'x' appears at positions 1 and 3"),
            "{}",
            err.detail
        );
        let judged = RankingJudge::new(DuplicateDocs::Dedupe, None)
            .judge(&labels, q1, &docs, &[], &mut found, &mut Vec::new())
            .unwrap();
        assert_eq!(judged.found, 0..2);
        let ranks: Vec<u32> = found.iter().map(|f| f.rank).collect();
        assert_eq!((judged.n_results, ranks), (3, vec![2, 3]));
    }

    #[test]
    fn results_outside_the_allowed_collections_keep_their_rank_but_are_not_judged() {
        let labels = labels();
        let q1 = labels.find_query(b"q1").unwrap();
        let mut judge = RankingJudge::new(DuplicateDocs::Dedupe, None);
        // a and b are judged for q1; a (and the duplicate x) are outside.
        let docs = ["x", "a", "x", "b"];
        let outside = [0, 1, 2].map(|position| Outside {
            position,
            collection: "hr".into(),
        });
        let (mut found, mut withheld) = (Vec::new(), Vec::new());
        let judged = judge
            .judge(&labels, q1, &docs, &outside, &mut found, &mut withheld)
            .unwrap();
        let ranks: Vec<u32> = found.iter().map(|f| f.rank).collect();
        assert_eq!(
            (judged.n_results, judged.unauthorized, ranks),
            (3, 2, vec![3])
        );
        // a was returned, though withheld from grading.
        let a = labels.find_doc(q1, b"a", id_hash(b"a")).unwrap();
        assert_eq!(withheld, [a]);
    }

    #[test]
    fn the_pool_holds_unjudged_documents_within_its_depth() {
        let labels = labels();
        let q1 = labels.find_query(b"q1").unwrap();
        let mut judge = RankingJudge::new(DuplicateDocs::Dedupe, None);
        // a and b are judged for q1; the second x is dropped, y is outside.
        let docs = ["x", "a", "x", "y", "z", "b", "w"];
        let outside = [Outside {
            position: 3,
            collection: "hr".into(),
        }];
        judge
            .judge(
                &labels,
                q1,
                &docs,
                &outside,
                &mut Vec::new(),
                &mut Vec::new(),
            )
            .unwrap();
        let mut pooled = Pooled::default();
        pooled.push(9, "earlier");
        let range = judge.pool(&labels, q1, &docs, &outside, 5, &mut pooled);
        let held: Vec<(u32, &str)> = pooled.get(range).collect();
        assert_eq!(held, [(1, "x"), (4, "z")], "w ranks 6th, past the depth");
        assert_eq!(pooled.get(0..1).collect::<Vec<_>>(), [(9, "earlier")]);
    }
}
