//! The native half of the `rgrade` Python package: grade, grade a shard,
//! merge shards, compare two gradings, compare two answer keys and watch
//! a series of nightly gradings, writing the command line's files
//! into a directory while the GIL is released. Tables (pyarrow, pandas,
//! polars, anything with `__arrow_c_stream__`) cross through the Arrow C
//! stream interface, with arrow-rs' own `arrow-pyarrow` bridge: the crate
//! of the arrow version rgrade reads Parquet with, so no array is copied
//! or converted on the way. `rgrade/__init__.py` turns the files written
//! into pyarrow tables and dicts.
//!
//! The package's `rgrade` command is the binary's own command line: its
//! modules (`src/cli.rs`, `src/cmd/`) are compiled into this crate as they
//! are, so a pip install gives the same program without cargo.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_array::RecordBatchReader;
use arrow_pyarrow::FromPyArrow;
use arrow_pyarrow::ToPyArrow;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::PyTypeInfo;
use rgrade::Choice;

// The binary's command line, compiled here as it is (the crate root names
// them `crate::cli` and `crate::cmd`, as the binary's does).
#[path = "../../src/cli.rs"]
mod cli;
#[path = "../../src/cmd/mod.rs"]
mod cmd;

create_exception!(
    _rgrade,
    RgradeError,
    PyException,
    "rgrade could not grade: the message is the command line's."
);
create_exception!(
    _rgrade,
    UsageError,
    RgradeError,
    "An option of the call is not one rgrade takes."
);
create_exception!(
    _rgrade,
    LabelsError,
    RgradeError,
    "The answer key cannot be read, is invalid, or is refused by a check."
);
create_exception!(
    _rgrade,
    LogsError,
    RgradeError,
    "A log input (or a file read beside the logs) is missing, empty, corrupt or does not fit."
);
create_exception!(
    _rgrade,
    OutputError,
    RgradeError,
    "The output directory cannot be claimed or written."
);
create_exception!(
    _rgrade,
    ComparisonError,
    RgradeError,
    "Two gradings cannot be compared, the rules cannot be held, or nightly gradings cannot be watched as one series."
);
create_exception!(
    _rgrade,
    ShardError,
    RgradeError,
    "Partial gradings cannot be merged."
);

/// `value`, unless the `openmetrics=` export failed after every other
/// output was written: then that failure, which Python raises (the command
/// line says it on stderr and keeps the verdict's exit status).
fn exported<T>(failure: Option<rgrade::Error>, value: T) -> Result<T, rgrade::Error> {
    failure.map_or(Ok(value), Err)
}

/// A setting the library's messages name, as a Python caller gives it:
/// its keyword argument (`reviewers=`), with the value the message quotes
/// (`join="text"`, `baseline=1`); a shard's grading is `grade_shard()`.
/// Errors, warnings and the messages of tripped checks are all spelled
/// by it: no message's text is read again for the options it names.
fn keyword(setting: rgrade::Setting, value: Option<&str>) -> String {
    let name = setting.name();
    match value {
        _ if setting == rgrade::Setting::Partial => "grade_shard()".to_string(),
        None => format!("{name}="),
        Some(value) if value.parse::<f64>().is_ok() || value.starts_with('"') => {
            format!("{name}={value}")
        }
        Some(value) => format!("{name}=\"{value}\""),
    }
}

/// The exception for `err`, of the class its kind names, carrying the
/// library's message with its settings named as keyword arguments.
fn raised(err: rgrade::Error) -> PyErr {
    let message = err.spelled(keyword);
    match err.kind() {
        rgrade::ErrorKind::Usage => UsageError::new_err(message),
        rgrade::ErrorKind::Labels => LabelsError::new_err(message),
        rgrade::ErrorKind::Logs => LogsError::new_err(message),
        rgrade::ErrorKind::Output => OutputError::new_err(message),
        rgrade::ErrorKind::Comparison => ComparisonError::new_err(message),
        rgrade::ErrorKind::Shards => ShardError::new_err(message),
        _ => RgradeError::new_err(message),
    }
}

