"""Grade logs too large for one machine on Spark: what ``rgrade grade``
writes for the same rows, graded where the logs are.

:func:`grade` takes the logs as a Spark DataFrame (so anything Spark
reads: Parquet, JSON, Delta, Iceberg, a metastore table) or as paths of
JSONL or Parquet files, and the labels as a path, a URI or a DataFrame.
It repartitions the logs by query id, orders each partition by the logs'
input order, grades each partition as a shard on its executor
(:func:`rgrade.grade_shard`, Arrow batches in, a few bytes per judged
document out) and merges the shards on the driver (:func:`rgrade.merge`).
Repeated captures of a query land in one partition, so ``repeats`` and
``time_field`` pick the capture one machine would pick.

``python -m rgrade.spark``, or ``spark-submit`` given this file, is the
same job from the command line, with grade's options and rgrade's exit
statuses: 0, 1 when rejects or leaks exceed ``--max-rejects`` or
``--max-leaks``, 2 when nothing could be graded.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import warnings
from datetime import datetime, timezone
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union, cast
from urllib.parse import unquote, urlparse

import pyarrow as pa

import rgrade

from rgrade._rgrade import main as _rgrade_main

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from typing_extensions import TypeIs, Unpack

__all__ = ["grade", "main"]

# The column that carries each row's place in input order through the
# shuffle; no log column is so named.
_ORDER = "__rgrade_input_order"
# What an executor returns: the files of its shard, or the error that
# stopped it.
_SHARD_SCHEMA = "part int, name string, content binary"
_SHARD_COLUMNS: Dict[str, pa.DataType] = {"part": pa.int32(), "name": pa.string(), "content": pa.binary()}
_SHARD_ARROW = pa.schema(_SHARD_COLUMNS)
_ERROR = "\0error"
# The JSONL files graded line by line; Parquet files are graded as rows.
_JSONL = (".jsonl", ".jsonl.gz")
_PARQUET = (".parquet",)
# The grading options only the merge takes: a shard has no means.
_MERGE_ONLY = ("openmetrics",)


def grade(
    logs: Union["DataFrame", rgrade.PathLike, Sequence[rgrade.PathLike]],
    labels: Union[rgrade.PathLike, "DataFrame"],
    k: Optional[rgrade.Cutoffs] = None,
    *,
    out: Optional[rgrade.PathLike] = None,
    partitions: Optional[int] = None,
    spark: Optional["SparkSession"] = None,
    **options: "Unpack[rgrade.GradeOptions]",
) -> rgrade.Grading:
    """Grade ``logs`` against ``labels`` on Spark, as :func:`rgrade.grade`
    grades them on one machine, and write the result into ``out`` (a
    directory or an object-storage URI) when given.

    ``logs`` is a DataFrame with the columns of a logs table (one row per
    search event: ``query_id``, ``results``, ...; docs/reference.md,
    "Arrow tables"), in the order Spark numbers its rows, or the paths of
    JSONL or Parquet logs (files and directories, as ``rgrade grade``
    finds them; ``key=value`` folders are fields). ``labels`` is the
    answer key: a path or URI every executor can read (a local file is
    shipped with the job), or a DataFrame with a labels table's columns.
    ``partitions`` is how many shards to grade (Spark's default
    parallelism if not given), ``spark`` the session (the active one if
    not given); the other keyword arguments are :func:`rgrade.grade`'s.

    Raises :func:`rgrade.grade`'s errors, with its messages, whether they
    arose on the driver or on an executor."""
    session = spark or _session(None)
    key: Union[rgrade.PathLike, pa.Table] = _to_arrow(labels) if _is_frame(labels) else labels
    given: Dict[str, Any] = dict(options)
    plan = _shard_plan(given)
    with tempfile.TemporaryDirectory(prefix="rgrade-spark-") as directory:
        shards = _grade_shards(session, logs, key, k, plan, partitions, Path(directory))
        if not shards:
            # No row at all: grade nothing as one machine would, for its message.
            empty = _to_arrow(logs.limit(0)) if _is_frame(logs) else logs
            return rgrade.grade(key, empty, k, **options)
        merging = {name: given[name] for name in ("threads", "as_of", *_MERGE_ONLY) if name in given}
        graded = rgrade.merge(key, shards, **merging)
    if out is not None:
        graded.write(out)
    return graded


def _shard_plan(options: Dict[str, Any]) -> Dict[str, Any]:
    """The options each executor grades its shard with: every shard stands
    for the same time (now, unless ``as_of`` says), and grades on one
    thread, as one of many tasks."""
    plan = {name: value for name, value in options.items() if name not in ("threads", *_MERGE_ONLY)}
    plan.setdefault("as_of", datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    return plan


def _session(master: Optional[str]) -> "SparkSession":
    from pyspark.sql import SparkSession

    # rgrade says what it graded; Spark's progress bar would draw over it.
    builder = SparkSession.builder.appName("rgrade").config("spark.ui.showConsoleProgress", "false")
    if master:
        builder = builder.master(master)
    return builder.getOrCreate()


def _is_frame(value: object) -> "TypeIs[DataFrame]":
    """Whether ``value`` is a Spark DataFrame (pyspark imported only where
    one is given)."""
    return type(value).__name__ == "DataFrame" and type(value).__module__.startswith("pyspark.")


def _to_arrow(frame: "DataFrame") -> pa.Table:
    """The rows of ``frame`` collected to the driver as Arrow: ``toArrow``
    from Spark 4, the batches it is made of before."""
    if hasattr(frame, "toArrow"):
        table: pa.Table = frame.toArrow()
        return table
    from pyspark.sql.pandas.types import to_arrow_schema

    batches = cast(Any, frame)._collect_as_arrow()
    return pa.Table.from_batches(batches, schema=to_arrow_schema(frame.schema))


def _is_uri(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


class _ShippedLabels:
    """The answer key as each executor reads it: a URI it reads itself, or
    the bytes of a local file or a table's Arrow IPC, broadcast once
    and kept in a file under the executor's temporary directory."""

    def __init__(self, session: "SparkSession", labels: Any):
        self.uri: Optional[str] = None
        self.name = ""
        self.content: Any = None
        if isinstance(labels, pa.Table):
            sink = pa.BufferOutputStream()
            table = labels
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            self.content = session.sparkContext.broadcast(sink.getvalue().to_pybytes())
        elif _is_uri(os.fspath(labels)):
            self.uri = os.fspath(labels)
        else:
            path = Path(os.fspath(labels))
            try:
                data = path.read_bytes()
            except OSError as err:
                raise rgrade.LabelsError(f"{path}: cannot read labels: {err.strerror}") from None
            self.name = path.name
            self.content = session.sparkContext.broadcast(data)

    def on_executor(self) -> Union[str, pa.Table]:
        if self.uri is not None:
            return self.uri
        data: bytes = self.content.value
        if not self.name:
            return pa.ipc.open_stream(data).read_all()
        # The file keeps its name, whose ending may tell its format.
        digest = hashlib.sha256(data).hexdigest()[:16]
        path = Path(tempfile.gettempdir(), f"rgrade-labels-{digest}", self.name)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            staged = path.with_name(f".{self.name}.{os.getpid()}")
            staged.write_bytes(data)
            staged.replace(path)
        return str(path)


