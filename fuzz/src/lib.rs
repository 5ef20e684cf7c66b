//! What rgrade's fuzz targets share: a scratch directory per process for
//! the readers that take a path, grade outputs of the shipped samples
//! for the compare targets to read back, and Arrow tables spelled from
//! fuzz input.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow_array::builder::{LargeListBuilder, ListBuilder, StringBuilder, StructBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int64Array, Int8Array, LargeStringArray,
    RecordBatch, StringArray, StringViewArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};

use rgrade::kernels::{
    id_hash, pool, Block, BlockWorker, Chunk, Header, JudgeConfig, LabelIndex, LogFields,
    RecordOptions, Reviewing, SpanFields, TrecLines,
};
use rgrade::{
    ArrowTable, Cutoff, DuplicateDocs, GradePlan, JoinBy, LabelsFormat, LogsFormat, RepeatPolicy,
    ReviewerPolicy, RunName, Tables,
};

/// This process's scratch directory, under `$TMPDIR` (fuzz/run.sh points
/// it at a directory in /dev/shm that it removes afterwards).
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("rgrade-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("cannot create the fuzz scratch directory");
        dir
    })
}

/// Write `data` to `name` in the scratch directory, the same path every
/// iteration, and return that path.
pub fn write_input(name: &str, data: &[u8]) -> PathBuf {
    let path = scratch().join(name);
    std::fs::write(&path, data).expect("cannot write the fuzz input");
    path
}

/// A file or directory of the repository's data-samples/.
pub fn sample(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data-samples")
        .join(path)
}

/// Grade sample logs against sample labels into `out` in the scratch
/// directory, as `rgrade grade --labels LABELS -k KS --repeats last -o OUT
/// LOGS` does, and return `out`'s path.
pub fn grade_sample(labels: &str, logs: &[&str], ks: &[Cutoff], out: &str) -> PathBuf {
    let out = scratch().join(out);
    let plan = GradePlan {
        ks: ks.to_vec(),
        repeats: RepeatPolicy::Last,
        out: Some(out.clone()),
        threads: NonZeroUsize::new(1),
        ..GradePlan::new(
            sample(labels),
            logs.iter().map(|logs| sample(logs)).collect(),
        )
    };
    rgrade::grade(&plan, &mut |_| {}).expect("the shipped samples grade");
    out
}

/// The answer key the log targets judge against: a few queries whose ids
/// (and their documents') fuzz/logs.dict holds, so that inputs reach the
/// paths of labeled captures.
pub fn small_labels() -> &'static LabelIndex {
    static LABELS: OnceLock<LabelIndex> = OnceLock::new();
    LABELS.get_or_init(|| {
        let queries = [
            ("q1", vec![("d1", 1), ("d2", 2), ("d3", 0)]),
            ("q2", vec![("d2", 1)]),
            ("7", vec![("d1", 3), ("8", 1)]),
        ];
        let queries = queries
            .into_iter()
            .map(|(query, docs)| (query, Some("howto"), Some("en"), docs));
        LabelIndex::from_queries(queries, 1).expect("the fuzz labels are valid")
    })
}

/// Judge `bytes` as one block of `format` lines of the input `run.txt`, as
/// a grading worker does; runs are named as `run_name` says.
pub fn judge(
    bytes: &[u8],
    format: LogsFormat,
    fields: &LogFields,
    spans: &SpanFields,
    duplicates: DuplicateDocs,
    trec: TrecLines,
    run_name: RunName,
) {
    static NAMES: OnceLock<([String; 1], [String; 1])> = OnceLock::new();
    let (file_runs, input_names) =
        NAMES.get_or_init(|| (["run".to_string()], ["run.txt".to_string()]));
    let config = JudgeConfig {
        labels: small_labels(),
        records: RecordOptions {
            fields,
            spans,
            run_name,
            file_runs,
            partitions: &[],
        },
        stages: &[],
        duplicates,
        doc_collections: None,
        trec,
        input_names,
        pool_depth: None,
        doc_of: None,
    };
    let chunk = Chunk::Lines(Block {
        input: 0,
        first_line: 1,
        bytes: bytes.to_vec(),
        format,
        // A run's first line may be its header; a CSV run's names its columns.
        header: matches!(
            format,
            LogsFormat::Trec | LogsFormat::Msmarco | LogsFormat::Csv
        )
        .then(|| Header {
            line: 1,
            text: String::from_utf8_lossy(bytes.split(|&b| b == b'\n').next().unwrap_or_default())
                .trim()
                .into(),
        }),
        numbers: Vec::new(),
    });
    BlockWorker::new(&config).process(&chunk);
}