/// An option's value as the command line spells it (`fail`, `last`, ...).
fn choice<T: Choice>(name: &str, value: &str) -> PyResult<T> {
    T::from_name(value).map_err(|unknown| UsageError::new_err(format!("{name}={unknown}")))
}

/// The reviewers policy `value` names (`majority`, `any`, `all` or a
/// reviewer), if any.
fn reviewer_policy(name: &str, value: Option<&str>) -> PyResult<Option<rgrade::ReviewerPolicy>> {
    (value.map(str::parse).transpose())
        .map_err(|err: String| UsageError::new_err(format!("{name}: {err}")))
}

/// The table `object` exports through `__arrow_c_stream__`, named `name`;
/// a table that cannot be read raises `E`.
fn arrow_table<E: PyTypeInfo>(
    name: &str,
    object: &Bound<'_, PyAny>,
) -> PyResult<rgrade::ArrowTable> {
    let reader = RecordBatchStreamReader::from_pyarrow_bound(object)?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| PyErr::new::<E, _>(format!("{name}: cannot read the table: {err}")))?;
    rgrade::ArrowTable::new(name, schema, batches)
        .map_err(|err| PyErr::new::<E, _>(format!("{err:#}")))
}

/// `options`, `rgrade.grade`'s keyword arguments under the plan's field
/// names, read into the library's plan as the command line's are: an
/// option not given keeps its default. `unit`, which the plan does not
/// hold, comes apart: with the plan's `doc_of`, it makes the plan's
/// `doc_of`, as on the command line.
fn read_plan(options: &Bound<'_, PyDict>) -> PyResult<rgrade::GradePlan> {
    let options = options.copy()?;
    let unit = match options.get_item("unit")? {
        Some(unit) => {
            options.del_item("unit")?;
            read_option("unit", &unit)?
        }
        None => rgrade::Unit::Result,
    };
    let mut deserializer = pythonize::Depythonizer::from_object(options.as_any());
    let plan: rgrade::GradePlan =
        serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
            let option = err.path().iter().find_map(|segment| match segment {
                serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                _ => None,
            });
            let message = rgrade::spell_settings(&err.into_inner().to_string(), keyword);
            UsageError::new_err(match option {
                Some(option) => format!("{option}: {message}"),
                None => message.to_string(),
            })
        })?;
    let doc_of = rgrade::doc_of(unit, plan.doc_of.clone())
        .map_err(|err| UsageError::new_err(rgrade::spell_settings(&err, keyword)))?;
    Ok(rgrade::GradePlan { doc_of, ..plan })
}

/// The value of the keyword argument `name`.
fn read_option<T: serde::de::DeserializeOwned>(
    name: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<T> {
    pythonize::depythonize(value).map_err(|err| UsageError::new_err(format!("{name}: {err}")))
}

/// Log lines with the inputs they come from, as `rgrade.Lines` holds them.
type Lines<'py> = (Vec<String>, Bound<'py, PyAny>);

/// What a grading reads: the labels file or table, log files and tables,
/// and log lines handed over.
struct Sources {
    labels: PathBuf,
    labels_table: Option<rgrade::ArrowTable>,
    logs: Vec<PathBuf>,
    log_tables: Vec<rgrade::ArrowTable>,
    lines: Option<rgrade::LogLines>,
}

