//! The answer key, ready for lookups from many threads: one hash table from
//! query id to query, and per query a short run of judged documents sorted
//! by hash. Every hash match is confirmed on the id's text, so a collision
//! can cost a comparison but never a wrong grade.

use std::borrow::Cow;
use std::ops::Range;
use std::path::{Path, PathBuf};

use hashbrown::HashTable;
use rayon::prelude::*;
use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};
use xxhash_rust::xxh3::Xxh3;

use super::ids::{IdRef, IdText};
use crate::base::metrics::Judgments;
use crate::base::options::ReviewerPolicy;
use crate::base::schema::{ChangedLabels, ReviewerSummary, SourceSummary};
use crate::base::slices::NO_SLICE;

/// The hash used for query and doc ids everywhere in rgrade.
pub fn id_hash(id: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id)
}

/// A question text as `--join text` matches it: trimmed, and in Unicode's
/// composed form (NFC), so that an accent written as one code point or as
/// a letter and a combining mark is the same text. Borrowed when it is
/// already so, as almost every text is.
pub fn join_form(text: &str) -> Cow<'_, str> {
    let text = text.trim();
    match is_nfc_quick(text.chars()) {
        IsNormalized::Yes => Cow::Borrowed(text),
        _ => Cow::Owned(text.nfc().collect()),
    }
}

/// The most judged documents of a query that [`LabelIndex::find_doc`]
/// scans rather than searches.
const SCANNED_RUN: usize = 16;

/// Index of a labeled query; queries are numbered in byte order of their ids.
pub type QueryIdx = u32;

/// One labeled query.
#[derive(Debug, Clone)]
pub struct LabeledQuery {
    /// The query id.
    pub(super) id: IdRef,
    /// Index into the slice names ([`LabelIndex::slice_name`]).
    pub task: u32,
    /// Index into the slice names ([`LabelIndex::slice_name`]).
    pub language: u32,
    /// The held-out split: an index into the slice names.
    pub split: u32,
    /// The collection version the labels were reviewed against: an index
    /// into the slice names, `(none)` when the label names none.
    pub collection_version: u32,
    /// A regression case that a change must not lose.
    pub required: bool,
    /// This query's judged documents with a positive grade in
    /// [`LabelIndex`]'s arrays.
    pub(super) docs: Range<u32>,
    /// Where its documents judged 0 or less end: they follow `docs`, up to
    /// here. No metric sees them; they tell a judged document from an
    /// unjudged one (stale labels, TREC tie-breaks).
    pub(super) judged_end: u32,
    /// |R|: judged documents with grade >= min-rel.
    pub n_relevant: u32,
    /// The runs its labels were pooled from: an index into
    /// [`LabelIndex::pool`]'s pools, [`NO_POOL`] when they name none.
    pub(super) pool: u32,
}

impl LabeledQuery {
    /// Whether any judged document has a positive grade. A query without
    /// one is a no-answer query, kept out of every mean; one whose
    /// positive grades all fall below `--min-rel` is not: as under
    /// trec_eval's `-l`, it scores 0 on the binary metrics and keeps its
    /// graded nDCG.
    pub fn has_answer(&self) -> bool {
        !self.docs.is_empty()
    }
}

/// The pool of a query whose labels name no `pooled_from`.
pub(super) const NO_POOL: u32 = u32::MAX;

/// A judged document, with any grade.
#[repr(C)]
#[derive(
    Debug,
    Clone,
    Default,
    zerocopy::FromBytes,
    zerocopy::IntoBytes,
    zerocopy::Immutable,
    zerocopy::KnownLayout,
)]
pub(super) struct JudgedDoc {
    pub(super) hash: u64,
    pub(super) grade: i64,
    pub(super) id: IdRef,
}

/// What the reviewers of a key did, as the index keeps it (a compiled key
/// too): enough to report them at any `--min-rel`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Reviewers {
    /// How the grades of a pair judged by several were combined, or whose
    /// grades alone count; `None` when no pair needed it.
    pub policy: Option<ReviewerPolicy>,
    /// Each reviewer with the queries they labeled and the pairs they
    /// judged, by name.
    pub reviewers: Vec<ReviewerSummary>,
    /// The pairs judged by two reviewers or more: each set of grades given
    /// one pair (sorted), with how many pairs were given it.
    pub votes: Vec<(Vec<i64>, u64)>,
}

