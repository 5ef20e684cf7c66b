#!/usr/bin/env bash
# Show that two rgrade builds behave identically: the same stdout, stderr,
# exit status and output files, byte for byte, on every shipped sample and
# on `rgrade gen` data (JSONL and TREC, at -j1 and -j2). summary.json is
# compared without its elapsed time and throughput, the two facts that
# differ from run to run.
#
#   tests/identity.sh BEFORE AFTER [--queries N]
#
# BEFORE and AFTER are rgrade binaries, or git revisions to build (each
# in a throwaway worktree). Use it around a change that must not change
# behaviour: a refactor, a speed-up. Exit status 0 when every case matches.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

queries=20000
[ $# -ge 2 ] || { echo "usage: tests/identity.sh BEFORE AFTER [--queries N]" >&2; exit 2; }
before=$1 after=$2
shift 2
while [ $# -gt 0 ]; do
  case "$1" in
    --queries) queries=$2; shift ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

work=$(mktemp -d /tmp/rgrade-identity.XXXXXX)
trap 'git -C "$root" worktree prune; rm -rf "$work"' EXIT

# binary SIDE WHAT: the path of SIDE's rgrade, building WHAT when it is a
# git revision. Each side is linked as `rgrade` in a directory of its own,
# so that the command line recorded in summary.json reads the same.
binary() {
  local side=$1 what=$2
  mkdir -p "$work/$side/bin"
  if [ -x "$what" ] && [ -f "$what" ]; then
    ln -s "$(realpath "$what")" "$work/$side/bin/rgrade"
  else
    git -C "$root" worktree add --detach --quiet "$work/$side/src" "$what"
    cargo build --release --quiet --manifest-path "$work/$side/src/Cargo.toml" \
      --target-dir "$root/target/identity" --bin rgrade
    cp "$root/target/identity/release/rgrade" "$work/$side/rgrade"
    ln -s "$work/$side/rgrade" "$work/$side/bin/rgrade"
  fi
}
binary before "$before"
binary after "$after"

# Data no sample has: `rgrade gen` logs in both formats, made once by the
# BEFORE build so that both sides read the same bytes.
gen="$work/gen"
PATH="$work/before/bin:$PATH" rgrade gen --queries "$queries" --results 20 --seed 3 -o "$gen/jsonl" 2>/dev/null
PATH="$work/before/bin:$PATH" rgrade gen --queries "$queries" --results 20 --seed 3 \
  --format trec -o "$gen/trec" 2>/dev/null
gzip -1 -k "$gen/jsonl/logs.jsonl"
# The labels as TREC qrels; the run's lines shuffled, and dealt over two
# files, so that TREC rankings are held and read a second time.
python3 - "$gen" <<'PY'
import json, random, sys
gen = sys.argv[1]
with open(f"{gen}/trec/qrels.txt", "w") as qrels:
    for line in open(f"{gen}/trec/labels.jsonl"):
        label = json.loads(line)
        relevant = label["relevant"]
        grades = relevant if isinstance(relevant, dict) else {doc: 1 for doc in relevant}
        for doc, grade in grades.items():
            qrels.write(f"{label['query_id']} 0 {doc} {grade}\n")
lines = open(f"{gen}/trec/run.trec").readlines()
random.Random(3).shuffle(lines)
open(f"{gen}/trec/shuffled.trec", "w").writelines(lines)
lines.sort()
open(f"{gen}/trec/dealt-a.trec", "w").writelines(lines[0::2])
open(f"{gen}/trec/dealt-b.trec", "w").writelines(lines[1::2])
# Labels that break deep inside the file, after several blocks: the error
# must name the same line whatever the thread count.
labels = open(f"{gen}/jsonl/labels.jsonl").readlines()
broken = labels[:]
broken[len(broken) * 3 // 4] = '{"query_id": "cut off mid-wr\n'
open(f"{gen}/broken-labels.jsonl", "w").writelines(broken)
open(f"{gen}/twice-labels.jsonl", "w").writelines(labels + labels[len(labels) // 2:][:1])
PY

# Every case is one rgrade command line; OUT stands for its output directory.
cases=(
  "grade --labels data-samples/seed/labels.jsonl -k 3 data-samples/seed/logs.jsonl"
  "grade --labels data-samples/seed/labels.jsonl -k 3 -o OUT data-samples/seed/logs.jsonl"
  "grade --labels data-samples/realistic/labels.jsonl -k 1,5,10 --repeats last --max-rejects 10 -o OUT data-samples/realistic/logs"
  "grade --labels data-samples/realistic/labels.jsonl -k 1,5,10 -o OUT data-samples/realistic/logs"
  "grade --labels data-samples/realistic/labels.jsonl -k 10,1 --repeats mean --missing skip --duplicate-docs dedupe --max-rejects 10 -o OUT data-samples/realistic/logs"
  "grade --labels data-samples/realistic/labels.jsonl -k 5 --repeats first --min-rel 2 --stage final --meta snapshot=2026-11 -j1 --max-rejects 10 -o OUT data-samples/realistic/logs data-samples/compare/candidate"
  "grade --labels data-samples/diagnostics/labels.jsonl -k 1,3 --stage-order retrieve,rerank,final --doc-collections data-samples/diagnostics/doc_collections.csv -o OUT data-samples/diagnostics/logs.jsonl"
  "grade --labels data-samples/diagnostics/labels.jsonl -k 1,3 --stage-order retrieve,rerank,final --doc-collections data-samples/diagnostics/doc_collections.csv --max-leaks 1 -o OUT data-samples/diagnostics/logs.jsonl"
  "grade --labels data-samples/diagnostics/labels.jsonl -k 1,3 --corpus data-samples/diagnostics/corpus.txt -o OUT data-samples/diagnostics/logs.jsonl"
  "grade --labels data-samples/diagnostics/labels.jsonl -k 2 data-samples/no-such-file.jsonl"
  "grade --labels data-samples/realistic/logs/part-000.jsonl data-samples/seed/logs.jsonl"
  "grade --labels data-samples/seed/labels.jsonl -k 0 data-samples/seed/logs.jsonl"
  "grade --labels $gen/jsonl/labels.jsonl -k 1,5,10 -j1 -o OUT $gen/jsonl/logs.jsonl"
  "grade --labels $gen/jsonl/labels.jsonl -k 1,5,10 -j2 -o OUT $gen/jsonl/logs.jsonl"
  "grade --labels $gen/jsonl/labels.jsonl -k 3 --repeats mean -j2 -o OUT $gen/jsonl/logs.jsonl.gz"
  "grade --labels $gen/trec/labels.jsonl -k 1,5,10 -j1 -o OUT $gen/trec/run.trec"
  "grade --labels $gen/trec/labels.jsonl -k 1,5,10 -j2 -o OUT $gen/trec/run.trec"
  "grade --labels $gen/trec/qrels.txt -k 10,100 -j1 -o OUT $gen/trec/shuffled.trec"
  "grade --labels $gen/trec/qrels.txt -k 10,100 -j2 -o OUT $gen/trec/shuffled.trec"
  "grade --labels $gen/trec/qrels.txt -k 5 -j2 -o OUT $gen/trec/dealt-a.trec $gen/trec/dealt-b.trec"
  "grade --labels $gen/broken-labels.jsonl -j1 $gen/jsonl/logs.jsonl"
  "grade --labels $gen/broken-labels.jsonl -j2 $gen/jsonl/logs.jsonl"
  "grade --labels $gen/twice-labels.jsonl -j2 $gen/jsonl/logs.jsonl"
  "gen --queries 300 --results 12 --seed 9 -o OUT"
  "gen --queries 300 --results 12 --seed 9 --format trec --unlabeled 50 -o OUT"
)

# run SIDE N ARGS...: run case N on SIDE into $work/SIDE/N.
run() {
  local side=$1 n=$2 dir="$work/$1/case-$2"
  shift 2
  mkdir -p "$dir"
  local args=()
  for arg in "$@"; do args+=("${arg//OUT/$dir/out}"); done
  local status=0
  PATH="$work/$side/bin:$PATH" rgrade "${args[@]}" >"$dir/stdout" 2>"$dir/stderr" || status=$?
  echo "$status" >"$dir/status"
  # Paths in messages name the side's directory: make them the same.
  sed -i "s|$work/$side/case-$n|CASE|g" "$dir/stdout" "$dir/stderr"
  if [ -f "$dir/out/summary.json" ]; then
    python3 - "$dir/out/summary.json" "$work/$side/case-$n" <<'EOF'
import json, sys
path, case = sys.argv[1], sys.argv[2]
summary = json.load(open(path))
summary.pop("elapsed_seconds", None)
summary.pop("as_of", None)
summary.pop("throughput", None)
summary["command"] = [arg.replace(case, "CASE") for arg in summary.get("command", [])]
json.dump(summary, open(path, "w"), indent=2, sort_keys=False)
EOF
  fi
}

# Compare runs too: the realistic sample against the compare sample's candidate.
compare_case() {
  local side=$1 dir="$work/$1/compare"
  mkdir -p "$dir"
  local status=0
  (
    export PATH="$work/$side/bin:$PATH"
    rgrade grade --labels data-samples/compare/labels.jsonl -k 1,5,10 --repeats last \
      --max-rejects 10 -q -o "$dir/baseline" data-samples/realistic/logs
    rgrade grade --labels data-samples/compare/labels.jsonl -k 1,5,10 --repeats last \
      --max-rejects 10 -q -o "$dir/candidate" data-samples/compare/candidate
    rgrade compare "$dir/baseline" "$dir/candidate" --rules data-samples/compare/rules.toml \
      --metrics recall@5,recall@10,rr@10,ndcg@10 -o "$dir/out"
  ) >"$dir/stdout" 2>"$dir/stderr" || status=$?
  echo "$status" >"$dir/status"
  rm -rf "$dir/baseline" "$dir/candidate"
  # comparison.json and the page name both sides' files by path too.
  sed -i "s|$work/$side/compare|CASE|g" "$dir/stdout" "$dir/stderr"
  if [ -d "$dir/out" ]; then
    find "$dir/out" -type f -exec sed -i "s|$work/$side/compare|CASE|g" {} +
  fi
}

failed=0
for side in before after; do
  for n in "${!cases[@]}"; do
    # shellcheck disable=SC2086 # a case is a list of words
    run "$side" "$n" ${cases[$n]}
  done
  compare_case "$side"
done
# same NAME WHAT: compare one case's two sides.
same() {
  if diff -r "$work/before/$1" "$work/after/$1" >"$work/diff" 2>&1; then
    # The exit status and the files compared, to show what was the same.
    local files
    files=$(find "$work/after/$1" -type f | wc -l)
    echo "same  exit $(cat "$work/after/$1/status"), $files files: $2"
  else
    echo "DIFF  $2"
    head -n 40 "$work/diff"
    failed=1
  fi
}
for n in "${!cases[@]}"; do
  same "case-$n" "${cases[$n]}"
done
same compare "the compare sample: grade twice, compare with rules"
exit "$failed"
