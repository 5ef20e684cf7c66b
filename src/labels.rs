//! The answer key: read JSONL, TREC qrels or CSV labels into a compact
//! index keyed by hashed ids (SPEC §3.1).
//!
//! The index is what every worker consults for every captured result, so it
//! is built for lookups: one hash table from query id to query, and per
//! query a short run of judged documents sorted by hash. Ids are kept as
//! text too, back to back in one string, and every hash match is confirmed
//! on the text, so a hash collision can cost a comparison but never a wrong
//! grade. The file is read as a stream: a large key is never held twice.

use std::io::BufRead;
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use hashbrown::{HashMap, HashTable};
use rayon::prelude::*;
use simd_json::prelude::*;
use simd_json::tape::Value;

use crate::cli::LabelsFormat;
use crate::metrics::Judgments;
use crate::read::{lines, read_blocks, Block, Chunk, ChunkSink, Input, Source, MAX_LINE};
use crate::record::{id_text, JsonParser};

/// The hash used for query and doc ids everywhere in rgrade.
pub fn id_hash(id: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id)
}

/// The name shown for a query without a task or language.
pub const NO_SLICE: &str = "(none)";

/// Index of a labeled query; queries are numbered in byte order of their ids.
pub type QueryIdx = u32;

/// Where an id's text is in [`IdText`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IdRef {
    start: u32,
    len: u32,
}

impl IdRef {
    /// The same id in a text that has `offset` more bytes before it.
    fn shifted(self, offset: u32) -> IdRef {
        IdRef {
            start: self.start + offset,
            len: self.len,
        }
    }
}

/// Every query and doc id of the labels, back to back: an id costs its
/// bytes and eight more, instead of a separate allocation.
#[derive(Debug, Default)]
struct IdText(String);

impl IdText {
    fn push(&mut self, id: &str) -> Result<IdRef> {
        let start = self.append(id)?;
        Ok(IdRef {
            start,
            // Fits: the whole text does.
            len: id.len() as u32,
        })
    }

    /// Add `more` text; returns where it starts. Ids are addressed in u32,
    /// so the whole text must stay below 4 GiB.
    fn append(&mut self, more: &str) -> Result<u32> {
        let start = u32::try_from(self.0.len());
        let end = u32::try_from(self.0.len() + more.len());
        let (Ok(start), Ok(_)) = (start, end) else {
            bail!("the labels hold more than 4 GiB of ids; split the key");
        };
        self.0.push_str(more);
        Ok(start)
    }

    fn get(&self, id: IdRef) -> &str {
        &self.0[id.start as usize..(id.start + id.len) as usize]
    }
}

/// One labeled query.
#[derive(Debug, Clone)]
pub struct LabeledQuery {
    id: IdRef,
    /// Index into the slice names ([`LabelIndex::slice_name`]).
    pub task: u32,
    /// Index into the slice names ([`LabelIndex::slice_name`]).
    pub language: u32,
    /// A regression case that a change must not lose.
    pub required: bool,
    /// This query's judged documents (grade > 0) in [`LabelIndex`]'s arrays.
    docs: Range<u32>,
    /// |R|: judged documents with grade >= min-rel.
    pub n_relevant: u32,
}

/// A judged document with a positive grade.
#[derive(Debug, Clone)]
struct JudgedDoc {
    hash: u64,
    grade: i64,
    id: IdRef,
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
}

/// The answer key, ready for lookups from many threads.
#[derive(Debug)]
pub struct LabelIndex {
    queries: Vec<LabeledQuery>,
    by_id: HashTable<QueryIdx>,
    /// Judged docs of all queries, each query's run sorted by hash.
    docs: Vec<JudgedDoc>,
    /// Grades of each query's run, highest first (the ideal ranking).
    ideal_grades: Vec<i64>,
    /// Each query's judged docs again, in byte order of their ids: places
    /// a TREC run's documents among them for trec_eval's tie-break.
    by_text: Vec<u32>,
    text: IdText,
    slice_names: Vec<Box<str>>,
    min_rel: i64,
    /// Where the labels came from.
    pub source: LabelsSource,
}

