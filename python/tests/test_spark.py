"""rgrade.spark, with pyspark in local mode, writes what `rgrade grade -o`
writes for the same rows: per_query.csv and aggregates.csv byte for byte,
whether the logs come as JSONL files (rejects.jsonl too, each record known
by its file and line), as a Parquet lake Spark wrote with `partitionBy`,
as a JSON source or as a DataFrame built in memory; and its command line
keeps rgrade's exit statuses and messages."""

import csv
import json
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow.dataset as pads
import pytest

import rgrade
import rgrade.spark

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data-samples"
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))
SAME = ("per_query.csv", "aggregates.csv")


def cli(out: Path, labels: Path, logs: Path, *flags, expect=0):
    run = subprocess.run(
        [RGRADE, "grade", "--labels", str(labels), *flags, "-q", "-o", str(out), str(logs)],
        capture_output=True, text=True,
    )
    assert run.returncode == expect, run.stderr


def assert_same(a: Path, b: Path, names=SAME):
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_jsonl_files_grade_as_the_command_line_grades_them(tmp_path, spark):
    labels, logs = SAMPLES / "realistic/labels.jsonl", SAMPLES / "realistic/logs"
    cli(tmp_path / "cli", labels, logs, "-k", "1,5,10", "--repeats", "last", "--stage-order", "retrieve,final",
        expect=1)
    with pytest.warns(rgrade.RejectedRecordsWarning):
        graded = rgrade.spark.grade(logs, labels, [1, 5, 10], repeats="last", stage_order=["retrieve", "final"],
                                    partitions=3, spark=spark, out=tmp_path / "spark")
    assert_same(tmp_path / "cli", tmp_path / "spark", (*SAME, "rejects.jsonl"))
    assert graded.summary["counts"] == json.loads((tmp_path / "cli/summary.json").read_text())["counts"]


