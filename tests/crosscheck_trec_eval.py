"""Cross-check rgrade's per-query metrics against trec_eval (pytrec_eval).

A dev-only oracle, not part of `cargo test` (which needs no Python):

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install pytrec-eval-terrier
    cargo build --release
    /tmp/venv/bin/python tests/crosscheck_trec_eval.py [--queries 2000] [--results 50] [--ties]
    /tmp/venv/bin/python tests/crosscheck_trec_eval.py --qrels QRELS --run RUN

It grades a TREC run with rgrade at several cutoffs, at `--min-rel` 1, 2
and 3, evaluates the same run with trec_eval's measures at the same
`relevance_level` (trec_eval's `-l`) and compares every query rgrade grades
(every query with a positive grade, whatever the level): recall@k =
recall_k, precision@k = P_k, ndcg@k = ndcg_cut_k, ap@k = map_cut_k, and
rr@all (`-k all`: the whole ranking) = recip_rank. It
checks too that rgrade grades exactly the run's queries with a positive
grade and that its means are trec_eval's over them. The run is one
`rgrade gen` writes, or with --qrels and --run real TREC qrels and a run
(TREC DL 2019 passage qrels, say, and a run submitted to the track; neither
is kept in this repository). With --ties the scores are rounded to whole
numbers first, so that most of the ranking is decided by trec_eval's
tie-break (doc id, descending). Exits 1 on any difference.
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


def load_labels(path):
    """rgrade's JSONL labels as pytrec_eval's qrels."""
    qrels = {}
    for line in open(path):
        label = json.loads(line)
        relevant = label["relevant"]
        if isinstance(relevant, list):
            relevant = {doc: 1 for doc in relevant}
        qrels[str(label["query_id"])] = {doc: int(grade) for doc, grade in relevant.items()}
    return qrels


def load_qrels(path):
    """TREC qrels: query, iteration, doc, grade."""
    qrels = {}
    for line in open(path):
        query, _, doc, grade = line.split()
        qrels.setdefault(query, {})[doc] = int(grade)
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


def crosscheck(rgrade, labels, run, qrels, min_rel, work):
    """Grade `run` at `min_rel` and compare it with trec_eval at that
    level; returns the values compared and the differences."""
    out = work / f"out-{min_rel}"
    subprocess.run([rgrade, "grade", "-q", "--labels", str(labels), "--min-rel", str(min_rel),
                    "--missing", "skip", "-k", ",".join(map(str, CUTOFFS)) + ",all", "-o", str(out),
                    str(run)], check=True)
    measures = {f"{m}.{','.join(map(str, CUTOFFS))}" for m in ("recall", "P", "ndcg_cut", "map_cut")}
    measures.add("recip_rank")
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=min_rel)
    expected = evaluator.evaluate(load_run(run))

    pairs = [(f"{name}@{k}", f"{measure}_{k}") for k in CUTOFFS
             for name, measure in (("recall", "recall"), ("precision", "P"),
                                   ("ndcg", "ndcg_cut"), ("ap", "map_cut"))]
    pairs.append(("rr@all", "recip_rank"))
    compared, differences, graded = compare(out / "per_query.csv", expected, pairs)

    # Graded: every query of the run with a positive grade, at any level.
    answerable = {q for q in expected if any(grade > 0 for grade in qrels[q].values())}
    if set(graded) != answerable:
        differences += 1
        print(f"--min-rel {min_rel}: rgrade graded {len(graded)} queries, "
              f"{len(answerable)} have a positive grade")
    below = sum(1 for q in answerable if not any(g >= min_rel for g in qrels[q].values()))
    # The means: trec_eval's over the same queries.
    overall = json.load(open(out / "summary.json"))["overall"][0]["metrics"]
    for ours, theirs in pairs:
        mean = sum(expected[q][theirs] for q in answerable) / len(answerable)
        compared += 1
        if abs(overall[ours] - mean) > TOLERANCE:
            differences += 1
            print(f"--min-rel {min_rel} mean {ours}: rgrade {overall[ours]}, trec_eval {mean}")
    print(f"--min-rel {min_rel}: {compared} values compared over {len(graded)} queries "
          f"({below} with no grade reaching {min_rel}), {differences} differences; "
          f"ndcg@10 {overall['ndcg@10']:.4f}")
    return compared, differences


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--results", type=int, default=50)
    parser.add_argument("--rgrade", default="target/release/rgrade")
    parser.add_argument("--ties", action="store_true", help="round scores to provoke ties")
    parser.add_argument("--qrels", type=Path, help="TREC qrels to check with, instead of generated labels")
    parser.add_argument("--run", type=Path, help="with --qrels, the TREC run to grade")
    args = parser.parse_args()
    assert (args.qrels is None) == (args.run is None), "--qrels and --run go together"

    work = Path(tempfile.mkdtemp(prefix="rgrade-crosscheck-"))
    if args.qrels:
        labels, run, qrels = args.qrels, args.run, load_qrels(args.qrels)
    else:
        subprocess.run([args.rgrade, "gen", "--queries", str(args.queries), "--results", str(args.results),
                        "--format", "trec", "--seed", "3", "-o", str(work / "data")], check=True)
        labels, run = work / "data/labels.jsonl", work / "data/run.trec"
        qrels = load_labels(labels)
    if args.ties:
        tied = work / "tied.trec"
        with open(tied, "w") as out:
            for query, q0, doc, rank, score, tag in (line.split() for line in open(run)):
                out.write(f"{query} {q0} {doc} {rank} {round(float(score))} {tag}\n")
        run = tied

    compared = differences = 0
    for min_rel in (1, 2, 3):
        c, d = crosscheck(args.rgrade, labels, run, qrels, min_rel, work)
        compared, differences = compared + c, differences + d
    sys.exit(1 if differences or not compared else 0)


if __name__ == "__main__":
    main()