impl LabelIndex {
    /// Read and index the labels file (plain, gzip or zstd).
    ///
    /// # Errors
    /// An unreadable file, a malformed line (named as `path:line`), the same
    /// query twice in JSONL or the same (query, doc) twice, or no query at all.
    pub fn load(path: &Path, format: LabelsFormat, min_rel: i64) -> Result<Self> {
        let name = path.display();
        let mut source = Source::open(&Input::File(path.to_path_buf()))
            .with_context(|| format!("{name}: cannot read labels"))?;
        let format = match format {
            LabelsFormat::Auto => detect_format(
                source
                    .fill_buf()
                    .with_context(|| format!("{name}: cannot read labels"))?,
            ),
            other => other,
        };
        // Reserved from the file size: untouched capacity costs no memory,
        // while growing a large vector copies it.
        let size = std::fs::metadata(path).map_or(0, |m| m.len() as usize);
        let mut builder = Builder::default();
        builder.reserve(size);
        if format != LabelsFormat::Jsonl {
            // Qrels and CSV repeat a query's id on each of its lines: a
            // table finds the query again.
            builder.by_id = HashTable::with_capacity(size / 80);
        }
        let read = match format {
            LabelsFormat::Jsonl => read_jsonl(&mut source, &mut builder),
            LabelsFormat::Csv => read_csv(&mut source, &mut builder),
            LabelsFormat::Trec | LabelsFormat::Auto => read_qrels(&mut source, &mut builder),
        };
        if read.is_ok() && builder.queries.is_empty() {
            bail!("{name}: no labeled query in the file");
        }
        let (bytes, hash) = source.digest();
        let source = LabelsSource {
            path: path.to_path_buf(),
            bytes,
            hash,
            format: format_name(format),
        };
        read.and_then(|()| builder.build(min_rel, source))
            .map_err(|(line, err)| match line {
                Some(line) => anyhow!("{name}:{line}: {err:#}"),
                None => anyhow!("{name}: {err:#}"),
            })
    }

    /// Build an index from in-memory labels: (query id, task, language, [(doc id, grade)]).
    /// Used by tests and benches.
    ///
    /// # Errors
    /// The same query or the same (query, doc) twice.
    pub fn from_queries<'a>(
        queries: impl IntoIterator<
            Item = (
                &'a str,
                Option<&'a str>,
                Option<&'a str>,
                Vec<(&'a str, i64)>,
            ),
        >,
        min_rel: i64,
    ) -> Result<Self> {
        let mut builder = Builder::default();
        for (line, (id, task, language, docs)) in queries.into_iter().enumerate() {
            let line = line + 1;
            let at_line = |err: anyhow::Error| anyhow!("{line}: {err:#}");
            let query = builder.push_query(id, line).map_err(at_line)?;
            builder
                .set_slices(query, task, language, false, line)
                .map_err(at_line)?;
            for (doc, grade) in docs {
                builder.judge(query, doc, grade, line).map_err(at_line)?;
            }
        }
        let source = LabelsSource {
            path: PathBuf::new(),
            bytes: 0,
            hash: String::new(),
            format: "memory",
        };
        builder
            .build(min_rel, source)
            .map_err(|(line, err)| anyhow!("{}: {err:#}", line.unwrap_or(0)))
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
        self.by_id
            .find(hash, |&q| {
                self.text.get(self.queries[q as usize].id).as_bytes() == id
            })
            .copied()
    }

    /// The global index of `doc` among `query`'s judged documents, if judged
    /// with a positive grade. `hash` must be `id_hash(doc)`.
    pub fn find_doc(&self, query: QueryIdx, doc: &[u8], hash: u64) -> Option<u32> {
        let range = self.queries[query as usize].docs.clone();
        let run = &self.docs[range.start as usize..range.end as usize];
        let start = run.partition_point(|d| d.hash < hash);
        run[start..]
            .iter()
            .take_while(|d| d.hash == hash)
            .position(|d| self.text.get(d.id).as_bytes() == doc)
            .map(|offset| range.start + (start + offset) as u32)
    }

    /// Where `doc` falls among `query`'s judged documents in byte order of
    /// their ids, compared on the text.
    pub fn place_doc(&self, query: QueryIdx, doc: &[u8]) -> DocPlace {
        let by_text = self.by_text_of(query);
        let below = by_text.partition_point(|&d| self.doc_id(d).as_bytes() < doc);
        let judged = by_text
            .get(below)
            .is_some_and(|&d| self.doc_id(d).as_bytes() == doc);
        DocPlace::new(below as u32, judged)
    }

    /// The judged document of `query` at `place` (whose `judged` is true).
    pub fn judged_at(&self, query: QueryIdx, place: DocPlace) -> u32 {
        self.by_text_of(query)[place.below() as usize]
    }

    fn by_text_of(&self, query: QueryIdx) -> &[u32] {
        let range = self.queries[query as usize].docs.clone();
        &self.by_text[range.start as usize..range.end as usize]
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

    /// Judged documents over all queries: one past the largest global index.
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
            min_rel: self.min_rel,
        }
    }

    /// The name of a task or language index.
    pub fn slice_name(&self, slice: u32) -> &str {
        &self.slice_names[slice as usize]
    }

    /// The lowest grade that counts as relevant.
    pub fn min_rel(&self) -> i64 {
        self.min_rel
    }
}

