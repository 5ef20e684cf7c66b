#!/usr/bin/env bash
# Rebuilds this sample from the realistic one: an answer key whose labels
# name a held-out split and the collection version they were reviewed
# against, and the final-stage captures of bm25-v3 with the outcome of the
# answer built on each; then `expected/` (the outputs of README.md's
# command and its stdout).
# Usage: data-samples/questions/make.sh [path/to/rgrade]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
realistic=$(cd "$here/../realistic" && pwd)
rgrade=$(realpath "${1:-"$here/../../target/release/rgrade"}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$realistic" "$here" <<'PY'
import hashlib, json, sys

realistic, here = sys.argv[1], sys.argv[2]

def unit(text, salt):
    """A number in [0, 1) drawn from a hash: the same on every run."""
    digest = hashlib.md5(f"{salt}:{text}".encode()).hexdigest()
    return int(digest[:8], 16) / 2**32

# The captures: the final stage of bm25-v3 in the plain shard, the last
# capture of each query. 85% carry the outcome of the answer built on them
# (from user feedback or an answer grader): acceptable 80% of the time when
# every relevant chunk is in the top 10, 30% of the time when one is not.
captures = {}
with open(f"{realistic}/logs/part-000.jsonl", encoding="utf-8") as f:
    for line in f:
        rec = json.loads(line)
        if rec.get("stage") == "final" and rec.get("run") == "bm25-v3":
            captures[str(rec["query_id"])] = rec

# The answer key: the labels of the captured queries. 30% of them are
# held out as `test`, the rest `dev`; they were reviewed against collection
# version kb-2026-11, but 4% of them, reviewed earlier, against kb-2026-09.
relevant = {}
with open(f"{realistic}/labels.jsonl", encoding="utf-8") as f, \
        open(f"{here}/labels.jsonl", "w", encoding="utf-8") as out:
    for line in f:
        label = json.loads(line)
        qid = str(label["query_id"])
        if qid not in captures:
            continue
        label["split"] = "test" if unit(qid, "split") < 0.3 else "dev"
        label["collection_version"] = "kb-2026-09" if unit(qid, "version") < 0.04 else "kb-2026-11"
        rel = label["relevant"]
        grades = {d: 1 for d in rel} if isinstance(rel, list) else rel
        relevant[qid] = {d for d, g in grades.items() if g >= 1}
        out.write(json.dumps(label, separators=(",", ":"), ensure_ascii=False) + "\n")

with open(f"{here}/logs.jsonl", "w", encoding="utf-8") as out:
    for qid, rec in captures.items():
        if unit(qid, "feedback") < 0.85:
            top = [r["doc_id"] if isinstance(r, dict) else r for r in rec["results"][:10]]
            found_all = relevant.get(qid, set()) <= set(top)
            rec["answer_ok"] = unit(qid, "answer") < (0.8 if found_all else 0.3)
        out.write(json.dumps(rec, separators=(",", ":"), ensure_ascii=False) + "\n")
PY

# README.md's command, run in a scratch directory with the same relative
# paths, so stdout names the same files.
mkdir -p "$tmp/run/data-samples"
ln -s "$here" "$tmp/run/data-samples/questions"
cd "$tmp/run"
"$rgrade" grade --labels data-samples/questions/labels.jsonl -k 1,5,10 \
  --review-queue --pool-depth 5 -o out/questions data-samples/questions/logs.jsonl > stdout.txt
rm -rf "$here/expected" && mkdir -p "$here/expected"
cp out/questions/per_query.csv out/questions/aggregates.csv out/questions/attribution.csv \
  out/questions/review_queue.csv stdout.txt "$here/expected/"