/// Where the labels came from, for summary.json and `compare`.
#[derive(Debug, Clone)]
pub struct LabelsSource {
    /// The path as given.
    pub path: PathBuf,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// xxh3-128 of the file's bytes, in hex.
    pub hash: String,
    /// The format that was read.
    pub format: &'static str,
    /// The compiled key they were read from, when they were
    /// (`rgrade index`); the fields above are then the labels it was
    /// compiled from.
    pub compiled: Option<CompiledKey>,
}

impl LabelsSource {
    /// The file the user named: the compiled key when the labels were read
    /// from one, else the labels file. Messages name it.
    pub fn given_path(&self) -> &Path {
        self.compiled.as_ref().map_or(&self.path, |key| &key.path)
    }
}

/// A compiled answer key file, for summary.json.
#[derive(Debug, Clone)]
pub struct CompiledKey {
    /// The path as given.
    pub path: PathBuf,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// xxh3-128 of the file's bytes.
    pub hash: String,
    /// How the labels file it names differs from the one it was compiled
    /// from, when it does: the key grades the labels it holds.
    pub labels_changed: Option<ChangedLabels>,
}

/// The arrays of an index, as built from labels or read from a compiled
/// key; [`LabelIndex::assemble`] derives the rest from them.
pub(super) struct IndexParts {
    /// The queries, sorted by id; their `n_relevant` is counted anew.
    pub(super) queries: Vec<LabeledQuery>,
    pub(super) docs: Vec<JudgedDoc>,
    pub(super) ideal_grades: Vec<i64>,
    pub(super) by_text: Vec<u32>,
    pub(super) query_texts: Option<QueryTexts>,
    pub(super) text: IdText,
    pub(super) slice_names: Vec<Box<str>>,
    /// The reviewers the labels name, if they name any.
    pub(super) reviewers: Option<Reviewers>,
    /// Each distinct set of runs labels were pooled from, as name indices.
    pub(super) pools: Vec<Box<[u32]>>,
    /// The sources the labels name.
    pub(super) sources: Vec<SourceSummary>,
}

impl LabelIndex {
    /// The index over `parts`, with what follows from them: each query's
    /// relevant documents at `min_rel`, the table that finds a query by
    /// its id, and whether any label names a split. Runs on the current
    /// rayon pool.
    pub(super) fn assemble(parts: IndexParts, min_rel: i64, source: LabelsSource) -> Self {
        let IndexParts {
            mut queries,
            docs,
            ideal_grades,
            by_text,
            query_texts,
            text,
            slice_names,
            reviewers,
            pools,
            sources,
        } = parts;
        queries.par_iter_mut().for_each(|q| {
            let grades = &ideal_grades[q.docs.start as usize..q.docs.end as usize];
            q.n_relevant = grades.iter().filter(|&&g| g >= min_rel).count() as u32;
        });
        let by_id = query_table(&queries, &text);
        let has_splits = (queries.iter()).any(|q| &*slice_names[q.split as usize] != NO_SLICE);
        LabelIndex {
            queries,
            by_id,
            docs,
            ideal_grades,
            by_text,
            query_texts,
            text,
            slice_names,
            reviewers,
            pools,
            sources,
            has_splits,
            min_rel,
            source,
        }
    }
}

/// The table that finds each of `queries` by its id, their ids' hashes
/// computed on the current rayon pool.
fn query_table(queries: &[LabeledQuery], text: &IdText) -> HashTable<QueryIdx> {
    let hashes: Vec<u64> = queries
        .par_iter()
        .map(|q| id_hash(text.get(q.id).as_bytes()))
        .collect();
    let mut table = HashTable::with_capacity(queries.len());
    for (index, &hash) in hashes.iter().enumerate() {
        table.insert_unique(hash, index as QueryIdx, |&q| hashes[q as usize]);
    }
    table
}

/// The labels' question texts, for captures that name their query by
/// its text (`--join text`).
#[derive(Debug)]
pub(super) struct QueryTexts {
    /// Each query's text, trimmed, by query index.
    pub(super) texts: Vec<IdRef>,
    /// Finds a query by its text.
    pub(super) table: HashTable<QueryIdx>,
}