/// Where a doc id falls among a query's judged documents (positive grade)
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

/// JSONL when the first non-blank byte is `{`, CSV when the first line
/// holds a comma, TREC qrels otherwise (SPEC §3.1).
fn detect_format(head: &[u8]) -> LabelsFormat {
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let first_line = head[start..].split(|&b| b == b'\n').next().unwrap_or(&[]);
    if first_line.first() == Some(&b'{') {
        LabelsFormat::Jsonl
    } else if first_line.contains(&b',') {
        LabelsFormat::Csv
    } else {
        LabelsFormat::Trec
    }
}

fn format_name(format: LabelsFormat) -> &'static str {
    match format {
        LabelsFormat::Jsonl => "jsonl",
        LabelsFormat::Csv => "csv",
        LabelsFormat::Trec | LabelsFormat::Auto => "trec",
    }
}

/// A labels error and the 1-based line it is about, if any.
type LineError = (Option<usize>, anyhow::Error);

/// Labels as read, before indexing: flat lists and one string of ids, so
/// that reading a large key costs no allocation per query or document.
#[derive(Default)]
struct Builder {
    text: IdText,
    queries: Vec<RawQuery>,
    by_id: HashTable<u32>,
    docs: Vec<RawDoc>,
    slice_ids: HashMap<Box<str>, u32>,
    slice_names: Vec<Box<str>>,
}

struct RawQuery {
    id: IdRef,
    line: usize,
    slices: Option<(u32, u32, usize)>,
    required: bool,
}

struct RawDoc {
    query: u32,
    id: IdRef,
    grade: i64,
    line: usize,
}

