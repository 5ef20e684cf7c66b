//! The answer key: read JSONL, TREC qrels, CSV, TSV (BEIR's qrels), JSON
//! dict (ranx's and pytrec_eval's qrels) or Parquet labels into a
//! compact index keyed by hashed ids (docs/reference.md, "Labels"), or read
//! that index back from a compiled key ([`compiled`], `rgrade index`).
//!
//! The index is what every worker consults for every captured result, so it
//! is built for lookups: one hash table from query id to query, and per
//! query a short run of judged documents sorted by hash. Ids are kept as
//! text too, back to back in one string, and every hash match is confirmed
//! on the text, so a hash collision can cost a comparison but never a wrong
//! grade. The file is read as a stream: a large key is never held twice.

mod blocks;
mod build;
mod columns;
pub(crate) mod compiled;
mod dict;
mod ids;
mod index;
mod jsonl;
mod parquet;
mod reviewers;
mod text;

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use hashbrown::HashTable;

use compiled::is_compiled;
pub use index::{id_hash, DocPlace, LabelIndex, LabeledQuery, LabelsSource, QueryIdx};

use crate::base::options::{JoinBy, LabelsFormat, Reviewing};
use crate::io::decompress::Source;
use crate::io::inputs::Input;
use crate::io::tables::ArrowTable;
use build::Builder;
use text::Separated;

impl LabelIndex {
    /// Read and index the labels file (plain, gzip or zstd), parsing JSONL
    /// labels and sorting the index on `pool`, or read the index back
    /// from a compiled key. Joined by text, each label's `query` text is
    /// indexed too.
    ///
    /// # Errors
    /// An unreadable file, a malformed line (named as `path:line`), the same
    /// query twice in JSONL or the same (query, doc) twice, or no query at
    /// all; joined by text, qrels (which hold no text), a label without a
    /// text, or two labels with the same text; a compiled key that is
    /// damaged, of another rgrade version, or without the texts to join by.
    pub fn load(
        path: &Path,
        format: LabelsFormat,
        min_rel: i64,
        join: JoinBy,
        reviewers: Reviewing<'_>,
        pool: &rayon::ThreadPool,
    ) -> Result<Self> {
        let input = Input::at(path)?;
        let name = input.name();
        let mut source =
            Source::open(&input).with_context(|| format!("{name}: cannot read labels"))?;
        let format = match format {
            LabelsFormat::Auto => detect_format(
                source
                    .fill_buf()
                    .with_context(|| format!("{name}: cannot read labels"))?,
            ),
            other => other,
        };
        if format == LabelsFormat::Compiled {
            return compiled::read(&input, min_rel, join, reviewers, pool)
                .with_context(|| name.clone());
        }
        // Reserved from the file size: untouched capacity costs no memory,
        // while growing a large vector copies it.
        let size = input.size().unwrap_or(0) as usize;
        let mut builder = Builder::default();
        builder.reserve(size);
        builder.keep_query_texts = join == JoinBy::Text;
        let textless = match format {
            LabelsFormat::Trec | LabelsFormat::Auto => Some("TREC qrels"),
            LabelsFormat::Json => Some("JSON dict labels"),
            _ => None,
        };
        if let (true, Some(textless)) = (builder.keep_query_texts, textless) {
            bail!(
                "{name}: {textless} hold no query text; {} needs JSONL labels with \
                 a 'query' field or CSV labels with a 'query' column",
                crate::base::failure::Setting::Join.given("text")
            );
        }
        if !matches!(format, LabelsFormat::Jsonl | LabelsFormat::Json) {
            // Qrels and CSV repeat a query's id on each of its lines: a
            // table finds the query again.
            builder.by_id = HashTable::with_capacity(size / 80);
        }
        let read = match format {
            LabelsFormat::Jsonl => {
                blocks::read_in_blocks(&mut source, &mut builder, pool, jsonl::parse_block)
            }
            LabelsFormat::Csv => text::read_separated(&mut source, &mut builder, Separated::CSV),
            LabelsFormat::Tsv => text::read_separated(&mut source, &mut builder, Separated::TSV),
            LabelsFormat::Json => dict::read_dict(&mut source, &mut builder),
            LabelsFormat::Parquet => parquet::read_parquet(&input, &mut builder),
            // (A compiled key was read above.)
            LabelsFormat::Trec | LabelsFormat::Auto | LabelsFormat::Compiled => {
                blocks::read_in_blocks(&mut source, &mut builder, pool, text::parse_qrels_block)
            }
        };
        if read.is_ok() && builder.queries.is_empty() {
            bail!("{name}: no labeled query in the file");
        }
        // The Parquet reader reads the file by itself: its hash, as the
        // others', is of every byte.
        let (bytes, hash) = match format {
            LabelsFormat::Parquet if read.is_ok() => source
                .digest_to_end()
                .with_context(|| format!("{name}: cannot read labels"))?,
            _ => source.digest(),
        };
        let source = LabelsSource {
            path: input.path(),
            bytes,
            hash,
            format: format_name(format),
            compiled: None,
        };
        read.and_then(|()| pool.install(|| build(builder, min_rel, reviewers, source)))
            .map_err(|(line, err)| match line {
                Some(line) => anyhow!("{name}:{line}: {err:#}"),
                None => anyhow!("{name}: {err:#}"),
            })
    }

