"""Grade the retrieval step of a RAG or search system from captured search logs.

``grade`` grades logs (files, or pyarrow, pandas and polars tables)
against an answer key and returns a :class:`Grading`: the command line's
files, as pyarrow tables and dicts. ``grade_shard`` grades a shard of
logs partitioned by query id, and ``merge`` grades the shards as one. ``compare`` compares two gradings, ``agree`` two answer keys, and
``trend`` watches a series of nightly gradings. Every grading runs in rgrade's
native code with the GIL released; errors raise :class:`RgradeError`
subclasses with the command line's messages. What the command line prints
as warnings, and rejected records, are Python warnings
(:class:`RgradeWarning`, :class:`RejectedRecordsWarning`), so a notebook
shows them and a job can filter them or turn them into errors.
"""

from __future__ import annotations

import contextlib
import html
import json
import math
import os
import shutil
import sys
import tempfile
import warnings
import weakref
from collections import Counter
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Union,
    TypedDict,
    cast,
    runtime_checkable,
)

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from ._rgrade import (
    __version__,
    ComparisonError,
    LabelsError,
    LogsError,
    OutputError,
    RgradeError,
    ShardError,
    UsageError,
)
from ._rgrade import agree as _agree
from ._rgrade import compare as _compare
from ._rgrade import copy_result as _copy_result
from ._rgrade import grade as _grade
from ._rgrade import log_files as _log_files
from ._rgrade import merge as _merge
from ._rgrade import trend as _trend
from ._shapes import labels_table, run_table

if TYPE_CHECKING:
    import pandas
    import polars
    import pyarrow.dataset
    from typing_extensions import Unpack

__all__ = [
    "__version__",
    "AgreeOptions",
    "Agreement",
    "CompareOptions",
    "Comparison",
    "ComparisonError",
    "GradeOptions",
    "Grading",
    "LabelsError",
    "Lines",
    "LogsError",
    "MergeOptions",
    "OutputError",
    "RejectedRecordsWarning",
    "RgradeError",
    "RgradeWarning",
    "Shard",
    "ShardError",
    "Trend",
    "TrendOptions",
    "UsageError",
    "agree",
    "compare",
    "grade",
    "grade_shard",
    "log_files",
    "merge",
    "trend",
]


class RgradeWarning(UserWarning):
    """A warning of rgrade's, as the command line prints it (a stage no
    record had, stale labels, ...); also kept in ``.warnings``."""


class RejectedRecordsWarning(UserWarning):
    """Records of the logs were rejected: the grading left them out, and
    ``Grading.rejects`` lists each with its reason. Rejects never raise, so
    this is what tells a notebook or a job that some logs were not graded."""


@runtime_checkable
class ArrowStreamExportable(Protocol):
    """Anything that exports a table through the Arrow C stream interface,
    as pyarrow tables and readers, and polars and pandas (2.2 or newer)
    frames do."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...


PathLike = Union[str, "os.PathLike[str]"]
# The kinds of table named for readers of the signatures; pandas frames
# before 2.2 have no __arrow_c_stream__ and are converted.
TableLike = Union[
    ArrowStreamExportable, pa.Table, pa.RecordBatchReader, "pandas.DataFrame", "polars.DataFrame"
]
# Logs read batch by batch as they are graded, never whole: readers, and
# what scans or collects in batches.
LogStream = Union[pa.RecordBatchReader, "pyarrow.dataset.Dataset", "pyarrow.dataset.Scanner", "polars.LazyFrame"]
Log = Union[PathLike, TableLike, LogStream, "Lines"]
Cutoffs = Union[int, str, Sequence[Union[int, str]]]

# The values of grade's options, as the command line's `choice!` enums
# (src/base/options.rs) name them; a test holds them to those.
Missing = Literal["fail", "skip"]
Repeats = Literal["error", "first", "last", "mean"]
DuplicateDocs = Literal["reject", "dedupe"]
BadFiles = Literal["fail", "skip"]
RunName = Literal["tag", "file"]
Unit = Literal["result", "doc"]
JoinBy = Literal["id", "text"]
LabelsFormat = Literal["auto", "jsonl", "trec", "csv", "tsv", "json", "parquet", "compiled"]
LogsFormat = Literal["auto", "jsonl", "trec", "msmarco", "otlp", "parquet", "csv"]

# Columns that hold names and ids: read as text whatever they look like.
_TEXT_COLUMNS = {"run", "stage", "query_id", "doc_id", "task", "language", "split"}

# rejects.jsonl's keys, typed.
_REJECTS_COLUMNS: Dict[str, pa.DataType] = {
    "file": pa.string(),
    "line": pa.int64(),
    "reason": pa.string(),
    "detail": pa.string(),
    "record": pa.string(),
}
_REJECTS_SCHEMA = pa.schema(_REJECTS_COLUMNS)

# The standard normal quantile of 97.5%: 95% intervals.
_Z_975 = 1.959963984540054


def _read_csv(path: Path) -> pa.Table:
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split(",")
    text = {c: pa.string() for c in header if c in _TEXT_COLUMNS or c.startswith("missing_at_")}
    options = pacsv.ConvertOptions(column_types=text, strings_can_be_null=False)
    return pacsv.read_csv(path, convert_options=options)


def _read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _number(value: object) -> str:
    """A cell: a dash for no value, a mean to three decimals as the
    command line prints it."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _p(value: Optional[float]) -> str:
    return _number(value) if value is None or math.isnan(value) else f"{value:.4g}"


def _interval(
    mean: Optional[float], low: Optional[float], high: Optional[float], signed: bool = False
) -> str:
    if mean is None or low is None or high is None:
        return _number(mean)
    form = "+.3f" if signed else ".3f"
    return f"{mean:{form}} [{low:{form}}, {high:{form}}]"


