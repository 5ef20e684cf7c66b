#!/usr/bin/env bash
# rgrade on data shapes it was not tuned on: logs from benches/shapes.py,
# an independent generator, not `rgrade gen`.
#
#   benches/shapes.sh [--quick] [--python] [--runs N] [--data DIR]
#
# Each shape changes a few knobs of the generator (id shapes and lengths,
# label and event order, score digits, ranking depth, TREC tags and label
# format); see the table below. For every JSONL shape it times rgrade
# -j2 writing all its outputs against the parse-only baseline over its
# labels and logs, and at a million queries also from a compiled key
# against parsing the logs alone; for every TREC shape against the split
# baseline over its labels and run, and with --python against
# pytrec_eval; for the first shape compressed by gzip, pigz, zstd and
# pzstd (each one that is installed), against decompressing alone.
# Prints the runs, then the
# ratio of each shape to its target with the worst shape first.
# --quick uses 10x smaller data. Data lives in --data (default
# /tmp/rgrade-shapes), never in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3 quick=0 python=0 data=/tmp/rgrade-shapes
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --python) python=1 ;;
    --runs) runs=$2; shift ;;
    --data) data=$2; shift ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

source benches/measure.sh
cargo build --release --quiet --bin rgrade --bench parse_only
rgrade=target/release/rgrade
parse_only=$(ls -t target/release/deps/parse_only-* | grep -v '\.d$' | head -n 1)
scale=$(( quick ? 10 : 1 ))
mkdir -p "$data"

# name|queries|generator knobs. The first is the issue's shape: chunk ids
# of a knowledge base, random-looking query ids, nothing in id order.
shapes=(
  "jsonl base|100000|--results 100"
  "jsonl sequential ids, all sorted|100000|--results 100 --query-ids seq --labels-order sorted --events-order sorted"
  "jsonl UUID queries, URL docs, 17 digits|100000|--results 100 --query-ids uuid --doc-ids url --score-digits 17"
  "jsonl integer ids, bare doc ids|100000|--results 100 --query-ids int --doc-ids int --results-as strings"
  "jsonl 1M queries x 10|1000000|--results 10"
  "trec base, qrels|100000|--format trec --results 100 --labels-format qrels"
  "trec integer ids, 2 digits (ties), qrels|100000|--format trec --results 100 --query-ids int --doc-ids int --score-digits 2 --labels-format qrels"
  "trec 2 tags interleaved, UUIDs, 17 digits|50000|--format trec --results 100 --tags 2 --tags-layout interleaved --query-ids uuid --doc-ids uuid --score-digits 17"
  "trec 1M queries x 10, qrels|1000000|--format trec --results 10 --labels-format qrels"
)

# generate NAME QUERIES KNOBS: the shape's files in its own directory
# (printed), made once.
generate() {
  local dir="$data/$(echo "$1" | tr -c 'a-zA-Z0-9\n' '-')"
  if [ ! -f "$dir/done" ]; then
    rm -rf "$dir"
    # shellcheck disable=SC2086
    python3 benches/shapes.py --queries $(( $2 / scale )) $3 -o "$dir"
    touch "$dir/done"
  fi
  echo "$dir"
}

