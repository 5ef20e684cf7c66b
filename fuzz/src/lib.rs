//! What rgrade's fuzz targets share: a scratch directory per process for
//! the readers that take a path, and grade outputs of the shipped samples
//! for the compare targets to read back.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rgrade::kernels::{
    pool, Block, BlockWorker, Chunk, JudgeConfig, LabelIndex, LogFields, SpanFields, TrecLines,
};
use rgrade::{
    Cutoff, DuplicateDocs, GradePlan, JoinBy, LabelsFormat, LogsFormat, RepeatPolicy, RunName,
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
        fields,
        stages: &[],
        duplicates,
        doc_collections: None,
        trec,
        run_name,
        file_runs,
        input_names,
        spans,
        pool_depth: None,
    };
    let chunk = Chunk::Lines(Block {
        input: 0,
        first_line: 1,
        bytes: bytes.to_vec(),
        format,
        // A run's first line may be its header.
        header_line: matches!(format, LogsFormat::Trec | LogsFormat::Msmarco).then_some(1),
        numbers: Vec::new(),
    });
    BlockWorker::new(&config).process(&chunk);
}

/// Load `data` as a labels file of `format`, as `rgrade grade --labels`
/// does (on a pool of one thread, made once).
pub fn load_labels(data: &[u8], format: LabelsFormat) {
    quiet_decoder_panics_once();
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    let pool = POOL.get_or_init(|| pool(NonZeroUsize::new(1)).expect("a thread pool"));
    let path = write_input("labels", data);
    let _ = LabelIndex::load(&path, format, 1, JoinBy::Id, pool);
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
