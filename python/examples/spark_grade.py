"""Grade JSONL search logs with Spark: the outputs of `rgrade grade -o`.

    python spark_grade.py --labels labels.jsonl --logs logs/ -o graded \\
        [--partitions N] [-k 1,10] [grade's other options]

Spark reads the logs (plain or gzip JSONL, every file `rgrade grade`
would read under the paths given), numbers each line within its file,
repartitions the lines by query id and grades each partition on its
executor with rgrade's Python API as a partial grading; the driver merges
the partial gradings into DIR. DIR then holds what `rgrade grade -o DIR`
writes for the same logs, byte for byte, but for summary.json's inputs
(a file read in parts has no content hash, and its size is counted
decompressed), command and timing, and the report page's list of inputs.

Every executor needs the rgrade package (`pip install ./python`); the
labels file travels with the job. Memory on an executor follows its
partition's share of the logs: raise --partitions for large logs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa

import rgrade

# grade's options the job passes on: (flag, keyword, how it is read).
OPTIONS = [
    ("--missing", "missing", str),
    ("--repeats", "repeats", str),
    ("--duplicate-docs", "duplicate_docs", str),
    ("--min-rel", "min_rel", int),
    ("--collection-version", "collection_version", str),
    ("--query-field", "query_field", str),
    ("--results-field", "results_field", str),
    ("--doc-field", "doc_field", str),
    ("--stage-field", "stage_field", str),
    ("--run-field", "run_field", str),
    ("--latency-field", "latency_field", str),
    ("--context-field", "context_field", str),
    ("--outcome-field", "outcome_field", str),
    ("--allowed-field", "allowed_field", str),
    ("--collection-field", "collection_field", str),
]

# The JSONL files Spark's text source reads as rgrade does.
READABLE = (".jsonl", ".jsonl.gz")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", required=True, help="the answer key, a file")
    parser.add_argument("--logs", required=True, nargs="+", help="JSONL log files or directories")
    parser.add_argument("-o", "--out", required=True, help="the output directory")
    parser.add_argument("-k", "--k", default="10", help="cutoffs, comma separated")
    parser.add_argument("--partitions", type=int, default=None, help="partitions by query id")
    parser.add_argument("--master", default=None, help="Spark master, e.g. local[2]")
    parser.add_argument("--stage", action="append", default=[], dest="stages")
    parser.add_argument("--stage-order", default=None)
    parser.add_argument("--review-queue", action="store_true")
    parser.add_argument("--pool-depth", type=int, default=None)
    parser.add_argument("--meta", action="append", default=[], help="KEY=VALUE")
    parser.add_argument("--max-rejects", type=int, default=0)
    parser.add_argument("--max-leaks", type=int, default=0)
    for flag, dest, kind in OPTIONS:
        parser.add_argument(flag, dest=dest, type=kind, default=None)
    return parser.parse_args(argv)


def grade_options(args) -> dict:
    options = {dest: getattr(args, dest) for _, dest, _ in OPTIONS if getattr(args, dest) is not None}
    options["k"] = args.k.split(",")
    options["stages"] = args.stages
    if args.stage_order:
        options["stage_order"] = args.stage_order.split(",")
    if args.review_queue:
        options["review_queue"] = True
        options["pool_depth"] = args.pool_depth
    options["meta"] = dict(item.split("=", 1) for item in args.meta)
    return options


def json_path(field: str) -> str:
    """The Spark JSONPath of a field flag: a top-level key, or a JSON
    pointer (`/request/qid`)."""
    if not field.startswith("/"):
        return f"$['{field}']"
    keys = [key.replace("~1", "/").replace("~0", "~") for key in field[1:].split("/")]
    return "$" + "".join(f"['{key}']" for key in keys)


def local_path(uri: str) -> str:
    """The absolute path of a file Spark names by its URI."""
    return os.path.abspath(unquote(urlparse(uri).path))


def numbered_lines(spark, inputs):
    """Every line of `inputs` as (input, line, text): the lines of each
    split of a file are counted once, so each line's number is its split's
    first line number plus its place in the split."""
    from pyspark.sql import functions as F

    lines = (
        spark.read.option("lineSep", "\n")
        .text(inputs)
        .select(
            F.col("value").cast("binary").alias("text"),
            F.input_file_name().alias("file"),
            F.input_file_block_start().alias("block"),
            F.monotonically_increasing_id().alias("place"),
        )
    )
    # A split's rows hold consecutive places, in file order.
    blocks = lines.groupBy("file", "block").agg(F.count("*").alias("rows"), F.min("place").alias("first"))
    index = {os.path.abspath(name): i for i, name in enumerate(inputs)}
    starts, seen = [], {}
    for row in sorted(blocks.collect(), key=lambda r: (r["file"], r["block"])):
        path = local_path(row["file"])
        before = seen.get(path, 0)
        starts.append((row["file"], row["block"], index[path], before - row["first"] + 1))
        seen[path] = before + row["rows"]
    offsets = spark.createDataFrame(starts, "file string, block long, input int, shift long")
    return lines.join(F.broadcast(offsets), ["file", "block"]).select(
        "input", (F.col("place") + F.col("shift")).alias("line"), "text"
    )


def grade_partitions(labels_name: str, inputs: list, options: dict):
    """The function mapInArrow runs on each partition: its lines graded
    as a partial grading, returned as the shard's files."""

    def grade(batches):
        from pyspark import SparkFiles, TaskContext

        table = pa.Table.from_batches(list(batches))
        if table.num_rows == 0:
            return
        lines = rgrade.Lines(inputs, table.select(["input", "line", "text"]))
        with warnings.catch_warnings():
            # A shard warns of its partition only; the merge warns of the whole.
            warnings.simplefilter("ignore", rgrade.RgradeWarning)
            shard = rgrade.grade_shard(SparkFiles.get(labels_name), lines, threads=1, **options)
        part = TaskContext.get().partitionId()
        with tempfile.TemporaryDirectory() as directory:
            shard.write(directory)
            names = sorted(os.listdir(directory))
            contents = [Path(directory, name).read_bytes() for name in names]
        yield pa.RecordBatch.from_pydict(
            {"part": [part] * len(names), "name": names, "content": contents},
            schema=pa.schema([("part", pa.int32()), ("name", pa.string()), ("content", pa.binary())]),
        )

    return grade