def test_generated_logs_grade_as_the_command_line_grades_them(tmp_path, spark):
    run = subprocess.run([RGRADE, "gen", "--queries", "3000", "--seed", "5", "--unlabeled", "500",
                          "-o", str(tmp_path / "gen")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    flags = ["-k", "1,10", "--stage-order", "retrieve,rerank,final", "--review-queue"]
    cli(tmp_path / "cli", tmp_path / "gen/labels.jsonl", tmp_path / "gen/logs.jsonl", *flags)
    status = rgrade.spark.main(["--labels", str(tmp_path / "gen/labels.jsonl"), "--logs", str(tmp_path / "gen/logs.jsonl"),
                                "-o", str(tmp_path / "spark"), "-q", "--partitions", "4", *flags])
    assert status == 0
    assert_same(tmp_path / "cli", tmp_path / "spark", (*SAME, "review_queue.csv"))


def captures():
    """A day of captures of 30 queries, each captured several times at its
    own second, so which capture is graded shows in recall. Hours are not
    padded, so the lake's path order (`hour=10` before `hour=2`) is not
    time order."""
    day = datetime(2026, 12, 1, tzinfo=timezone.utc)
    rows = []
    for i in range(240):
        query = f"q{i % 30}"
        ts = day + timedelta(seconds=(i * 7919) % 86400)
        docs = [f"d{(i * 31 + j) % 50}" for j in range(3)]
        if (i * 7) % 11 < 6:
            docs.insert(i % 4, f"rel-{query}")
        rows.append({"query_id": query, "results": docs, "ts": ts, "tenant": f"t{i % 30 % 4}",
                     "dt": ts.strftime("%Y-%m-%d"), "hour": str(ts.hour)})
    return rows


def write_labels(path: Path):
    with path.open("w") as out:
        for q in range(30):
            out.write(json.dumps({"query_id": f"q{q}", "relevant": [f"rel-q{q}"]}) + "\n")


def test_a_partitioned_parquet_lake_grades_alike_on_three_engines(tmp_path, spark):
    """The CLI, Python (a pyarrow Dataset of the lake) and Spark (the lake's
    path, the DataFrame Spark reads from it, and the one in memory it was
    written from, as a DataFrame and as a table of the catalog) give one
    per_query.csv: the latest capture by time,
    sliced by a partition folder."""
    write_labels(tmp_path / "labels.jsonl")
    lake = tmp_path / "lake"
    frame = spark.createDataFrame(captures())
    frame.repartition(3).write.partitionBy("dt", "hour").parquet(str(lake))
    options = dict(time_field="ts", repeats="last", slice_by=["hour"])
    flags = ["-k", "1,10", "--time-field", "ts", "--repeats", "last", "--slice-by", "hour"]
    cli(tmp_path / "cli", tmp_path / "labels.jsonl", lake, *flags)
    rgrade.spark.grade(lake, tmp_path / "labels.jsonl", [1, 10], spark=spark, out=tmp_path / "path", **options)
    assert_same(tmp_path / "cli", tmp_path / "path")
    rgrade.spark.grade(frame, tmp_path / "labels.jsonl", [1, 10], spark=spark, out=tmp_path / "memory", **options)
    assert_same(tmp_path / "cli", tmp_path / "memory")
    frame.createOrReplaceTempView("captures")
    status = rgrade.spark.main(["--labels", str(tmp_path / "labels.jsonl"), "--logs-table", "captures",
                                "-o", str(tmp_path / "table"), "-q", *flags])
    assert status == 0
    assert_same(tmp_path / "cli", tmp_path / "table")
    typed = spark.read.parquet(str(lake)).withColumn("hour", spark_format_hour())
    rgrade.spark.grade(typed, tmp_path / "labels.jsonl", [1, 10], spark=spark, out=tmp_path / "frame", **options)
    assert_same(tmp_path / "cli", tmp_path / "frame")
    dataset = pads.dataset(lake, format="parquet", partitioning=pads.partitioning(flavor="hive"))
    rgrade.grade(tmp_path / "labels.jsonl", dataset, [1, 10], **options).write(tmp_path / "python")
    assert_same(tmp_path / "cli", tmp_path / "python", ("per_query.csv",))
    assert recalls(tmp_path / "cli") == latest_recalls(captures())


def recalls(out: Path):
    with (out / "per_query.csv").open() as per_query:
        return {row["query_id"]: float(row["recall@10"]) for row in csv.DictReader(per_query)}


def latest_recalls(rows):
    """Each query's recall@10 on its latest capture by time: the oracle.
    Most queries' first capture differs from it, so input order would not do."""
    latest = {}
    for row in rows:
        if row["query_id"] not in latest or row["ts"] > latest[row["query_id"]]["ts"]:
            latest[row["query_id"]] = row
    return {q: float(f"rel-{q}" in row["results"][:10]) for q, row in latest.items()}


def spark_format_hour():
    """Spark reads the folder `hour=2` as the number 2: its text back."""
    from pyspark.sql import functions as F

    return F.col("hour").cast("string")


def test_a_json_source_and_labels_in_a_dataframe_grade_as_files_do(tmp_path, spark):
    run = subprocess.run([RGRADE, "gen", "--queries", "400", "--seed", "9", "--unlabeled", "50",
                          "-o", str(tmp_path / "gen")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    labels = [json.loads(line) for line in (tmp_path / "gen/labels.jsonl").read_text().splitlines()]
    rows = [
        {"query_id": label["query_id"], "doc_id": doc, "grade": grade,
         "task": label["task"], "language": label["language"]}
        for label in labels
        for doc, grade in (label["relevant"].items() if isinstance(label["relevant"], dict)
                           else ((doc, 1) for doc in label["relevant"]))
    ]
    with (tmp_path / "labels.csv").open("w") as out:
        out.write("query_id,doc_id,grade,task,language\n")
        out.writelines(f"{r['query_id']},{r['doc_id']},{r['grade']},{r['task']},{r['language']}\n" for r in rows)
    cli(tmp_path / "cli", tmp_path / "labels.csv", tmp_path / "gen/logs.jsonl", "-k", "3,10")
    logs = spark.read.json(str(tmp_path / "gen/logs.jsonl"))
    key = spark.createDataFrame(rows)
    rgrade.spark.grade(logs, key, [3, 10], spark=spark, partitions=3, out=tmp_path / "spark")
    assert_same(tmp_path / "cli", tmp_path / "spark")


def test_the_command_line_keeps_rgrades_exit_statuses_and_messages(tmp_path, spark, capfd):
    labels, logs = SAMPLES / "realistic/labels.jsonl", SAMPLES / "realistic/logs"
    args = ["--labels", str(labels), "--logs", str(logs), "-q", "--repeats", "last"]
    assert rgrade.spark.main([*args, "-o", str(tmp_path / "over")]) == 1
    cli(tmp_path / "cli", labels, logs, "--repeats", "last", expect=1)
    first = json.loads((tmp_path / "cli/rejects.jsonl").read_text().splitlines()[0])
    err = capfd.readouterr().err
    assert "rejected records exceed --max-rejects 0; the first is " in err, err
    assert f"{first['file']}:{first['line']}: {first['reason']}" in err, err
    assert rgrade.spark.main([*args, "--max-rejects", "20", "-o", str(tmp_path / "within")]) == 0

    assert rgrade.spark.main(["--labels", str(tmp_path / "none.jsonl"), "--logs", str(logs), "-o", str(tmp_path / "x")]) == 2
    assert "none.jsonl: cannot read labels" in capfd.readouterr().err
    # Refused on the executors, said on the driver as rgrade says it.
    assert rgrade.spark.main([*args, "--missing", "sometimes", "-o", str(tmp_path / "x")]) == 2
    err = capfd.readouterr().err
    assert err.startswith("rgrade: ") and "sometimes" in err and "Traceback" not in err, err
    assert not (tmp_path / "x").exists()


def test_errors_on_executors_raise_rgrades_errors(tmp_path, spark):
    with pytest.raises(rgrade.UsageError, match="sometimes"):
        rgrade.spark.grade(SAMPLES / "realistic/logs", SAMPLES / "realistic/labels.jsonl", spark=spark,
                           missing="sometimes")
    (tmp_path / "bm25.trec").write_text("q000001 Q0 d1 1 2.5 bm25\n")
    with pytest.raises(rgrade.UsageError, match="bm25.trec: rgrade.spark reads JSONL"):
        rgrade.spark.grade(tmp_path / "bm25.trec", SAMPLES / "realistic/labels.jsonl", spark=spark)
