"""``slice_by=``: Parquet logs graded sliced by a tenant column and by a
Hive partition folder (``dt=…``, written by pyarrow's ``write_to_dataset``
and by Spark's ``partitionBy``, which keep ``dt`` in the path alone);
each slice's means are those computed here from the same rows."""

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq

import rgrade

TENANTS = ["acme", "zeta", None]
DAYS = ["2026-12-01", "2026-12-02"]
K = 5


def day_of_captures(tmp_path):
    """Labels for 60 queries written to ``labels.jsonl``, and a capture of
    every query but each tenth (missing): its ranking, tenant and day."""
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(12)]
    labels, rows = [], {"query_id": [], "results": [], "tenant": [], "dt": []}
    for q in range(60):
        relevant = rng.sample(docs, rng.randint(1, 3))
        labels.append({"query_id": f"q{q}", "relevant": relevant})
        if q % 10 != 9:
            rows["query_id"].append(f"q{q}")
            rows["results"].append(rng.sample(docs, 8))
            rows["tenant"].append(rng.choice(TENANTS))
            rows["dt"].append(rng.choice(DAYS))
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(label) + "\n" for label in labels))
    return labels, rows


def assert_slices_as_computed(graded, labels, rows, fields):
    """per_query names each query's value of every field in ``fields``
    (``(none)`` without one), and each slice's recall@K mean is the one
    computed here; a query without a capture scores 0."""
    captured = {q: i for i, q in enumerate(rows["query_id"])}
    per_query = {row["query_id"]: row for row in graded.per_query.to_pylist()}
    aggregates = graded.aggregates.to_pylist()
    for field in fields:
        recalls = {}
        for label in labels:
            i = captured.get(label["query_id"])
            value = (rows[field][i] if i is not None else None) or "(none)"
            results = rows["results"][i] if i is not None else []
            recall = len(set(results[:K]) & set(label["relevant"])) / len(label["relevant"])
            recalls.setdefault(value, []).append(recall)
            assert per_query[label["query_id"]][field] == value
        others = [f for f in fields if f != field]
        sliced = [row for row in aggregates
                  if row["task"] == "*" and str(row[field]) != "*" and all(row[f] == "*" for f in others)]
        assert sorted(row[field] for row in sliced) == sorted(recalls)
        for row in sliced:
            want = recalls[row[field]]
            assert row["queries"] == len(want)
            assert abs(row[f"recall@{K}"] - sum(want) / len(want)) < 1e-12
    overall = [row for row in aggregates if row["task"] == "*" and all(row[f] == "*" for f in fields)]
    assert overall[0]["queries"] == len(labels)
    assert graded.summary["settings"]["slice_by"] == fields


def test_parquet_tenants_slice_the_means_as_computed_here(tmp_path):
    labels, rows = day_of_captures(tmp_path)
    pq.write_table(pa.table(rows), tmp_path / "logs.parquet")
    graded = rgrade.grade(tmp_path / "labels.jsonl", tmp_path / "logs.parquet", k=K, slice_by=["tenant"])
    assert_slices_as_computed(graded, labels, rows, ["tenant"])
    # One field may be given bare, as `stages` and `stage_order` may.
    bare = rgrade.grade(tmp_path / "labels.jsonl", tmp_path / "logs.parquet", k=K, slice_by="tenant")
    assert bare.aggregates.equals(graded.aggregates)


def assert_lake_slices(tmp_path, lake, labels, rows):
    """The lake's files hold no ``dt`` column, so its slices come from the
    folders."""
    parts = sorted(lake.rglob("*.parquet"))
    assert {p.parent.name for p in parts} == {f"dt={day}" for day in DAYS}
    assert all("dt" not in pq.read_schema(p).names for p in parts)
    graded = rgrade.grade(tmp_path / "labels.jsonl", lake, k=K, slice_by=["dt", "tenant"])
    assert_slices_as_computed(graded, labels, rows, ["dt", "tenant"])


def test_a_pyarrow_lake_slices_by_its_partition_folders(tmp_path):
    labels, rows = day_of_captures(tmp_path)
    lake = tmp_path / "arrow"
    pq.write_to_dataset(pa.table(rows), lake, partition_cols=["dt"])
    assert_lake_slices(tmp_path, lake, labels, rows)


def test_a_spark_lake_slices_by_its_partition_folders(tmp_path, spark):
    labels, rows = day_of_captures(tmp_path)
    frame = spark.createDataFrame(
        list(zip(rows["query_id"], rows["results"], rows["tenant"], rows["dt"])),
        "query_id string, results array<string>, tenant string, dt string",
    )
    lake = tmp_path / "spark"
    frame.repartition(2).write.partitionBy("dt").parquet(str(lake))
    assert_lake_slices(tmp_path, lake, labels, rows)
