"""``slice_by=``: a Parquet log holding a tenant column, written by pyarrow,
graded sliced by it; each tenant's means are those computed here from the
same rows."""

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq

import rgrade

TENANTS = ["acme", "zeta", None]
K = 5


def test_parquet_tenants_slice_the_means_as_computed_here(tmp_path):
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(12)]
    labels, rows = [], {"query_id": [], "results": [], "tenant": []}
    for q in range(60):
        relevant = rng.sample(docs, rng.randint(1, 3))
        labels.append({"query_id": f"q{q}", "relevant": relevant})
        if q % 10 != 9:  # every tenth query has no capture: missing
            rows["query_id"].append(f"q{q}")
            rows["results"].append(rng.sample(docs, 8))
            rows["tenant"].append(rng.choice(TENANTS))
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(label) + "\n" for label in labels))
    pq.write_table(pa.table(rows), tmp_path / "logs.parquet")

    graded = rgrade.grade(tmp_path / "labels.jsonl", tmp_path / "logs.parquet", k=K, slice_by=["tenant"])

    # recall@5 by hand; a query without a capture scores 0 and falls in (none).
    captured = dict(zip(rows["query_id"], zip(rows["results"], rows["tenant"])))
    by_tenant = {}
    for label in labels:
        results, tenant = captured.get(label["query_id"], ([], None))
        recall = len(set(results[:K]) & set(label["relevant"])) / len(label["relevant"])
        by_tenant.setdefault(tenant or "(none)", []).append(recall)

    per_query = graded.per_query.to_pylist()
    assert {row["query_id"]: row["tenant"] for row in per_query} == {
        label["query_id"]: (captured.get(label["query_id"], (None, None))[1] or "(none)") for label in labels
    }
    sliced = [row for row in graded.aggregates.to_pylist() if str(row["tenant"]) != "*"]
    assert sorted(row["tenant"] for row in sliced) == sorted(by_tenant)
    for row in sliced:
        recalls = by_tenant[row["tenant"]]
        assert row["queries"] == len(recalls)
        assert abs(row[f"recall@{K}"] - sum(recalls) / len(recalls)) < 1e-12
    overall = [row for row in graded.aggregates.to_pylist() if row["task"] == "*" and row["tenant"] == "*"]
    assert overall[0]["queries"] == len(labels)
    assert graded.summary["settings"]["slice_by"] == ["tenant"]