impl QueryTexts {
    /// Query `q`'s text at `texts[q]`, and the table that finds a query by
    /// its text.
    ///
    /// # Errors
    /// Two queries with one text: the first such pair, by query index.
    pub(super) fn new(texts: Vec<IdRef>, text: &IdText) -> Result<Self, [QueryIdx; 2]> {
        let mut table: HashTable<QueryIdx> = HashTable::with_capacity(texts.len());
        for (index, &id) in texts.iter().enumerate() {
            let wanted = text.get(id);
            let hash = id_hash(wanted.as_bytes());
            let same = |&q: &QueryIdx| text.get(texts[q as usize]) == wanted;
            if let Some(&earlier) = table.find(hash, same) {
                return Err([earlier, index as QueryIdx]);
            }
            table.insert_unique(hash, index as QueryIdx, |&q| {
                id_hash(text.get(texts[q as usize]).as_bytes())
            });
        }
        Ok(QueryTexts { texts, table })
    }
}

/// The answer key, ready for lookups from many threads.
#[derive(Debug)]
pub struct LabelIndex {
    pub(super) queries: Vec<LabeledQuery>,
    pub(super) by_id: HashTable<QueryIdx>,
    /// Judged docs of all queries: per query those with a positive grade,
    /// then the others, each part sorted by hash.
    pub(super) docs: Vec<JudgedDoc>,
    /// Grades of each part of each query's run, highest first (those of
    /// the positive part are the ideal ranking).
    pub(super) ideal_grades: Vec<i64>,
    /// Each query's judged docs again, in byte order of their ids: places
    /// a TREC run's documents among them for trec_eval's tie-break.
    pub(super) by_text: Vec<u32>,
    /// Each query's question text, when captures are joined by it.
    pub(super) query_texts: Option<QueryTexts>,
    pub(super) text: IdText,
    pub(super) slice_names: Vec<Box<str>>,
    /// The reviewers the labels name, if they name any.
    reviewers: Option<Reviewers>,
    /// Each distinct set of runs labels were pooled from, as name indices.
    pub(super) pools: Vec<Box<[u32]>>,
    /// The sources the labels name (`source`), by name.
    sources: Vec<SourceSummary>,
    /// Whether any label names a split.
    pub(super) has_splits: bool,
    pub(super) min_rel: i64,
    /// Where the labels came from.
    pub source: LabelsSource,
}

impl LabelIndex {
    /// The reviewers the labels name and how their grades were combined,
    /// if they name any.
    pub fn reviewers(&self) -> Option<&Reviewers> {
        self.reviewers.as_ref()
    }

    /// The runs whose results were pooled for judging `query`, as their
    /// labels name them (`pooled_from`), sorted; `None` when they name none.
    pub fn pool(&self, query: QueryIdx) -> Option<impl Iterator<Item = &str>> {
        let pool = self.queries[query as usize].pool;
        let runs = self.pools.get(pool as usize)?;
        Some(runs.iter().map(|&run| &*self.slice_names[run as usize]))
    }

    /// The labeled queries whose labels name their pool.
    pub fn pooled_queries(&self) -> u64 {
        self.queries.iter().filter(|q| q.pool != NO_POOL).count() as u64
    }

    /// The sources the labels name (`source`), by name.
    pub fn sources(&self) -> &[SourceSummary] {
        &self.sources
    }

    /// The labeled queries, sorted by id (byte order).
    pub fn queries(&self) -> &[LabeledQuery] {
        &self.queries
    }

    /// The id of a labeled query.
    pub fn query_id(&self, query: QueryIdx) -> &str {
        self.text.get(self.queries[query as usize].id)
    }

    /// The query with this id, if labeled.
    pub fn find_query(&self, id: &[u8]) -> Option<QueryIdx> {
        let hash = id_hash(id);
        let same = |&q: &QueryIdx| self.text.get(self.queries[q as usize].id).as_bytes() == id;
        self.by_id.find(hash, same).copied()
    }

    /// The query a capture names: by its id, or by its question text,
    /// trimmed, when the labels were loaded to be joined by text.
    pub fn find_captured(&self, named: &str) -> Option<QueryIdx> {
        let Some(texts) = &self.query_texts else {
            return self.find_query(named.as_bytes());
        };
        let named = join_form(named);
        let same = |&q: &QueryIdx| self.text.get(texts.texts[q as usize]) == named;
        texts.table.find(id_hash(named.as_bytes()), same).copied()
    }

