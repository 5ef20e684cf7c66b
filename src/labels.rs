//! The answer key: read JSONL, TREC qrels or CSV labels into a compact
//! index keyed by hashed ids (SPEC §3.1).
//!
//! The index is what every worker consults for every captured result, so it
//! is built for lookups: one hash table from query id to query, and per
//! query a short run of judged documents sorted by hash. Ids are kept as
//! text too, and every hash match is confirmed on the text, so a hash
//! collision can cost a comparison but never a wrong grade.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use hashbrown::HashTable;
use simd_json::prelude::*;
use simd_json::BorrowedValue;

use crate::cli::LabelsFormat;
use crate::metrics::Judgments;
use crate::read;

/// The hash used for query and doc ids everywhere in rgrade.
pub fn id_hash(id: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id)
}

/// The name shown for a query without a task or language.
pub const NO_SLICE: &str = "(none)";

/// Index of a labeled query; queries are numbered in byte order of their ids.
pub type QueryIdx = u32;

/// One labeled query.
#[derive(Debug, Clone)]
pub struct LabeledQuery {
    /// The query id as text.
    pub id: Box<str>,
    /// Index into [`LabelIndex::slice_names`].
    pub task: u32,
    /// Index into [`LabelIndex::slice_names`].
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
    id: Box<str>,
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
    slice_names: Vec<Box<str>>,
    min_rel: i64,
    /// Where the labels came from.
    pub source: LabelsSource,
}

impl LabelIndex {
    /// Read and index the labels file.
    ///
    /// # Errors
    /// An unreadable file, a malformed line (named as `path:line`), the same
    /// query twice in JSONL or the same (query, doc) twice, or no query at all.
    pub fn load(path: &Path, format: LabelsFormat, min_rel: i64) -> Result<Self> {
        let raw = std::fs::read(path)
            .with_context(|| format!("{}: cannot read labels", path.display()))?;
        let hash = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&raw));
        let text = read::decode_all(&raw)
            .with_context(|| format!("{}: cannot decompress labels", path.display()))?;
        let format = match format {
            LabelsFormat::Auto => detect_format(&text),
            other => other,
        };
        // Reserving up front spares the copies of growing large vectors.
        let lines = memchr::memchr_iter(b'\n', &text).count() + 1;
        let mut builder = match format {
            LabelsFormat::Jsonl => Builder::with_capacity(lines, 2 * lines),
            _ => Builder::with_capacity(0, lines),
        };
        let read = match format {
            LabelsFormat::Jsonl => read_jsonl(&text, &mut builder),
            LabelsFormat::Csv => read_csv(&text, &mut builder),
            LabelsFormat::Trec | LabelsFormat::Auto => read_qrels(&text, &mut builder),
        };
        if read.is_ok() && builder.queries.is_empty() {
            bail!("{}: no labeled query in the file", path.display());
        }
        let source = LabelsSource {
            path: path.to_path_buf(),
            bytes: raw.len() as u64,
            hash,
            format: format_name(format),
        };
        read.and_then(|()| builder.build(min_rel, source))
            .map_err(|(line, err)| anyhow!("{}:{line}: {err:#}", path.display()))
    }

    /// Build an index from in-memory labels: (query id, task, language, [(doc id, grade)]).
    /// Used by tests and benches.
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
            let query = builder
                .declare_unique(id, line)
                .map_err(|err| anyhow!("{line}: {err}"))?;
            builder
                .set_slices(query, task, language, false, line)
                .map_err(|err| anyhow!("{line}: {err}"))?;
            for (doc, grade) in docs {
                builder.judge(query, doc, grade, line);
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
            .map_err(|(line, err)| anyhow!("{line}: {err:#}"))
    }

    /// The labeled queries, sorted by id (byte order).
    pub fn queries(&self) -> &[LabeledQuery] {
        &self.queries
    }

    /// The query with this id, if labeled.
    pub fn find_query(&self, id: &[u8]) -> Option<QueryIdx> {
        let hash = id_hash(id);
        self.by_id
            .find(hash, |&q| self.queries[q as usize].id.as_bytes() == id)
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
            .position(|d| d.id.as_bytes() == doc)
            .map(|offset| range.start + (start + offset) as u32)
    }

    /// The grade of a judged document returned by [`Self::find_doc`].
    pub fn grade(&self, doc: u32) -> i64 {
        self.docs[doc as usize].grade
    }

    /// The id of a judged document returned by [`Self::find_doc`].
    pub fn doc_id(&self, doc: u32) -> &str {
        &self.docs[doc as usize].id
    }

    /// Global indices of `query`'s judged documents that count as relevant.
    pub fn relevant_docs(&self, query: QueryIdx) -> impl Iterator<Item = u32> + '_ {
        let range = self.queries[query as usize].docs.clone();
        range.filter(move |&d| self.docs[d as usize].grade >= self.min_rel)
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

