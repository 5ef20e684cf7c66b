//! The native half of the `rgrade` Python package: grade, grade a shard,
//! merge shards and compare two gradings, writing the command line's files
//! into a directory while the GIL is released. `rgrade/__init__.py` turns those files into
//! pyarrow tables and dicts.

use std::path::PathBuf;

use clap::ValueEnum;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    _rgrade,
    RgradeError,
    PyException,
    "rgrade could not grade: the message is the command line's."
);

/// An option's value as the command line spells it (`fail`, `last`, ...).
fn choice<T: ValueEnum>(name: &str, value: &str) -> PyResult<T> {
    T::from_str(value, false).map_err(|_| {
        let allowed: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| Some(v.to_possible_value()?.get_name().to_string()))
            .collect();
        RgradeError::new_err(format!(
            "{name}={value:?}: expected one of {}",
            allowed.join(", ")
        ))
    })
}

/// Grade `logs` against `labels` into `out` (or write a partial grading
/// there); returns the warnings, as the command line prints them.
#[pyfunction]
#[pyo3(signature = (
    labels, logs, out, k, partial=false, missing="fail", repeats="error",
    duplicate_docs="reject", min_rel=1, stages=vec![], stage_order=vec![],
    review_queue=false, pool_depth=None, collection_version=None, meta=vec![],
    threads=None, command=vec![],
))]
#[allow(clippy::too_many_arguments)]
fn grade(
    py: Python<'_>,
    labels: PathBuf,
    logs: Vec<PathBuf>,
    out: PathBuf,
    k: Vec<String>,
    partial: bool,
    missing: &str,
    repeats: &str,
    duplicate_docs: &str,
    min_rel: i64,
    stages: Vec<String>,
    stage_order: Vec<String>,
    review_queue: bool,
    pool_depth: Option<usize>,
    collection_version: Option<String>,
    meta: Vec<(String, String)>,
    threads: Option<usize>,
    command: Vec<String>,
) -> PyResult<Vec<String>> {
    let ks = k
        .iter()
        .map(|k| k.parse::<rgrade::Cutoff>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| RgradeError::new_err(format!("k: {err}")))?;
    let plan = rgrade::GradePlan {
        labels,
        labels_format: rgrade::LabelsFormat::Auto,
        min_rel,
        logs,
        logs_format: rgrade::LogsFormat::Auto,
        fields: rgrade::FieldNames::default(),
        join: rgrade::JoinBy::Id,
        span_stages: Vec::new(),
        ks,
        missing: choice("missing", missing)?,
        repeats: choice("repeats", repeats)?,
        duplicate_docs: choice("duplicate_docs", duplicate_docs)?,
        run_name: rgrade::RunName::Tag,
        stages,
        stage_order,
        doc_collections: None,
        corpus: None,
        collection_version,
        out: Some(out),
        review_queue,
        pool_depth: pool_depth.and_then(std::num::NonZeroUsize::new),
        meta,
        threads: threads.and_then(std::num::NonZeroUsize::new),
        progress: rgrade::ProgressWhen::Never,
        command,
    };
    let warnings = py.detach(|| {
        let mut warnings = Vec::new();
        let mut warn = |warning: rgrade::Warning| warnings.push(warning.to_string());
        let done = if partial {
            rgrade::grade_partial(&plan, &mut warn).map(drop)
        } else {
            rgrade::grade(&plan, &mut warn).map(drop)
        };
        done.map(|()| warnings).map_err(|err| format!("{err:#}"))
    });
    warnings.map_err(RgradeError::new_err)
}

/// Merge the partial gradings `shards` into `out`; returns the warnings.
#[pyfunction]
#[pyo3(signature = (labels, shards, out, threads=None, command=vec![]))]
fn merge(
    py: Python<'_>,
    labels: PathBuf,
    shards: Vec<PathBuf>,
    out: PathBuf,
    threads: Option<usize>,
    command: Vec<String>,
) -> PyResult<Vec<String>> {
    let plan = rgrade::MergePlan {
        labels,
        shards,
        out,
        threads: threads.and_then(std::num::NonZeroUsize::new),
        command,
    };
    let warnings = py.detach(|| {
        let mut warnings = Vec::new();
        let mut warn = |warning: rgrade::Warning| warnings.push(warning.to_string());
        rgrade::merge(&plan, &mut warn)
            .map(|_| warnings)
            .map_err(|err| format!("{err:#}"))
    });
    warnings.map_err(RgradeError::new_err)
}

/// Compare two grade outputs into `out`; returns whether every rule
/// passed (or none was given), and the warnings.
#[pyfunction]
#[pyo3(signature = (
    baseline, candidate, out, rules=None, baseline_run=None, candidate_run=None,
    metrics=vec![], permutations=10_000, bootstrap=1_000, seed=0, alpha=0.05, threads=None,
))]
#[allow(clippy::too_many_arguments)]
fn compare(
    py: Python<'_>,
    baseline: PathBuf,
    candidate: PathBuf,
    out: PathBuf,
    rules: Option<PathBuf>,
    baseline_run: Option<String>,
    candidate_run: Option<String>,
    metrics: Vec<String>,
    permutations: usize,
    bootstrap: usize,
    seed: u64,
    alpha: f64,
    threads: Option<usize>,
) -> PyResult<(bool, Vec<String>)> {
    if permutations == 0 || bootstrap == 0 {
        return Err(RgradeError::new_err(
            "permutations and bootstrap must be at least 1",
        ));
    }
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(RgradeError::new_err(format!(
            "alpha: expected a level between 0 and 1, got {alpha}"
        )));
    }
    let plan = rgrade::ComparePlan {
        baseline,
        candidate,
        baseline_run,
        candidate_run,
        rules,
        out: Some(out),
        metrics,
        permutations,
        bootstrap,
        seed,
        alpha,
        threads: threads.and_then(std::num::NonZeroUsize::new),
    };
    let compared = py.detach(|| {
        let mut warnings = Vec::new();
        rgrade::compare(&plan, &mut |warning| warnings.push(warning))
            .map(|compared| (compared.passed(), warnings))
            .map_err(|err| format!("{err:#}"))
    });
    compared.map_err(RgradeError::new_err)
}

/// The native module.
#[pymodule]
fn _rgrade(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("RgradeError", m.py().get_type::<RgradeError>())?;
    m.add_function(wrap_pyfunction!(grade, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    Ok(())
}