    /// The global index of `doc` among `query`'s judged documents, if
    /// judged, whatever its grade. `hash` must be `id_hash(doc)`.
    pub fn find_doc(&self, query: QueryIdx, doc: &[u8], hash: u64) -> Option<u32> {
        let q = &self.queries[query as usize];
        let judged = q.docs.start..q.judged_end;
        if judged.len() <= SCANNED_RUN {
            // A few judged documents: one pass over them costs less than
            // two binary searches.
            let run = &self.docs[judged.start as usize..judged.end as usize];
            return run
                .iter()
                .position(|d| d.hash == hash && self.text.get(d.id).as_bytes() == doc)
                .map(|offset| judged.start + offset as u32);
        }
        self.find_in(q.docs.clone(), doc, hash)
            .or_else(|| self.find_in(q.docs.end..q.judged_end, doc, hash))
    }

    /// The global index of `doc` in `range`, a part of a query's judged
    /// documents sorted by hash.
    fn find_in(&self, range: Range<u32>, doc: &[u8], hash: u64) -> Option<u32> {
        let run = &self.docs[range.start as usize..range.end as usize];
        let start = run.partition_point(|d| d.hash < hash);
        run[start..]
            .iter()
            .take_while(|d| d.hash == hash)
            .position(|d| self.text.get(d.id).as_bytes() == doc)
            .map(|offset| range.start + (start + offset) as u32)
    }

    /// Where `doc` falls among `query`'s judged documents (any grade) in
    /// byte order of their ids, compared on the text.
    pub fn place_doc(&self, query: QueryIdx, doc: &[u8]) -> DocPlace {
        let by_text = self.by_text_of(query);
        let below = by_text.partition_point(|&d| self.doc_id(d).as_bytes() < doc);
        let judged = by_text
            .get(below)
            .is_some_and(|&d| self.doc_id(d).as_bytes() == doc);
        DocPlace::new(below as u32, judged)
    }

    /// The judged document of `query` at `place` (whose `judged` is true),
    /// of any grade: see [`Self::is_relevant`].
    pub fn judged_at(&self, query: QueryIdx, place: DocPlace) -> u32 {
        self.by_text_of(query)[place.below() as usize]
    }

    fn by_text_of(&self, query: QueryIdx) -> &[u32] {
        let q = &self.queries[query as usize];
        &self.by_text[q.docs.start as usize..q.judged_end as usize]
    }

    /// The xxh3-128 of the judgments as grading reads them, in hex: each
    /// query's id, task, language, split, collection version and whether
    /// it is required, and its judged documents with their grades, both in
    /// byte order of their ids. The same judgments hash the same whatever
    /// the file's format, order or bytes, so gradings compare by it.
    pub fn content_hash(&self) -> String {
        fn feed(hasher: &mut Xxh3, text: &str) {
            hasher.update(&(text.len() as u64).to_le_bytes());
            hasher.update(text.as_bytes());
        }
        let mut hasher = Xxh3::new();
        for (query, q) in (0..).zip(&self.queries) {
            feed(&mut hasher, self.query_id(query));
            for slice in [q.task, q.language, q.split, q.collection_version] {
                feed(&mut hasher, self.slice_name(slice));
            }
            hasher.update(&[u8::from(q.required)]);
            let docs = self.by_text_of(query);
            hasher.update(&(docs.len() as u64).to_le_bytes());
            for &doc in docs {
                feed(&mut hasher, self.doc_id(doc));
                hasher.update(&self.grade(doc).to_le_bytes());
            }
        }
        format!("{:032x}", hasher.digest128())
    }

    /// Whether a judged document counts as relevant: a positive grade of
    /// at least min-rel (the documents `n_relevant` counts).
    pub fn is_relevant(&self, doc: u32) -> bool {
        self.counts_as_relevant(self.docs[doc as usize].grade)
    }

    /// Whether a document of this grade counts as relevant: a positive
    /// grade of at least min-rel.
    pub fn counts_as_relevant(&self, grade: i64) -> bool {
        grade > 0 && grade >= self.min_rel
    }

    /// The grade of a judged document returned by [`Self::find_doc`].
    pub fn grade(&self, doc: u32) -> i64 {
        self.docs[doc as usize].grade
    }

