#!/usr/bin/env bash
# Benchmark of `rgrade compare` on two real gradings of `rgrade gen` data.
#
#   benches/compare.sh [--queries N] [--runs N] [--data DIR]
#
# Generates N queries x 10 results (1,000,000 by default) as JSONL and as a
# TREC run. The JSONL `final` stage (reranked) is the baseline; the TREC
# run holds the retriever's rankings, which grade as stage `final` too: the
# candidate. Both are graded at k = 10, then compare is timed with its
# defaults (every metric, 10,000 permutations; the interval is closed-form)
# at 1 and 2 threads, the median of N runs (3 by default) with
# /usr/bin/time. Prints a Markdown table. Data lives in --data (default
# /tmp/rgrade-bench-compare), never in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

queries=1000000 runs=3 data=/tmp/rgrade-bench-compare
while [ $# -gt 0 ]; do
  case "$1" in
    --queries) queries=$2; shift ;;
    --runs) runs=$2; shift ;;
    --data) data=$2; shift ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

cargo build --release --quiet --bin rgrade
rgrade=target/release/rgrade
dir="$data/$queries"
if [ ! -f "$dir/done" ]; then
  rm -rf "$dir"
  "$rgrade" gen --queries "$queries" --results 10 --seed 1 -o "$dir/jsonl" 2>/dev/null
  "$rgrade" gen --queries "$queries" --results 10 --seed 1 --format trec -o "$dir/trec" 2>/dev/null
  "$rgrade" grade -q --labels "$dir/jsonl/labels.jsonl" -k 10 --stage final -o "$dir/baseline" "$dir/jsonl/logs.jsonl"
  "$rgrade" grade -q --labels "$dir/trec/labels.jsonl" -k 10 -o "$dir/candidate" "$dir/trec/run.trec"
  touch "$dir/done"
fi

echo "| compare, $queries queries x 6 metrics | wall s | CPU s | peak RSS MB |"
echo "|---|---|---|---|"
for j in 1 2; do
  results=()
  stats=$(mktemp)
  for _ in $(seq "$runs"); do
    /usr/bin/time -o "$stats" -f '%e %U %S %M' \
      "$rgrade" compare -q -j "$j" -o "$dir/compare" "$dir/baseline" "$dir/candidate" >/dev/null
    results+=("$(tail -n 1 "$stats")")
  done
  rm -f "$stats"
  printf '%s\n' "${results[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p" | {
    read -r wall user sys rss
    awk -v j="$j" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" 'BEGIN {
      printf "| -j%s | %.2f | %.2f | %.0f |\n", j, w, u + s, r / 1024 }'
  }
done