def _grade_shards(
    session: "SparkSession",
    logs: Any,
    labels: Any,
    k: Optional[rgrade.Cutoffs],
    plan: Dict[str, Any],
    partitions: Optional[int],
    directory: Path,
) -> List[Path]:
    """Grade the logs' partitions as shards on the executors; returns the
    shards' directories, written under ``directory``, in partition order."""
    frame, query, grader = _partitionable(session, logs, _ShippedLabels(session, labels), k, plan)
    count = partitions or session.sparkContext.defaultParallelism
    spread = frame.repartition(count, query) if query is not None else frame.repartition(count)
    ordered = spread.sortWithinPartitions(_ORDER).drop(_ORDER)
    shards: Dict[int, Dict[str, bytes]] = {}
    for row in ordered.mapInArrow(grader, _SHARD_SCHEMA).collect():
        shards.setdefault(row["part"], {})[row["name"]] = row["content"]
    for part in sorted(shards):
        if _ERROR in shards[part]:
            kind, _, message = shards[part][_ERROR].decode().partition("\n")
            raise getattr(rgrade, kind, rgrade.RgradeError)(message)
    dirs = []
    for part in sorted(shards):
        shard = directory / f"shard-{part}"
        shard.mkdir()
        for name, content in shards[part].items():
            (shard / name).write_bytes(content)
        dirs.append(shard)
    return dirs