impl Sources {
    fn new(
        labels: PathBuf,
        labels_table: Option<&Bound<'_, PyAny>>,
        logs: Vec<PathBuf>,
        log_tables: &[(String, Bound<'_, PyAny>)],
        lines: Option<Lines<'_>>,
    ) -> PyResult<Self> {
        let name = labels.display().to_string();
        let lines = lines
            .map(|(inputs, table)| {
                let table = arrow_table::<LogsError>("log lines", &table)?;
                rgrade::LogLines::new(inputs, &table)
                    .map_err(|err| LogsError::new_err(format!("{err:#}")))
            })
            .transpose()?;
        Ok(Sources {
            labels_table: (labels_table.map(|t| arrow_table::<LabelsError>(&name, t)))
                .transpose()?,
            labels,
            logs,
            log_tables: (log_tables.iter())
                .map(|(name, table)| arrow_table::<LogsError>(name, table))
                .collect::<PyResult<_>>()?,
            lines,
        })
    }
}

/// Grade `logs`, `log_tables` and `lines` against `labels` (or
/// `labels_table`, which `labels` then names) into `out` with the plan's
/// `options`, or, for a `shard`, write a partial grading there. Returns
/// the warnings, each option named as its keyword, and per_query.csv's rows
/// as a pyarrow schema and record batches (none for a shard).
#[pyfunction]
#[pyo3(signature = (labels, labels_table, logs, log_tables, lines, out, options, command, shard))]
#[allow(clippy::too_many_arguments)]
fn grade(
    py: Python<'_>,
    labels: PathBuf,
    labels_table: Option<Bound<'_, PyAny>>,
    logs: Vec<PathBuf>,
    log_tables: Vec<(String, Bound<'_, PyAny>)>,
    lines: Option<Lines<'_>>,
    out: PathBuf,
    options: Bound<'_, PyDict>,
    command: Vec<String>,
    shard: bool,
) -> PyResult<(Vec<String>, Option<Py<PyAny>>)> {
    let plan = read_plan(&options)?;
    let sources = Sources::new(labels, labels_table.as_ref(), logs, &log_tables, lines)?;
    let plan = rgrade::GradePlan {
        labels: sources.labels,
        logs: sources.logs,
        out: Some(out),
        command,
        tables: rgrade::Tables {
            labels: sources.labels_table,
            logs: sources.log_tables,
            lines: sources.lines.map(std::sync::Arc::new),
        },
        keep_rows: !shard,
        ..plan
    };
    let graded = py.detach(|| {
        let mut warnings = Vec::new();
        let mut warn = |warning: rgrade::Warning| warnings.push(warning.spelled(keyword));
        let rows = if shard {
            rgrade::grade_partial(&plan, &mut warn).map(|_| None)
        } else {
            rgrade::grade(&plan, &mut warn)
                .and_then(|graded| exported(graded.openmetrics_failure, graded.per_query))
        };
        rows.map(|rows| (warnings, rows))
    });
    let (warnings, rows) = graded.map_err(raised)?;
    Ok((
        warnings,
        rows.map(|rows| rows_to_pyarrow(py, &rows)).transpose()?,
    ))
}

/// `as_of=`, read as `--as-of` reads it.
fn parse_as_of(text: Option<&str>) -> PyResult<Option<rgrade::Timestamp>> {
    (text.map(str::parse))
        .transpose()
        .map_err(|err: String| UsageError::new_err(format!("as_of: {err}")))
}

/// Merge the partial gradings `shards` into `out`; returns the warnings
/// and per_query.csv's rows as a pyarrow schema and record batches.
#[pyfunction]
#[pyo3(signature = (labels, labels_table, shards, out, threads=None, as_of=None, command=vec![]))]
#[allow(clippy::too_many_arguments)]
fn merge(
    py: Python<'_>,
    labels: PathBuf,
    labels_table: Option<Bound<'_, PyAny>>,
    shards: Vec<PathBuf>,
    out: PathBuf,
    threads: Option<usize>,
    as_of: Option<String>,
    command: Vec<String>,
) -> PyResult<(Vec<String>, Py<PyAny>)> {
    let name = labels.display().to_string();
    let plan = rgrade::MergePlan {
        labels_table: (labels_table.map(|t| arrow_table::<LabelsError>(&name, &t))).transpose()?,
        threads: threads.and_then(NonZeroUsize::new),
        command,
        as_of: parse_as_of(as_of.as_deref())?,
        keep_rows: true,
        ..rgrade::MergePlan::new(labels, shards, out)
    };
    let merged = py.detach(|| {
        let mut warnings = Vec::new();
        let mut warn = |warning: rgrade::Warning| warnings.push(warning.spelled(keyword));
        rgrade::merge(&plan, &mut warn).map(|graded| (warnings, graded.per_query))
    });
    let (warnings, rows) = merged.map_err(raised)?;
    let rows = rows.ok_or_else(|| RgradeError::new_err("the merged rows were not kept"))?;
    Ok((warnings, rows_to_pyarrow(py, &rows)?))
}

/// A table's schema and record batches as pyarrow's, through the Arrow C
/// data interface: no copy, no Python object per row.
fn rows_to_pyarrow(py: Python<'_>, table: &rgrade::ArrowTable) -> PyResult<Py<PyAny>> {
    let schema = table.schema().as_ref().to_pyarrow(py)?;
    let batches = table.batches().to_vec().to_pyarrow(py)?;
    Ok((schema, batches).into_pyobject(py)?.into_any().unbind())
}

/// Compare two grade outputs into `out`; returns whether every rule
/// passed (or none was given), and the warnings.
#[pyfunction]
#[pyo3(signature = (
    baseline, candidate, out, rules=None, baseline_run=None, candidate_run=None,
    metrics=vec![], permutations=10_000, seed=0, alpha=0.05, mde=None, threads=None,
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
    seed: u64,
    alpha: f64,
    mde: Option<f64>,
    threads: Option<usize>,
) -> PyResult<(bool, Vec<String>)> {
    if permutations == 0 {
        return Err(UsageError::new_err("permutations must be at least 1"));
    }
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(UsageError::new_err(format!(
            "alpha: expected a level between 0 and 1, got {alpha}"
        )));
    }
    if let Some(effect) = mde.filter(|&effect| !(effect > 0.0 && effect <= 1.0)) {
        return Err(UsageError::new_err(format!(
            "mde: expected a change of a metric's mean, above 0 and at most 1, got {effect}"
        )));
    }
    let plan = rgrade::ComparePlan {
        baseline_run,
        candidate_run,
        rules,
        out: Some(out),
        metrics,
        permutations,
        seed,
        alpha,
        mde,
        threads: threads.and_then(NonZeroUsize::new),
        ..rgrade::ComparePlan::new(baseline, candidate)
    };
    let compared = py.detach(|| {
        let mut warnings = Vec::new();
        rgrade::compare(&plan, &mut |warning| {
            warnings.push(warning.spelled(keyword))
        })
        .map(|compared| (compared.passed(), warnings))
    });
    compared.map_err(raised)
}

/// Compare the answer keys `key_a` and `key_b`, writing agreement.json,
/// agreement.csv and agreement_slices.csv into `out`, and with `logs`
/// the runs' means under both (graded at `k`, with `missing`, `repeats`
/// and `run_name` as `grade` takes them; each, when not given, as
/// `AgreeLogs::new` sets it, and refused without `logs`, as the command
/// line refuses them).
#[pyfunction]
#[pyo3(signature = (
    key_a, key_b, out, labels_format="auto".to_string(), min_rel=1, reviewers=None,
    reviewers_a=None, reviewers_b=None, logs=vec![],
    k=None, logs_format=None, missing=None, repeats=None, run_name=None, threads=None,
))]
#[allow(clippy::too_many_arguments)]
fn agree(
    py: Python<'_>,
    key_a: PathBuf,
    key_b: PathBuf,
    out: PathBuf,
    labels_format: String,
    min_rel: i64,
    reviewers: Option<String>,
    reviewers_a: Option<String>,
    reviewers_b: Option<String>,
    logs: Vec<PathBuf>,
    k: Option<Vec<String>>,
    logs_format: Option<String>,
    missing: Option<String>,
    repeats: Option<String>,
    run_name: Option<String>,
    threads: Option<usize>,
) -> PyResult<Vec<String>> {
    if min_rel < 1 {
        return Err(UsageError::new_err(format!(
            "min_rel: expected a grade of at least 1, got {min_rel}"
        )));
    }
    let for_logs = [
        ("k", k.is_some()),
        ("logs_format", logs_format.is_some()),
        ("missing", missing.is_some()),
        ("repeats", repeats.is_some()),
        ("run_name", run_name.is_some()),
    ];
    if let (true, Some((name, _))) = (logs.is_empty(), for_logs.iter().find(|(_, given)| *given)) {
        return Err(UsageError::new_err(format!(
            "{name}= says how the logs are graded, and no logs= were given: give logs= or \
             leave {name}= out"
        )));
    }
    let defaults = rgrade::AgreeLogs::new(logs);
    let graded = rgrade::AgreeLogs {
        logs_format: (logs_format.as_deref())
            .map_or(Ok(defaults.logs_format), |f| choice("logs_format", f))?,
        ks: match k {
            Some(k) => (k.iter())
                .map(|k| k.parse::<rgrade::Cutoff>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|err| UsageError::new_err(format!("k: {err}")))?,
            None => defaults.ks.clone(),
        },
        missing: (missing.as_deref()).map_or(Ok(defaults.missing), |m| choice("missing", m))?,
        repeats: (repeats.as_deref()).map_or(Ok(defaults.repeats), |r| choice("repeats", r))?,
        run_name: (run_name.as_deref()).map_or(Ok(defaults.run_name), |r| choice("run_name", r))?,
        ..defaults
    };
    let logs = (!graded.logs.is_empty()).then_some(graded);
    let both = reviewer_policy("reviewers", reviewers.as_deref())?;
    let one = [("reviewers_a", reviewers_a), ("reviewers_b", reviewers_b)];
    let mut each = [None, None];
    for (side, (name, policy)) in each.iter_mut().zip(one) {
        *side = match (reviewer_policy(name, policy.as_deref())?, &both) {
            (Some(_), Some(_)) => {
                return Err(UsageError::new_err(format!(
                    "{name}: give reviewers (both keys) or reviewers_a and reviewers_b, not both"
                )))
            }
            (policy, both) => policy.or_else(|| both.clone()),
        };
    }
    let plan = rgrade::AgreePlan {
        labels_format: choice("labels_format", &labels_format)?,
        min_rel,
        reviewers: each,
        out: Some(out),
        threads: threads.and_then(NonZeroUsize::new),
        logs,
        ..rgrade::AgreePlan::new(key_a, key_b)
    };
    py.detach(|| {
        let mut warnings = Vec::new();
        rgrade::agree(&plan, &mut |warning| {
            warnings.push(warning.spelled(keyword))
        })
        .map(|agreed| {
            // Nothing graded: the command line exits 1; Python warns, as
            // it warns of a grading's rejected records.
            warnings.extend((agreed.every_record_rejected.iter()).map(|why| why.spelled(keyword)));
            warnings
        })
    })
    .map_err(raised)
}

