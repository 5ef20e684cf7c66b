"""What users would otherwise run: load a TREC run and the answer key and
compute the same measures as `rgrade grade -k 10`, with pytrec_eval or ranx.

    python python_baseline.py pytrec_eval|ranx LABELS RUN.trec

LABELS is rgrade's JSONL labels or TREC qrels.
"""
import json
import sys


def load_qrels(path):
    """The answer key from rgrade's JSONL labels or from TREC qrels."""
    qrels = {}
    with open(path) as f:
        jsonl = f.read(1) == "{"
        f.seek(0)
        for line in f:
            if not jsonl:
                query, _, doc, grade = line.split()[:4]
                qrels.setdefault(query, {})[doc] = int(grade)
                continue
            label = json.loads(line)
            relevant = label["relevant"]
            if isinstance(relevant, list):
                relevant = {doc: 1 for doc in relevant}
            qrels[str(label["query_id"])] = {doc: int(g) for doc, g in relevant.items()}
    return {q: docs for q, docs in qrels.items() if any(g > 0 for g in docs.values())}


def load_runs(path):
    """Each run of a TREC file by its tag, as pytrec_eval takes a run."""
    runs = {}
    with open(path) as f:
        for line in f:
            query, _, doc, _, score, tag = line.split()[:6]
            runs.setdefault(tag, {}).setdefault(query, {})[doc] = float(score)
    return runs


def main():
    tool, labels, run_path = sys.argv[1:4]
    qrels = load_qrels(labels)
    if tool == "pytrec_eval":
        import pytrec_eval

        measures = {"recall_10", "recip_rank", "P_10", "ndcg_cut_10", "map_cut_10"}
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
        for tag, run in load_runs(run_path).items():
            scores = evaluator.evaluate(run)
            print(tag, sum(s["recall_10"] for s in scores.values()) / len(scores))
    else:
        from ranx import Qrels, Run, evaluate

        run = Run.from_file(run_path, kind="trec")
        metrics = ["recall@10", "mrr@10", "hit_rate@10", "precision@10", "ndcg@10", "map@10"]
        print(evaluate(Qrels(qrels), run, metrics))


if __name__ == "__main__":
    main()