def _partitionable(
    session: "SparkSession", logs: Any, shipped: "_ShippedLabels", k: Any, plan: Dict[str, Any]
) -> Tuple["DataFrame", Optional["Column"], "_Grader"]:
    """The logs as rows with their place in input order (the column
    ``_ORDER``), the column to partition them by, and what grades a
    partition of them."""
    from pyspark.sql import functions as F

    query_field = plan.get("query_field") or "query_id"
    if _is_frame(logs):
        order = F.struct(F.lit(0).alias("input"), F.monotonically_increasing_id().alias("row"))
        frame = logs.withColumn(_ORDER, order)
        return frame, _query_column(frame, query_field), _grade_rows(shipped, k, plan)
    paths = [os.fspath(p) for p in (logs if isinstance(logs, (list, tuple)) else [logs])]
    files = rgrade.log_files(paths)
    if files and all(name.endswith(_JSONL) for name in files):
        query = F.get_json_object(F.col("text").cast("string"), _json_path(query_field))
        return _numbered_lines(session, files), query, _grade_lines(shipped, files, k, plan)
    if files and all(name.endswith(_PARQUET) for name in files):
        frame = _parquet_rows(session, paths)
        return frame, _query_column(frame, query_field), _grade_rows(shipped, k, plan)
    if not files:
        raise rgrade.UsageError("no log input: name log files or directories, or pass a DataFrame")
    other = next((name for name in files if not name.endswith(_JSONL + _PARQUET)), None)
    if other is not None:
        raise rgrade.UsageError(
            f"{other}: rgrade.spark reads JSONL ({', '.join(_JSONL)}) or Parquet logs; "
            "read other sources with Spark and pass the DataFrame"
        )
    raise rgrade.UsageError(
        "rgrade.spark reads JSONL or Parquet logs, one kind at a time: read a mix with Spark and pass the DataFrame"
    )


def _field_keys(field: str) -> List[str]:
    """The keys a field flag goes through, as rgrade reads it: ``/a/b`` is
    a JSON pointer, anything else a top-level key."""
    if not field.startswith("/"):
        return [field]
    return [key.replace("~1", "/").replace("~0", "~") for key in field[1:].split("/")]


def _query_column(frame: "DataFrame", field: str) -> Optional["Column"]:
    """The column holding the query id ``field`` names (ranx's ``q_id``
    for the default when there is no ``query_id``), or None when the frame
    has none: the rows then spread evenly, and rgrade rejects them as it
    would on one machine."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    if field == "query_id" and "query_id" not in frame.columns and "q_id" in frame.columns:
        field = "q_id"
    keys = _field_keys(field)
    column = F.col(f"`{keys[0]}`")
    for key in keys[1:]:
        column = column.getField(key)
    try:
        frame.select(column).schema
    except AnalysisException:
        return None
    return column


def _json_path(field: str) -> str:
    """The Spark JSONPath of a field flag."""
    return "$" + "".join(f"['{key}']" for key in _field_keys(field))


def _spark_path(uri: str) -> str:
    """The path a file Spark names by its URI has for rgrade."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return os.path.abspath(unquote(parsed.path))
    return uri


def _places(files: Sequence[str]) -> Dict[str, int]:
    """Each file's place in input order, by the path ``_spark_path`` gives
    the name Spark reads it by."""
    return {(name if _is_uri(name) else os.path.abspath(name)): i for i, name in enumerate(files)}


def _input_index(session: "SparkSession", files: Sequence[str], names: Sequence[str]) -> "DataFrame":
    """A small table of the place in input order of each file Spark read,
    by the name Spark gives it (``names``)."""
    index = _places(files)
    rows = []
    for name in names:
        place = index.get(_spark_path(name))
        if place is None:
            raise rgrade.LogsError(f"{name}: Spark read a file rgrade does not list among the logs")
        rows.append((name, place))
    return session.createDataFrame(rows, "__rgrade_file string, input int")