/// Watch the nightly gradings `nights` (grade output directories, in any
/// order), writing trend.csv, report.html and alarms.json into `out`;
/// returns whether any series alarmed, and the warnings.
#[pyfunction]
#[pyo3(signature = (
    nights, out, baseline=rgrade::DEFAULT_BASELINE_NIGHTS, alpha=0.05, metrics=vec![],
    allow_label_changes=false, openmetrics=None, threads=None, command=vec![],
))]
#[allow(clippy::too_many_arguments)]
fn trend(
    py: Python<'_>,
    nights: Vec<PathBuf>,
    out: PathBuf,
    baseline: usize,
    alpha: f64,
    metrics: Vec<String>,
    allow_label_changes: bool,
    openmetrics: Option<PathBuf>,
    threads: Option<usize>,
    command: Vec<String>,
) -> PyResult<(bool, Vec<String>)> {
    let plan = rgrade::TrendPlan {
        out: Some(out),
        baseline_nights: baseline,
        alpha,
        metrics,
        allow_label_changes,
        command,
        threads: threads.and_then(NonZeroUsize::new),
        openmetrics,
        ..rgrade::TrendPlan::new(nights)
    };
    py.detach(|| {
        let mut warnings = Vec::new();
        rgrade::trend(&plan, &mut |warning| {
            warnings.push(warning.spelled(keyword))
        })
        .and_then(|trended| {
            let alarmed = trended.alarmed();
            exported(trended.openmetrics_failure, alarmed)
        })
        .map(|alarmed| (alarmed, warnings))
    })
    .map_err(raised)
}

