"""Cross-check rgrade's judged@k against ir_measures' Judged@k.

A dev-only oracle, not part of `cargo test` (which needs no Python):

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install ir-measures   # brings pytrec_eval
    cargo build --release
    /tmp/venv/bin/python tests/crosscheck_judged.py [--queries 2000] [--results 50]

It generates a TREC run with `rgrade gen` (whose labels judge documents
with grades 0 to 3), grades it with rgrade at several cutoffs, evaluates
the same run with ir_measures' Judged@k (the share of the top k that any
qrels line judges) and compares every graded query. Exits 1 on any
difference.
"""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import ir_measures
from ir_measures import Judged

# ir_measures installs pytrec_eval, which crosscheck_trec_eval imports.
from crosscheck_trec_eval import compare, load_qrels, load_run

CUTOFFS = [1, 3, 5, 10, 100]


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

    # Judged counts every judgment, whatever its grade: load_qrels keeps them all.
    qrels = load_qrels(work / "data/labels.jsonl")
    expected = {}
    for metric in ir_measures.iter_calc([Judged @ k for k in CUTOFFS], qrels,
                                        load_run(work / "data/run.trec")):
        expected.setdefault(metric.query_id, {})[str(metric.measure)] = metric.value

    pairs = [(f"judged@{k}", f"Judged@{k}") for k in CUTOFFS]
    compared, differences, _ = compare(work / "out/per_query.csv", expected, pairs)
    print(f"{compared} values compared over {len(expected)} queries, {differences} differences")
    sys.exit(1 if differences or not compared else 0)


if __name__ == "__main__":
    main()
