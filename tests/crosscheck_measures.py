"""Cross-check the measures `--measures` adds against ir_measures, pytrec_eval and ranx.

A dev-only oracle, not part of `cargo test` (which needs no Python):

    python3 -m venv /tmp/venv
    /tmp/venv/bin/pip install ir-measures pytrec-eval-terrier cwl-eval ranx   # cwl-eval: RBP; perl: ERR
    cargo build --release
    /tmp/venv/bin/python tests/crosscheck_measures.py --qrels QRELS RUN [RUN...]

It grades each TREC run with `rgrade grade --measures` (every new measure,
by its ir_measures or ranx name) and compares every graded query with the
tool rgrade follows for that measure:

- Rprec, Bpref, P(rel=2)@10, R(rel=2)@100, Rprec(rel=2), Bpref(rel=2):
  trec_eval, through ir_measures' pytrec_eval provider;
- ERR@10, ERR@20: gdeval, through ir_measures (it needs perl);
- RBP(p=0.8), RBP(p=0.5,rel=2): cwl_eval, through ir_measures (binary
  relevance at the level), and ranx's rbp on the same binary labels;
- ndcg_burges@10, f1@10, f1@100: ranx;
- Judged@10: ir_measures;
- the RBP residual, which none of them reports: a naive computation here,
  the weight of the unjudged ranks plus p^n past a ranking of n.

The runs and qrels are real TREC files kept out of this repository (the
TREC 2003 Robust track's qrels and submitted runs, say). The tools break
score ties each their own way (reference.md, "Decisions where tools
differ"), so each run is first rewritten in trec_eval's order (score
descending as 32-bit floats, ties by doc id descending) with untied
scores: what is left to differ is the measures' definitions. With --ties
the runs are graded as submitted instead. Prints, per measure, the queries
compared and the largest absolute difference; exits 1 when one exceeds the
tolerance.
"""
import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

import ir_measures
from ranx import Qrels, Run, evaluate

from crosscheck_trec_eval import load_qrels, load_run

# gdeval prints five decimals: ERR is compared to that precision.
TOLERANCE = 1e-9
GDEVAL_TOLERANCE = 5e-6

# (rgrade's name as given, rgrade's column, reference, tolerance)
IR_MEASURES = [
    ("Rprec", "rprec", "Rprec", TOLERANCE),
    ("Bpref", "bpref", "Bpref", TOLERANCE),
    ("Rprec(rel=2)", "rprec(rel=2)", "Rprec(rel=2)", TOLERANCE),
    ("Bpref(rel=2)", "bpref(rel=2)", "Bpref(rel=2)", TOLERANCE),
    ("P(rel=2)@10", "precision(rel=2)@10", "P(rel=2)@10", TOLERANCE),
    ("R(rel=2)@100", "recall(rel=2)@100", "R(rel=2)@100", TOLERANCE),
    ("ERR@10", "err@10", "ERR@10", GDEVAL_TOLERANCE),
    ("ERR@20", "err@20", "ERR@20", GDEVAL_TOLERANCE),
    ("RBP(p=0.8)", "rbp(p=0.8)", "RBP(rel=1,p=0.8)", TOLERANCE),
    ("RBP(p=0.5,rel=2)", "rbp(p=0.5,rel=2)", "RBP(rel=2,p=0.5)", TOLERANCE),
    ("Judged@10", "judged@10", "Judged@10", TOLERANCE),
]
RANX = [
    ("ndcg_burges@10", "ndcg_burges@10", "ndcg_burges@10", {}),
    ("f1@10", "f1@10", "f1@10", {}),
    ("f1@100", "f1@100", "f1@100", {}),
    # ranx's rbp weighs each grade at the level as its gain: on binary
    # labels it is Moffat and Zobel's RBP, which rgrade computes.
    ("rbp.80", "rbp(p=0.8)", "rbp.8", {"binary": 1}),
    ("rbp.50", "rbp(p=0.5)", "rbp.5", {"binary": 1}),
]