impl Builder {
    /// Add the JSONL label record `value`, read from `line`. Its query is
    /// not checked against earlier ones: a query labeled twice is found
    /// when the index is built.
    fn add_json(&mut self, value: Value<'_, '_>, line: usize) -> Result<()> {
        if !value.is_object() {
            bail!("a label line must be a JSON object");
        }
        let id = match value.get("query_id") {
            Some(id) => {
                id_text(id).ok_or_else(|| anyhow!("query_id must be a string or an integer"))?
            }
            None => bail!("missing query_id"),
        };
        let required = match value.get("required") {
            None => false,
            Some(v) if v.is_null() => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| anyhow!("required must be true or false"))?,
        };
        let relevant = value
            .get("relevant")
            .ok_or_else(|| anyhow!("missing relevant (use [] for a no-answer query)"))?;
        let query = self.push_query(&id, line)?;
        if let Some(ids) = relevant.as_array() {
            for doc in ids.iter() {
                let doc =
                    id_text(doc).ok_or_else(|| anyhow!("relevant must hold doc ids (strings)"))?;
                self.judge(query, &doc, 1, line)?;
            }
        } else if let Some(graded) = relevant.as_object() {
            for (doc, grade) in graded.iter() {
                let grade = grade
                    .as_i64()
                    .ok_or_else(|| anyhow!("the grade of '{doc}' must be an integer"))?;
                self.judge(query, doc, grade, line)?;
            }
        } else {
            bail!("relevant must be an array of doc ids or an object of doc id to grade");
        }
        let optional_text = |key: &str| -> Result<Option<&str>> {
            match value.get(key) {
                None => Ok(None),
                Some(v) if v.is_null() => Ok(None),
                Some(v) => v
                    .into_string()
                    .map(Some)
                    .ok_or_else(|| anyhow!("{key} must be a string")),
            }
        };
        let (task, language) = (optional_text("task")?, optional_text("language")?);
        self.set_slices(query, task, language, required, line)
    }

    /// Move the labels of `part`, read from the lines that follow ours,
    /// into this builder, leaving `part` empty.
    fn append(&mut self, part: &mut Builder) -> Result<()> {
        let text_start = self.text.append(&part.text.0)?;
        let first_query = self.queries.len() as u32;
        let slices: Vec<u32> = part
            .slice_names
            .iter()
            .map(|name| self.intern(Some(name)))
            .collect();
        self.queries
            .extend(part.queries.drain(..).map(|q| RawQuery {
                id: q.id.shifted(text_start),
                slices: q.slices.map(|(task, language, line)| {
                    (slices[task as usize], slices[language as usize], line)
                }),
                ..q
            }));
        self.docs.extend(part.docs.drain(..).map(|d| RawDoc {
            query: first_query + d.query,
            id: d.id.shifted(text_start),
            ..d
        }));
        part.text.0.clear();
        part.slice_ids.clear();
        part.slice_names.clear();
        Ok(())
    }

    /// Room for the labels of `bytes` bytes of labels: at most that much
    /// id text, a judgment per 40 bytes, a query per 80, so that the lists
    /// do not grow by doubling, copying themselves into fresh pages. (Not
    /// the table of query ids: JSONL labels do not use it, and a table is
    /// written to as soon as it is made.)
    fn reserve(&mut self, bytes: usize) {
        self.text.0.reserve(bytes);
        self.queries.reserve(bytes / 80);
        self.docs.reserve(bytes / 40);
    }

    fn find(&self, id: &str, hash: u64) -> Option<usize> {
        let found = self
            .by_id
            .find(hash, |&q| self.text.get(self.queries[q as usize].id) == id);
        found.map(|&q| q as usize)
    }

    /// A new query, without looking for an earlier one of the same id.
    fn push_query(&mut self, id: &str, line: usize) -> Result<usize> {
        let index = self.queries.len();
        let id = self.text.push(id)?;
        self.queries.push(RawQuery {
            id,
            line,
            slices: None,
            required: false,
        });
        Ok(index)
    }

    /// The query with this id, declared on first sight (qrels and CSV,
    /// whose lines repeat the query id).
    fn declare(&mut self, id: &str, line: usize) -> Result<usize> {
        let hash = id_hash(id.as_bytes());
        if let Some(q) = self.find(id, hash) {
            return Ok(q);
        }
        let index = self.push_query(id, line)?;
        let (queries, text) = (&self.queries, &self.text);
        self.by_id.insert_unique(hash, index as u32, |&q| {
            id_hash(text.get(queries[q as usize].id).as_bytes())
        });
        Ok(index)
    }

    fn intern(&mut self, name: Option<&str>) -> u32 {
        let name = name.filter(|n| !n.is_empty()).unwrap_or(NO_SLICE);
        if let Some(&id) = self.slice_ids.get(name) {
            return id;
        }
        let id = self.slice_names.len() as u32;
        self.slice_names.push(name.into());
        self.slice_ids.insert(name.into(), id);
        id
    }

    /// Record a query's task and language; a later line must agree.
    fn set_slices(
        &mut self,
        query: usize,
        task: Option<&str>,
        language: Option<&str>,
        required: bool,
        line: usize,
    ) -> Result<()> {
        let slices = (self.intern(task), self.intern(language));
        let q = &mut self.queries[query];
        q.required |= required;
        match q.slices {
            None => q.slices = Some((slices.0, slices.1, line)),
            Some((t, l, first)) if (t, l) != slices => bail!(
                "query_id '{}' has task/language {}/{} here but {}/{} on line {first}",
                self.text.get(q.id),
                self.slice_names[slices.0 as usize],
                self.slice_names[slices.1 as usize],
                self.slice_names[t as usize],
                self.slice_names[l as usize],
            ),
            Some(_) => {}
        }
        Ok(())
    }

    fn judge(&mut self, query: usize, doc: &str, grade: i64, line: usize) -> Result<()> {
        let id = self.text.push(doc)?;
        self.docs.push(RawDoc {
            query: query as u32,
            id,
            grade,
            line,
        });
        Ok(())
    }

    /// Index the labels: queries in byte order of their ids, each query's
    /// judged documents sorted by hash.
    ///
    /// # Errors
    /// A query on two JSONL lines, or a (query, doc) pair judged twice, at
    /// the line of its second appearance.
    fn build(mut self, min_rel: i64, source: LabelsSource) -> Result<LabelIndex, LineError> {
        let none = self.intern(None);
        let text = self.text;
        let mut order: Vec<u32> = (0..self.queries.len() as u32).collect();
        let id_of = |q: &u32| text.get(self.queries[*q as usize].id);
        order.sort_unstable_by(|a, b| id_of(a).cmp(id_of(b)));
        // A JSONL query on two lines: report the earliest second line.
        let repeated = order
            .chunk_by(|a, b| id_of(a) == id_of(b))
            .filter(|same| same.len() > 1)
            .map(|same| {
                let mut lines: Vec<usize> = same
                    .iter()
                    .map(|&q| self.queries[q as usize].line)
                    .collect();
                lines.sort_unstable();
                (lines[1], lines[0], id_of(&same[0]))
            })
            .min();
        if let Some((line, first, id)) = repeated {
            let message = anyhow!("query_id '{id}' is labeled twice (first on line {first})");
            return Err((Some(line), message));
        }
        // Group the judgments by query (JSONL and most qrels come grouped
        // already), keeping file order within a query.
        if !self.docs.is_sorted_by_key(|d| d.query) {
            self.docs.sort_by_key(|d| d.query);
        }
        let mut docs = Vec::with_capacity(self.docs.len());
        let mut ideal_grades = Vec::with_capacity(self.docs.len());
        let mut by_text = Vec::with_capacity(self.docs.len());
        let mut ranges = vec![0..0; self.queries.len()];
        for run in self.docs.chunk_by_mut(|a, b| a.query == b.query) {
            run.sort_by(|a, b| text.get(a.id).cmp(text.get(b.id)).then(a.line.cmp(&b.line)));
            if let Some(pair) = run
                .windows(2)
                .find(|p| text.get(p[0].id) == text.get(p[1].id))
            {
                let query = text.get(self.queries[pair[1].query as usize].id);
                let message = anyhow!(
                    "doc_id '{}' is judged twice for query_id '{query}' (first on line {})",
                    text.get(pair[1].id),
                    pair[0].line
                );
                return Err((Some(pair[1].line), message));
            }
            let start = docs.len();
            docs.extend(run.iter().filter(|d| d.grade > 0).map(|d| JudgedDoc {
                hash: id_hash(text.get(d.id).as_bytes()),
                grade: d.grade,
                id: d.id,
            }));
            let judged = &mut docs[start..];
            judged.sort_unstable_by(|a, b| {
                a.hash
                    .cmp(&b.hash)
                    .then_with(|| text.get(a.id).cmp(text.get(b.id)))
            });
            let mut grades: Vec<i64> = judged.iter().map(|d| d.grade).collect();
            grades.sort_unstable_by(|a, b| b.cmp(a));
            ideal_grades.extend(grades);
            let first = by_text.len();
            by_text.extend(start as u32..docs.len() as u32);
            by_text[first..].sort_unstable_by_key(|&d| text.get(docs[d as usize].id));
            ranges[run[0].query as usize] = start as u32..docs.len() as u32;
        }
        drop(self.docs);

        let mut queries = Vec::with_capacity(order.len());
        let mut by_id = HashTable::with_capacity(order.len());
        for old in order {
            let raw = &self.queries[old as usize];
            let range = ranges[old as usize].clone();
            let grades = &ideal_grades[range.start as usize..range.end as usize];
            let (task, language, _) = raw.slices.unwrap_or((none, none, raw.line));
            let index = queries.len() as QueryIdx;
            queries.push(LabeledQuery {
                id: raw.id,
                task,
                language,
                required: raw.required,
                n_relevant: grades.iter().filter(|&&g| g >= min_rel).count() as u32,
                docs: range,
            });
            let hash = id_hash(text.get(raw.id).as_bytes());
            by_id.insert_unique(hash, index, |&q: &QueryIdx| {
                id_hash(text.get(queries[q as usize].id).as_bytes())
            });
        }
        Ok(LabelIndex {
            queries,
            by_id,
            docs,
            ideal_grades,
            by_text,
            text,
            slice_names: self.slice_names,
            min_rel,
            source,
        })
    }
}

