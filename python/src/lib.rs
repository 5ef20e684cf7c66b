//! The native half of the `rgrade` Python package: grade, grade a shard,
//! merge shards, compare two gradings, compare two answer keys and watch
//! a series of nightly gradings, writing the command line's files
//! into a directory while the GIL is released. Tables (pyarrow, pandas,
//! polars, anything with `__arrow_c_stream__`) cross through the Arrow C
//! stream interface, with arrow-rs' own `arrow-pyarrow` bridge: the crate
//! of the arrow version rgrade reads Parquet with, so no array is copied
//! or converted on the way. A log stream (a reader, a dataset's scan) is
//! read batch by batch by the grading's reader thread, with the GIL
//! released: pyarrow takes it back itself for a reader that calls into
//! Python. `rgrade/__init__.py` turns the files written into pyarrow
//! tables and dicts.
//!
//! The package's `rgrade` command is the binary's own command line: its
//! modules (`src/cli.rs`, `src/cmd/`) are compiled into this crate as they
//! are, so a pip install gives the same program without cargo.

use std::ffi::OsString;
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
/// names, read into the library's plan as [`read_plan`] reads them.
/// `unit`, which the plan does not hold, comes apart: with the plan's
/// `doc_of`, it makes the plan's `doc_of`, as on the command line.
fn read_grade_plan(options: &Bound<'_, PyDict>) -> PyResult<rgrade::GradePlan> {
    let options = options.copy()?;
    let unit = match options.get_item("unit")? {
        Some(unit) => {
            options.del_item("unit")?;
            read_option("unit", &unit)?
        }
        None => rgrade::Unit::Result,
    };
    let plan: rgrade::GradePlan = read_plan(&options)?;
    let doc_of = rgrade::doc_of(unit, plan.doc_of.clone())
        .map_err(|err| UsageError::new_err(rgrade::spell_settings(&err, keyword)))?;
    Ok(rgrade::GradePlan { doc_of, ..plan })
}

/// `options`, a function's keyword arguments under the plan's field
/// names, read into the library's plan `P` as the command line's are: an
/// option not given keeps the plan's default, a name that is no option
/// and a value of the wrong type raise a [`UsageError`] naming the
/// keyword.
fn read_plan<P: serde::de::DeserializeOwned>(options: &Bound<'_, PyDict>) -> PyResult<P> {
    let mut deserializer = pythonize::Depythonizer::from_object(options.as_any());
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
    })
}

/// The value of the keyword argument `name`.
fn read_option<T: serde::de::DeserializeOwned>(
    name: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<T> {
    pythonize::depythonize(value).map_err(|err| UsageError::new_err(format!("{name}: {err}")))
}

/// The search events `object` exports through `__arrow_c_stream__`, named
/// `name`: a stream, read batch by batch as it is graded, when `streamed`;
/// else a table, read whole now.
fn log_table(name: &str, object: &Bound<'_, PyAny>, streamed: bool) -> PyResult<rgrade::LogTable> {
    if !streamed {
        return Ok(arrow_table::<LogsError>(name, object)?.into());
    }
    let reader = RecordBatchStreamReader::from_pyarrow_bound(object)?;
    Ok(rgrade::ArrowStream::new(name, reader).into())
}

/// A log table as `rgrade/__init__.py` hands it over: its name, the object
/// and whether it is a stream.
type LogTableArg<'py> = (String, Bound<'py, PyAny>, bool);

/// Log lines with the inputs they come from, as `rgrade.Lines` holds them.
type Lines<'py> = (Vec<String>, Bound<'py, PyAny>);

/// What a grading reads: the labels file or table, log files and tables,
/// and log lines handed over.
struct Sources {
    labels: PathBuf,
    labels_table: Option<rgrade::ArrowTable>,
    logs: Vec<PathBuf>,
    log_tables: Vec<rgrade::LogTable>,
    lines: Option<rgrade::LogLines>,
}