    /// The id of a judged document returned by [`Self::find_doc`].
    pub fn doc_id(&self, doc: u32) -> &str {
        self.text.get(self.docs[doc as usize].id)
    }

    /// Global indices of `query`'s judged documents (positive grades).
    pub fn judged_docs(&self, query: QueryIdx) -> Range<u32> {
        self.queries[query as usize].docs.clone()
    }

    /// Global indices of every document `query`'s labels judge, whatever
    /// its grade: those of [`Self::judged_docs`], then the others.
    pub fn every_judged_doc(&self, query: QueryIdx) -> Range<u32> {
        let q = &self.queries[query as usize];
        q.docs.start..q.judged_end
    }

    /// Whether `query`'s labels judge any document, whatever its grade.
    pub fn judges_any(&self, query: QueryIdx) -> bool {
        let q = &self.queries[query as usize];
        q.docs.start < q.judged_end
    }

    /// Judged documents over all queries, of any grade: one past the
    /// largest global index.
    pub fn n_judged_docs(&self) -> usize {
        self.docs.len()
    }

    /// Global indices of `query`'s judged documents that count as relevant.
    pub fn relevant_docs(&self, query: QueryIdx) -> impl Iterator<Item = u32> + '_ {
        self.judged_docs(query)
            .filter(move |&d| self.docs[d as usize].grade >= self.min_rel)
    }

    /// What the metrics need to know about `query`.
    pub fn judgments(&self, query: QueryIdx) -> Judgments<'_> {
        let q = &self.queries[query as usize];
        Judgments {
            n_relevant: q.n_relevant as usize,
            ideal_grades: &self.ideal_grades[q.docs.start as usize..q.docs.end as usize],
            n_judged: (q.judged_end - q.docs.start) as usize,
            min_rel: self.min_rel,
        }
    }

    /// The name of a task, language, split or collection version index.
    pub fn slice_name(&self, slice: u32) -> &str {
        &self.slice_names[slice as usize]
    }

    /// The split `query` is sliced by: `None` when no label names a split,
    /// so that labels without splits keep one grouping set per slice.
    pub fn split_of(&self, query: QueryIdx) -> Option<u32> {
        self.has_splits.then(|| self.queries[query as usize].split)
    }

    /// The collection version `query`'s label was reviewed against, if it names one.
    pub fn collection_version(&self, query: QueryIdx) -> Option<&str> {
        let version = self.slice_name(self.queries[query as usize].collection_version);
        (version != NO_SLICE).then_some(version)
    }

    /// The collection versions the labels name, each with its number of
    /// labeled queries, in byte order of the names.
    pub fn collection_versions(&self) -> Vec<(&str, u64)> {
        let mut counts: std::collections::BTreeMap<&str, u64> = Default::default();
        for query in 0..self.queries.len() as QueryIdx {
            if let Some(version) = self.collection_version(query) {
                *counts.entry(version).or_default() += 1;
            }
        }
        counts.into_iter().collect()
    }

    /// Whether any label names a split.
    pub fn has_splits(&self) -> bool {
        self.has_splits
    }

    /// The lowest grade that counts as relevant.
    pub fn min_rel(&self) -> i64 {
        self.min_rel
    }
}

/// Where a doc id falls among a query's judged documents (any grade)
/// in byte order of their ids: enough to rank it against each of them as
/// trec_eval breaks score ties (doc id descending), without its text.
///
/// Packed in four bytes, as `below` × 2 + `judged`, so that it orders as
/// (`below`, `judged`): a judged id after every other id with the same
/// count below it, as their text would. A TREC run holds one per line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocPlace(u32);

impl DocPlace {
    /// The place of an id that `below` judged ids sort before, and that is
    /// (`judged`) or is not the judged id that comes next. The labels' ids
    /// fit in 4 GiB, so a query has far fewer than 2^31 judged ids.
    pub fn new(below: u32, judged: bool) -> Self {
        DocPlace(below << 1 | u32::from(judged))
    }

    /// How many of the query's judged ids sort before it.
    pub fn below(self) -> u32 {
        self.0 >> 1
    }

    /// Whether it is the judged document at `below` itself.
    pub fn judged(self) -> bool {
        self.0 & 1 == 1
    }
}