/// Load `data` as a labels file of `format`, as `rgrade grade --labels`
/// does, and again as `--reviewers majority` does (on a pool of one
/// thread).
pub fn load_labels(data: &[u8], format: LabelsFormat) {
    quiet_decoder_panics_once();
    let path = write_input("labels", data);
    for reviewers in [None, Some(&ReviewerPolicy::Majority)] {
        let reviewing = Reviewing::by_reviewers(reviewers);
        let _ = LabelIndex::load(&path, format, 1, JoinBy::Id, reviewing, one_thread());
    }
}

/// Grade `data` as a Parquet log against the traces sample's labels, as
/// `rgrade grade --logs-format parquet` does with one thread; `join`
/// says how its rows name their queries.
pub fn grade_parquet(data: &[u8], join: JoinBy) {
    quiet_decoder_panics_once();
    let plan = GradePlan {
        logs_format: LogsFormat::Parquet,
        join,
        ks: vec![Cutoff::At(3)],
        repeats: RepeatPolicy::Last,
        duplicate_docs: DuplicateDocs::Dedupe,
        stage_order: vec!["retrieve".into(), "rerank".into()],
        threads: NonZeroUsize::new(1),
        ..GradePlan::new(
            sample("traces/labels.jsonl"),
            vec![write_input("logs.parquet", data)],
        )
    };
    // A file that is no Parquet, or a column of the wrong type, is an
    // error: all that matters is that it is not a panic.
    let _ = rgrade::grade(&plan, &mut |_| {});
}

/// As the binary does: a panic of the Parquet decoder that rgrade catches
/// and reports as a corrupt input is no crash; any other panic still
/// reaches libFuzzer's hook.
fn quiet_decoder_panics_once() {
    static QUIET: OnceLock<()> = OnceLock::new();
    QUIET.get_or_init(rgrade::quiet_decoder_panics);
}

/// The column names a spelled table draws from: the ones rgrade reads in
/// its wide, long and Phoenix span layouts and in labels, and one it
/// does not know.
const TABLE_COLUMNS: [&str; 17] = [
    "query_id",
    "results",
    "stage",
    "run",
    "latency_ms",
    "context_tokens",
    "answer_ok",
    "doc_id",
    "rank",
    "relevance",
    "span_kind",
    "attributes.retrieval.documents",
    "attributes.input.value",
    "parent_id",
    "context.span_id",
    "context.trace_id",
    "unknown",
];

/// Reads a table's spelling off fuzz input, a byte at a time; past the end,
/// every byte is 0.
struct Spelling<'a>(&'a [u8]);

impl Spelling<'_> {
    fn byte(&mut self) -> u8 {
        let (&first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        first
    }

    /// Whether the next cell is null (one time in five).
    fn null(&mut self) -> bool {
        self.byte().is_multiple_of(5)
    }

    /// A short text from a few ids the small labels know, or raw bytes.
    fn text(&mut self) -> String {
        const KNOWN: [&str; 7] = ["q1", "q2", "7", "d1", "d2", "RETRIEVER", "RERANKER"];
        match self.byte() {
            b @ 0..=191 => KNOWN[usize::from(b) % KNOWN.len()].to_string(),
            b => {
                let len = usize::from(b % 8);
                let bytes: Vec<u8> = (0..len).map(|_| self.byte()).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            }
        }
    }

    fn texts(&mut self, rows: usize) -> Vec<Option<String>> {
        (0..rows)
            .map(|_| (!self.null()).then(|| self.text()))
            .collect()
    }

    /// A list per row of up to four texts (a null list, or null items).
    fn lists(&mut self, rows: usize) -> Vec<Option<Vec<Option<String>>>> {
        (0..rows)
            .map(|_| {
                let len = usize::from(self.byte() % 5);
                (!self.null()).then(|| self.texts(len))
            })
            .collect()
    }
}

/// A table spelled by `data`: up to six columns named from the names
/// rgrade reads, each of a type pandas, polars or pyarrow makes (plain,
/// large, view and dictionary strings, integers of several widths, floats
/// with NaN, booleans, lists of strings or of document structs), with
/// nulls; `None` when no such table can be made of them.
pub fn spell_table(data: &[u8]) -> Option<ArrowTable> {
    let mut spelling = Spelling(data);
    let rows = usize::from(spelling.byte() % 9);
    let n_columns = 1 + usize::from(spelling.byte() % 6);
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for _ in 0..n_columns {
        let name = TABLE_COLUMNS[usize::from(spelling.byte()) % TABLE_COLUMNS.len()];
        let column = spell_column(&mut spelling, rows);
        fields.push(Field::new(name, column.data_type().clone(), true));
        columns.push(column);
    }
    let schema = Arc::new(Schema::new(fields));
    // Two columns of one name make no table a dataframe would hand over.
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).ok()?;
    ArrowTable::new("fuzz table", schema, vec![batch]).ok()
}

