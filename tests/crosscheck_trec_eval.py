"""Cross-check rgrade's per-query metrics against trec_eval (pytrec_eval).

A dev-only oracle, not part of `cargo test` (which needs no Python):

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install pytrec-eval-terrier
    cargo build --release
    /tmp/venv/bin/python tests/crosscheck_trec_eval.py [--queries 2000] [--results 50] [--ties]

It generates a TREC run with `rgrade gen`, grades it with rgrade at several
cutoffs, evaluates the same run with trec_eval's measures and compares every
query that has a relevant document: recall@k = recall_k, precision@k = P_k,
ndcg@k = ndcg_cut_k, ap@k = map_cut_k, and rr@k at the deepest cutoff (no
shorter than any ranking) = recip_rank. With --ties the scores are rounded
to whole numbers first, so that most of the ranking is decided by
trec_eval's tie-break (doc id, descending). Exits 1 on any difference.
"""
import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytrec_eval

CUTOFFS = [1, 3, 5, 10, 100]
TOLERANCE = 1e-9


def load_qrels(path):
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


def compare(per_query_csv, expected, pairs):
    """Compare every graded row's (rgrade column, trec_eval measure) pairs,
    printing the first differences; returns the values compared, the
    differences and the graded query ids."""
    compared = differences = 0
    graded = []
    for row in csv.DictReader(open(per_query_csv)):
        if row["status"] != "ok":
            continue
        graded.append(row["query_id"])
        trec = expected[row["query_id"]]
        for ours, theirs in pairs:
            compared += 1
            if abs(float(row[ours]) - trec[theirs]) > TOLERANCE:
                differences += 1
                if differences <= 10:
                    print(f"{row['query_id']} {ours}: rgrade {row[ours]}, trec_eval {trec[theirs]}")
    return compared, differences, graded


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--results", type=int, default=50)
    parser.add_argument("--rgrade", default="target/release/rgrade")
    parser.add_argument("--ties", action="store_true", help="round scores to provoke ties")
    args = parser.parse_args()
    assert args.results <= max(CUTOFFS), "rr@k is compared with the uncut recip_rank"

    work = Path(tempfile.mkdtemp(prefix="rgrade-crosscheck-"))
    subprocess.run([args.rgrade, "gen", "--queries", str(args.queries), "--results", str(args.results),
                    "--format", "trec", "--seed", "3", "-o", str(work / "data")], check=True)
    if args.ties:
        run = work / "data/run.trec"
        lines = [line.split() for line in open(run)]
        with open(run, "w") as out:
            for query, q0, doc, rank, score, tag in lines:
                out.write(f"{query} {q0} {doc} {rank} {round(float(score))} {tag}\n")
    subprocess.run([args.rgrade, "grade", "-q", "--labels", str(work / "data/labels.jsonl"),
                    "-k", ",".join(map(str, CUTOFFS)), "-o", str(work / "out"),
                    str(work / "data/run.trec")], check=True)

    qrels = load_qrels(work / "data/labels.jsonl")
    measures = {f"{m}.{','.join(map(str, CUTOFFS))}" for m in ("recall", "P", "ndcg_cut", "map_cut")}
    measures.add("recip_rank")
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(load_run(work / "data/run.trec"))

    pairs = [(f"{name}@{k}", f"{measure}_{k}") for k in CUTOFFS
             for name, measure in (("recall", "recall"), ("precision", "P"),
                                   ("ndcg", "ndcg_cut"), ("ap", "map_cut"))]
    pairs.append((f"rr@{max(CUTOFFS)}", "recip_rank"))
    compared, differences, _ = compare(work / "out/per_query.csv", expected, pairs)
    print(f"{compared} values compared over {len(expected)} queries, {differences} differences")
    sys.exit(1 if differences or not compared else 0)


if __name__ == "__main__":
    main()