def _html_table(caption: str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A table with every cell escaped: ids, paths and reasons come from
    the logs, and a notebook renders what a repr returns as markup."""

    def cells(tag: str, row: Sequence[object]) -> str:
        return "".join(f"<{tag}>{html.escape(str(cell))}</{tag}>" for cell in row)

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return f"<table><caption>{html.escape(caption)}</caption><tr>{cells('th', header)}</tr>{body}</table>"


def _deepest(cutoffs: Iterable[Union[int, str]]) -> str:
    """The deepest of ``cutoffs``: ``all`` if given, else the largest."""
    given = [str(k) for k in cutoffs]
    return "all" if "all" in given else str(max(int(k) for k in given))


def _reasons(rejects: pa.Table) -> List[Tuple[str, int]]:
    """Each reject reason with its count, the most common first."""
    counts = Counter(str(reason) for reason in rejects.column("reason").to_pylist())
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _key(run: str, stage: str) -> str:
    """A (run, stage) as one name; logs without runs have an empty run."""
    return " ".join(part for part in (run, stage) if part)


class _Files:
    """A result's files, in a directory of its own that goes when the
    result does (or when the interpreter exits), silently: a notebook
    holding many gradings leaves nothing behind and warns of nothing."""

    def __init__(self, directory: str):
        self._dir = Path(directory)
        weakref.finalize(self, shutil.rmtree, directory, ignore_errors=True)


@contextlib.contextmanager
def _scratch() -> Iterator[str]:
    """A new directory for a result's files; removed if the call that
    fills it raises."""
    directory = tempfile.mkdtemp(prefix="rgrade-")
    try:
        yield directory
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise


class Grading(_Files):
    """What a grading found: ``per_query`` (a pyarrow Table with
    per_query.csv's columns and values, handed over from the grading's
    memory: texts as strings, counts and ranks as int64, measurements and
    metrics as float64, flags as bools, empty numbers and flags as nulls), ``summary``
    (summary.json as a dict), ``aggregates`` (a pyarrow Table with the CSV
    file's columns), ``rejects`` (a pyarrow Table of rejects.jsonl) and
    ``warnings``. ``write(dir)`` writes the files ``rgrade grade -o dir``
    writes. In a notebook it shows its counts, rejects and headline means."""

    def __init__(
        self,
        directory: str,
        warnings: Sequence[str],
        rows: Tuple[pa.Schema, List[pa.RecordBatch]],
    ):
        super().__init__(directory)
        self.warnings = list(warnings)
        schema, batches = rows
        self.per_query = pa.Table.from_batches(batches, schema=schema)
        self.summary: Dict[str, Any] = _read_json(self._dir / "summary.json")

    @property
    def aggregates(self) -> pa.Table:
        return _read_csv(self._dir / "aggregates.csv")

    @property
    def rejects(self) -> pa.Table:
        """rejects.jsonl as a table, a row per rejected record in input
        order: ``file``, ``line`` (int64), ``reason``, ``detail`` and
        ``record`` (its first 200 bytes); no rows when none was rejected."""
        path = self._dir / "rejects.jsonl"
        if path.stat().st_size == 0:
            return _REJECTS_SCHEMA.empty_table()
        options = pajson.ParseOptions(explicit_schema=_REJECTS_SCHEMA, unexpected_field_behavior="error")
        return pajson.read_json(path, parse_options=options)

    def write(self, directory: PathLike) -> None:
        """Write every file of the grading into ``directory`` as ``rgrade grade
        -o`` would: under its lock, refusing a directory that holds another
        kind of result, each file moved into place whole, summary.json last."""
        _copy_result(os.fspath(self._dir), os.fspath(directory))

    def _deepest_metrics(self) -> List[str]:
        """The metrics of the deepest cutoff, in per_query.csv's order
        (judged@k is label coverage, not a metric of the ranking), or the
        measures asked for by name."""
        asked: Optional[List[str]] = self.summary["settings"].get("measures")
        if asked:
            return asked
        deepest = _deepest(self.summary["settings"]["k"])
        columns = self.per_query.column_names
        return [c for c in columns if c.endswith(f"@{deepest}") and not c.startswith("judged@")]

    def headline(self) -> List[Dict[str, Any]]:
        """Per (run, stage), in summary.json's order: ``run``, ``stage``,
        ``queries`` and ``metrics``, each metric of the deepest cutoff as
        ``(mean, low, high)``: its mean over the queries that count (those
        with a value in per_query, as summary.json's means) and a 95%
        interval, or Nones when no query counts.

        summary.json and aggregates.csv keep no intervals (the report draws
        its own), so these are normal approximations from per_query's
        values, ``mean ± 1.96 s/√n`` kept within the values' range: the
        report's own way for over 5,000 queries; below that the report
        bootstraps, which can differ in the third decimal."""
        names = self._deepest_metrics()
        stats = self.per_query.group_by(["run", "stage"]).aggregate(
            [(m, f) for m in names for f in ("mean", "count", "min", "max")]
            + [(m, "stddev", pc.VarianceOptions(ddof=1)) for m in names]
        )
        by_key = {(row["run"], row["stage"]): row for row in stats.to_pylist()}
        headline = []
        for overall in self.summary["overall"]:
            row = by_key[(overall["run"], overall["stage"])]
            metrics: Dict[str, Tuple[Optional[float], Optional[float], Optional[float]]] = {}
            for m in names:
                mean, n = row[f"{m}_mean"], row[f"{m}_count"]
                if not n:
                    metrics[m] = (None, None, None)
                    continue
                half = _Z_975 * (row[f"{m}_stddev"] or 0.0) / math.sqrt(n)
                metrics[m] = (mean, max(mean - half, row[f"{m}_min"]), min(mean + half, row[f"{m}_max"]))
            run, stage, queries = overall["run"], overall["stage"], overall["queries"]
            headline.append({"run": run, "stage": stage, "queries": queries, "metrics": metrics})
        return headline

    def _counts(self) -> List[Tuple[str, int]]:
        counts = self.summary["counts"]
        return [
            ("labeled queries", counts["labeled"]),
            ("graded rows", counts["graded"]),
            ("rejected records", counts["rejected"]),
            ("unlabeled events", counts["unlabeled_events"]),
        ]

    def __repr__(self) -> str:
        """The counts, then a line per (run, stage) with its means at the
        deepest cutoff, from summary.json."""
        ks = ",".join(str(k) for k in self.summary["settings"]["k"])
        lines = [f"<rgrade.Grading k={ks}: " + ", ".join(f"{n} {what}" for what, n in self._counts())]
        names = self._deepest_metrics()
        for row in self.summary["overall"]:
            means = ", ".join(f"{m} {_number(row['metrics'].get(m))}" for m in names)
            lines.append(f"  {_key(row['run'], row['stage'])}: {row['queries']} queries; {means}")
        return "\n".join(lines) + ">"

    def _repr_html_(self) -> str:
        """The counts, the rejects by reason and the :meth:`headline`."""
        counts = self._counts()
        parts = [_html_table("rgrade grading", [what for what, _ in counts], [[n for _, n in counts]])]
        reasons = _reasons(self.rejects)
        if reasons:
            parts.append(_html_table("Rejected records by reason", ["reason", "records"], reasons))
        names = self._deepest_metrics()
        means = [
            [h["run"], h["stage"], h["queries"], *(_interval(*h["metrics"][m]) for m in names)]
            for h in self.headline()
        ]
        caption = "Means over the queries that count, with 95% intervals (normal approximation)"
        parts.append(_html_table(caption, ["run", "stage", "queries", *names], means))
        return "<div>" + "".join(parts) + "</div>"


class Comparison(_Files):
    """What a comparison wrote, read back: ``comparison`` and
    ``per_query_delta`` (pyarrow Tables), ``gate`` (gate.json as a dict, or
    None without rules), ``passed`` and ``warnings``. ``write(dir)`` writes
    the files ``rgrade compare -o dir`` writes. In a notebook it shows the
    verdict and each metric's change over all queries, with compare's own
    interval (none where compare gives none) and Holm-adjusted p."""

    def __init__(self, directory: str, passed: bool, warnings: Sequence[str]):
        super().__init__(directory)
        self.passed = passed
        self.warnings = list(warnings)
        gate = self._dir / "gate.json"
        self.gate: Optional[Dict[str, Any]] = _read_json(gate) if gate.exists() else None

    @property
    def comparison(self) -> pa.Table:
        return _read_csv(self._dir / "comparison.csv")

    @property
    def per_query_delta(self) -> pa.Table:
        return _read_csv(self._dir / "per_query_delta.csv")

    def write(self, directory: PathLike) -> None:
        """Write every file of the comparison into ``directory`` as ``rgrade
        compare -o`` would (as :meth:`Grading.write`), comparison.json last."""
        _copy_result(os.fspath(self._dir), os.fspath(directory))

    def _overall(self) -> List[Dict[str, Any]]:
        """comparison.csv's rows over all queries (every task, language and
        split), per stage and metric."""
        rows = self.comparison.to_pylist()
        return [r for r in rows if r["task"] == r["language"] == r["split"] == "*"]

    def _verdict(self) -> str:
        runs = _read_json(self._dir / "comparison.json")
        sides = f"{runs['baseline']['run'] or 'baseline'} -> {runs['candidate']['run'] or 'candidate'}"
        if self.gate is None:
            return f"{sides}: no rules"
        failed = sum(not rule["passed"] for rule in self.gate["rules"])
        verdict = "passed" if self.passed else f"failed ({failed} of {len(self.gate['rules'])} rules)"
        return f"{sides}: gate {verdict}"

    def __repr__(self) -> str:
        """The verdict, and per stage the change in each metric of the
        deepest cutoff compared (``_repr_html_`` shows every metric)."""
        rows = self._overall()
        deepest = _deepest(row["metric"].rsplit("@", 1)[1] for row in rows) if rows else ""
        lines = [f"<rgrade.Comparison {self._verdict()}"]
        for row in rows:
            if row["metric"].endswith(f"@{deepest}"):
                change = _interval(row["delta"], row["ci_low"], row["ci_high"], signed=True)
                lines.append(f"  {row['stage']} {row['metric']}: {change}, p_holm {_p(row['p_holm'])}")
        return "\n".join(lines) + ">"

    def _repr_html_(self) -> str:
        """The verdict, the rules and every metric's change over all queries."""
        parts = [f"<p>{html.escape(self._verdict())}</p>"]
        if self.gate is not None:
            rules = [[r["name"], "yes" if r["passed"] else "no", r["detail"]] for r in self.gate["rules"]]
            parts.append(_html_table("Rules", ["rule", "passed", "detail"], rules))
        header = ["stage", "metric", "queries", "baseline", "candidate", "change [95% interval]"]
        changes = [
            [r["stage"], r["metric"], r["queries"], _number(r["baseline"]), _number(r["candidate"]),
             _interval(r["delta"], r["ci_low"], r["ci_high"], signed=True),
             r["wins"], r["ties"], r["losses"], _p(r["p_holm"])]
            for r in self._overall()
        ]
        caption = "Change over all queries (candidate minus baseline), with compare's 95% interval"
        parts.append(_html_table(caption, [*header, "won", "tied", "lost", "p (Holm)"], changes))
        return "<div>" + "".join(parts) + "</div>"


class Agreement(_Files):
    """How far two answer keys agree, as ``rgrade agree`` finds it:
    ``summary`` (agreement.json as a dict: the pair counts, ``grades``,
    ``confusion``, ``relevance_kappa`` and ``grade_kappa``), ``pairs`` (the
    pairs graded differently, agreement.csv) and ``slices`` (per grouping
    set, agreement_slices.csv), both pyarrow Tables; with logs also
    ``runs`` (each run's means under both keys, agreement_runs.csv) and
    ``run_orders`` (Kendall's tau between the keys' orderings of the runs,
    agreement_tau.csv), else None. ``write(dir)`` writes the files
    ``rgrade agree -o dir`` writes."""

    def __init__(self, directory: str, warnings: Sequence[str]):
        super().__init__(directory)
        self.warnings = list(warnings)
        self.summary: Dict[str, Any] = _read_json(self._dir / "agreement.json")

    @property
    def pairs(self) -> pa.Table:
        return _read_csv(self._dir / "agreement.csv")

    @property
    def slices(self) -> pa.Table:
        return _read_csv(self._dir / "agreement_slices.csv")

    @property
    def runs(self) -> Optional[pa.Table]:
        path = self._dir / "agreement_runs.csv"
        return _read_csv(path) if path.exists() else None

    @property
    def run_orders(self) -> Optional[pa.Table]:
        path = self._dir / "agreement_tau.csv"
        return _read_csv(path) if path.exists() else None

    def write(self, directory: PathLike) -> None:
        """Write every file of the agreement into ``directory`` as ``rgrade
        agree -o`` would (as :meth:`Grading.write`), agreement.json last."""
        _copy_result(os.fspath(self._dir), os.fspath(directory))

    def _headline(self) -> str:
        s = self.summary
        return (
            f"{s['pairs_both']} pairs judged by both, "
            f"kappa {_number(s['relevance_kappa'])} on relevance, "
            f"{_number(s['grade_kappa'])} on grades"
        )

    def __repr__(self) -> str:
        return f"<rgrade.Agreement {self._headline()}>"

    def _repr_html_(self) -> str:
        """The counts, and the confusion matrix of the grades."""
        s = self.summary
        rows = [[grade, *counts] for grade, counts in zip(s["grades"], s["confusion"])]
        header = ["A \\ B", *s["grades"]]
        matrix = _html_table("Grades of the pairs both judge, A by row and B by column", header, rows)
        return f"<div><p>{html.escape(self._headline())}</p>{matrix}</div>"


class AgreeOptions(TypedDict, total=False):
    """The keyword arguments of :func:`agree`: ``rgrade agree``'s options,
    named as :class:`GradeOptions` are (``logs`` one path or several, ``k``
    one cutoff or several) and read into the library's plan as they are,
    so an option left out takes the command line's default
    (docs/reference.md says what each does)."""

    labels_format: LabelsFormat
    min_rel: int
    reviewers: Optional[str]
    reviewers_a: Optional[str]
    reviewers_b: Optional[str]
    logs: Union[PathLike, Sequence[PathLike], None]
    k: Optional[Cutoffs]
    logs_format: Optional[LogsFormat]
    missing: Optional[Missing]
    repeats: Optional[Repeats]
    run_name: Optional[RunName]
    threads: Optional[int]


def agree(key_a: PathLike, key_b: PathLike, **options: Unpack[AgreeOptions]) -> Agreement:
    """Compare two answer keys on the (query, document) pairs both judge,
    as ``rgrade agree`` does, with its options as keyword arguments
    (:class:`AgreeOptions`): Cohen's kappa on relevance (a grade counts
    from ``min_rel`` up, in both keys), linear-weighted kappa on grades,
    the confusion matrix, and the pairs graded differently. ``reviewers``
    says whose grade counts where several reviewers of a key judged one
    pair, in both keys (``reviewers_a`` and ``reviewers_b`` in one: name
    one key twice to compare two of its reviewers). With ``logs``
    (files or directories), they are graded at ``k`` under each key, and
    each run's means and Kendall's tau between the keys' orderings of the
    runs come too (``k``, ``logs_format``, ``missing``, ``repeats`` and
    ``run_name`` as :func:`grade` takes them, with its defaults, and each
    given without ``logs`` raises a :class:`UsageError`, as the command
    line refuses it). Logs of which
    every record was rejected warn with an :class:`RgradeWarning`."""
    with _scratch() as directory:
        messages = _agree(os.fspath(key_a), os.fspath(key_b), directory, _options(options))
    _warn(messages)
    return Agreement(directory, messages)


class Shard(_Files):
    """A partial grading (``grade_shard``): ``summary`` is its
    partial.json; ``write(dir)`` writes the directory ``rgrade merge`` takes,
    and ``merge`` takes the Shard itself too."""

    def __init__(self, directory: str, warnings: Sequence[str]):
        super().__init__(directory)
        self.warnings = list(warnings)
        self.summary: Dict[str, Any] = _read_json(self._dir / "partial.json")

    def write(self, directory: PathLike) -> None:
        """Write the partial grading into ``directory``, partial.json last."""
        _copy_result(os.fspath(self._dir), os.fspath(directory))

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<rgrade.Shard: {s['captured_queries']} captured queries, {s['rejected']} rejected records, "
            f"{len(s['inputs'])} inputs>"
        )

    def _repr_html_(self) -> str:
        s = self.summary
        return "<div>" + _html_table(
            f"rgrade shard: {s['captured_queries']} captured queries, {s['rejected']} rejected records",
            ["input", "records", "rejected"],
            [[i["path"], i["records"], i["rejected"]] for i in s["inputs"]],
        ) + "</div>"


def _is_table(value: object) -> bool:
    return not isinstance(value, (str, bytes, os.PathLike))


def _arrow(table: object) -> ArrowStreamExportable:
    """An object that exports ``table`` through ``__arrow_c_stream__``:
    pyarrow tables and readers, polars and pandas (2.2 or newer) frames do
    so themselves; older pandas and polars frames are converted."""
    if isinstance(table, ArrowStreamExportable):
        return table
    if hasattr(table, "to_arrow"):
        converted: pa.Table = table.to_arrow()
        return converted
    if type(table).__module__.startswith("pandas"):
        return pa.Table.from_pandas(cast("pandas.DataFrame", table), preserve_index=False)
    raise TypeError(
        f"expected a path or a table (pyarrow, pandas or polars), got {type(table).__name__}"
    )


class Lines:
    """Lines of JSONL logs with the file and line each was read from, for
    a grading of logs read by something else (the Spark job hands each
    partition's lines over so). ``inputs`` names the files in the order
    grade reads them; ``table`` has a row per line: ``input`` (an index
    into ``inputs``), ``line`` (its number there, from 1) and ``text``
    (the line without its line end, bytes or a string), in any order. A
    grading of lines of some queries is a shard: grade it with
    ``grade_shard`` and merge the shards."""

    def __init__(self, inputs: Sequence[PathLike], table: TableLike):
        self.inputs = [os.fspath(name) for name in inputs]
        self.table = _arrow(table)


def log_files(paths: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    """The log files ``paths`` (files and directories) name, in the order
    ``grade`` reads them."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return [str(path) for path in _log_files([os.fspath(p) for p in paths])]


# The readers handed over to a grading: pyarrow's reader of a reader read
# already holds no batch, which would grade as logs of no records, so a
# reader handed over again is refused instead.
_handed_over: "weakref.WeakSet[object]" = weakref.WeakSet()


def _stream(log: object) -> Optional[ArrowStreamExportable]:
    """What streams ``log`` batch by batch, or None for a table held whole
    (a pyarrow Table or RecordBatch, a pandas or polars DataFrame). A
    pyarrow Dataset is scanned in batches, its partition columns included;
    a Scanner as it was set up; a polars LazyFrame is collected in the
    streaming engine's batches (``collect_batches``); a RecordBatchReader,
    or any other object with ``__arrow_c_stream__``, is read as it
    exports itself."""
    dataset = sys.modules.get("pyarrow.dataset")
    if dataset is not None and isinstance(log, (dataset.Dataset, dataset.Scanner)):
        scanner = log.scanner() if isinstance(log, dataset.Dataset) else log
        reader: pa.RecordBatchReader = scanner.to_reader()
        return reader
    polars = sys.modules.get("polars")
    if polars is not None and isinstance(log, polars.LazyFrame):
        collect = getattr(log, "collect_batches", None)
        batches = collect(lazy=True) if collect is not None else None
        if not isinstance(batches, ArrowStreamExportable):
            raise TypeError(
                "a polars LazyFrame is streamed through its collect_batches(), which this polars "
                "does not export to Arrow: upgrade polars, or collect() the frame"
            )
        return batches
    whole = (pa.Table, pa.RecordBatch) + ((polars.DataFrame,) if polars is not None else ())
    if isinstance(log, whole) or not isinstance(log, ArrowStreamExportable):
        return None
    if type(log).__module__.startswith("pandas"):
        return None
    if log in _handed_over:
        raise LogsError(
            f"this {type(log).__name__} was handed to a grading already, and a stream is read once: "
            "hand over a new one"
        )
    _handed_over.add(log)
    return log


def _logs(logs: Any) -> Tuple[
    List[str], List[Tuple[str, ArrowStreamExportable, bool]], Optional[Tuple[List[str], ArrowStreamExportable]]
]:
    """Log paths, log tables with their names and whether each is a
    stream, and lines handed over, from ``logs``: a path, a table, a
    stream, Lines, or a list of them. pytrec_eval's run dicts and ranx's
    Runs become tables first."""
    if not isinstance(logs, (list, tuple)):
        logs = [logs]
    logs = [run_table(log) for log in logs]
    tables: List[Tuple[str, ArrowStreamExportable, bool]]
    paths, tables, lines = [], [], None
    for log in logs:
        if isinstance(log, Lines):
            if lines is not None:
                raise TypeError("logs hold one Lines at most: put every input's lines in one")
            lines = (log.inputs, log.table)
        elif _is_table(log):
            name = f"logs table {len(tables) + 1}"
            stream = _stream(log)
            tables.append((name, _arrow(log), False) if stream is None else (name, stream, True))
        else:
            paths.append(os.fspath(log))
    return paths, tables, lines


# The names a labels table may give its grade column (docs/reference.md, "Labels").
_GRADE_COLUMNS = ("grade", "relevance", "score", "rel")


def _labels(labels: Any) -> Tuple[str, Optional[pa.Table]]:
    """The labels' name and, for a table, the table. A float grade column
    (pandas makes floats of integers with missing values; ranx's scores
    are floats) is read as the whole numbers it holds. pytrec_eval's
    qrels dicts and ranx's Qrels become tables first."""
    labels = labels_table(labels)
    if not _is_table(labels):
        return os.fspath(labels), None
    name = "labels table"
    table = pa.table(_arrow(labels))
    for column in _GRADE_COLUMNS:
        if column not in table.column_names or not pa.types.is_floating(table.schema.field(column).type):
            continue
        index = table.column_names.index(column)
        try:
            grades = pc.cast(table.column(index), pa.int64())
        except pa.ArrowInvalid as err:
            raise LabelsError(f"{name}: column '{column}' holds a grade that is no whole number: {err}") from None
        table = table.set_column(index, column, grades)
    return name, table


class GradeOptions(TypedDict, total=False):
    """The keyword arguments of :func:`grade` and :func:`grade_shard`:
    ``rgrade grade``'s options, each named as its long flag with ``-`` as
    ``_`` (``--stage`` is ``stages``, ``--span-stage`` ``span_stages``; a
    ``--KEY=VALUE`` flag a mapping). They are read into the library's
    grading plan as they are, so an option left out takes the command
    line's default, and docs/guide.md says what each does; a name that is
    no option raises a :class:`UsageError`. ``--max-rejects``
    and ``--max-leaks`` only set the command line's exit status: read
    ``summary["counts"]`` instead."""

    labels_format: LabelsFormat
    logs_format: LogsFormat
    missing: Missing
    repeats: Repeats
    duplicate_docs: DuplicateDocs
    bad_files: BadFiles
    run_name: RunName
    join: JoinBy
    min_rel: int
    measures: Sequence[str]
    reviewers: Optional[str]
    calibrate: Optional[PathLike]
    calibrate_reviewers: Optional[str]
    unit: Unit
    doc_of: Optional[str]
    stages: Sequence[str]
    stage_order: Sequence[str]
    slice_by: Sequence[str]
    span_stages: Mapping[str, str]
    doc_collections: Optional[PathLike]
    corpus: Optional[PathLike]
    collection_version: Optional[str]
    review_queue: bool
    pool_depth: Optional[int]
    meta: Mapping[str, str]
    as_of: Optional[str]
    openmetrics: Optional[PathLike]
    threads: Optional[int]
    query_field: Optional[str]
    results_field: Optional[str]
    doc_field: Optional[str]
    stage_field: Optional[str]
    run_field: Optional[str]
    latency_field: Optional[str]
    context_field: Optional[str]
    outcome_field: Optional[str]
    allowed_field: Optional[str]
    collection_field: Optional[str]
    rank_field: Optional[str]
    time_field: Optional[str]


def _plain(value: Any) -> Any:
    """A keyword argument's value as a plan reads it: a path as its
    string, a mapping as its pairs, a list or tuple item by item."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return list(value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _options(options: Mapping[str, Any]) -> Dict[str, Any]:
    """The keyword arguments as the library's plan reads them, under their
    own names (``None`` is an option left out): the plan takes each, keeps
    its default for the others, and refuses a name it does not know or a
    value of the wrong type, naming the keyword."""
    return {name: _plain(value) for name, value in options.items() if value is not None}


def _plan(k: Optional[Cutoffs], options: Mapping[str, Any]) -> Dict[str, Any]:
    """The keyword arguments as the grading plan's fields (see
    :func:`_options`), ``<name>_field`` as the plan's ``fields[<name>]``."""
    plan: Dict[str, Any] = {}
    fields: Dict[str, Any] = {}
    for name, value in _options(options).items():
        if name.endswith("_field"):
            fields[name[: -len("_field")]] = value
        else:
            plan[name] = value
    if fields:
        plan["fields"] = fields
    if k is not None:
        plan["k"] = [k] if isinstance(k, (int, str)) else list(k)
    return plan


def _graded(
    labels: Union[PathLike, TableLike],
    logs: Union[Log, Sequence[Log]],
    k: Optional[Cutoffs],
    options: Mapping[str, Any],
    shard: bool,
) -> Tuple[str, List[str], Any]:
    """Grade (or, for a ``shard``, grade partially) into a new directory;
    returns it, the warnings and per_query's rows."""
    labels_name, labels_table = _labels(labels)
    paths, tables, lines = _logs(logs)
    with _scratch() as directory:
        messages, rows = _grade(
            labels_name,
            labels_table,
            paths,
            tables,
            lines,
            directory,
            _plan(k, options),
            ["rgrade.grade", labels_name, *paths, *(name for name, _, _ in tables), *(lines[0] if lines else [])],
            shard,
        )
    _warn(messages, stacklevel=4)
    return directory, messages, rows


def grade(
    labels: Union[PathLike, TableLike],
    logs: Union[Log, Sequence[Log]],
    k: Optional[Cutoffs] = None,
    **options: Unpack[GradeOptions],
) -> Grading:
    """Grade ``logs`` against the answer key ``labels`` at cutoffs ``k``
    (a cutoff, ``"all"``, or a sequence of them; 10 unless given), with
    ``rgrade grade``'s options as keyword arguments (:class:`GradeOptions`:
    ``--repeats`` is ``repeats``, ``--query-field`` is ``query_field``,
    ``--stage`` is ``stages``, ...).

    ``labels`` is a path or a table with the CSV labels' columns
    (``query_id``, ``doc_id``, optional ``grade``, ``task``, ``language``,
    ...). ``logs`` is a path (a file or a directory), a table with one row
    per search event (``query_id``, ``results`` as a list of doc ids,
    optional ``stage``, ``run``, ``latency_ms``, ``context_tokens``,
    ``answer_ok``), :class:`Lines` of JSONL logs, or a list of them.
    Tables are pyarrow Tables, pandas or polars DataFrames, or anything
    with ``__arrow_c_stream__``; they cross without a Python object per
    row.

    ``calibrate`` names a human answer key that grades a random sample of
    the queries ``labels`` (a judge's) grades: ``aggregates`` then gains,
    per grouping set, ``calibration_queries`` and each metric's calibrated
    mean with its 95% interval (``<metric>_calibrated``, ``_low``,
    ``_high``) and the judge's weight in it (``<metric>_calibrated_weight``),
    as ``rgrade grade --calibrate`` writes them;
    ``calibrate_reviewers`` is ``reviewers`` for that key.

    ``unit="doc"`` with ``doc_of`` (a separator such as ``"#"``, or a
    regular expression with one capture group) grades each result as the
    document it is a chunk of, as ``--unit doc --doc-of`` does.

    ``as_of`` (RFC 3339 or a date) is the time the grading stands for in
    ``summary["as_of"]``, as ``--as-of`` sets it: ``rgrade trend`` orders
    nights by it. It defaults to when the grading runs. ``openmetrics``
    names a file to write the means and counts to in the OpenMetrics text
    format, as ``--openmetrics`` does.

    Raises a :class:`RgradeError` with the command line's message when
    nothing can be graded, of the class that says what was wrong:
    :class:`UsageError`, :class:`LabelsError`, :class:`LogsError` or
    :class:`OutputError`. Rejected records never raise: they warn with a
    :class:`RejectedRecordsWarning` and are ``Grading.rejects``. rgrade's
    own warnings warn as :class:`RgradeWarning` and are kept in
    ``.warnings`` too."""
    directory, messages, rows = _graded(labels, logs, k, options, shard=False)
    assert rows is not None, "a full grading hands its rows over"
    graded = Grading(directory, messages, rows)
    _warn_rejects(graded)
    return graded


def grade_shard(
    labels: Union[PathLike, TableLike],
    logs: Union[Log, Sequence[Log]],
    k: Optional[Cutoffs] = None,
    **options: Unpack[GradeOptions],
) -> Shard:
    """Grade one shard of logs partitioned by query id partially, as
    ``rgrade grade --partial`` does, with :func:`grade`'s arguments:
    :func:`merge` grades the shards as one grading of all their logs.
    ``calibrate`` and ``openmetrics`` are refused: a shard has no means."""
    directory, messages, _ = _graded(labels, logs, k, options, shard=True)
    return Shard(directory, messages)


class MergeOptions(TypedDict, total=False):
    """The keyword arguments of :func:`merge`: ``rgrade merge``'s options,
    named as :class:`GradeOptions` are and read into the library's plan as
    they are (docs/reference.md says what each does)."""

    threads: Optional[int]
    as_of: Optional[str]
    openmetrics: Optional[PathLike]


def merge(
    labels: Union[PathLike, TableLike],
    shards: Iterable[Union[Shard, PathLike]],
    **options: Unpack[MergeOptions],
) -> Grading:
    """Grade partial gradings (Shards, or directories ``Shard.write`` or
    ``rgrade grade --partial`` wrote) of logs partitioned by query id as one
    grading of all their logs, with ``rgrade merge``'s options as keyword
    arguments (:class:`MergeOptions`). ``labels`` is the answer key every
    shard was graded with, a path or a table; ``as_of`` is :func:`grade`'s,
    by default the ``as_of`` the shards were graded with (they must
    agree)."""
    dirs = [os.fspath(s._dir if isinstance(s, Shard) else s) for s in shards]
    labels_name, labels_table = _labels(labels)
    with _scratch() as directory:
        messages, rows = _merge(
            labels_name,
            labels_table,
            dirs,
            directory,
            _options(options),
            ["rgrade.merge", labels_name, *dirs],
        )
    _warn(messages)
    graded = Grading(directory, messages, rows)
    _warn_rejects(graded)
    return graded


class CompareOptions(TypedDict, total=False):
    """The keyword arguments of :func:`compare`: ``rgrade compare``'s
    options, named as :class:`GradeOptions` are (``metrics`` one name or
    several) and read into the library's plan as they are, so an option
    left out takes the command line's default (docs/reference.md says what
    each does). ``bootstrap`` is accepted and ignored, as ``--bootstrap``
    is: the intervals are no longer bootstrapped."""

    baseline_run: Optional[str]
    candidate_run: Optional[str]
    metrics: Union[str, Sequence[str]]
    permutations: int
    bootstrap: Optional[int]
    seed: int
    alpha: float
    mde: Optional[float]
    threads: Optional[int]


def compare(
    baseline: Union[Grading, PathLike],
    candidate: Union[Grading, PathLike],
    rules: Optional[PathLike] = None,
    **options: Unpack[CompareOptions],
) -> Comparison:
    """Compare two gradings (Gradings, or ``grade -o`` directories) query by
    query with paired statistics, holding the candidate to the acceptance
    ``rules`` (a TOML file), as ``rgrade compare`` does, with its options
    as keyword arguments (:class:`CompareOptions`). A failed rule does
    not raise: see ``Comparison.passed`` and ``gate``. ``comparison`` gives
    each set's minimum detectable change at 80% power (``mde``) and, with
    ``mde=D``, the queries needed to detect D (``queries_for_mde``), as
    ``--mde`` does."""
    plan = _options(options)
    plan.pop("bootstrap", None)
    sides = [os.fspath(s._dir if isinstance(s, Grading) else s) for s in (baseline, candidate)]
    with _scratch() as directory:
        passed, messages = _compare(
            sides[0],
            sides[1],
            directory,
            None if rules is None else os.fspath(rules),
            plan,
        )
    _warn(messages)
    return Comparison(directory, passed, messages)


class Trend(_Files):
    """A series of nightly gradings watched, as ``rgrade trend`` watches
    them: ``trend`` (trend.csv as a pyarrow Table: every night's mean of
    every series with its interval, and on watched nights the drop, its
    p-value and the level an alarm needed), ``alarms`` (alarms.json as a dict: the nights in order, the
    labels revisions and every alarm), ``alarmed`` (whether any series
    alarmed) and ``warnings``. ``write(dir)`` writes the files ``rgrade
    trend -o dir`` writes, report.html among them. In a notebook it shows
    the verdict and the alarms."""

    def __init__(self, directory: str, alarmed: bool, warnings: Sequence[str]):
        super().__init__(directory)
        self.alarmed = alarmed
        self.warnings = list(warnings)
        self.alarms: Dict[str, Any] = _read_json(self._dir / "alarms.json")

    @property
    def trend(self) -> pa.Table:
        return _read_csv(self._dir / "trend.csv")

    def write(self, directory: PathLike) -> None:
        """Write every file of the trend into ``directory`` as ``rgrade
        trend -o`` would (as :meth:`Grading.write`), alarms.json last."""
        _copy_result(os.fspath(self._dir), os.fspath(directory))

    def _verdict(self) -> str:
        nights = len(self.alarms["nights"])
        alarms = self.alarms["alarms"]
        if not any(revision["tested"] for revision in self.alarms["revisions"]):
            return f"{nights} nights, nothing tested (see the warnings)"
        if not alarms:
            return f"{nights} nights, no alarm (a drop too small to tell from chance is not ruled out)"
        on = len({alarm["night"] for alarm in alarms})
        return f"{nights} nights, {len(alarms)} alarm(s) on {on} night(s)"

    def __repr__(self) -> str:
        """The verdict, and each alarm's slice, metric, night and drop."""
        lines = [f"<rgrade.Trend {self._verdict()}"]
        for a in self.alarms["alarms"]:
            lines.append(
                f"  {a['run'] or '-'} {a['stage']} {_slice(a)} {a['metric']}: "
                f"down {_number(a['drop'])} on {a['as_of']}, p {_p_value(a['p_value'])} <= {_p_value(a['level'])}"
            )
        return "\n".join(lines) + ">"

    def _repr_html_(self) -> str:
        """The verdict and the table of alarms."""
        parts = [f"<p>{html.escape(self._verdict())}</p>"]
        if self.alarms["alarms"]:
            header = ["night", "run", "stage", "slice", "metric", "baseline", "mean", "drop", "p", "alarm at"]
            rows = [
                [a["as_of"], a["run"], a["stage"], _slice(a), a["metric"], _number(a["baseline"]),
                 _number(a["mean"]), _number(a["drop"]), _p_value(a["p_value"]), _p_value(a["level"])]
                for a in self.alarms["alarms"]
            ]
            parts.append(_html_table("Alarms, each on the night its p-value reached its level", header, rows))
        return "<div>" + "".join(parts) + "</div>"


def _p_value(p: float) -> str:
    """A p-value as the command line prints it: two significant digits,
    in scientific notation below 0.001."""
    if p >= 1e-3 or p == 0.0:
        digits = 2 if p >= 0.1 else 3 if p >= 0.01 else 4
        return f"{p:.{digits}f}"
    return f"{p:.1e}"


def _slice(row: Mapping[str, Any]) -> str:
    """A grouping set as ``task/language/split``, ``*`` for any."""
    return "/".join(row[name] for name in ("task", "language", "split"))


class TrendOptions(TypedDict, total=False):
    """The keyword arguments of :func:`trend`: ``rgrade trend``'s options,
    named as :class:`GradeOptions` are (``metrics`` one name or several)
    and read into the library's plan as they are, so an option left out
    takes the command line's default (docs/reference.md says what each
    does)."""

    baseline: int
    alpha: float
    metrics: Union[str, Sequence[str]]
    allow_label_changes: bool
    openmetrics: Optional[PathLike]
    threads: Optional[int]


def trend(
    nights: Union[PathLike, Iterable[Union[Grading, PathLike]]],
    **options: Unpack[TrendOptions],
) -> Trend:
    """Watch a series of nightly gradings (Gradings, or ``grade -o``
    directories, in any order: each is placed by the time it stands for,
    its summary's ``as_of``, which ``grade(..., as_of=...)`` sets) as
    ``rgrade trend`` does, with its options as keyword arguments
    (:class:`TrendOptions`). Every (run, stage, grouping set, metric) is
    followed across the nights; the first ``baseline`` nights are its
    baseline, and each watched night a paired t-test over the queries
    asks whether a series fell below them, at a level that holds the
    chance of any false alarm, over every series and night, at ``alpha``.
    An alarm does not raise: see ``Trend.alarmed`` and ``Trend.alarms``.
    ``openmetrics`` also writes each series' last mean, p-value, alarm
    level and alarm to that file."""
    given = [nights] if isinstance(nights, (str, os.PathLike)) else nights
    dirs = [os.fspath(n._dir if isinstance(n, Grading) else n) for n in given]
    with _scratch() as directory:
        alarmed, messages = _trend(dirs, directory, _options(options), ["rgrade.trend", *dirs])
    _warn(messages)
    return Trend(directory, alarmed, messages)


def _warn(messages: Sequence[str], stacklevel: int = 3) -> None:
    """rgrade's warnings as Python's, blamed on the caller of rgrade's
    function (``stacklevel`` frames up, this one counted)."""
    for message in messages:
        warnings.warn(message, RgradeWarning, stacklevel=stacklevel)


def _warn_rejects(graded: Grading) -> None:
    """Warn when records were rejected, naming the most common reasons:
    rejects never raise, and a grading that left logs out should say so."""
    rejected = graded.summary["counts"]["rejected"]
    if not rejected:
        return
    reasons = _reasons(graded.rejects)
    named = ", ".join(f"{reason} ({n})" for reason, n in reasons[:3])
    more = f" and {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""
    warnings.warn(
        f"{rejected} record(s) rejected, not graded: {named}{more}; see the grading's .rejects",
        RejectedRecordsWarning,
        stacklevel=3,
    )