/// Feed `visit` each line of a labels stream with its 1-based number,
/// without its line end.
fn for_each_line(
    source: &mut impl BufRead,
    mut visit: impl FnMut(usize, &mut Vec<u8>) -> Result<(), LineError>,
) -> Result<(), LineError> {
    let mut buffer = Vec::new();
    for number in 1.. {
        buffer.clear();
        let read = source
            .read_until(b'\n', &mut buffer)
            .map_err(|err| (Some(number), anyhow!("cannot read: {err}")))?;
        if read == 0 {
            break;
        }
        if buffer.ends_with(b"\n") {
            buffer.pop();
        }
        if buffer.ends_with(b"\r") {
            buffer.pop();
        }
        visit(number, &mut buffer)?;
    }
    Ok(())
}

/// Blocks of label lines parsed at a time, in parallel.
const BLOCKS_AT_A_TIME: usize = 8;

/// Read JSONL labels a batch of blocks at a time: each block is parsed on
/// a worker into a part of its own, and the parts join the builder in
/// file order, so the line reported is the first that cannot be read. A
/// query labeled twice is found afterwards, when the index is built.
fn read_jsonl(source: &mut Source, builder: &mut Builder) -> Result<(), LineError> {
    let mut batches = JsonlBatches {
        builder,
        batch: Vec::with_capacity(BLOCKS_AT_A_TIME),
        parts: Vec::new(),
        spent: Vec::new(),
        failed: None,
    };
    let read_all =
        read_blocks(source, &mut batches).map_err(|err| (None, anyhow!("cannot read: {err}")))?;
    if read_all {
        batches.index();
    }
    batches.failed.map_or(Ok(()), Err)
}

/// Takes the blocks of a JSONL labels file from the reader.
struct JsonlBatches<'a> {
    builder: &'a mut Builder,
    batch: Vec<Block>,
    /// One part per block of the batch, emptied after each batch but
    /// keeping its memory: fresh pages cost more than parsing them.
    parts: Vec<Builder>,
    spent: Vec<Vec<u8>>,
    failed: Option<LineError>,
}