fn detect_format(text: &[u8]) -> LabelsFormat {
    let first = text.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        return LabelsFormat::Jsonl;
    }
    let start = text
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    let first_line = text[start..].split(|&b| b == b'\n').next().unwrap_or(&[]);
    if first_line.contains(&b',') {
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

/// A labels parse error and the 1-based line it is about.
type LineError = (usize, anyhow::Error);

/// Labels as read, before indexing: flat lists, so that reading a large
/// key costs one allocation per id and nothing per query besides.
#[derive(Default)]
struct Builder {
    queries: Vec<RawQuery>,
    by_id: HashTable<u32>,
    docs: Vec<RawDoc>,
    slice_ids: HashMap<Box<str>, u32>,
    slice_names: Vec<Box<str>>,
}

struct RawQuery {
    id: Box<str>,
    line: usize,
    slices: Option<(u32, u32, usize)>,
    required: bool,
}

struct RawDoc {
    query: u32,
    id: Box<str>,
    grade: i64,
    line: usize,
}

impl Builder {
    fn with_capacity(queries: usize, docs: usize) -> Self {
        Builder {
            queries: Vec::with_capacity(queries),
            by_id: HashTable::with_capacity(queries),
            docs: Vec::with_capacity(docs),
            ..Builder::default()
        }
    }

    fn find(&self, id: &str, hash: u64) -> Option<usize> {
        let found = self
            .by_id
            .find(hash, |&q| *self.queries[q as usize].id == *id);
        found.map(|&q| q as usize)
    }

    /// Declare a query that must not have been declared before (JSONL).
    fn declare_unique(&mut self, id: &str, line: usize) -> Result<usize> {
        if let Some(q) = self.find(id, id_hash(id.as_bytes())) {
            bail!(
                "query_id '{id}' is labeled twice (first on line {})",
                self.queries[q].line
            );
        }
        Ok(self.declare(id, line))
    }

    /// The query with this id, declared on first sight (qrels and CSV).
    fn declare(&mut self, id: &str, line: usize) -> usize {
        let hash = id_hash(id.as_bytes());
        if let Some(q) = self.find(id, hash) {
            return q;
        }
        let index = self.queries.len();
        self.queries.push(RawQuery {
            id: id.into(),
            line,
            slices: None,
            required: false,
        });
        let queries = &self.queries;
        self.by_id.insert_unique(hash, index as u32, |&q| {
            id_hash(queries[q as usize].id.as_bytes())
        });
        index
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
                q.id,
                self.slice_names[slices.0 as usize],
                self.slice_names[slices.1 as usize],
                self.slice_names[t as usize],
                self.slice_names[l as usize],
            ),
            Some(_) => {}
        }
        Ok(())
    }

    fn judge(&mut self, query: usize, doc: &str, grade: i64, line: usize) {
        self.docs.push(RawDoc {
            query: query as u32,
            id: doc.into(),
            grade,
            line,
        });
    }

    /// Index the labels: queries in byte order of their ids, each query's
    /// judged documents sorted by hash.
    ///
    /// # Errors
    /// A (query, doc) pair judged twice, at the line of its second judgment.
    fn build(mut self, min_rel: i64, source: LabelsSource) -> Result<LabelIndex, LineError> {
        let none = self.intern(None);
        let mut order: Vec<u32> = (0..self.queries.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            self.queries[a as usize]
                .id
                .cmp(&self.queries[b as usize].id)
        });
        let mut position = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            position[old as usize] = new as u32;
        }
        let mut raw_docs = std::mem::take(&mut self.docs);
        raw_docs.sort_unstable_by(|a, b| {
            (position[a.query as usize], &a.id, a.line).cmp(&(
                position[b.query as usize],
                &b.id,
                b.line,
            ))
        });
        if let Some(pair) = raw_docs
            .windows(2)
            .find(|p| p[0].query == p[1].query && p[0].id == p[1].id)
        {
            let query = &self.queries[pair[1].query as usize].id;
            let message = anyhow!(
                "doc_id '{}' is judged twice for query_id '{query}' (first on line {})",
                pair[1].id,
                pair[0].line
            );
            return Err((pair[1].line, message));
        }

        let mut raw_queries: Vec<Option<RawQuery>> = self.queries.into_iter().map(Some).collect();
        let mut raw_docs = raw_docs.into_iter().peekable();
        let mut queries = Vec::with_capacity(order.len());
        let mut docs = Vec::with_capacity(raw_docs.len());
        let mut ideal_grades = Vec::with_capacity(raw_docs.len());
        let mut by_id = HashTable::with_capacity(order.len());
        for old in order {
            // Each query is taken once: `order` is a permutation.
            let Some(raw) = raw_queries[old as usize].take() else {
                continue;
            };
            let start = docs.len();
            while let Some(doc) = raw_docs.next_if(|d| d.query == old) {
                if doc.grade > 0 {
                    docs.push(JudgedDoc {
                        hash: id_hash(doc.id.as_bytes()),
                        grade: doc.grade,
                        id: doc.id,
                    });
                }
            }
            let judged = &mut docs[start..];
            judged.sort_unstable_by(|a, b| a.hash.cmp(&b.hash).then_with(|| a.id.cmp(&b.id)));
            let mut grades: Vec<i64> = judged.iter().map(|d| d.grade).collect();
            grades.sort_unstable_by(|a, b| b.cmp(a));
            let n_relevant = grades.iter().filter(|&&g| g >= min_rel).count() as u32;
            ideal_grades.extend(grades);
            let (task, language, _) = raw.slices.unwrap_or((none, none, raw.line));
            let hash = id_hash(raw.id.as_bytes());
            let index = queries.len() as QueryIdx;
            queries.push(LabeledQuery {
                id: raw.id,
                task,
                language,
                required: raw.required,
                docs: start as u32..docs.len() as u32,
                n_relevant,
            });
            by_id.insert_unique(hash, index, |&q: &QueryIdx| {
                id_hash(queries[q as usize].id.as_bytes())
            });
        }
        Ok(LabelIndex {
            queries,
            by_id,
            docs,
            ideal_grades,
            slice_names: self.slice_names,
            min_rel,
            source,
        })
    }
}

