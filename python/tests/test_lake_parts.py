"""A lake's parts as pyarrow and Spark write them: results gathered without
order (`list<struct<doc_id, score, rank>>` shuffled, Spark's
`collect_list`) grade as the ranks they carry say, and empty parts (a
0-row Parquet file, Spark's empty partition) are inputs without records.
Every value is checked against an oracle computed here from the ranks."""

import csv
import json
import os
import random
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))
KS = (1, 3, 10)


def lake(seed: int, queries: int = 40):
    """Labels and rankings: per query a few relevant docs among 12 ranked,
    each result with a rank and a score that agree."""
    rng = random.Random(seed)
    labels, rankings = [], {}
    for q in range(queries):
        qid = f"q{q:03d}"
        docs = [f"d{q}-{i}" for i in range(12)]
        rng.shuffle(docs)
        labels.append({"query_id": qid, "relevant": rng.sample(docs, 3)})
        rankings[qid] = docs
    return labels, rankings


def oracle(labels, rankings):
    """recall@k and rr@k per query, from the rankings in rank order."""
    values = {}
    for label in labels:
        ranking, relevant = rankings[label["query_id"]], set(label["relevant"])
        row = {}
        for k in KS:
            top = ranking[:k]
            row[f"recall@{k}"] = len(relevant & set(top)) / len(relevant)
            first = next((i + 1 for i, doc in enumerate(top) if doc in relevant), None)
            row[f"rr@{k}"] = 1 / first if first else 0.0
        values[label["query_id"]] = row
    return values


def results_type():
    return pa.list_(pa.struct([("doc_id", pa.string()), ("score", pa.float64()), ("rank", pa.int64())]))


def shuffled_rows(rankings, seed: int):
    """One row per query, its results listed in a random order."""
    rng = random.Random(seed)
    rows = []
    for qid, docs in rankings.items():
        results = [{"doc_id": doc, "score": 100.0 - i, "rank": i + 1} for i, doc in enumerate(docs)]
        rng.shuffle(results)
        rows.append({"query_id": qid, "results": results})
    return rows


def grade(tmp_path: Path, labels, logs: Path, *flags: str) -> dict:
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(label) + "\n" for label in labels))
    out = tmp_path / "out"
    args = [RGRADE, "grade", "--labels", str(tmp_path / "labels.jsonl"), "-k", ",".join(map(str, KS)),
            "-q", "-o", str(out), *flags, str(logs)]
    run = subprocess.run(args, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with open(out / "per_query.csv", newline="") as rows:
        return {row["query_id"]: row for row in csv.DictReader(rows)}


def assert_oracle(graded: dict, want: dict):
    assert set(graded) == set(want)
    for qid, row in want.items():
        for metric, value in row.items():
            assert abs(float(graded[qid][metric]) - value) < 1e-12, (qid, metric, graded[qid][metric], value)


def test_pyarrow_parts_shuffled_results_and_a_zero_row_part(tmp_path):
    labels, rankings = lake(seed=1)
    parts = tmp_path / "lake"
    parts.mkdir()
    table = pa.Table.from_pylist(shuffled_rows(rankings, seed=2), schema=pa.schema(
        [("query_id", pa.string()), ("results", results_type())]))
    pq.write_table(table.slice(0, 25), parts / "part-0.parquet")
    pq.write_table(table.slice(0, 0), parts / "part-1.parquet")  # no rows
    pq.write_table(table.slice(25), parts / "part-2.parquet")
    graded = grade(tmp_path, labels, parts)
    assert_oracle(graded, oracle(labels, rankings))
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert [(Path(i["path"]).name, i["records"]) for i in summary["inputs"]] == [
        ("part-0.parquet", 25), ("part-1.parquet", 0), ("part-2.parquet", 15)]


def test_spark_collect_list_and_an_empty_partition(tmp_path, spark):
    """Spark gathers each query's results with `collect_list` (in no set
    order) and writes them with `partitionBy`; a day without traffic is an
    empty DataFrame written the same way: a 0-row part."""
    from pyspark.sql import functions as F

    labels, rankings = lake(seed=3)
    rows = [(qid, doc, 100.0 - i, i + 1, "2026-12-07")
            for qid, docs in rankings.items() for i, doc in enumerate(docs)]
    random.Random(4).shuffle(rows)
    hits = spark.createDataFrame(rows, "query_id string, doc_id string, score double, rank long, dt string")
    events = hits.groupBy("query_id", "dt").agg(
        F.collect_list(F.struct("doc_id", "score", "rank")).alias("results"))
    events.write.partitionBy("dt").parquet(str(tmp_path / "lake"))
    # Spark writes one 0-row part, schema and all, for an empty write.
    events.limit(0).drop("dt").write.parquet(str(tmp_path / "empty"))
    collected = {row["query_id"]: [r["doc_id"] for r in row["results"]] for row in events.collect()}
    # The lists Spark gathered are not all in rank order: the test would
    # prove nothing if they were.
    assert any(collected[qid] != rankings[qid] for qid in rankings)
    parts = sorted((tmp_path / "empty").rglob("*.parquet"))
    assert parts and all(pq.read_metadata(p).num_rows == 0 for p in parts)
    (tmp_path / "lake/dt=2026-12-08").mkdir()
    for part in parts:
        part.rename(tmp_path / "lake/dt=2026-12-08" / part.name)
    graded = grade(tmp_path, labels, tmp_path / "lake")
    assert_oracle(graded, oracle(labels, rankings))


def test_python_skips_a_damaged_part_when_told(tmp_path):
    """`bad_files="skip"` in Python, as `--bad-files skip`: a part cut off
    mid-write is one `bad_file` reject, named in the summary, the rest
    graded; without it the grading raises, naming the part."""
    import warnings

    import pytest
    import rgrade

    labels, rankings = lake(seed=5)
    parts = tmp_path / "lake"
    parts.mkdir()
    table = pa.Table.from_pylist(shuffled_rows(rankings, seed=6), schema=pa.schema(
        [("query_id", pa.string()), ("results", results_type())]))
    pq.write_table(table.slice(0, 30), parts / "part-0.parquet")
    pq.write_table(table.slice(30), tmp_path / "whole.parquet")
    whole = (tmp_path / "whole.parquet").read_bytes()
    (parts / "part-1.parquet").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(label) + "\n" for label in labels))

    with pytest.raises(rgrade.RgradeError, match="part-1.parquet"):
        rgrade.grade(tmp_path / "labels.jsonl", parts, k=list(KS))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        graded = rgrade.grade(tmp_path / "labels.jsonl", parts, k=list(KS), bad_files="skip", missing="skip")
    assert [(Path(r["file"]).name, r["line"], r["reason"]) for r in graded.rejects.to_pylist()] == [
        ("part-1.parquet", 0, "bad_file")]
    skipped = [Path(i["path"]).name for i in graded.summary["inputs"] if isinstance(i.get("skipped"), str)]
    assert skipped == ["part-1.parquet"]
    kept = {row["query_id"]: row for row in graded.per_query.to_pylist()}
    want = oracle(labels, rankings)
    graded_ids = {qid for qid, row in kept.items() if row["status"] == "ok"}
    assert graded_ids == {row["query_id"] for row in table.slice(0, 30).to_pylist()}
    for qid in graded_ids:
        for metric, value in want[qid].items():
            assert abs(kept[qid][metric] - value) < 1e-12, (qid, metric)