/// One column of `rows` cells, of a type the next byte picks.
fn spell_column(spelling: &mut Spelling, rows: usize) -> ArrayRef {
    let numbers = |spelling: &mut Spelling| -> Vec<Option<i64>> {
        (0..rows)
            .map(|_| (!spelling.null()).then(|| i64::from(spelling.byte() as i8)))
            .collect()
    };
    match spelling.byte() % 12 {
        0 => Arc::new(StringArray::from(spelling.texts(rows))),
        1 => Arc::new(LargeStringArray::from(spelling.texts(rows))),
        2 => Arc::new(StringViewArray::from(spelling.texts(rows))),
        3 => {
            let texts = spelling.texts(rows);
            Arc::new(
                texts
                    .iter()
                    .map(Option::as_deref)
                    .collect::<DictionaryArray<Int32Type>>(),
            )
        }
        4 => Arc::new(Int64Array::from(numbers(spelling))),
        5 => {
            let small = numbers(spelling).into_iter().map(|n| n.map(|n| n as i8));
            Arc::new(Int8Array::from(small.collect::<Vec<_>>()))
        }
        6 => {
            let unsigned = numbers(spelling).into_iter().map(|n| n.map(|n| n as u64));
            Arc::new(UInt64Array::from(unsigned.collect::<Vec<_>>()))
        }
        7 => {
            let floats = (0..rows).map(|_| match spelling.byte() {
                0 => None,
                1 => Some(f64::NAN),
                2 => Some(f64::INFINITY),
                b => Some(f64::from(b as i8) / 4.0),
            });
            Arc::new(Float64Array::from(floats.collect::<Vec<_>>()))
        }
        8 => {
            let flags = (0..rows).map(|_| (!spelling.null()).then(|| spelling.byte() % 2 == 1));
            Arc::new(BooleanArray::from(flags.collect::<Vec<_>>()))
        }
        9 => {
            let mut builder = ListBuilder::new(StringBuilder::new());
            for list in spelling.lists(rows) {
                match list {
                    Some(items) => {
                        for item in items {
                            builder.values().append_option(item);
                        }
                        builder.append(true);
                    }
                    None => builder.append(false),
                }
            }
            Arc::new(builder.finish())
        }
        10 => {
            let mut builder = LargeListBuilder::new(StringBuilder::new());
            for list in spelling.lists(rows) {
                builder.append_option(list);
            }
            Arc::new(builder.finish())
        }
        _ => {
            // Phoenix's documents: a list of structs holding `document.id`.
            let id = Field::new("document.id", DataType::Utf8, true);
            let mut builder = ListBuilder::new(StructBuilder::new(
                vec![id],
                vec![Box::new(StringBuilder::new())],
            ));
            for list in spelling.lists(rows) {
                match list {
                    Some(items) => {
                        for item in items {
                            let documents = builder.values();
                            documents
                                .field_builder::<StringBuilder>(0)
                                .expect("the id field")
                                .append_option(item);
                            documents.append(true);
                        }
                        builder.append(true);
                    }
                    None => builder.append(false),
                }
            }
            Arc::new(builder.finish())
        }
    }
}

/// Grade `table` as logs against the traces sample's labels (with
/// question texts, for `join`), then load it as labels, as the Python
/// package hands tables over, with one thread.
pub fn grade_table(table: &ArrowTable, join: JoinBy) {
    let plan = GradePlan {
        join,
        ks: vec![Cutoff::At(3)],
        repeats: RepeatPolicy::Last,
        duplicate_docs: DuplicateDocs::Dedupe,
        stage_order: vec!["retrieve".into(), "rerank".into()],
        threads: NonZeroUsize::new(1),
        tables: Tables {
            logs: vec![table.clone().into()],
            ..Tables::default()
        },
        ..GradePlan::new(sample("traces/labels.jsonl"), Vec::new())
    };
    // A table without the columns of a layout, or a column of the wrong
    // type, is an error: all that matters is that it is not a panic.
    let _ = rgrade::grade(&plan, &mut |_| {});
    let reviewing = Reviewing::by_reviewers(None);
    let _ = LabelIndex::load_table(table, 1, join, reviewing, one_thread());
}