/// Lines of a text, numbered from 1, without their line ends.
fn numbered_lines(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    text.split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.strip_suffix(b"\r").unwrap_or(line)))
}

fn read_jsonl(text: &[u8], builder: &mut Builder) -> Result<(), LineError> {
    let mut scratch = Vec::new();
    for (line, bytes) in numbered_lines(text) {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        scratch.clear();
        scratch.extend_from_slice(bytes);
        let value = simd_json::to_borrowed_value(&mut scratch)
            .map_err(|err| (line, anyhow!("not valid JSON: {err}")))?;
        read_jsonl_record(&value, line, builder).map_err(|err| (line, err))?;
    }
    Ok(())
}

fn read_jsonl_record(value: &BorrowedValue, line: usize, builder: &mut Builder) -> Result<()> {
    if !value.is_object() {
        bail!("a label line must be a JSON object");
    }
    let id = match value.get("query_id") {
        Some(id) => {
            id_text(id).ok_or_else(|| anyhow!("query_id must be a string or an integer"))?
        }
        None => bail!("missing query_id"),
    };
    let query = builder.declare_unique(&id, line)?;
    let optional_text = |key: &str| -> Result<Option<&str>> {
        match value.get(key) {
            None => Ok(None),
            Some(v) if v.is_null() => Ok(None),
            Some(v) => v
                .as_str()
                .map(Some)
                .ok_or_else(|| anyhow!("{key} must be a string")),
        }
    };
    let required = match value.get("required") {
        None => false,
        Some(v) if v.is_null() => false,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| anyhow!("required must be true or false"))?,
    };
    builder.set_slices(
        query,
        optional_text("task")?,
        optional_text("language")?,
        required,
        line,
    )?;
    let relevant = value
        .get("relevant")
        .ok_or_else(|| anyhow!("missing relevant (use [] for a no-answer query)"))?;
    if let Some(ids) = relevant.as_array() {
        for doc in ids {
            let doc =
                id_text(doc).ok_or_else(|| anyhow!("relevant must hold doc ids (strings)"))?;
            builder.judge(query, &doc, 1, line);
        }
    } else if let Some(graded) = relevant.as_object() {
        for (doc, grade) in graded.iter() {
            let grade = grade
                .as_i64()
                .ok_or_else(|| anyhow!("the grade of '{doc}' must be an integer"))?;
            builder.judge(query, doc, grade, line);
        }
    } else {
        bail!("relevant must be an array of doc ids or an object of doc id to grade");
    }
    Ok(())
}

