"""Cross-check rgrade's agreement figures against scikit-learn and krippendorff.

A dev-only oracle, not part of `cargo test` (which needs no Python):

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install scikit-learn krippendorff
    cargo build --release
    /tmp/venv/bin/python tests/crosscheck_agreement.py QRELS

QRELS is a graded TREC qrels file (`qid 0 docid grade`), for example the
LLMJudge challenge's development qrels (data/llm4eval_dev_qrel_2024.txt of
github.com/llm4eval/LLMJudge). Its grades are key A. Key B is a judge made
from them with a fixed seed (most grades kept, some one step off, a few
two), and key C another that also skips a share of the pairs. The script
runs `rgrade agree A B` and checks the kappas (unweighted, linear and
quadratic on grades, unweighted on relevance) against scikit-learn's
`cohen_kappa_score` and the ordinal alpha against `krippendorff.alpha`;
then grades with one key holding A, B and C as three reviewers and checks
summary.json's ordinal alpha over the pairs several reviewers judged, with
C's missing pairs, against `krippendorff.alpha`. Exits 1 on a difference
above 1e-9.
"""
import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score

TOLERANCE = 1e-9


def read_qrels(path):
    grades = {}
    for line in Path(path).read_text().splitlines():
        fields = line.split()
        if len(fields) == 4:
            grades[(fields[0], fields[2])] = int(fields[3])
    return grades


def judge(grades, seed, skip):
    """A judge's key: each grade kept, one step off or two, some pairs skipped."""
    rng = random.Random(seed)
    judged = {}
    for pair, grade in sorted(grades.items()):
        if rng.random() < skip:
            continue
        roll = rng.random()
        step = 0 if roll < 0.6 else (1 if roll < 0.95 else 2)
        judged[pair] = min(3, max(0, grade + rng.choice([-step, step])))
    return judged


def write_key(path, grades, reviewer=None):
    by_query = {}
    for (query, doc), grade in sorted(grades.items()):
        by_query.setdefault(query, {})[doc] = grade
    with open(path, "w") as out:
        for query, docs in by_query.items():
            line = {"query_id": query, "relevant": docs}
            if reviewer:
                line["reviewer"] = reviewer
            out.write(json.dumps(line) + "\n")


def check(name, got, want, failures):
    if got is None or not math.isclose(got, want, rel_tol=0, abs_tol=TOLERANCE):
        failures.append(f"{name}: rgrade {got}, reference {want}")
    print(f"{name:<34} rgrade {got!s:<22} reference {want}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("qrels")
    parser.add_argument("--rgrade", default="target/release/rgrade")
    args = parser.parse_args()

    a = read_qrels(args.qrels)
    b = judge(a, seed=1, skip=0.0)
    c = judge(a, seed=2, skip=0.3)
    work = Path(tempfile.mkdtemp(prefix="rgrade-agreement-"))
    write_key(work / "a.jsonl", a)
    write_key(work / "b.jsonl", b)
    subprocess.run([args.rgrade, "agree", str(work / "a.jsonl"), str(work / "b.jsonl"), "-q",
                    "-o", str(work / "agreed")], check=True)
    summary = json.loads((work / "agreed/agreement.json").read_text())

    failures = []
    pairs = sorted(set(a) & set(b))
    ga = [a[p] for p in pairs]
    gb = [b[p] for p in pairs]
    print(f"{len(pairs)} pairs both judge, grades {sorted(set(ga) | set(gb))}")
    check("kappa, relevance (grade >= 1)", summary["relevance_kappa"],
          cohen_kappa_score([g >= 1 for g in ga], [g >= 1 for g in gb]), failures)
    check("kappa, grades, linear", summary["grade_kappa"],
          cohen_kappa_score(ga, gb, weights="linear"), failures)
    check("kappa, grades, unweighted", summary["grade_kappa_unweighted"],
          cohen_kappa_score(ga, gb), failures)
    check("kappa, grades, quadratic", summary["grade_kappa_quadratic"],
          cohen_kappa_score(ga, gb, weights="quadratic"), failures)
    check("alpha, grades, ordinal", summary["grade_alpha_ordinal"],
          krippendorff.alpha(reliability_data=np.array([ga, gb], dtype=float),
                             level_of_measurement="ordinal"), failures)

    # One key, three reviewers; C skipped some pairs.
    with open(work / "reviewers.jsonl", "w") as out:
        for name, key in (("a", a), ("b", b), ("c", c)):
            write_key(work / f"{name}.part", key, reviewer=name)
            out.write((work / f"{name}.part").read_text())
    query = next(iter(sorted(a)))[0]
    (work / "logs.jsonl").write_text(json.dumps({"query_id": query, "results": []}) + "\n")
    subprocess.run([args.rgrade, "grade", "--labels", str(work / "reviewers.jsonl"), "--reviewers",
                    "majority", "-k", "1", "--missing", "skip", "-q", "-o", str(work / "graded"),
                    str(work / "logs.jsonl")], check=True)
    reviewers = json.loads((work / "graded/summary.json").read_text())["labels"]["reviewers"]
    every = sorted(set(a) | set(b) | set(c))
    table = np.array([[key.get(p, np.nan) for p in every] for key in (a, b, c)], dtype=float)
    check("alpha, three reviewers, ordinal", reviewers["krippendorff_alpha_grade"],
          krippendorff.alpha(reliability_data=table, level_of_measurement="ordinal"), failures)

    if failures:
        print("\n".join(["DIFFERENCES:"] + failures))
        sys.exit(1)
    print("every figure matches")


if __name__ == "__main__":
    main()
