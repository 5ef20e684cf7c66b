"""Grade the retrieval step of a RAG or search system from captured search logs.

``grade`` grades logs against an answer key and returns a :class:`Grading`:
the command line's files, as pyarrow tables and dicts. ``grade(...,
partial=True)`` grades a shard of logs partitioned by query id, and
``merge`` grades the shards as one. ``compare`` compares two gradings. Every grading runs in rgrade's native
code with the GIL released.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.csv as pacsv

from ._rgrade import RgradeError
from ._rgrade import compare as _compare
from ._rgrade import grade as _grade
from ._rgrade import merge as _merge

__all__ = ["Comparison", "Grading", "Shard", "RgradeError", "compare", "grade", "merge"]

PathLike = Union[str, "os.PathLike[str]"]

# Columns that hold names and ids: read as text whatever they look like.
_TEXT_COLUMNS = {"run", "stage", "query_id", "task", "language", "split"}


def _read_csv(path: Path) -> pa.Table:
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split(",")
    text = {c: pa.string() for c in header if c in _TEXT_COLUMNS or c.startswith("missing_at_")}
    options = pacsv.ConvertOptions(column_types=text, strings_can_be_null=False)
    return pacsv.read_csv(path, convert_options=options)


class Grading:
    """What a grading wrote, read back: ``summary`` (summary.json as a dict),
    ``per_query`` and ``aggregates`` (pyarrow Tables with the CSV files'
    columns), ``rejects`` (rejects.jsonl as dicts) and ``warnings``.
    ``write(dir)`` writes the files ``rgrade grade -o dir`` writes."""

    def __init__(self, files: tempfile.TemporaryDirectory, warnings: Sequence[str]):
        self._files = files
        self._dir = Path(files.name)
        self.warnings = list(warnings)
        with open(self._dir / "summary.json", encoding="utf-8") as f:
            self.summary = json.load(f)

    @property
    def per_query(self) -> pa.Table:
        return _read_csv(self._dir / "per_query.csv")

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


def _paths(logs: Union[PathLike, Iterable[PathLike]]) -> list:
    if isinstance(logs, (str, os.PathLike)):
        return [os.fspath(logs)]
    return [os.fspath(log) for log in logs]


def grade(
    labels: PathLike,
    logs: Union[PathLike, Iterable[PathLike]],
    k: Sequence[Union[int, str]] = (10,),
    *,
    partial: bool = False,
    missing: str = "fail",
    repeats: str = "error",
    duplicate_docs: str = "reject",
    min_rel: int = 1,
    stages: Sequence[str] = (),
    stage_order: Sequence[str] = (),
    review_queue: bool = False,
    pool_depth: Optional[int] = None,
    collection_version: Optional[str] = None,
    meta: Optional[Mapping[str, str]] = None,
    threads: Optional[int] = None,
) -> Union[Grading, Shard]:
    """Grade ``logs`` (a path or paths: files or directories) against the
    answer key ``labels`` at cutoffs ``k``, with ``rgrade grade``'s options
    as keyword arguments. Raises :class:`RgradeError` with the command
    line's message when nothing can be graded; rejected records never raise
    (see ``Grading.rejects``)."""
    files = tempfile.TemporaryDirectory(prefix="rgrade-")
    paths = _paths(logs)
    warnings = _grade(
        os.fspath(labels),
        paths,
        files.name,
        [str(cutoff) for cutoff in k],
        partial=partial,
        missing=missing,
        repeats=repeats,
        duplicate_docs=duplicate_docs,
        min_rel=min_rel,
        stages=list(stages),
        stage_order=list(stage_order),
        review_queue=review_queue,
        pool_depth=pool_depth,
        collection_version=collection_version,
        meta=list((meta or {}).items()),
        threads=threads,
        command=["rgrade.grade", os.fspath(labels), *paths],
    )
    return Shard(files, warnings) if partial else Grading(files, warnings)


def merge(
    labels: PathLike,
    shards: Iterable[Union[Shard, PathLike]],
    *,
    threads: Optional[int] = None,
) -> Grading:
    """Grade partial gradings (Shards, or directories ``Shard.write`` or
    ``rgrade grade --partial`` wrote) of logs partitioned by query id as one
    grading of all their logs."""
    dirs = [os.fspath(s._dir if isinstance(s, Shard) else s) for s in shards]
    files = tempfile.TemporaryDirectory(prefix="rgrade-")
    warnings = _merge(
        os.fspath(labels),
        dirs,
        files.name,
        threads=threads,
        command=["rgrade.merge", os.fspath(labels), *dirs],
    )
    return Grading(files, warnings)


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
