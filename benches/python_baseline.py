"""What users would otherwise run: load a TREC run and the answer key and
compute the same measures as `rgrade grade -k 10`, with pytrec_eval or ranx.

    python python_baseline.py pytrec_eval|ranx LABELS.jsonl RUN.trec
"""
import json
import sys


def load_qrels(path):
    qrels = {}
    with open(path) as f:
        for line in f:
            label = json.loads(line)
            relevant = label["relevant"]
            if isinstance(relevant, list):
                relevant = {doc: 1 for doc in relevant}
            qrels[str(label["query_id"])] = {doc: int(g) for doc, g in relevant.items()}
    return {q: docs for q, docs in qrels.items() if any(g > 0 for g in docs.values())}


def load_run(path):
    run = {}
    with open(path) as f:
        for line in f:
            query, _, doc, _, score, _ = line.split()[:6]
            run.setdefault(query, {})[doc] = float(score)
    return run


def main():
    tool, labels, run_path = sys.argv[1:4]
    qrels = load_qrels(labels)
    if tool == "pytrec_eval":
        import pytrec_eval

        run = load_run(run_path)
        measures = {"recall_10", "recip_rank", "P_10", "ndcg_cut_10", "map_cut_10"}
        scores = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
        print(sum(s["recall_10"] for s in scores.values()) / len(scores))
    else:
        from ranx import Qrels, Run, evaluate

        run = Run.from_file(run_path, kind="trec")
        metrics = ["recall@10", "mrr@10", "hit_rate@10", "precision@10", "ndcg@10", "map@10"]
        print(evaluate(Qrels(qrels), run, metrics))


if __name__ == "__main__":
    main()