def _numbered_lines(session: "SparkSession", files: Sequence[str]) -> "DataFrame":
    """Every line of the JSONL ``files`` as (input, line, text) with its
    place in input order: the lines of each split of a file are counted
    once, so each line's number is its split's first line number plus its
    place in the split."""
    from pyspark.sql import functions as F

    lines = (
        session.read.option("lineSep", "\n")
        .text(list(files))
        .select(
            F.col("value").cast("binary").alias("text"),
            F.input_file_name().alias("file"),
            F.input_file_block_start().alias("block"),
            F.monotonically_increasing_id().alias("place"),
        )
    )
    # A split's rows hold consecutive places, in file order.
    blocks = lines.groupBy("file", "block").agg(F.count("*").alias("rows"), F.min("place").alias("first"))
    index = _places(files)
    starts: List[Tuple[str, int, int, int]] = []
    seen: Dict[str, int] = {}
    for row in sorted(blocks.collect(), key=lambda r: (r["file"], r["block"])):
        path = _spark_path(row["file"])
        before = seen.get(path, 0)
        starts.append((row["file"], row["block"], index[path], before - row["first"] + 1))
        seen[path] = before + row["rows"]
    offsets = session.createDataFrame(starts, "file string, block long, input int, shift long")
    numbered = lines.join(F.broadcast(offsets), ["file", "block"]).select(
        "input", (F.col("place") + F.col("shift")).alias("line"), "text"
    )
    return numbered.withColumn(_ORDER, F.struct("input", "line"))


def _parquet_rows(session: "SparkSession", paths: Sequence[str]) -> "DataFrame":
    """The rows of the Parquet logs ``paths`` name, with each row's place
    in input order (its file's place, its row in the file). A directory's
    ``key=value`` folders are columns of text, as rgrade reads them: a
    folder ``hour=02`` is ``"02"``, not the number 2."""
    from pyspark.sql import functions as F

    inference = "spark.sql.sources.partitionColumnTypeInference.enabled"
    saved = session.conf.get(inference, "true") or "true"
    session.conf.set(inference, "false")
    files: List[str] = []
    try:
        frames = []
        for path in paths:
            named = rgrade.log_files([path])
            files += named
            # Folders below a directory named are partitions, as for rgrade.
            reader = session.read.option("basePath", path) if os.path.isdir(path) or _is_uri(path) else session.read
            frames.append(reader.parquet(*named))
    finally:
        session.conf.set(inference, saved)
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other, allowMissingColumns=True)
    placed = frame.withColumns(
        {"__rgrade_file": F.col("_metadata.file_path"), "__rgrade_row": F.col("_metadata.row_index")}
    )
    inputs = _input_index(session, files, [row[0] for row in placed.select("__rgrade_file").distinct().collect()])
    joined = placed.join(F.broadcast(inputs), "__rgrade_file")
    order = F.struct("input", F.col("__rgrade_row").alias("row"))
    return joined.withColumn(_ORDER, order).drop("__rgrade_file", "__rgrade_row", "input")


def _graded_shard(grade: Callable[[], rgrade.Shard]) -> Iterator[pa.RecordBatch]:
    """The batch an executor returns: the shard's files, or the error."""
    from pyspark import TaskContext

    part = cast(TaskContext, TaskContext.get()).partitionId()
    try:
        with warnings.catch_warnings():
            # A shard warns of its partition only; the merge warns of the whole.
            warnings.simplefilter("ignore")
            shard = grade()
    except rgrade.RgradeError as err:
        files = {_ERROR: f"{type(err).__name__}\n{err}".encode()}
    else:
        with tempfile.TemporaryDirectory(prefix="rgrade-shard-") as directory:
            shard.write(directory)
            files = {name: Path(directory, name).read_bytes() for name in sorted(os.listdir(directory))}
    yield pa.RecordBatch.from_pydict(
        {"part": [part] * len(files), "name": list(files), "content": list(files.values())},
        schema=_SHARD_ARROW,
    )


def _stream(batches: Iterator[pa.RecordBatch]) -> Optional[pa.RecordBatchReader]:
    """A partition's batches as a reader, or None for an empty partition."""
    first = next(batches, None)
    while first is not None and first.num_rows == 0:
        first = next(batches, None)
    if first is None:
        return None
    return pa.RecordBatchReader.from_batches(first.schema, chain([first], batches))


# What mapInArrow runs on each partition.
_Grader = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _grade_rows(shipped: _ShippedLabels, k: Any, plan: Dict[str, Any]) -> _Grader:
    """What each executor runs on its partition of log rows."""

    def grade_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = _stream(batches)
        if rows is None:
            return
        yield from _graded_shard(lambda: rgrade.grade_shard(shipped.on_executor(), rows, k, threads=1, **plan))

    return grade_partition


