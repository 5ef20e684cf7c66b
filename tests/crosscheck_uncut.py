"""Cross-check `-k all` against trec_eval's uncut measures (pytrec_eval), on
runs whose scores nearly tie.

A dev-only oracle beside crosscheck_trec_eval.py, not part of `cargo test`:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install pytrec-eval-terrier
    cargo build --release
    /tmp/venv/bin/python tests/crosscheck_uncut.py [--queries 2000] [--results 50]

It generates a TREC run with `rgrade gen`, then rewrites every score as one
of a few levels plus a tiny offset that only a 64-bit float keeps (as dense
retrievers' scores differ past the 7th digit), so that most ties are decided
the way trec_eval decides them: scores compared as 32-bit floats, then doc
id descending. Some rankings are cut short, a few emptied. It grades the run
with `-k 10,all` and compares every query that has a relevant document:
ap@all = map, ndcg@all = ndcg, rr@all = recip_rank, precision@all = set_P,
recall@all = set_recall, and the cutoff 10 with P_10, ndcg_cut_10, map_cut_10.
Exits 1 on any difference.
"""
import argparse
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytrec_eval

from crosscheck_trec_eval import compare, load_qrels, load_run

PAIRS = [
    ("ap@all", "map"),
    ("ndcg@all", "ndcg"),
    ("rr@all", "recip_rank"),
    ("precision@all", "set_P"),
    ("recall@all", "set_recall"),
    ("precision@10", "P_10"),
    ("ndcg@10", "ndcg_cut_10"),
    ("ap@10", "map_cut_10"),
]


def near_ties(run_path, seed):
    """Rewrite the run's scores as near ties and cut some rankings short."""
    rng = random.Random(seed)
    lines = [line.split() for line in open(run_path)]
    keep = {}
    with open(run_path, "w") as out:
        for query, q0, doc, rank, _score, tag in lines:
            depth = keep.setdefault(query, rng.choice([0, 1, 5, 20, 1000, 1000, 1000]))
            if int(rank) > depth:
                continue
            level = rng.choice([0.25, 0.5, 0.0601673860234, 12.0])
            score = level + rng.randrange(0, 100) * 1e-17 * max(level, 1.0) * 10
            out.write(f"{query} {q0} {doc} {rank} {score!r} {tag}\n")


def as_f32(score):
    """The score as trec_eval keeps it."""
    return struct.unpack("f", struct.pack("f", score))[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--results", type=int, default=50)
    parser.add_argument("--rgrade", default="target/release/rgrade")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="rgrade-crosscheck-uncut-"))
    subprocess.run([args.rgrade, "gen", "--queries", str(args.queries), "--results", str(args.results),
                    "--format", "trec", "--seed", "7", "-o", str(work / "data")], check=True)
    run_path = work / "data/run.trec"
    near_ties(run_path, seed=11)
    subprocess.run([args.rgrade, "grade", "-q", "--labels", str(work / "data/labels.jsonl"),
                    "-k", "10,all", "--max-rejects", "1000000000", "-o", str(work / "out"),
                    str(run_path)], check=True)

    qrels = load_qrels(work / "data/labels.jsonl")
    run = load_run(run_path)
    measures = {"map", "ndcg", "recip_rank", "set_P", "set_recall", "P.10", "ndcg_cut.10", "map_cut.10"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    compared, differences, graded = compare(work / "out/per_query.csv", expected, PAIRS)
    near = 0
    for query in graded:
        scores = list(run[query].values())
        near += len(set(scores)) - len({as_f32(s) for s in scores})
    print(f"{compared} values compared over {len(expected)} queries "
          f"({near} scores tie another only as 32-bit floats), {differences} differences")
    sys.exit(1 if differences or not compared else 0)


if __name__ == "__main__":
    main()