/// A query or doc id: a string, or an integer used as its decimal text.
fn id_text(value: &BorrowedValue) -> Option<String> {
    if let Some(text) = value.as_str() {
        return Some(text.to_string());
    }
    if value.is_i64() || value.is_u64() {
        return value
            .as_i64()
            .map(|n| n.to_string())
            .or_else(|| value.as_u64().map(|n| n.to_string()));
    }
    None
}

fn read_qrels(text: &[u8], builder: &mut Builder) -> Result<(), LineError> {
    for (line, bytes) in numbered_lines(text) {
        let fail = |err: anyhow::Error| (line, err);
        let text = std::str::from_utf8(bytes).map_err(|_| fail(anyhow!("not valid UTF-8")))?;
        let fields: Vec<&str> = text.split_ascii_whitespace().collect();
        match fields.as_slice() {
            [] => continue,
            [query, _iteration, doc, grade] => {
                let grade: i64 = grade
                    .parse()
                    .map_err(|_| fail(anyhow!("grade '{grade}' is not an integer")))?;
                let q = builder.declare(query, line);
                builder.judge(q, doc, grade, line);
            }
            _ => {
                return Err(fail(anyhow!(
                    "expected 4 fields 'query_id iteration doc_id grade', found {}",
                    fields.len()
                )))
            }
        }
    }
    Ok(())
}

fn read_csv(text: &[u8], builder: &mut Builder) -> Result<(), LineError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text);
    let headers = reader
        .headers()
        .map_err(|err| (1, anyhow!("cannot read the CSV header: {err}")))?
        .clone();
    let column = |name: &str| headers.iter().position(|h| h == name);
    let (Some(query_col), Some(doc_col)) = (column("query_id"), column("doc_id")) else {
        return Err((
            1,
            anyhow!(
                "the CSV header needs query_id and doc_id columns, found: {}",
                headers.iter().collect::<Vec<_>>().join(",")
            ),
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
            let line = err.position().map_or(0, |p| p.line() as usize);
            (line, anyhow!("bad CSV record: {err}"))
        })?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let fail = |err: anyhow::Error| (line, err);
        let field = |col: Option<usize>| col.and_then(|c| record.get(c)).filter(|v| !v.is_empty());
        let query = field(Some(query_col)).ok_or_else(|| fail(anyhow!("empty query_id")))?;
        let q = builder.declare(query, line);
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
            builder.judge(q, doc, grade, line);
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
        let ids: Vec<&str> = index.queries().iter().map(|q| &*q.id).collect();
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