impl JsonlBatches<'_> {
    /// Parse the waiting blocks and add them; false at the first error.
    fn index(&mut self) -> bool {
        self.parts.resize_with(self.batch.len(), Builder::default);
        let parsed: Vec<Result<(), LineError>> = self
            .batch
            .par_iter()
            .zip(&mut self.parts)
            .map(|(block, part)| parse_block(block, part))
            .collect();
        self.spent
            .extend(self.batch.drain(..).map(|block| block.bytes));
        for (parsed, part) in parsed.into_iter().zip(&mut self.parts) {
            let added = parsed.and_then(|()| {
                let line = part.queries.first().map(|q| q.line);
                self.builder.append(part).map_err(|err| (line, err))
            });
            if let Err(err) = added {
                self.failed = Some(err);
                return false;
            }
        }
        true
    }
}

impl ChunkSink for JsonlBatches<'_> {
    fn send(&mut self, chunk: Chunk) -> bool {
        match chunk {
            Chunk::Lines(block) => {
                self.batch.push(block);
                self.batch.len() < BLOCKS_AT_A_TIME || self.index()
            }
            Chunk::Oversized { line, .. } => {
                // The blocks before it come first: an error there is earlier.
                if self.index() {
                    self.failed = Some((Some(line as usize), too_long()));
                }
                false
            }
        }
    }

    fn recycled(&mut self) -> Option<Vec<u8>> {
        self.spent.pop()
    }
}

/// A label line longer than the reader takes: cut off by the reader, or
/// read whole in the block that holds its end.
fn too_long() -> anyhow::Error {
    anyhow!("a label line longer than {} MiB", MAX_LINE >> 20)
}

/// Read the labels of one block of JSONL lines into `part`, which is empty.
fn parse_block(block: &Block, part: &mut Builder) -> Result<(), LineError> {
    part.reserve(block.bytes.len());
    let mut parser = JsonParser::default();
    for (number, line) in (block.first_line as usize..).zip(lines(&block.bytes)) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line.len() > MAX_LINE {
            return Err((Some(number), too_long()));
        }
        parser
            .parse(line, |value| part.add_json(value, number))
            .map_err(|invalid| anyhow!("{}", invalid.detail))
            .and_then(|added| added)
            .map_err(|err| (Some(number), err))?;
    }
    Ok(())
}

fn read_qrels(source: &mut impl BufRead, builder: &mut Builder) -> Result<(), LineError> {
    for_each_line(source, |line, bytes| {
        let fail = |err: anyhow::Error| (Some(line), err);
        let text = std::str::from_utf8(bytes).map_err(|_| fail(anyhow!("not valid UTF-8")))?;
        let fields: Vec<&str> = text.split_ascii_whitespace().collect();
        match fields.as_slice() {
            [] => Ok(()),
            [query, _iteration, doc, grade] => {
                let grade: i64 = grade
                    .parse()
                    .map_err(|_| fail(anyhow!("grade '{grade}' is not an integer")))?;
                let q = builder.declare(query, line).map_err(fail)?;
                builder.judge(q, doc, grade, line).map_err(fail)
            }
            _ => Err(fail(anyhow!(
                "expected 4 fields 'query_id iteration doc_id grade', found {}",
                fields.len()
            ))),
        }
    })
}

