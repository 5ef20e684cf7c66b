#!/usr/bin/env python3
"""Rebuilds this sample from the realistic one: two answer keys for the
same help-center traffic, as a team that fills its reviewed key with an
LLM judge has them.

- human.jsonl: reviewers' grades (0-3) for a random 80 of the 300
  labeled queries, the documents the realistic key judges.
- judge.jsonl: an LLM judge's grades (0-3) for all 300 queries, with
  their task and language: the same documents, most graded as the
  reviewers did, some a grade apart, and the first two unlabeled documents
  the final stage ranked for each query, which the judge mostly calls not
  relevant.
- reviewers.jsonl: the same 80 queries as three reviewers graded them,
  one line per (query, reviewer): each judged every document of
  human.jsonl, most as it says, some a grade apart (one of them stricter
  than the others). Each line says its `source` (human) and the runs
  whose results were pooled for judging (`pooled_from`): bm25 and dense
  for most queries, bm25 alone for a quarter of them.
- documents.jsonl: human.jsonl's labels moved to the documents their
  chunks belong to (the id before its last '#'), for --unit doc.
- logs.jsonl: four retrievers' top 10 for every query, made from the
  realistic sample's retrieve rankings: each run lifts or sinks the
  labeled documents among the first 14 by its own amount, so the runs
  differ in quality.

Deterministic (seeded); standard library only. Usage:
    python3 data-samples/judges/make.py
"""

import gzip
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
REALISTIC = HERE.parent / "realistic"
REVIEWED_QUERIES = 80
# The judge's labels name it as their source.
JUDGE = "llm:judge-v1"
# Each reviewer's chances of grading a document as human.jsonl does, a
# grade higher, or a grade lower.
REVIEWERS = {"ana": [80, 10, 10], "ben": [65, 5, 30], "chen": [75, 15, 10]}
# Each run's chance of moving a labeled document up (positive) or down
# (negative) the ranking, by a few places.
RUNS = {"bm25": 0.0, "dense": -0.4, "hybrid": 0.4, "hybrid-rerank": 0.8}


def realistic_labels():
    with open(REALISTIC / "labels.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def rankings_of(stage):
    """Each query's first ranking at `stage` in the realistic logs."""
    rankings = {}
    logs = REALISTIC / "logs"
    for path in sorted(logs.iterdir()):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                results = event.get("results")
                if event.get("stage") != stage or not isinstance(results, list):
                    continue
                ids = [r["doc_id"] if isinstance(r, dict) else r for r in results]
                rankings.setdefault(event["query_id"], ids)
    return rankings


def reviewed_grades(label):
    """The realistic key's judgments on the 0-3 scale: a listed document
    is relevant (2), a graded one keeps its grade."""
    relevant = label["relevant"]
    if isinstance(relevant, list):
        return {doc: 2 for doc in relevant}
    return dict(relevant)


def main():
    rng = random.Random(33)
    labels = realistic_labels()
    rankings = rankings_of("final")
    reviewed = set(rng.sample([l["query_id"] for l in labels], REVIEWED_QUERIES))

    with open(HERE / "human.jsonl", "w", encoding="utf-8") as human:
        for label in labels:
            if label["query_id"] not in reviewed:
                continue
            record = {
                "query_id": label["query_id"],
                "relevant": reviewed_grades(label),
                "task": label.get("task"),
                "language": label.get("language"),
            }
            human.write(json.dumps(record, separators=(",", ":")) + "\n")

    with open(HERE / "judge.jsonl", "w", encoding="utf-8") as judge:
        for label in labels:
            query = label["query_id"]
            grades = reviewed_grades(label)
            judged = {}
            for doc, grade in grades.items():
                step = rng.choices([0, 1, -1], weights=[70, 15, 15])[0]
                judged[doc] = min(3, max(0, grade + step))
            unlabeled = [d for d in rankings.get(query, []) if d not in grades][:2]
            for doc in unlabeled:
                judged[doc] = rng.choices([0, 1], weights=[80, 20])[0]
            record = {
                "query_id": query,
                "source": JUDGE,
                "relevant": judged,
                "task": label.get("task"),
                "language": label.get("language"),
            }
            judge.write(json.dumps(record, separators=(",", ":")) + "\n")
    write_logs(rng, labels, rankings_of("retrieve"))
    write_reviewers(labels, reviewed)
    write_documents()


def write_documents():
    """human.jsonl's labels lifted to the documents their chunks belong to
    (the id before its last '#'), each document taking its chunks' highest
    grade: a key reviewed per document, for --unit doc."""
    with open(HERE / "human.jsonl", encoding="utf-8") as f:
        labels = [json.loads(line) for line in f]
    with open(HERE / "documents.jsonl", "w", encoding="utf-8") as out:
        for label in labels:
            grades = {}
            for chunk, grade in label["relevant"].items():
                document = chunk.rsplit("#", 1)[0]
                grades[document] = max(grades.get(document, grade), grade)
            out.write(json.dumps({**label, "relevant": grades}, separators=(",", ":")) + "\n")


def write_reviewers(labels, reviewed):
    """Three reviewers' grades of the reviewed queries, from a stream of
    their own, so that the other files stay as they were."""
    rng = random.Random(332)
    with open(HERE / "reviewers.jsonl", "w", encoding="utf-8") as out:
        for label in labels:
            if label["query_id"] not in reviewed:
                continue
            pool = ["bm25"] if rng.random() < 0.25 else ["bm25", "dense"]
            for reviewer, weights in REVIEWERS.items():
                grades = {}
                for doc, grade in reviewed_grades(label).items():
                    step = rng.choices([0, 1, -1], weights=weights)[0]
                    grades[doc] = min(3, max(0, grade + step))
                record = {
                    "query_id": label["query_id"],
                    "reviewer": reviewer,
                    "source": "human",
                    "pooled_from": pool,
                    "relevant": grades,
                    "task": label.get("task"),
                    "language": label.get("language"),
                }
                out.write(json.dumps(record, separators=(",", ":")) + "\n")


def write_logs(rng, labels, rankings):
    """Each run's top 10, from the first 14 of each query's `rankings`."""
    with open(HERE / "logs.jsonl", "w", encoding="utf-8") as logs:
        for label in labels:
            query = label["query_id"]
            labeled = set(reviewed_grades(label))
            for run, lift in RUNS.items():
                ranking = list(rankings.get(query, []))[:14]
                for doc in [d for d in ranking if d in labeled]:
                    if rng.random() < abs(lift):
                        at = ranking.index(doc)
                        ranking.remove(doc)
                        step = rng.randint(1, 4)
                        ranking.insert(max(0, at - step) if lift > 0 else at + step, doc)
                record = {"query_id": query, "run": run, "results": ranking[:10]}
                logs.write(json.dumps(record, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
