"""Cross-check rgrade's judged@k against ir_measures' Judged@k.

A dev-only oracle, not part of `cargo test` (which needs no Python):

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install ir-measures
    cargo build --release
    /tmp/venv/bin/python tests/crosscheck_judged.py [--queries 2000] [--results 50]

It generates a TREC run with `rgrade gen` (whose labels judge documents
with grades 0 to 3), grades it with rgrade at several cutoffs, evaluates
the same run with ir_measures' Judged@k (the share of the top k that any
qrels line judges) and compares every graded query. Exits 1 on any
difference.
"""
import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import ir_measures
from ir_measures import Judged

CUTOFFS = [1, 3, 5, 10, 100]
TOLERANCE = 1e-9


def load_qrels(path):
    """Every judgment, whatever its grade: Judged counts them all."""
    qrels = {}
    for line in open(path):
        label = json.loads(line)
        relevant = label["relevant"]
        if isinstance(relevant, list):
            relevant = {doc: 1 for doc in relevant}
        qrels[str(label["query_id"])] = {doc: int(grade) for doc, grade in relevant.items()}
    return qrels


def load_run(path):
    run = {}
    for line in open(path):
        query, _, doc, _, score, _ = line.split()[:6]
        run.setdefault(query, {})[doc] = float(score)
    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--results", type=int, default=50)
    parser.add_argument("--rgrade", default="target/release/rgrade")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="rgrade-judged-"))
    subprocess.run([args.rgrade, "gen", "--queries", str(args.queries), "--results", str(args.results),
                    "--format", "trec", "--seed", "5", "-o", str(work / "data")], check=True)
    subprocess.run([args.rgrade, "grade", "-q", "--labels", str(work / "data/labels.jsonl"),
                    "-k", ",".join(map(str, CUTOFFS)), "-o", str(work / "out"),
                    str(work / "data/run.trec")], check=True)

    qrels = load_qrels(work / "data/labels.jsonl")
    measures = [Judged @ k for k in CUTOFFS]
    expected = {}
    for metric in ir_measures.iter_calc(measures, qrels, load_run(work / "data/run.trec")):
        expected.setdefault(metric.query_id, {})[str(metric.measure)] = metric.value

    compared = differences = 0
    for row in csv.DictReader(open(work / "out/per_query.csv")):
        if row["status"] != "ok":
            continue
        theirs = expected[row["query_id"]]
        for k in CUTOFFS:
            compared += 1
            ours, want = float(row[f"judged@{k}"]), theirs[f"Judged@{k}"]
            if abs(ours - want) > TOLERANCE:
                differences += 1
                if differences <= 10:
                    print(f"{row['query_id']} judged@{k}: rgrade {ours}, ir_measures {want}")
    print(f"{compared} values compared over {len(expected)} queries, {differences} differences")
    sys.exit(1 if differences or not compared else 0)


if __name__ == "__main__":
    main()
