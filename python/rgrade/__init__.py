"""Grade the retrieval step of a RAG or search system from captured search logs.

``grade`` grades logs (files, or pyarrow, pandas and polars tables)
against an answer key and returns a :class:`Grading`: the command line's
files, as pyarrow tables and dicts. ``grade(..., partial=True)`` grades a
shard of logs partitioned by query id, and ``merge`` grades the shards as
one. ``compare`` compares two gradings. Every grading runs in rgrade's
native code with the GIL released; errors raise :class:`RgradeError`
subclasses with the command line's messages.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ._rgrade import (
    ComparisonError,
    LabelsError,
    LogsError,
    OutputError,
    RgradeError,
    ShardError,
    UsageError,
)
from ._rgrade import compare as _compare
from ._rgrade import grade as _grade
from ._rgrade import log_files as _log_files
from ._rgrade import merge as _merge

__all__ = [
    "Comparison",
    "ComparisonError",
    "Grading",
    "LabelsError",
    "Lines",
    "LogsError",
    "OutputError",
    "RgradeError",
    "Shard",
    "ShardError",
    "UsageError",
    "compare",
    "grade",
    "log_files",
    "merge",
]

PathLike = Union[str, "os.PathLike[str]"]
# A pyarrow Table or RecordBatchReader, a pandas or polars DataFrame, or
# any object with ``__arrow_c_stream__``.
TableLike = object

# Columns that hold names and ids: read as text whatever they look like.
_TEXT_COLUMNS = {"run", "stage", "query_id", "task", "language", "split"}


def _read_csv(path: Path) -> pa.Table:
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split(",")
    text = {c: pa.string() for c in header if c in _TEXT_COLUMNS or c.startswith("missing_at_")}
    options = pacsv.ConvertOptions(column_types=text, strings_can_be_null=False)
    return pacsv.read_csv(path, convert_options=options)


class Grading:
    """What a grading found: ``per_query`` (a pyarrow Table with
    per_query.csv's columns and values, handed over from the grading's
    memory: texts as strings, counts and ranks as int64, measurements and
    metrics as float64, flags as bools, empty numbers and flags as nulls), ``summary``
    (summary.json as a dict), ``aggregates`` (a pyarrow Table with the CSV
    file's columns), ``rejects`` (rejects.jsonl as dicts) and ``warnings``.
    ``write(dir)`` writes the files ``rgrade grade -o dir`` writes."""

    def __init__(self, files: tempfile.TemporaryDirectory, warnings: Sequence[str], rows):
        self._files = files
        self._dir = Path(files.name)
        self.warnings = list(warnings)
        schema, batches = rows
        self.per_query = pa.Table.from_batches(batches, schema=schema)
        with open(self._dir / "summary.json", encoding="utf-8") as f:
            self.summary = json.load(f)

    @property
    def aggregates(self) -> pa.Table:
        return _read_csv(self._dir / "aggregates.csv")

    @property
    def rejects(self) -> list:
        with open(self._dir / "rejects.jsonl", encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def write(self, directory: PathLike) -> None:
        """Write every file of the grading into ``directory``, summary.json last."""
        _copy_files(self._dir, Path(directory), "summary.json")


class Comparison:
    """What a comparison wrote, read back: ``comparison`` and
    ``per_query_delta`` (pyarrow Tables), ``gate`` (gate.json as a dict, or
    None without rules), ``passed`` and ``warnings``. ``write(dir)`` writes
    the files ``rgrade compare -o dir`` writes."""

    def __init__(self, files: tempfile.TemporaryDirectory, passed: bool, warnings: Sequence[str]):
        self._files = files
        self._dir = Path(files.name)
        self.passed = passed
        self.warnings = list(warnings)
        gate = self._dir / "gate.json"
        self.gate = json.loads(gate.read_text(encoding="utf-8")) if gate.exists() else None

    @property
    def comparison(self) -> pa.Table:
        return _read_csv(self._dir / "comparison.csv")

    @property
    def per_query_delta(self) -> pa.Table:
        return _read_csv(self._dir / "per_query_delta.csv")

    def write(self, directory: PathLike) -> None:
        """Write every file of the comparison into ``directory``, comparison.json last."""
        _copy_files(self._dir, Path(directory), "comparison.json")


class Shard:
    """A partial grading (``grade(..., partial=True)``): ``summary`` is its
    partial.json; ``write(dir)`` writes the directory ``rgrade merge`` takes,
    and ``merge`` takes the Shard itself too."""

    def __init__(self, files: tempfile.TemporaryDirectory, warnings: Sequence[str]):
        self._files = files
        self._dir = Path(files.name)
        self.warnings = list(warnings)
        with open(self._dir / "partial.json", encoding="utf-8") as f:
            self.summary = json.load(f)

    def write(self, directory: PathLike) -> None:
        """Write the partial grading into ``directory``, partial.json last."""
        _copy_files(self._dir, Path(directory), "partial.json")


def _copy_files(source: Path, target: Path, marker: str) -> None:
    target.mkdir(parents=True, exist_ok=True)
    stale = target / marker
    if stale.exists():
        stale.unlink()
    names = sorted(p.name for p in source.iterdir() if not p.name.startswith("."))
    for name in names:
        if name != marker:
            shutil.copyfile(source / name, target / name)
    shutil.copyfile(source / marker, target / marker)


def _is_table(value) -> bool:
    return not isinstance(value, (str, bytes, os.PathLike))


def _arrow(table):
    """An object that exports ``table`` through ``__arrow_c_stream__``:
    pyarrow tables and readers, polars and pandas (2.2 or newer) frames do
    so themselves; older pandas and polars frames are converted."""
    if hasattr(table, "__arrow_c_stream__"):
        return table
    if hasattr(table, "to_arrow"):
        return table.to_arrow()
    if type(table).__module__.startswith("pandas"):
        return pa.Table.from_pandas(table, preserve_index=False)
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
    ``partial=True`` and merge the shards."""

    def __init__(self, inputs: Sequence[PathLike], table: "TableLike"):
        self.inputs = [os.fspath(name) for name in inputs]
        self.table = _arrow(table)


def log_files(paths: Union[PathLike, Sequence[PathLike]]) -> list:
    """The log files ``paths`` (files and directories) name, in the order
    ``grade`` reads them."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return [str(path) for path in _log_files([os.fspath(p) for p in paths])]


def _logs(logs) -> tuple:
    """Log paths, log tables with their names, and lines handed over,
    from ``logs``: a path, a table, Lines, or a list of them."""
    if not isinstance(logs, (list, tuple)):
        logs = [logs]
    paths, tables, lines = [], [], None
    for log in logs:
        if isinstance(log, Lines):
            if lines is not None:
                raise TypeError("logs hold one Lines at most: put every input's lines in one")
            lines = (log.inputs, log.table)
        elif _is_table(log):
            tables.append((f"logs table {len(tables) + 1}", _arrow(log)))
        else:
            paths.append(os.fspath(log))
    return paths, tables, lines


# The names a labels table may give its grade column (docs/guide.md, "Labels").
_GRADE_COLUMNS = ("grade", "relevance", "score", "rel")


def _labels(labels) -> tuple:
    """The labels' name and, for a table, the table. A float grade column
    (pandas makes floats of integers with missing values; ranx's scores
    are floats) is read as the whole numbers it holds."""
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


def grade(
    labels: Union[PathLike, "TableLike"],
    logs: Union[PathLike, "TableLike", Iterable[Union[PathLike, "TableLike"]]],
    k: Union[int, str, Sequence[Union[int, str]]] = (10,),
    *,
    partial: bool = False,
    labels_format: str = "auto",
    logs_format: str = "auto",
    missing: str = "fail",
    repeats: str = "error",
    duplicate_docs: str = "reject",
    run_name: str = "tag",
    join: str = "id",
    min_rel: int = 1,
    stages: Sequence[str] = (),
    stage_order: Sequence[str] = (),
    span_stages: Optional[Mapping[str, str]] = None,
    doc_collections: Optional[PathLike] = None,
    corpus: Optional[PathLike] = None,
    collection_version: Optional[str] = None,
    review_queue: bool = False,
    pool_depth: Optional[int] = None,
    meta: Optional[Mapping[str, str]] = None,
    threads: Optional[int] = None,
    query_field: Optional[str] = None,
    results_field: Optional[str] = None,
    doc_field: Optional[str] = None,
    stage_field: Optional[str] = None,
    run_field: Optional[str] = None,
    latency_field: Optional[str] = None,
    context_field: Optional[str] = None,
    outcome_field: Optional[str] = None,
    allowed_field: Optional[str] = None,
    collection_field: Optional[str] = None,
    rank_field: Optional[str] = None,
) -> Union[Grading, Shard]:
    """Grade ``logs`` against the answer key ``labels`` at cutoffs ``k``
    (a cutoff, ``"all"``, or a sequence of them), with ``rgrade grade``'s
    options as keyword arguments (``--repeats`` is ``repeats``,
    ``--query-field`` is ``query_field``, ``--stage`` is ``stages``, ...).
    ``--max-rejects`` and ``--max-leaks`` only set the command line's exit
    status: read ``summary["counts"]`` instead.

    ``labels`` is a path or a table with the CSV labels' columns
    (``query_id``, ``doc_id``, optional ``grade``, ``task``, ``language``,
    ...). ``logs`` is a path (a file or a directory), a table with one row
    per search event (``query_id``, ``results`` as a list of doc ids,
    optional ``stage``, ``run``, ``latency_ms``, ``context_tokens``,
    ``answer_ok``), :class:`Lines` of JSONL logs, or a list of them.
    Tables are pyarrow Tables, pandas or polars DataFrames, or anything
    with ``__arrow_c_stream__``; they cross without a Python object per
    row.

    Raises a :class:`RgradeError` with the command line's message when
    nothing can be graded, of the class that says what was wrong:
    :class:`UsageError`, :class:`LabelsError`, :class:`LogsError` or
    :class:`OutputError`. Rejected records never raise (see
    ``Grading.rejects``)."""
    labels_name, labels_table = _labels(labels)
    paths, tables, lines = _logs(logs)
    options = {
        "k": [str(cutoff) for cutoff in ([k] if isinstance(k, (int, str)) else k)],
        "partial": partial,
        "labels_format": labels_format,
        "logs_format": logs_format,
        "missing": missing,
        "repeats": repeats,
        "duplicate_docs": duplicate_docs,
        "run_name": run_name,
        "join": join,
        "min_rel": min_rel,
        "stages": list(stages),
        "stage_order": list(stage_order),
        "span_stages": list((span_stages or {}).items()),
        "doc_collections": None if doc_collections is None else os.fspath(doc_collections),
        "corpus": None if corpus is None else os.fspath(corpus),
        "collection_version": collection_version,
        "review_queue": review_queue,
        "pool_depth": pool_depth,
        "meta": list((meta or {}).items()),
        "threads": threads,
        "query_field": query_field,
        "results_field": results_field,
        "doc_field": doc_field,
        "stage_field": stage_field,
        "run_field": run_field,
        "latency_field": latency_field,
        "context_field": context_field,
        "outcome_field": outcome_field,
        "allowed_field": allowed_field,
        "collection_field": collection_field,
        "rank_field": rank_field,
    }
    files = tempfile.TemporaryDirectory(prefix="rgrade-")
    warnings, rows = _grade(
        labels_name,
        labels_table,
        paths,
        tables,
        lines,
        files.name,
        options,
        ["rgrade.grade", labels_name, *paths, *(name for name, _ in tables), *(lines[0] if lines else [])],
    )
    return Shard(files, warnings) if partial else Grading(files, warnings, rows)


def merge(
    labels: Union[PathLike, "TableLike"],
    shards: Iterable[Union[Shard, PathLike]],
    *,
    threads: Optional[int] = None,
) -> Grading:
    """Grade partial gradings (Shards, or directories ``Shard.write`` or
    ``rgrade grade --partial`` wrote) of logs partitioned by query id as one
    grading of all their logs. ``labels`` is the answer key every shard was
    graded with, a path or a table."""
    dirs = [os.fspath(s._dir if isinstance(s, Shard) else s) for s in shards]
    labels_name, labels_table = _labels(labels)
    files = tempfile.TemporaryDirectory(prefix="rgrade-")
    warnings, rows = _merge(
        labels_name,
        labels_table,
        dirs,
        files.name,
        threads=threads,
        command=["rgrade.merge", labels_name, *dirs],
    )
    return Grading(files, warnings, rows)


def compare(
    baseline: Union[Grading, PathLike],
    candidate: Union[Grading, PathLike],
    rules: Optional[PathLike] = None,
    *,
    baseline_run: Optional[str] = None,
    candidate_run: Optional[str] = None,
    metrics: Sequence[str] = (),
    permutations: int = 10_000,
    bootstrap: int = 1_000,
    seed: int = 0,
    alpha: float = 0.05,
    threads: Optional[int] = None,
) -> Comparison:
    """Compare two gradings (Gradings, or ``grade -o`` directories) query by
    query with paired statistics, holding the candidate to the acceptance
    ``rules`` (a TOML file), as ``rgrade compare`` does. A failed rule does
    not raise: see ``Comparison.passed`` and ``gate``."""
    sides = [os.fspath(s._dir if isinstance(s, Grading) else s) for s in (baseline, candidate)]
    files = tempfile.TemporaryDirectory(prefix="rgrade-")
    passed, warnings = _compare(
        sides[0],
        sides[1],
        files.name,
        rules=None if rules is None else os.fspath(rules),
        baseline_run=baseline_run,
        candidate_run=candidate_run,
        metrics=list(metrics),
        permutations=permutations,
        bootstrap=bootstrap,
        seed=seed,
        alpha=alpha,
        threads=threads,
    )
    return Comparison(files, passed, warnings)