    /// Index labels handed over as an Arrow table with the CSV labels'
    /// columns, as [`LabelIndex::load`] indexes a Parquet file (sorting on
    /// `pool`); the table's name stands for the path in messages and
    /// summary.json.
    ///
    /// # Errors
    /// As [`LabelIndex::load`], rows numbered from 1.
    pub fn load_table(
        table: &ArrowTable,
        min_rel: i64,
        join: JoinBy,
        reviewers: Reviewing<'_>,
        pool: &rayon::ThreadPool,
    ) -> Result<Self> {
        let name = table.name();
        let mut builder = Builder::default();
        builder.keep_query_texts = join == JoinBy::Text;
        builder.by_id = HashTable::with_capacity(table.rows() as usize);
        let read = parquet::read_table(table, &mut builder);
        if read.is_ok() && builder.queries.is_empty() {
            bail!("{name}: no labeled query in the table");
        }
        let source = LabelsSource {
            path: PathBuf::from(name),
            bytes: table.bytes(),
            hash: table.content_hash(),
            format: "arrow",
            compiled: None,
        };
        read.and_then(|()| pool.install(|| build(builder, min_rel, reviewers, source)))
            .map_err(|(line, err)| match line {
                Some(row) => anyhow!("{name}: row {row}: {err:#}"),
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
            let attributes = build::Attributes {
                task,
                language,
                ..Default::default()
            };
            builder
                .set_attributes(query, &attributes, line)
                .map_err(at_line)?;
            for (doc, grade) in docs {
                builder
                    .judge(query, doc, grade, build::NOT_NAMED, line)
                    .map_err(at_line)?;
            }
        }
        let source = LabelsSource {
            path: PathBuf::new(),
            bytes: 0,
            hash: String::new(),
            format: "memory",
            compiled: None,
        };
        builder
            .build(min_rel, None, source)
            .map_err(|(line, err)| anyhow!("{}: {err:#}", line.unwrap_or(0)))
    }
}

/// The index of the labels read into `builder`, the grades of pairs
/// several reviewers judged combined first, as `reviewing` says.
fn build(
    mut builder: Builder,
    min_rel: i64,
    reviewing: Reviewing<'_>,
    source: LabelsSource,
) -> Result<LabelIndex, build::LineError> {
    let reviewers = reviewers::combine(&mut builder, reviewing)?;
    builder.build(min_rel, reviewers, source)
}

/// A compiled key or Parquet by their first bytes; when the first non-blank
/// byte is `{`, a JSON dict if it opens one ([`opens_a_dict`]), else JSONL;
/// TSV when the first line is a tab-separated labels header (BEIR's
/// `query-id corpus-id score`), CSV when it holds a comma, TREC qrels
/// otherwise.
fn detect_format(head: &[u8]) -> LabelsFormat {
    if is_compiled(head) {
        return LabelsFormat::Compiled;
    }
    if head.starts_with(crate::io::parquet::MAGIC) {
        return LabelsFormat::Parquet;
    }
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let first_line = head[start..].split(|&b| b == b'\n').next().unwrap_or(&[]);
    if first_line.first() == Some(&b'{') {
        if opens_a_dict(&head[start..], first_line) {
            LabelsFormat::Json
        } else {
            LabelsFormat::Jsonl
        }
    } else if std::str::from_utf8(first_line).is_ok_and(|line| Separated::TSV.is_header(line)) {
        LabelsFormat::Tsv
    } else if first_line.contains(&b',') {
        LabelsFormat::Csv
    } else {
        LabelsFormat::Trec
    }
}

/// Whether `text`, from a `{` on whose line `first_line` is, opens a JSON
/// dict of labels: its first key's value is an object, and the line holds
/// no `"query_id"` key, which every JSONL label line holds (one whose
/// first key keeps an object would otherwise look the same).
fn opens_a_dict(text: &[u8], first_line: &[u8]) -> bool {
    let skip_blank = |at: usize| {
        (text.iter().skip(at))
            .position(|b| !b.is_ascii_whitespace())
            .map(|n| at + n)
    };
    let Some(key) = skip_blank(1).filter(|&at| text[at] == b'"') else {
        return false;
    };
    // The key's closing quote: the first not escaped.
    let mut at = key + 1;
    while at < text.len() && text[at] != b'"' {
        at += if text[at] == b'\\' { 2 } else { 1 };
    }
    let colon = skip_blank(at + 1).filter(|&at| text[at] == b':');
    let value = colon.and_then(|colon| skip_blank(colon + 1));
    let jsonl_key = first_line.windows(10).any(|w| w == b"\"query_id\"");
    value.is_some_and(|at| text[at] == b'{') && !jsonl_key
}

fn format_name(format: LabelsFormat) -> &'static str {
    match format {
        LabelsFormat::Jsonl => "jsonl",
        LabelsFormat::Json => "json",
        LabelsFormat::Csv => "csv",
        LabelsFormat::Tsv => "tsv",
        LabelsFormat::Parquet => "parquet",
        LabelsFormat::Trec | LabelsFormat::Auto | LabelsFormat::Compiled => "trec",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::options::ReviewerPolicy;
    use crate::base::slices::NO_SLICE;
    use crate::io::blocks::MAX_LINE;
    use proptest::prelude::*;

    fn load_text(text: &str, format: LabelsFormat) -> Result<LabelIndex> {
        load_reviewed(text, format, None)
    }

    fn load_reviewed(
        text: &str,
        format: LabelsFormat,
        reviewers: Option<&ReviewerPolicy>,
    ) -> Result<LabelIndex> {
        let dir = std::env::temp_dir().join(format!(
            "rgrade-labels-{}-{}",
            std::process::id(),
            xxhash_rust::xxh3::xxh3_64(text.as_bytes())
        ));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("labels");
        std::fs::write(&path, text)?;
        // Two workers: blocks are parsed out of order and joined in order.
        let pool = crate::io::workers::pool(std::num::NonZeroUsize::new(2))?;
        let reviewing = Reviewing::by_reviewers(reviewers);
        let index = LabelIndex::load(&path, format, 1, JoinBy::Id, reviewing, &pool);
        std::fs::remove_dir_all(&dir)?;
        index
    }

    #[test]
    fn the_content_hash_follows_the_judgments_not_the_file() {
        let hash = |text: &str| load_text(text, LabelsFormat::Auto).unwrap().content_hash();
        let jsonl = concat!(
            r#"{"query_id": "q2", "relevant": {"b": 1, "a": 2}, "task": "howto"}"#,
            "\n",
            r#"{"query_id": "q1", "relevant": ["x"]}"#,
            "\n",
        );
        let reordered = concat!(
            r#"{"query_id": "q1", "relevant": {"x": 1}}"#,
            "\n",
            r#"{"query_id": "q2", "task": "howto", "relevant": {"a": 2, "b": 1}}"#,
            "\n",
        );
        let csv = "query_id,doc_id,grade,task\nq2,a,2,howto\nq1,x,1,\nq2,b,1,howto\n";
        assert_eq!(hash(jsonl), hash(reordered));
        assert_eq!(hash(jsonl), hash(csv));
        let regraded = csv.replace("q2,b,1", "q2,b,2");
        let retasked = csv.replace("q1,x,1,", "q1,x,1,billing");
        let renamed = csv.replace("q2,a,2", "q2,ab,2");
        for other in [regraded, retasked, renamed] {
            assert_ne!(hash(jsonl), hash(&other), "{other}");
        }
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
        let c = index.find_doc(q2, b"c", id_hash(b"c")).unwrap();
        assert!(!index.is_relevant(c), "judged, with grade 0");
        let a = index.find_doc(q2, b"a", id_hash(b"a")).unwrap();
        assert_eq!((index.grade(a), index.doc_id(a)), (2, "a"));
        assert_eq!(index.judgments(q2).ideal_grades, [2, 1]);
        let seven = &index.queries()[index.find_query(b"7").unwrap() as usize];
        assert!(seven.required);
        assert_eq!(index.slice_name(seven.task), NO_SLICE);
        let q1 = index.find_query(b"q1").unwrap();
        assert_eq!(index.queries()[q1 as usize].n_relevant, 0);
        assert!(!index.judges_any(q1), "a no-answer query judges nothing");
        assert!(index.judges_any(q2), "c is judged, with grade 0");
        assert!(index.find_query(b"q3").is_none());
    }

    #[test]
    fn a_hash_match_is_confirmed_on_the_text() {
        let index = load_text("q 0 a 1\n", LabelsFormat::Trec).unwrap();
        let q = index.find_query(b"q").unwrap();
        // The right hash with the wrong text must not match.
        assert!(index.find_doc(q, b"b", id_hash(b"a")).is_none());
    }

    /// Documents judged 0 or below are judged, found by hash lookup and by
    /// place among the judged ids, but never relevant and never in the
    /// ideal ranking.
    #[test]
    fn documents_judged_zero_or_below_are_judged_but_never_relevant() {
        let index = load_text("q 0 b 0\nq 0 a 1\nq 0 d -1\nq 0 c 3\n", LabelsFormat::Trec).unwrap();
        let q = index.find_query(b"q").unwrap();
        let find = |doc: &str| index.find_doc(q, doc.as_bytes(), id_hash(doc.as_bytes()));
        for doc in ["a", "b", "c", "d"] {
            let found = find(doc).unwrap_or_else(|| panic!("{doc} is judged"));
            assert_eq!(index.doc_id(found), doc);
            assert_eq!(index.is_relevant(found), ["a", "c"].contains(&doc), "{doc}");
        }
        assert!(find("x").is_none());
        let positive: Vec<&str> = index.judged_docs(q).map(|d| index.doc_id(d)).collect();
        assert_eq!(positive.len(), 2);
        assert_eq!(index.judgments(q).ideal_grades, [3, 1]);
        // Every judged id has its place: d is the fourth in byte order.
        let place = index.place_doc(q, b"d");
        assert!(place.judged());
        assert_eq!(place.below(), 3);
        let d = index.judged_at(q, place);
        assert_eq!((index.doc_id(d), index.is_relevant(d)), ("d", false));
    }

    /// The same judgments in every text format, found by their shape,
    /// grades written as floats included.
    #[test]
    fn qrels_csv_tsv_and_json_dicts_agree() {
        let formats = [
            ("q1 0 a 1\nq1 0 b 0\nq2 0 c 3\n", "trec"),
            ("query_id,doc_id,grade\nq1,a,1.\nq1,b,0\nq2,c,3.0\n", "csv"),
            (
                "query-id\tcorpus-id\tscore\nq1\ta\t1\nq1\tb\t0\nq2\tc\t3e0\n",
                "tsv",
            ),
            (r#"{"q1": {"a": 1, "b": 0.0}, "q2": {"c": 3}}"#, "json"),
            (
                "{\n  \"q1\": {\n    \"a\": 1,\n    \"b\": 0\n  },\n  \"q2\": {\"c\": 3}\n}\n",
                "json",
            ),
        ];
        for (text, format) in formats {
            let index = load_text(text, LabelsFormat::Auto).unwrap();
            assert_eq!(index.source.format, format, "{text:?}");
            assert_eq!(index.queries().len(), 2, "{text:?}");
            let q1 = index.find_query(b"q1").unwrap();
            assert_eq!(index.judgments(q1).ideal_grades, [1], "{text:?}");
            let b = index.find_doc(q1, b"b", id_hash(b"b")).unwrap();
            assert!(!index.is_relevant(b), "judged, with grade 0");
            let q2 = index.find_query(b"q2").unwrap();
            assert_eq!(index.judgments(q2).ideal_grades, [3], "{text:?}");
        }
    }

    /// A JSON line is JSONL unless it opens a dict: its first key keeping
    /// an object, and no query_id on the line; a tab-separated line is TSV
    /// only when it is a labels header.
    #[test]
    fn json_dicts_and_tsv_are_told_from_jsonl_and_qrels() {
        for (head, want) in [
            (&br#"{"q1": {"d1": 1}}"#[..], LabelsFormat::Json),
            (b"\n  {\n\"q1\":\n{", LabelsFormat::Json),
            (br#"{"q\"1": {"d1": 1}}"#, LabelsFormat::Json),
            (
                br#"{"query_id": "q1", "relevant": {"d1": 1}}"#,
                LabelsFormat::Jsonl,
            ),
            (
                br#"{"relevant": {"d1": 1}, "query_id": "q1"}"#,
                LabelsFormat::Jsonl,
            ),
            (br#"{"q1": ["d1"]}"#, LabelsFormat::Jsonl),
            (b"{}", LabelsFormat::Jsonl),
            (
                b"query-id\tcorpus-id\tscore\nq1\td1\t1\n",
                LabelsFormat::Tsv,
            ),
            (b"q1\t0\td1\t1\n", LabelsFormat::Trec),
            (b"query_id,doc_id\n", LabelsFormat::Csv),
        ] {
            assert_eq!(
                detect_format(head),
                want,
                "{}",
                String::from_utf8_lossy(head)
            );
        }
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("{\"query_id\": \"a\", \"relevant\": []}\n{\"query_id\": \"a\", \"relevant\": []}\n", ":2: query_id 'a' is labeled twice (first on line 1)"),
            ("{\"query_id\": \"a\"}\n", ":1: missing relevant"),
            ("{\"relevant\": []}\n", ":1: missing query_id"),
            ("{\"query_id\": \"a\", \"relevant\": [\"d\", \"d\"]}\n", ":1: doc_id 'd' is judged twice"),
            ("{\"query_id\": \"a\", \"relevant\": {\"d\": \"high\"}}\n", ":1: the grade of 'd' is not a whole number"),
            ("{\"query_id\": \"a\", \"relevant\": {\"d\": 0.5}}\n", ":1: the grade of 'd' is not a whole number"),
            ("{\"query_id\": \"a\", \"relevant\": []}\n{oops\n", ":2: not valid JSON"),
            ("q1 0 a 1\nq1 0 a\n", ":2: expected 4 fields"),
            ("q1 0 a x\n", ":1: grade 'x' is not a whole number"),
            ("q1 0 a 0.5\n", ":1: grade '0.5' is not a whole number"),
            ("q1 0 a 1e30\n", ":1: grade '1e30' is out of range"),
            ("query_id,doc_id,relevance\nq,a,1.5\n", ":2: relevance '1.5' is not a whole number"),
            ("query-id\tcorpus-id\tscore\nq\ta\t0.5\n", ":2: score '0.5' is not a whole number"),
            ("query-id\tcorpus-id\nq\ta\tb\n", ":2: bad TSV record"),
            ("{\n\"q\": {\n\"a\": 1,\n\"b\": 0.5}}\n", ":4: the grade of 'b' (0.5) is not a whole number"),
            ("{\"q\": {\"a\": 1}, \"r\": [\"a\"]}", ":1: invalid type: sequence, expected an object of doc id to grade for query 'r' (column 22)"),
            ("{\"q\": {\"a\": \"high\"}}", ":1: invalid type: string \"high\", expected a whole-number grade for doc 'a'"),
            ("{\"q\": {\"a\": 1}}\n{\"r\": {\"a\": 1}}\n", ":2: more after the JSON object (column 1)"),
            ("{\"q\": {\"a\": 1}\n", ":2: EOF while parsing an object"),
            ("{\n\"q\": {\"a\": 1},\n\"q\": {}\n}", ":3: query_id 'q' is labeled twice (first on line 2)"),
            ("{\"q\": {\"a\": 1, \"a\": 2}}", ":1: doc_id 'a' is judged twice for query_id 'q'"),
            ("q1 0 a 1\nq1 0 a 2\n", ":2: doc_id 'a' is judged twice for query_id 'q1' (first on line 1)"),
            ("query,doc\nq,a\n", ":1: the CSV header: unknown labels column 'doc'"),
            ("query_id,task\nq,a\n", ":1: the CSV header needs query_id (or q_id, query-id) and doc_id (or corpus-id)"),
            ("query_id,doc_id,doc_id\nq,a,b\n", ":1: the CSV header: column 'doc_id' is named twice"),
            ("query_id,doc_id,task\nq,a,x\nq,b,y\n", ":3: query_id 'q' has task 'y' here but 'x' on line 2"),
            ("{\"query_id\": \"a\", \"reviewer\": \"x\", \"relevant\": []}\n{\"query_id\": \"a\", \"reviewer\": \"x\", \"relevant\": []}\n", ":2: query_id 'a' is labeled twice by reviewer 'x' (first on line 1)"),
            ("{\"query_id\": \"a\", \"reviewer\": \"x\", \"relevant\": [], \"task\": \"t\"}\n{\"query_id\": \"a\", \"reviewer\": \"y\", \"relevant\": []}\n", ":2: query_id 'a' has task '(none)' here but 't' on line 1"),
            ("query_id,doc_id,reviewer\nq,a,x\nq,a,x\n", ":3: doc_id 'a' is judged twice for query_id 'q' by reviewer 'x' (first on line 2)"),
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
        // More blocks than the workers hold at once.
        assert!(text.len() > 8 * crate::io::blocks::BLOCK_SIZE);
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
        for length in [MAX_LINE + 1, MAX_LINE + 3 * crate::io::blocks::BLOCK_SIZE] {
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

    /// Qrels of `n` queries in many blocks, each query's three lines far
    /// apart (its first two near the start, the third near the end), so
    /// that its judgments come from several blocks.
    fn scattered_qrels(n: usize) -> Vec<String> {
        let pad = "x".repeat(60);
        let mut lines: Vec<String> = (0..n)
            .flat_map(|i| {
                [
                    format!("q{i} 0 kb/{pad}/{i}/a 2"),
                    format!("q{i} 0 kb/{i}/b 0"),
                ]
            })
            .collect();
        lines.extend((0..n).rev().map(|i| format!("q{i}\t0\tkb/{i}/c\t1")));
        lines
    }

    #[test]
    fn qrels_read_in_many_blocks_join_each_query_across_them() {
        let n = 100_000;
        let lines = scattered_qrels(n);
        let text = lines.join("\n") + "\n";
        assert!(text.len() > 8 * crate::io::blocks::BLOCK_SIZE);
        let index = load_text(&text, LabelsFormat::Trec).unwrap();
        assert_eq!(index.queries().len(), n);
        for i in [0, 1, 7_001, n / 2, n - 1] {
            let q = index.find_query(format!("q{i}").as_bytes()).unwrap();
            assert_eq!(index.judgments(q).ideal_grades, [2, 1]);
            for (doc, grade) in [
                (format!("kb/{}/{i}/a", "x".repeat(60)), 2),
                (format!("kb/{i}/b"), 0),
                (format!("kb/{i}/c"), 1),
            ] {
                let found = index.find_doc(q, doc.as_bytes(), id_hash(doc.as_bytes()));
                assert_eq!(found.map(|d| index.grade(d)), Some(grade), "{doc}");
            }
        }

        // A judgment repeated blocks later names its second line.
        let mut repeated = lines.clone();
        repeated.push("q5 0 kb/5/b 1".to_string());
        let err = load_text(&(repeated.join("\n") + "\n"), LabelsFormat::Trec).unwrap_err();
        let want = format!(
            ":{}: doc_id 'kb/5/b' is judged twice for query_id 'q5' (first on line 12)",
            3 * n + 1
        );
        assert!(format!("{err:#}").contains(&want), "{err:#}");

        // The first bad line is the one named, whichever block it is in.
        let mut broken = lines;
        broken[2 * n + 5] = "q1 0 kb/1/d".to_string();
        broken[3 * n - 3] = "q1 0 kb/1/e x".to_string();
        let err = load_text(&(broken.join("\n") + "\n"), LabelsFormat::Trec).unwrap_err();
        let want = format!(
            ":{}: expected 4 fields 'query_id iteration doc_id grade', found 3",
            2 * n + 6
        );
        assert!(format!("{err:#}").contains(&want), "{err:#}");
    }

    /// One reviewer's label of one query: (query, reviewer, [(doc, grade)]).
    type ReviewedLabel = (String, String, Vec<(String, i64)>);

    /// A key of 60 queries judged by four reviewers, each labeling a
    /// random share of the queries and grading a random share of each
    /// query's documents.
    fn reviewed_key() -> Vec<ReviewedLabel> {
        let mut next = build::tests::seeded(11);
        let mut key = Vec::new();
        for q in 0..60 {
            for reviewer in ["ann", "bo", "cy", "di"] {
                if next(3) == 0 {
                    continue;
                }
                let mut docs = Vec::new();
                for d in 0..6 {
                    if next(2) == 0 {
                        docs.push((format!("d{d}"), next(4) as i64));
                    }
                }
                key.push((format!("q{q}"), reviewer.to_string(), docs));
            }
        }
        key
    }

    /// The grade a pair counts under `policy`, the naive way: every
    /// grade's votes counted in a map.
    fn naive_grade(policy: &ReviewerPolicy, votes: &[(&str, i64)]) -> Option<i64> {
        let grades = votes.iter().map(|v| v.1);
        match policy {
            ReviewerPolicy::Any => grades.max(),
            ReviewerPolicy::All => grades.min(),
            ReviewerPolicy::Majority => {
                let mut counts = std::collections::BTreeMap::new();
                for grade in grades {
                    *counts.entry(grade).or_insert(0) += 1;
                }
                let most = *counts.values().max()?;
                counts.into_iter().find(|&(_, c)| c == most).map(|(g, _)| g)
            }
            ReviewerPolicy::Only(name) => votes.iter().find(|v| v.0 == name).map(|v| v.1),
        }
    }

    #[test]
    fn several_reviewers_combine_as_a_naive_count_says_in_every_format() {
        let key = reviewed_key();
        let jsonl: String = (key.iter())
            .map(|(q, r, docs)| {
                let graded: Vec<String> =
                    docs.iter().map(|(d, g)| format!("\"{d}\": {g}")).collect();
                format!(
                    "{{\"query_id\": \"{q}\", \"reviewer\": \"{r}\", \"relevant\": {{{}}}}}\n",
                    graded.join(", ")
                )
            })
            .collect();
        let mut csv = "query_id,doc_id,grade,reviewer\n".to_string();
        for (q, r, docs) in &key {
            if docs.is_empty() {
                csv.push_str(&format!("{q},,,{r}\n"));
            }
            for (d, g) in docs {
                csv.push_str(&format!("{q},{d},{g},{r}\n"));
            }
        }
        let mut votes: std::collections::BTreeMap<(&str, &str), Vec<(&str, i64)>> =
            std::collections::BTreeMap::new();
        for (q, r, docs) in &key {
            for (d, g) in docs {
                votes.entry((q, d)).or_default().push((r, *g));
            }
        }
        let policies = ["majority", "any", "all", "bo"].map(|p| p.parse().unwrap());
        for policy in &policies {
            for (text, format) in [(&jsonl, LabelsFormat::Jsonl), (&csv, LabelsFormat::Csv)] {
                let index = load_reviewed(text, format, Some(policy)).unwrap();
                let mut want_queries: Vec<&str> = (key.iter())
                    .filter(|(_, r, _)| !matches!(policy, ReviewerPolicy::Only(n) if n != r))
                    .map(|(q, _, _)| q.as_str())
                    .collect();
                want_queries.sort_unstable();
                want_queries.dedup();
                let queries: Vec<&str> = (0..index.queries().len() as QueryIdx)
                    .map(|q| index.query_id(q))
                    .collect();
                assert_eq!(queries, want_queries, "{policy} {format:?}");
                for ((q, d), given) in &votes {
                    let grade = naive_grade(policy, given);
                    let found = (index.find_query(q.as_bytes()))
                        .and_then(|q| index.find_doc(q, d.as_bytes(), id_hash(d.as_bytes())));
                    assert_eq!(found.map(|f| index.grade(f)), grade, "{policy} {q} {d}");
                }
                let summary = index.reviewers().unwrap().summary(1);
                let several: Vec<&Vec<(&str, i64)>> =
                    votes.values().filter(|v| v.len() > 1).collect();
                assert_eq!(summary.pairs_judged_by_several, several.len() as u64);
                let disputed = several.iter().filter(|v| v.iter().any(|x| x.1 != v[0].1));
                assert_eq!(summary.pairs_disputed, disputed.count() as u64);
                for reviewer in &summary.reviewers {
                    let theirs = key.iter().filter(|(_, r, _)| *r == reviewer.name);
                    let pairs: usize = theirs.clone().map(|(_, _, docs)| docs.len()).sum();
                    assert_eq!(
                        (reviewer.queries, reviewer.pairs),
                        (theirs.count() as u64, pairs as u64)
                    );
                }
                assert_eq!(summary.reviewers.len(), 4);
            }
        }
        let err = load_reviewed(&jsonl, LabelsFormat::Jsonl, None).unwrap_err();
        assert!(
            format!("{err:#}").contains(&format!(
                "say whose grade counts with {}",
                crate::base::failure::Setting::Reviewers.given("majority")
            )),
            "{err:#}"
        );
    }

    #[test]
    fn a_querys_pool_is_every_run_its_lines_name() {
        let text = concat!(
            r#"{"query_id": "q1", "reviewer": "a", "relevant": ["x"], "pooled_from": ["dense"]}"#,
            "\n",
            r#"{"query_id": "q2", "relevant": []}"#,
            "\n",
            r#"{"query_id": "q1", "reviewer": "b", "relevant": ["y"], "pooled_from": ["bm25", "dense"]}"#,
            "\n",
        );
        let index = load_text(text, LabelsFormat::Jsonl).unwrap();
        let pool = |q: &str| {
            let q = index.find_query(q.as_bytes()).unwrap();
            index.pool(q).map(|runs| runs.collect::<Vec<_>>())
        };
        assert_eq!(pool("q1"), Some(vec!["bm25", "dense"]));
        assert_eq!(pool("q2"), None);
        assert_eq!(index.pooled_queries(), 1);
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