def _grade_lines(shipped: _ShippedLabels, files: Sequence[str], k: Any, plan: Dict[str, Any]) -> _Grader:
    """What each executor runs on its partition of numbered JSONL lines."""

    def grade_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        lines = _stream(batches)
        if lines is None:
            return
        handed = rgrade.Lines(files, lines)
        yield from _graded_shard(lambda: rgrade.grade_shard(shipped.on_executor(), handed, k, threads=1, **plan))

    return grade_partition


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m rgrade.spark",
        description="Grade logs on Spark into what `rgrade grade -o DIR` writes.",
    )
    parser.add_argument("--labels", required=True, help="the answer key: a path or URI")
    logs = parser.add_mutually_exclusive_group(required=True)
    logs.add_argument("--logs", nargs="+", help="JSONL or Parquet log files or directories")
    logs.add_argument("--logs-table", help="a table of the session's catalog (Hive, Delta, Iceberg)")
    parser.add_argument("-o", "--out", required=True, help="the output directory or URI")
    parser.add_argument("-k", "--k", default="10", help="cutoffs, comma separated")
    parser.add_argument("--partitions", type=int, default=None, help="shards to grade (Spark's default parallelism)")
    parser.add_argument("--master", default=None, help="Spark master, e.g. local[2]")
    parser.add_argument("--max-rejects", default="0")
    parser.add_argument("--max-leaks", default="0")
    parser.add_argument("--as-of", default=None)
    parser.add_argument("--openmetrics", default=None)
    parser.add_argument("-q", "--quiet", action="store_true")
    parser.add_argument("--stage", action="append", default=[], dest="stages")
    parser.add_argument("--stage-order", type=_listed, default=None)
    parser.add_argument("--slice-by", type=_listed, default=None)
    parser.add_argument("--review-queue", action="store_true")
    parser.add_argument("--pool-depth", type=int, default=None)
    parser.add_argument("--meta", action="append", default=[], help="KEY=VALUE")
    parser.add_argument("--min-rel", type=int, default=None)
    for name in _TEXT_OPTIONS:
        parser.add_argument("--" + name.replace("_", "-"), dest=name, default=None)
    return parser.parse_args(argv)


def _listed(text: str) -> List[str]:
    return text.split(",")


# grade's options of one text value, each its flag with `-` as `_`.
_TEXT_OPTIONS = (
    "labels_format",
    "logs_format",
    "missing",
    "repeats",
    "duplicate_docs",
    "bad_files",
    "run_name",
    "join",
    "reviewers",
    "unit",
    "doc_of",
    "collection_version",
    *(name for name in rgrade.GradeOptions.__annotations__ if name.endswith("_field")),
)


def _grade_options(args: argparse.Namespace) -> Dict[str, Any]:
    options: Dict[str, Any] = {name: getattr(args, name) for name in _TEXT_OPTIONS if getattr(args, name) is not None}
    for name in ("stage_order", "slice_by", "min_rel", "pool_depth", "as_of"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if args.stages:
        options["stages"] = args.stages
    if args.review_queue:
        options["review_queue"] = True
    if args.meta:
        options["meta"] = dict(item.split("=", 1) for item in args.meta)
    return options


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the job with ``argv`` (this process's arguments if not given);
    returns the exit status ``rgrade grade`` would."""
    args = _arguments(sys.argv[1:] if argv is None else argv)
    options = _grade_options(args)
    # Run directly (not by spark-submit), local executors use this Python,
    # which has rgrade.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.errors import PySparkException

    ours = SparkSession.getActiveSession() is None
    session = _session(args.master)
    try:
        with tempfile.TemporaryDirectory(prefix="rgrade-spark-") as directory:
            logs = session.table(args.logs_table) if args.logs_table else args.logs
            plan = _shard_plan(options)
            shards = _grade_shards(session, logs, args.labels, _listed(args.k), plan, args.partitions, Path(directory))
            if not shards:
                raise rgrade.LogsError("no log record: the logs hold no row")
            merge = ["rgrade", "merge", "--labels", args.labels, "-o", args.out]
            merge += ["--max-rejects", args.max_rejects, "--max-leaks", args.max_leaks]
            merge += ["--as-of", args.as_of] if args.as_of else []
            merge += ["--openmetrics", args.openmetrics] if args.openmetrics else []
            merge += ["-q"] if args.quiet else []
            return _rgrade_main([*merge, *map(str, shards)])
    except rgrade.RgradeError as err:
        print(f"rgrade: {err}", file=sys.stderr)
        return 2
    except PySparkException as err:
        print(f"rgrade: Spark could not read or grade the logs: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    finally:
        if ours:
            session.stop()


if __name__ == "__main__":
    # Run as a file (spark-submit's way), this module is `__main__`: the
    # executors must find the functions they run in `rgrade.spark`.
    from rgrade.spark import main as run

    sys.exit(run())