/// The options of `rgrade.compare` that have a default, as the library's
/// `ComparePlan::new` sets them.
#[pyfunction]
fn compare_defaults(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let plan = rgrade::ComparePlan::new(PathBuf::new(), PathBuf::new());
    let defaults = pyo3::types::PyDict::new(py);
    defaults.set_item("metrics", plan.metrics)?;
    defaults.set_item("permutations", plan.permutations)?;
    defaults.set_item("seed", plan.seed)?;
    defaults.set_item("alpha", plan.alpha)?;
    defaults.set_item("mde", plan.mde)?;
    Ok(defaults)
}

/// The options of `rgrade.agree` that have a default, as the library's
/// `AgreePlan::new` sets them (those of the logs: None, for `agree` to
/// take `AgreeLogs::new`'s).
#[pyfunction]
fn agree_defaults(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let plan = rgrade::AgreePlan::new(PathBuf::new(), PathBuf::new());
    let defaults = pyo3::types::PyDict::new(py);
    defaults.set_item("labels_format", plan.labels_format.name())?;
    defaults.set_item("min_rel", plan.min_rel)?;
    let [a, b] = plan.reviewers.map(|p| p.map(|p| p.to_string()));
    defaults.set_item("reviewers_a", a)?;
    defaults.set_item("reviewers_b", b)?;
    // The options of the logs default to None: given without logs, they
    // are refused, and with logs, `agree` takes AgreeLogs::new's.
    for name in ["k", "logs_format", "missing", "repeats", "run_name"] {
        defaults.set_item(name, None::<String>)?;
    }
    Ok(defaults)
}

