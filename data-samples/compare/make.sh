#!/usr/bin/env bash
# Rebuilds this sample: the answer key with its held-out split, the
# candidate run `hybrid-v2`, derived deterministically from the realistic
# sample's `bm25-v3` logs, then `expected/` (the outputs of README.md's
# commands) and the stdout pasted in README.md.
# Usage: data-samples/compare/make.sh [path/to/rgrade]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
realistic=$(cd "$here/../realistic" && pwd)
rgrade=$(realpath "${1:-"$here/../../target/release/rgrade"}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. The candidate: every valid capture of the realistic logs (the last one
#    of a retried request, as `--repeats last` grades them), re-ranked and
#    re-timed as a hybrid BM25 + dense retriever would leave it:
#    - Japanese queries: the dense model tokenizes Japanese badly, so the
#      best-ranked relevant chunk falls to the bottom of the list (this
#      loses the required case q000025);
#    - other queries, by a hash of the query id: 30% gain a relevant chunk
#      BM25 never returned (inserted at rank 3), and with another 40% have
#      every relevant chunk moved up two places; 10% see their best
#      relevant chunk moved down two places; 20% are unchanged;
#    - q000261, the required export case that motivated the change, gains
#      its missing chunk;
#    - every capture is slower: the dense lookup adds time.
python3 - "$realistic" "$tmp/hybrid-v2.jsonl" <<'PY'
import gzip, hashlib, json, sys

realistic, out = sys.argv[1], sys.argv[2]
labels = {}
with open(f"{realistic}/labels.jsonl", encoding="utf-8") as f:
    for line in f:
        label = json.loads(line)
        rel = label["relevant"]
        grades = {d: 1 for d in rel} if isinstance(rel, list) else rel
        labels[str(label["query_id"])] = (
            sorted(d for d, g in grades.items() if g >= 1),
            label.get("language"),
        )

def lines():
    with open(f"{realistic}/logs/part-000.jsonl", "rb") as f:
        yield from f
    with gzip.open(f"{realistic}/logs/part-001.jsonl.gz", "rb") as f:
        yield from f

# The last valid capture of each (run, stage, query), in first-seen order.
captures = {}
for raw in lines():
    try:
        rec = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        continue
    results = rec.get("results") if isinstance(rec, dict) else None
    if not isinstance(results, list) or "query_id" not in rec:
        continue
    ids = [r["doc_id"] if isinstance(r, dict) else r for r in results]
    if len(set(ids)) != len(ids):
        continue
    captures[(rec.get("run"), rec.get("stage"), str(rec["query_id"]))] = rec

FOUND = {"q000261"}

def rerank(qid, ids):
    relevant, language = labels[qid]
    rel = set(relevant)
    present = [i for i, d in enumerate(ids) if d in rel]
    bucket = int(hashlib.md5(qid.encode()).hexdigest()[:8], 16) % 10
    if language == "ja":
        if present:
            first = ids[present[0]]
            ids = [d for d in ids if d != first] + [first]
        return ids
    if bucket < 3 or qid in FOUND:
        absent = [d for d in relevant if d not in ids]
        if absent:
            ids = (ids[:2] + [absent[0]] + ids[2:])[: len(ids)]
    if bucket < 7 or qid in FOUND:
        key = lambda i: i - 2.5 if ids[i] in rel else i
    elif bucket == 9 and present:
        key = lambda i: i + 2.5 if i == present[0] else i
    else:
        return ids
    return [ids[i] for i in sorted(range(len(ids)), key=key)]

with open(out, "w", encoding="utf-8") as f:
    for (run, stage, qid), rec in captures.items():
        results = rec["results"]
        ids = [r["doc_id"] for r in results]
        # The scores stay by position: the list is still sorted by score.
        scores = sorted((r["score"] for r in results), reverse=True)
        if qid in labels and labels[qid][0]:
            ids = rerank(qid, ids)
        out_rec = {
            "query_id": qid,
            "stage": stage,
            "run": "hybrid-v2",
            "results": [{"doc_id": d, "score": s} for d, s in zip(ids, scores)],
        }
        if "latency_ms" in rec:
            factor, extra = (1.25, 8.0) if stage == "retrieve" else (1.10, 12.0)
            out_rec["latency_ms"] = round(rec["latency_ms"] * factor + extra, 1)
        if "context_tokens" in rec:
            out_rec["context_tokens"] = rec["context_tokens"]
        f.write(json.dumps(out_rec, separators=(",", ":"), ensure_ascii=False) + "\n")
PY
rm -rf "$here/candidate" && mkdir -p "$here/candidate"
gzip -9n < "$tmp/hybrid-v2.jsonl" > "$here/candidate/hybrid-v2.jsonl.gz"

# 2. The answer key: the realistic labels, each query put in the `dev` split
#    (tuned on) or, for 30% of them by a hash of the query id, the held-out
#    `test` split (gated on).
python3 - "$realistic/labels.jsonl" "$here/labels.jsonl" <<'PY'
import hashlib, json, sys

source, out = sys.argv[1], sys.argv[2]
with open(source, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as w:
    for line in f:
        label = json.loads(line)
        bucket = int(hashlib.md5(str(label["query_id"]).encode()).hexdigest()[:8], 16) % 10
        label["split"] = "test" if bucket < 3 else "dev"
        w.write(json.dumps(label, separators=(",", ":"), ensure_ascii=False) + "\n")
PY

# 3. README.md's commands, run in a scratch directory with the same relative
#    output paths (out/...), so stdout names the same files.
mkdir -p "$tmp/run"
cd "$tmp/run"
for side in baseline:"$realistic/logs" candidate:"$here/candidate"; do
  "$rgrade" grade --labels "$here/labels.jsonl" -k 1,5,10 --repeats last \
    --max-rejects 10 -q -o "out/${side%%:*}" "${side#*:}"
done
status=0
"$rgrade" compare out/baseline out/candidate --rules "$here/rules.toml" \
  --metrics recall@5,recall@10,rr@10,ndcg@10 -o out/compare > stdout.txt || status=$?
if [ "$status" -ne 1 ]; then
  echo "make.sh: compare exited with $status, the story wants 1 (a rule fails)" >&2
  exit 1
fi
rm -rf "$here/expected" && mkdir -p "$here/expected"
cp out/compare/comparison.csv out/compare/per_query_delta.csv out/compare/gate.json \
  stdout.txt "$here/expected/"

# 4. Paste the stdout into README.md, between its stdout markers.
python3 - "$here/README.md" stdout.txt <<'PY'
import sys

readme, stdout = sys.argv[1], sys.argv[2]
text = open(readme, encoding="utf-8").read()
begin, end = "<!-- stdout: begin -->\n", "<!-- stdout: end -->"
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
body = "```text\n" + open(stdout, encoding="utf-8").read() + "```\n"
open(readme, "w", encoding="utf-8").write(head + begin + body + end + tail)
PY