def trec_order(ranking):
    """trec_eval's order: score descending as 32-bit floats, ties by doc id
    descending (as rgrade ranks a TREC run)."""
    import struct

    as_f32 = {doc: struct.unpack("f", struct.pack("f", score))[0] for doc, score in ranking.items()}
    return sorted(ranking, key=lambda doc: (as_f32[doc], doc), reverse=True)


def untie(path, work):
    """A copy of the run at `path` in trec_eval's order with untied scores."""
    run = load_run(path)
    untied = work / (Path(path).name + ".untied")
    with open(untied, "w") as out:
        for query, ranking in run.items():
            order = trec_order(ranking)
            for rank, doc in enumerate(order):
                out.write(f"{query} Q0 {doc} {rank + 1} {len(order) - rank} untied\n")
    return str(untied)


def rbp_residual(ranking, judged, p):
    order = trec_order(ranking)
    unjudged = sum((1 - p) * p**i for i, doc in enumerate(order) if doc not in judged)
    return unjudged + p ** len(order)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--qrels", required=True)
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--rgrade", default="target/release/rgrade")
    parser.add_argument("--ties", action="store_true", help="grade the runs as submitted")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="rgrade-measures-"))
    qrels = load_qrels(args.qrels)
    names = [name for name, *_ in IR_MEASURES] + [name for name, *_ in RANX] + ["rbp_residual(p=0.5)"]
    worst = {}
    failed = False
    for run_path in args.runs:
        out = work / Path(run_path).name
        if not args.ties:
            run_path = untie(run_path, work)
        subprocess.run([args.rgrade, "grade", "-q", "--labels", args.qrels, "--missing", "skip",
                        "--measures", ",".join(names), "-o", str(out), run_path], check=True)
        rows = {r["query_id"]: r for r in csv.DictReader(open(out / "per_query.csv")) if r["status"] == "ok"}
        run = load_run(run_path)

        expected = {}
        measures = [ir_measures.parse_measure(theirs) for _, _, theirs, _ in IR_MEASURES]
        for metric in ir_measures.iter_calc(measures, qrels, run):
            expected.setdefault(str(metric.measure), {})[metric.query_id] = metric.value
        checks = [(column, expected[str(ir_measures.parse_measure(theirs))], tolerance, f"ir_measures {theirs}")
                  for _, column, theirs, tolerance in IR_MEASURES]

        for _, column, theirs, options in RANX:
            labels = qrels
            if options.get("binary"):
                labels = {q: {d: int(g >= options["binary"]) for d, g in docs.items()} for q, docs in qrels.items()}
            ranx_qrels = Qrels.from_dict({q: docs for q, docs in labels.items() if q in rows})
            ranx_run = Run.from_dict({q: docs for q, docs in run.items() if q in rows})
            evaluate(ranx_qrels, ranx_run, theirs, save_results_in_run=True)
            checks.append((column, dict(ranx_run.scores[theirs]), TOLERANCE, f"ranx {theirs}"))

        residuals = {q: rbp_residual(run[q], qrels[q], 0.5) for q in rows}
        checks.append(("rbp_residual(p=0.5)", residuals, TOLERANCE, "naive residual"))

        for column, reference, tolerance, source in checks:
            differences = [abs(float(rows[q][column]) - reference.get(q, 0.0)) for q in rows]
            largest = max(differences)
            key = (column, source)
            queries, before = worst.get(key, (0, 0.0))
            worst[key] = (queries + len(differences), max(before, largest))
            if largest > tolerance:
                failed = True
                q = max(rows, key=lambda q: abs(float(rows[q][column]) - reference.get(q, 0.0)))
                print(f"{Path(run_path).name} {column}: query {q} rgrade {rows[q][column]}, "
                      f"{source} {reference.get(q)}")
    print(f"{len(args.runs)} runs; per measure: queries compared, largest absolute difference")
    for (column, source), (queries, largest) in worst.items():
        print(f"  {column:<22} {source:<28} {queries:>5} {largest:.2e}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