def main(argv=None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    inputs = rgrade.log_files(args.logs)
    unreadable = [name for name in inputs if not name.endswith(READABLE)]
    if unreadable:
        print(f"spark_grade: {unreadable[0]}: the job reads JSONL logs ({', '.join(READABLE)})", file=sys.stderr)
        return 2
    options = grade_options(args)
    # Run directly (not by spark-submit), local executors use this Python,
    # which has rgrade.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("rgrade")
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    try:
        spark.sparkContext.addFile(os.path.abspath(args.labels))
        lines = numbered_lines(spark, inputs)
        query = F.get_json_object(F.col("text").cast("string"), json_path(args.query_field or "query_id"))
        partitions = args.partitions or spark.sparkContext.defaultParallelism
        parts = lines.repartition(partitions, query).mapInArrow(
            grade_partitions(os.path.basename(args.labels), inputs, options),
            "part int, name string, content binary",
        )
        shards = {}
        for row in parts.collect():
            shards.setdefault(row["part"], {})[row["name"]] = row["content"]
    finally:
        spark.stop()
    with tempfile.TemporaryDirectory() as directory:
        dirs = []
        for part in sorted(shards):
            shard = Path(directory, f"shard-{part}")
            shard.mkdir()
            for name, content in shards[part].items():
                (shard / name).write_bytes(content)
            dirs.append(shard)
        with warnings.catch_warnings():
            # The job says rgrade's warnings and the rejects itself, as `rgrade grade` does.
            warnings.simplefilter("ignore", rgrade.RgradeWarning)
            warnings.simplefilter("ignore", rgrade.RejectedRecordsWarning)
            graded = rgrade.merge(args.labels, dirs)
    graded.write(args.out)
    for warning in graded.warnings:
        print(f"spark_grade: warning: {warning}", file=sys.stderr)
    counts = graded.summary["counts"]
    print(f"graded {counts['graded_records']} records of {len(inputs)} files into {args.out}")
    over = limits_exceeded(graded, args)
    for reason in over:
        print(f"spark_grade: {reason}", file=sys.stderr)
    return 1 if over else 0


def limits_exceeded(graded, args):
    """Why the grading exceeds --max-rejects or --max-leaks, naming the
    first record over each limit, as rgrade grade says it."""
    counts = graded.summary["counts"]
    reasons = []
    if counts["rejected"] > args.max_rejects:
        first = graded.rejects.slice(0, 1).to_pylist()[0]
        reasons.append(
            f"{counts['rejected']} rejected record(s) exceed --max-rejects {args.max_rejects}; "
            f"the first is {first['file']}:{first['line']}: {first['reason']}: {first['detail']} "
            f"(all are listed in {Path(args.out, 'rejects.jsonl')})"
        )
    if counts["leaked_results"] > args.max_leaks:
        first = graded.summary["leaks"][0]
        reasons.append(
            f"{counts['leaked_results']} result(s) outside the user's allowed collections exceed "
            f"--max-leaks {args.max_leaks}; the first is {first['file']}:{first['line']}: query "
            f"{first['query_id']} got {first['doc_id']} from collection {first['collection']}"
        )
    return reasons


if __name__ == "__main__":
    sys.exit(main())