/// Labels that fill every part of a compiled key: graded and listed
/// documents, a negative grade, tasks, languages, a split, a collection
/// version, a required query, reviewers, sources, a pool, question texts.
const KEY_LABELS: &str = concat!(
    r#"{"query_id":"q1","reviewer":"ana","source":"human","pooled_from":["bm25","dense"],"relevant":{"d1":1,"d2":2,"d3":0},"task":"howto","language":"en","split":"test","collection_version":"v2","query":"How?"}"#,
    "\n",
    r#"{"query_id":"q2","reviewer":"ben","source":"llm:judge","relevant":["d2"],"required":true,"query":"Why?"}"#,
    "\n",
    r#"{"query_id":"7","relevant":{"d1":3,"8":-1},"task":"billing","language":"de","query":"seven"}"#,
    "\n",
);

/// The compiled key of [`KEY_LABELS`], as `rgrade index --join text`
/// writes it, made once.
fn small_key() -> &'static [u8] {
    static KEY: OnceLock<Vec<u8>> = OnceLock::new();
    KEY.get_or_init(|| {
        let labels = write_input("key_labels.jsonl", KEY_LABELS.as_bytes());
        let reviewing = Reviewing::by_reviewers(None);
        let index = LabelIndex::load(
            &labels,
            LabelsFormat::Auto,
            1,
            JoinBy::Text,
            reviewing,
            one_thread(),
        )
        .expect("the key's labels are valid");
        let mut key = Vec::new();
        index
            .write_compiled(&mut key)
            .expect("a key is written to memory");
        key
    })
}

/// A pool of one thread, made once.
fn one_thread() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| pool(NonZeroUsize::new(1)).expect("a thread pool"))
}

/// The bytes of a compiled key's hash, which ends it.
const KEY_HASH_BYTES: usize = 16;

/// `bytes` with their last 16 bytes made the xxh3-128 of the rest, as a
/// key ends: past the hash check, the values' checks are what stands
/// between them and a lookup.
pub fn rehashed(bytes: &[u8]) -> Vec<u8> {
    let content = &bytes[..bytes.len().saturating_sub(KEY_HASH_BYTES)];
    let mut out = content.to_vec();
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(content).to_le_bytes());
    out
}

/// Read `data` as a compiled key, as `rgrade grade --labels KEY` does:
/// as it is, with its hash made to fit, and spliced into the small key
/// (its first two bytes say where, the third how many of the key's
/// bytes it replaces; the hash made to fit), each joined by id and by
/// text; every key read answers every lookup a grading makes.
pub fn read_key(data: &[u8]) {
    let key = small_key();
    let spliced = data.get(3..).map(|patch| {
        let at = usize::from(u16::from_le_bytes([data[0], data[1]])) % (key.len() + 1);
        let end = (at + usize::from(data[2])).min(key.len());
        rehashed(&[&key[..at], patch, &key[end..]].concat())
    });
    let files = [Some(data.to_vec()), Some(rehashed(data)), spliced];
    for bytes in files.into_iter().flatten() {
        let path = write_input("key.rgx", &bytes);
        for join in [JoinBy::Id, JoinBy::Text] {
            let reviewing = Reviewing::by_reviewers(None);
            // A key refused is an error: all that matters is no panic.
            if let Ok(index) =
                LabelIndex::load(&path, LabelsFormat::Auto, 1, join, reviewing, one_thread())
            {
                look_up(&index);
            }
        }
    }
}

/// Everything a grading asks of a key, of each query and each document
/// it judges, and of ids it does not hold.
fn look_up(index: &LabelIndex) {
    let _ = (
        index.collection_versions(),
        index.pooled_queries(),
        index.has_splits(),
    );
    let _ = (index.reviewers(), index.sources(), index.n_judged_docs());
    for (q, query) in (0..).zip(index.queries()) {
        let id = index.query_id(q);
        assert_eq!(
            index.find_query(id.as_bytes()),
            Some(q),
            "a key finds its own query"
        );
        let _ = index.find_captured(id);
        let _ = (
            index.slice_name(query.task),
            index.slice_name(query.language),
        );
        let _ = (
            index.split_of(q).map(|s| index.slice_name(s)),
            index.collection_version(q),
        );
        let _ = index.pool(q).map(Iterator::count);
        let _ = (
            index.judgments(q),
            index.judges_any(q),
            index.relevant_docs(q).count(),
        );
        let judged = index.every_judged_doc(q).map(|doc| index.doc_id(doc));
        for doc in judged.chain(["", "zz", "d1", "8"]) {
            if let Some(found) = index.find_doc(q, doc.as_bytes(), id_hash(doc.as_bytes())) {
                let _ = (index.grade(found), index.is_relevant(found));
            }
            let place = index.place_doc(q, doc.as_bytes());
            if place.judged() {
                let judged = index.doc_id(index.judged_at(q, place));
                assert_eq!(judged, doc, "a key places a judged id at itself");
            }
        }
    }
}