fn read_csv(source: &mut impl BufRead, builder: &mut Builder) -> Result<(), LineError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(source);
    let headers = reader
        .headers()
        .map_err(|err| (Some(1), anyhow!("cannot read the CSV header: {err}")))?
        .clone();
    let column = |name: &str| headers.iter().position(|h| h == name);
    let (Some(query_col), Some(doc_col)) = (column("query_id"), column("doc_id")) else {
        let found = headers.iter().collect::<Vec<_>>().join(",");
        return Err((
            Some(1),
            anyhow!("the CSV header needs query_id and doc_id columns, found: {found}"),
        ));
    };
    let (grade_col, task_col, language_col, required_col) = (
        column("grade"),
        column("task"),
        column("language"),
        column("required"),
    );
    for record in reader.records() {
        let record = record.map_err(|err| {
            let line = err.position().map(|p| p.line() as usize);
            (line, anyhow!("bad CSV record: {err}"))
        })?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let fail = |err: anyhow::Error| (Some(line), err);
        let field = |col: Option<usize>| col.and_then(|c| record.get(c)).filter(|v| !v.is_empty());
        let query = field(Some(query_col)).ok_or_else(|| fail(anyhow!("empty query_id")))?;
        let q = builder.declare(query, line).map_err(fail)?;
        let required = match field(required_col) {
            None | Some("false") | Some("0") => false,
            Some("true") | Some("1") => true,
            Some(other) => {
                return Err(fail(anyhow!(
                    "required must be true or false, found '{other}'"
                )))
            }
        };
        builder
            .set_slices(q, field(task_col), field(language_col), required, line)
            .map_err(fail)?;
        // A row without a doc id declares the query only: a no-answer query.
        if let Some(doc) = field(Some(doc_col)) {
            let grade = match field(grade_col) {
                None => 1,
                Some(g) => g
                    .parse()
                    .map_err(|_| fail(anyhow!("grade '{g}' is not an integer")))?,
            };
            builder.judge(q, doc, grade, line).map_err(fail)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn load_text(text: &str, format: LabelsFormat) -> Result<LabelIndex> {
        let dir = std::env::temp_dir().join(format!(
            "rgrade-labels-{}-{}",
            std::process::id(),
            xxhash_rust::xxh3::xxh3_64(text.as_bytes())
        ));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("labels");
        std::fs::write(&path, text)?;
        let index = LabelIndex::load(&path, format, 1);
        std::fs::remove_dir_all(&dir)?;
        index
    }

    #[test]
    fn jsonl_with_lists_grades_integers_and_no_answer() {
        let index = load_text(
            concat!(
                r#"{"query_id": "q2", "relevant": {"a": 2, "b": 1, "c": 0}, "task": "howto", "language": "de"}"#, "\n",
                "\n",
                r#"{"query_id": 7, "relevant": ["x"], "required": true, "note": "ignored"}"#, "\n",
                r#"{"query_id": "q1", "relevant": []}"#, "\n",
            ),
            LabelsFormat::Auto,
        )
        .unwrap();
        let ids: Vec<&str> = (0..index.queries().len() as QueryIdx)
            .map(|q| index.query_id(q))
            .collect();
        assert_eq!(ids, ["7", "q1", "q2"], "sorted by byte order");
        let q2 = index.find_query(b"q2").unwrap();
        assert_eq!(
            index.queries()[q2 as usize].n_relevant,
            2,
            "grade 0 is not relevant"
        );
        assert_eq!(index.slice_name(index.queries()[q2 as usize].task), "howto");
        assert!(index.find_doc(q2, b"c", id_hash(b"c")).is_none());
        let a = index.find_doc(q2, b"a", id_hash(b"a")).unwrap();
        assert_eq!((index.grade(a), index.doc_id(a)), (2, "a"));
        assert_eq!(index.judgments(q2).ideal_grades, [2, 1]);
        let seven = &index.queries()[index.find_query(b"7").unwrap() as usize];
        assert!(seven.required);
        assert_eq!(index.slice_name(seven.task), NO_SLICE);
        assert_eq!(
            index.queries()[index.find_query(b"q1").unwrap() as usize].n_relevant,
            0
        );
        assert!(index.find_query(b"q3").is_none());
    }

    #[test]
    fn a_hash_match_is_confirmed_on_the_text() {
        let index = load_text("q 0 a 1\n", LabelsFormat::Trec).unwrap();
        let q = index.find_query(b"q").unwrap();
        // The right hash with the wrong text must not match.
        assert!(index.find_doc(q, b"b", id_hash(b"a")).is_none());
    }

    #[test]
    fn qrels_and_csv_agree() {
        let qrels = load_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 3\n", LabelsFormat::Auto).unwrap();
        let csv = load_text(
            "query_id,doc_id,grade\nq1,a,1\nq1,b,0\nq2,c,3\n",
            LabelsFormat::Auto,
        )
        .unwrap();
        for index in [&qrels, &csv] {
            assert_eq!(index.queries().len(), 2);
            let q2 = index.find_query(b"q2").unwrap();
            assert_eq!(index.judgments(q2).ideal_grades, [3]);
        }
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("{\"query_id\": \"a\", \"relevant\": []}\n{\"query_id\": \"a\", \"relevant\": []}\n", ":2: query_id 'a' is labeled twice (first on line 1)"),
            ("{\"query_id\": \"a\"}\n", ":1: missing relevant"),
            ("{\"relevant\": []}\n", ":1: missing query_id"),
            ("{\"query_id\": \"a\", \"relevant\": [\"d\", \"d\"]}\n", ":1: doc_id 'd' is judged twice"),
            ("{\"query_id\": \"a\", \"relevant\": {\"d\": \"high\"}}\n", ":1: the grade of 'd' must be an integer"),
            ("{\"query_id\": \"a\", \"relevant\": []}\n{oops\n", ":2: not valid JSON"),
            ("q1 0 a 1\nq1 0 a\n", ":2: expected 4 fields"),
            ("q1 0 a x\n", ":1: grade 'x' is not an integer"),
            ("q1 0 a 1\nq1 0 a 2\n", ":2: doc_id 'a' is judged twice for query_id 'q1' (first on line 1)"),
            ("query,doc\nq,a\n", ":1: the CSV header needs query_id and doc_id"),
            ("query_id,doc_id,task\nq,a,x\nq,b,y\n", ":3: query_id 'q' has task/language y/(none) here but x/(none) on line 2"),
        ];
        for (text, want) in cases {
            let err = format!("{:#}", load_text(text, LabelsFormat::Auto).unwrap_err());
            assert!(
                err.contains(want),
                "labels {text:?}: got {err:?}, want {want:?}"
            );
        }
        let empty = format!("{:#}", load_text("\n\n", LabelsFormat::Auto).unwrap_err());
        assert!(empty.contains("no labeled query"), "{empty}");
    }

    /// JSONL labels of `n` queries, long enough to fill several read
    /// batches, with the line `replace.0` (1-based) replaced by `replace.1`.
    fn many_labels(n: usize, replace: Option<(usize, &str)>) -> String {
        let mut text = String::new();
        for i in 0..n {
            let line = match replace {
                Some((at, replacement)) if at == i + 1 => replacement.to_string(),
                _ => format!(
                    r#"{{"query_id": "q{i:06}", "relevant": {{"kb/{i}/{pad}": 2, "kb/{i}/b": 1}}, "task": "t{}"}}"#,
                    i % 3,
                    pad = "x".repeat(80)
                ),
            };
            text.push_str(&line);
            text.push_str(if i % 2 == 0 { "\n" } else { "\r\n" });
        }
        text
    }

    #[test]
    fn jsonl_labels_read_in_many_blocks_keep_every_query_and_line() {
        let n = 120_000;
        let text = many_labels(n, None);
        assert!(text.len() > BLOCKS_AT_A_TIME * crate::read::BLOCK_SIZE);
        let index = load_text(&text, LabelsFormat::Jsonl).unwrap();
        assert_eq!(index.queries().len(), n);
        for i in [0, 1, 7_001, n / 2, n - 1] {
            let q = index.find_query(format!("q{i:06}").as_bytes()).unwrap();
            assert_eq!(index.judgments(q).ideal_grades, [2, 1]);
            let task = index.queries()[q as usize].task;
            assert_eq!(index.slice_name(task), format!("t{}", i % 3));
            let doc = format!("kb/{i}/b");
            assert!(index
                .find_doc(q, doc.as_bytes(), id_hash(doc.as_bytes()))
                .is_some());
        }

        let repeat = r#"{"query_id": "q000003", "relevant": []}"#;
        let err = load_text(&many_labels(n, Some((n - 10, repeat))), LabelsFormat::Jsonl);
        let want = format!(
            ":{}: query_id 'q000003' is labeled twice (first on line 4)",
            n - 10
        );
        assert!(format!("{:#}", err.unwrap_err()).contains(&want));

        // Just over the limit (read whole), and far over it (cut off).
        for length in [MAX_LINE + 1, MAX_LINE + 3 * crate::read::BLOCK_SIZE] {
            let long = format!("{}\n", "x".repeat(length));
            let text = many_labels(3, None).replace("\r\n", &format!("\n{long}"));
            let err = format!("{:#}", load_text(&text, LabelsFormat::Jsonl).unwrap_err());
            assert!(err.contains(":3: a label line longer than 64 MiB"), "{err}");
        }

        let broken = r#"{"query_id": "q", "relevant": [1.5]}"#;
        let err = load_text(&many_labels(n, Some((n - 2, broken))), LabelsFormat::Jsonl);
        let want = format!(":{}: relevant must hold doc ids", n - 2);
        assert!(format!("{:#}", err.unwrap_err()).contains(&want));
    }

    proptest! {
        /// Any text is either an index or an error that names a line;
        /// nothing panics, whatever the format.
        #[test]
        fn any_text_loads_or_fails_cleanly(
            lines in prop::collection::vec(prop_oneof![
                prop::collection::vec(prop::sample::select(vec![
                    "{", "}", "[", "]", ",", ":", " ", "\"query_id\"", "\"relevant\"", "\"task\"",
                    "\"q\"", "\"d\"", "2", "-1", "null", "true", "query_id", "doc_id", "grade", "q1", "0",
                ]), 0..16).prop_map(|p| p.concat()),
                "[ -~]{0,40}",
            ], 1..8),
            format in prop::sample::select(vec![LabelsFormat::Auto, LabelsFormat::Jsonl, LabelsFormat::Trec, LabelsFormat::Csv]),
        ) {
            match load_text(&lines.join("\n"), format) {
                Ok(index) => prop_assert!(!index.queries().is_empty()),
                Err(err) => prop_assert!(format!("{err:#}").contains("labels"), "{err:#}"),
            }
        }
    }
}