impl Sources {
    fn new(
        labels: PathBuf,
        labels_table: Option<&Bound<'_, PyAny>>,
        logs: Vec<PathBuf>,
        log_tables: &[LogTableArg<'_>],
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
                .map(|(name, table, streamed)| log_table(name, table, *streamed))
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
    log_tables: Vec<LogTableArg<'_>>,
    lines: Option<Lines<'_>>,
    out: PathBuf,
    options: Bound<'_, PyDict>,
    command: Vec<String>,
    shard: bool,
) -> PyResult<(Vec<String>, Option<Py<PyAny>>)> {
    let plan = read_grade_plan(&options)?;
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

/// Merge the partial gradings `shards` into `out` with the plan's
/// `options`; returns the warnings and per_query.csv's rows as a pyarrow
/// schema and record batches.
#[pyfunction]
fn merge(
    py: Python<'_>,
    labels: PathBuf,
    labels_table: Option<Bound<'_, PyAny>>,
    shards: Vec<PathBuf>,
    out: PathBuf,
    options: Bound<'_, PyDict>,
    command: Vec<String>,
) -> PyResult<(Vec<String>, Py<PyAny>)> {
    let name = labels.display().to_string();
    let plan = rgrade::MergePlan {
        labels_table: (labels_table.map(|t| arrow_table::<LabelsError>(&name, &t))).transpose()?,
        labels,
        shards,
        out,
        command,
        keep_rows: true,
        ..read_plan(&options)?
    };
    let merged = py.detach(|| {
        let mut warnings = Vec::new();
        let mut warn = |warning: rgrade::Warning| warnings.push(warning.spelled(keyword));
        rgrade::merge(&plan, &mut warn)
            .and_then(|graded| exported(graded.openmetrics_failure, graded.per_query))
            .map(|rows| (warnings, rows))
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

/// Compare two grade outputs into `out`, with the `rules` file if any and
/// the plan's `options`; returns whether every rule passed (or none was
/// given), and the warnings.
#[pyfunction]
fn compare(
    py: Python<'_>,
    baseline: PathBuf,
    candidate: PathBuf,
    out: PathBuf,
    rules: Option<PathBuf>,
    options: Bound<'_, PyDict>,
) -> PyResult<(bool, Vec<String>)> {
    let plan = rgrade::ComparePlan {
        baseline,
        candidate,
        rules,
        out: Some(out),
        ..read_plan(&options)?
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

/// Compare the answer keys `key_a` and `key_b` with the plan's `options`,
/// writing agreement.json, agreement.csv and agreement_slices.csv into
/// `out`, and with logs the runs' means under both; returns the warnings.
#[pyfunction]
fn agree(
    py: Python<'_>,
    key_a: PathBuf,
    key_b: PathBuf,
    out: PathBuf,
    options: Bound<'_, PyDict>,
) -> PyResult<Vec<String>> {
    let plan = rgrade::AgreePlan {
        key_a,
        key_b,
        out: Some(out),
        ..read_plan(&options)?
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
/// order) with the plan's `options`, writing trend.csv, report.html and
/// alarms.json into `out`; returns whether any series alarmed, and the
/// warnings.
#[pyfunction]
fn trend(
    py: Python<'_>,
    nights: Vec<PathBuf>,
    out: PathBuf,
    options: Bound<'_, PyDict>,
    command: Vec<String>,
) -> PyResult<(bool, Vec<String>)> {
    let plan = rgrade::TrendPlan {
        nights,
        out: Some(out),
        command,
        ..read_plan(&options)?
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

/// Copy the complete result in `source` into `target`, as its run would
/// have written it there.
#[pyfunction]
fn copy_result(py: Python<'_>, source: PathBuf, target: PathBuf) -> PyResult<()> {
    py.detach(|| rgrade::copy_result(&source, &target))
        .map_err(raised)
}

/// The log files `paths` name, in the order `grade` reads them, with the
/// GIL released: a prefix of object storage is listed over the network.
#[pyfunction]
fn log_files(py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<Vec<OsString>> {
    // As text, not as `pathlib` paths, which would fold a URI's `//`.
    let files = py.detach(|| rgrade::log_files(&paths)).map_err(raised)?;
    Ok(files.into_iter().map(PathBuf::into_os_string).collect())
}

/// Run the `rgrade` command line `args` (the program's name first), as the
/// binary does, with the GIL released; returns its exit status.
#[pyfunction]
fn main(py: Python<'_>, args: Vec<std::ffi::OsString>) -> u8 {
    py.detach(|| rgrade_cli::main(args))
}

/// The native module.
#[pymodule]
fn _rgrade(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
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
    m.add_function(wrap_pyfunction!(main, m)?)?;
    Ok(())
}