/// The options of `rgrade.trend` that have a default, as the library's
/// `TrendPlan::new` sets them.
#[pyfunction]
fn trend_defaults(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let plan = rgrade::TrendPlan::new(Vec::new());
    let defaults = pyo3::types::PyDict::new(py);
    defaults.set_item("baseline", plan.baseline_nights)?;
    defaults.set_item("alpha", plan.alpha)?;
    defaults.set_item("metrics", plan.metrics)?;
    defaults.set_item("allow_label_changes", plan.allow_label_changes)?;
    defaults.set_item("openmetrics", plan.openmetrics)?;
    Ok(defaults)
}

/// Copy the complete result in `source` into `target`, as its run would
/// have written it there.
#[pyfunction]
fn copy_result(py: Python<'_>, source: PathBuf, target: PathBuf) -> PyResult<()> {
    py.detach(|| rgrade::copy_result(&source, &target))
        .map_err(raised)
}

/// The log files `paths` name, in the order `grade` reads them.
#[pyfunction]
fn log_files(paths: Vec<PathBuf>) -> PyResult<Vec<PathBuf>> {
    rgrade::log_files(&paths).map_err(raised)
}

/// The native module.
/// Run the `rgrade` command line `args` (the program's name first), as the
/// binary does, with the GIL released; returns its exit status.
#[pyfunction]
fn main(py: Python<'_>, args: Vec<std::ffi::OsString>) -> u8 {
    py.detach(|| cmd::main(args))
}

#[pymodule]
fn _rgrade(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RgradeError", py.get_type::<RgradeError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("LabelsError", py.get_type::<LabelsError>())?;
    m.add("LogsError", py.get_type::<LogsError>())?;
    m.add("OutputError", py.get_type::<OutputError>())?;
    m.add("ComparisonError", py.get_type::<ComparisonError>())?;
    m.add("ShardError", py.get_type::<ShardError>())?;
    m.add_function(wrap_pyfunction!(grade, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(agree, m)?)?;
    m.add_function(wrap_pyfunction!(trend, m)?)?;
    m.add_function(wrap_pyfunction!(log_files, m)?)?;
    m.add_function(wrap_pyfunction!(copy_result, m)?)?;
    m.add_function(wrap_pyfunction!(compare_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(agree_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(trend_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    Ok(())
}
