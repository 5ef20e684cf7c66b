"""A day of search logs in a `dt=/hour=` lake, written by pyarrow's
`write_to_dataset` and by Spark's `partitionBy` (pyspark in local mode):
`rgrade grade --time-field ts --repeats last` grades each query's latest
capture by `ts`, as an oracle computed here finds it, though the lake's
path order (`hour=10` before `hour=2`, part files in hash order) is not
time order."""

import csv
import json
import os
import random
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))

QUERIES = 40
CAPTURES = 300
DAY = datetime(2026, 12, 1, tzinfo=timezone.utc)


def day_of_captures():
    """Each query captured several times over the day, each capture at its
    own second; a capture ranks the query's relevant document or not, so
    which one is graded shows in recall."""
    rng = random.Random(49)
    rows = []
    seconds = rng.sample(range(24 * 3600), CAPTURES)
    for i, second in enumerate(seconds):
        query = f"q{i % QUERIES}"
        ts = DAY + timedelta(seconds=second)
        docs = [f"d{rng.randrange(50)}" for _ in range(3)]
        if rng.random() < 0.5:
            docs.insert(rng.randrange(4), f"rel-{query}")
        rows.append({
            "query_id": query,
            "results": list(dict.fromkeys(docs)),
            "ts": ts,
            "dt": ts.strftime("%Y-%m-%d"),
            "hour": ts.hour,
        })
    return rows


def latest_recalls(rows):
    """Each query's recall@10 on its latest capture by ts."""
    latest = {}
    for row in rows:
        kept = latest.get(row["query_id"])
        if kept is None or row["ts"] > kept["ts"]:
            latest[row["query_id"]] = row
    return {q: float(f"rel-{q}" in row["results"][:10]) for q, row in latest.items()}


def write_labels(path: Path):
    with path.open("w") as out:
        for q in range(QUERIES):
            out.write(json.dumps({"query_id": f"q{q}", "relevant": [f"rel-q{q}"]}) + "\n")


def grade(tmp_path: Path, lake: Path, out: str, *flags):
    run = subprocess.run(
        [RGRADE, "grade", "--labels", str(tmp_path / "labels.jsonl"), "--repeats", "last",
         *flags, "-q", "-o", str(tmp_path / out), str(lake)],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
    with (tmp_path / out / "per_query.csv").open() as per_query:
        recalls = {row["query_id"]: float(row["recall@10"]) for row in csv.DictReader(per_query)}
    return recalls, run.stderr


def check_lake(tmp_path: Path, lake: Path, rows):
    paths = sorted(str(p.relative_to(lake)) for p in lake.rglob("*.parquet"))
    assert any("/hour=10/" in f"/{p}" for p in paths) and any("/hour=2/" in f"/{p}" for p in paths)
    oracle = latest_recalls(rows)
    by_time, _ = grade(tmp_path, lake, f"{lake.name}-by-time", "--time-field", "ts")
    assert by_time == oracle
    # Without the time field the last capture in path order is graded:
    # not the latest for some queries.
    by_path, _ = grade(tmp_path, lake, f"{lake.name}-by-path")
    assert by_path != oracle


def test_a_pyarrow_lake_grades_the_latest_capture_by_time(tmp_path):
    rows = day_of_captures()
    write_labels(tmp_path / "labels.jsonl")
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("query_id", pa.string()),
        ("results", pa.list_(pa.string())),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("dt", pa.string()),
        ("hour", pa.int32()),
    ]))
    lake = tmp_path / "arrow"
    pq.write_to_dataset(table, lake, partition_cols=["dt", "hour"])
    check_lake(tmp_path, lake, rows)


def test_a_spark_lake_grades_the_latest_capture_by_time(tmp_path, spark):
    rows = day_of_captures()
    write_labels(tmp_path / "labels.jsonl")
    frame = spark.createDataFrame(
        [(r["query_id"], r["results"], r["ts"], r["dt"], r["hour"]) for r in rows],
        "query_id string, results array<string>, ts timestamp, dt string, hour int",
    )
    lake = tmp_path / "spark"
    frame.repartition(3).write.partitionBy("dt", "hour").parquet(str(lake))
    check_lake(tmp_path, lake, rows)