echo "| run | wall s | CPU s | MB/s | peak RSS MB |"
echo "|---|---|---|---|---|"
declare -A TARGET LIMIT
first=""
for shape in "${shapes[@]}"; do
  IFS='|' read -r name queries knobs <<<"$shape"
  dir=$(generate "$name" "$queries" "$knobs")
  labels=$(ls "$dir"/labels.*)
  if [ -f "$dir/logs.jsonl" ]; then
    logs=$dir/logs.jsonl bytes=$(stat -c %s "$logs")
    first=${first:-$dir}
    # As the performance contract states it: against parsing the labels
    # and the logs, within 1.5x at 100,000 queries and 2x at a million.
    limit=$([ "$queries" -ge 1000000 ] && echo 2 || echo 1.5)
    measure "$name: parse-only -j2" "$bytes" "$parse_only" -j 2 "$labels" "$logs"
    measure "$name: rgrade -j2" "$bytes" "$rgrade" grade -q -o "$dir/out" --labels "$labels" -k 10 -j 2 "$logs"
    TARGET[$name]=$(ratio "$name: rgrade -j2" "$name: parse-only -j2") LIMIT[$name]="at most ${limit}x parsing labels and logs"
    if [ "$queries" -ge 1000000 ]; then
      key="$name, from a compiled key"
      [ -f "$dir/labels.rgx" ] || "$rgrade" index "$labels" -o "$dir/labels.rgx" 2>/dev/null
      measure "$name: parse-only, logs alone -j2" "$bytes" "$parse_only" -j 2 "$logs"
      measure "$key: rgrade -j2" "$bytes" "$rgrade" grade -q -o "$dir/out" --labels "$dir/labels.rgx" -k 10 -j 2 "$logs"
      TARGET[$key]=$(ratio "$key: rgrade -j2" "$name: parse-only, logs alone -j2") LIMIT[$key]="at most 1.5x parsing the logs alone"
    fi
  else
    logs=$dir/run.trec bytes=$(stat -c %s "$logs")
    split="$name, against splitting"
    measure "$name: TREC split -j2" "$bytes" "$parse_only" -j 2 --trec "$labels" "$logs"
    measure "$name: rgrade -j2" "$bytes" "$rgrade" grade -q -o "$dir/out" --labels "$labels" -k 10 -j 2 "$logs"
    TARGET[$split]=$(ratio "$name: rgrade -j2" "$name: TREC split -j2") LIMIT[$split]="at most 1.3x splitting qrels and run"
    if [ "$python" = 1 ]; then
      tools=$(python_tools "$data")
      runs=1 measure "$name: pytrec_eval" "$bytes" "$tools" benches/python_baseline.py pytrec_eval "$labels" "$logs"
      TARGET[$name]=$(ratio "$name: pytrec_eval" "$name: rgrade -j2")
    else
      TARGET[$name]="- (--python)"
    fi
    LIMIT[$name]="at least 25x faster than pytrec_eval"
  fi
done

# The first JSONL shape, compressed as each installed tool writes it.
base=$first/logs.jsonl labels=$(ls "$first"/labels.*)
declare -A WRITE=(
  [gzip]="gzip -1 -c"
  [pigz]="pigz -1 -c"
  [zstd]="zstd -q -3 -c"
  [pzstd]="pzstd -q -3 -p 2 -c"
)
for tool in gzip pigz zstd pzstd; do
  command -v "$tool" >/dev/null || continue
  ext=$([ "${tool%zstd}" = "$tool" ] && echo gz || echo zst)
  file=$first/logs.$tool.jsonl.$ext
  [ -f "$file" ] || ${WRITE[$tool]} "$base" >"$file"
  name="jsonl base, $tool"
  measure "$name: decompress only" "$(stat -c %s "$base")" "$parse_only" --decode-only "$file"
  measure "$name: rgrade -j2" "$(stat -c %s "$base")" "$rgrade" grade -q -o "$first/out" --labels "$labels" -k 10 -j 2 "$file"
  TARGET[$name]=$(ratio "$name: rgrade -j2" "$name: decompress only") LIMIT[$name]="at most 1.4x decompressing alone"
done

# Each shape against its target, the worst first: a JSONL or compressed
# ratio is worse when larger, a TREC speed-up when smaller.
echo
echo "| shape | measured | target |"
echo "|---|---|---|"
for name in "${!TARGET[@]}"; do
  value=${TARGET[$name]%x*}
  case ${LIMIT[$name]} in
    *faster*) badness=$(awk -v v="$value" 'BEGIN { print (v + 0 > 0) ? 25 / v : 0 }') ;;
    *) limit=${LIMIT[$name]#at most } limit=${limit%%x*}
       badness=$(awk -v v="$value" -v l="$limit" 'BEGIN { print v / l }') ;;
  esac
  printf '%s\t| %s | %s | %s |\n' "$badness" "$name" "${TARGET[$name]}" "${LIMIT[$name]}"
done | sort -t $'\t' -k1,1gr | cut -f2-
