#!/usr/bin/env bash
# End-to-end benchmark of `rgrade grade` on `rgrade gen` data.
#
#   benches/e2e.sh [--quick] [--python] [--sizes "S M"] [--runs N] [--data DIR] [--no-shapes]
#
# Generates S (100,000 queries x 100 results) and M (1,000,000 x 10) as
# JSONL, gzip, zstd, OTLP traces, Parquet and TREC (also with its lines shuffled, and with each
# query's lines dealt over two files), then times, each the median of N runs (3 by
# default) with /usr/bin/time: rgrade at 1 and 2 threads writing all its
# outputs (-o, as a nightly job does), also from a compiled answer key
# (rgrade index), the parse-only baseline (same reader and JSON parse of
# the labels and logs, nothing else; of the logs alone for the key), the
# TREC split baseline (qrels and run split into fields, scores parsed as
# f32), decompression alone, and with --python pytrec_eval and ranx on the TREC files
# (installed into a throwaway venv; one run each, they are slow). Prints a
# Markdown table of the runs, then one of rgrade's performance targets as
# measured (docs/BENCHMARKS.md shows both and explains them). Then, unless
# --no-shapes, benches/shapes.sh with the same options measures the
# targets on data rgrade gen does not make, in --data/shapes.
# --quick uses 10x smaller data. Data lives in --data (default
# /tmp/rgrade-bench), never in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3 quick=0 python=0 data=/tmp/rgrade-bench sizes="S M" shapes=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --python) python=1 ;;
    --runs) runs=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --data) data=$2; shift ;;
    --no-shapes) shapes=0 ;;
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

# make NAME QUERIES RESULTS: JSONL (+ .gz, .zst, + doubled by unlabeled
# traffic), TREC, OTLP traces (the JSONL log's two captures per query as
# RETRIEVER and RERANKER spans, beside an LLM span) and Parquet (the JSONL
# log's events as rows).
make() {
  local name=$1 queries=$(( $2 / scale )) results=$3 dir="$data/$1"
  [ -f "$dir/done" ] && return
  rm -rf "$dir"
  "$rgrade" gen --queries "$queries" --results "$results" --seed 1 -o "$dir/jsonl" 2>/dev/null
  "$rgrade" gen --queries "$queries" --results "$results" --seed 1 --unlabeled "$queries" -o "$dir/doubled" 2>/dev/null
  "$rgrade" gen --queries "$queries" --results "$results" --seed 1 --format trec -o "$dir/trec" 2>/dev/null
  # The same labels as TREC qrels, as TREC users keep them.
  python3 -c 'import json, sys
for line in sys.stdin:
    label = json.loads(line)
    relevant = label["relevant"]
    grades = relevant if isinstance(relevant, dict) else dict.fromkeys(relevant, 1)
    for doc, grade in grades.items():
        print(label["query_id"], 0, doc, grade)' <"$dir/trec/labels.jsonl" >"$dir/trec/qrels.txt"
  "$rgrade" index "$dir/jsonl/labels.jsonl" -o "$dir/jsonl/labels.rgx" 2>/dev/null
  "$rgrade" gen --queries "$queries" --results "$results" --seed 1 --format otlp -o "$dir/otlp" 2>/dev/null
  "$rgrade" gen --queries "$queries" --results "$results" --seed 1 --format parquet -o "$dir/parquet" 2>/dev/null
  gzip -1 -k "$dir/jsonl/logs.jsonl"
  zstd -q -3 -k "$dir/jsonl/logs.jsonl"
  touch "$dir/done"
}

# layouts NAME: the TREC run with its lines shuffled, and dealt line by
# line over two files (each query's lines in both), as runs not grouped by
# query come.
layouts() {
  local dir="$data/$1"
  [ -f "$dir/layouts/done" ] && return
  rm -rf "$dir/layouts"
  mkdir -p "$dir/layouts"
  shuf --random-source=<(yes) "$dir/trec/run.trec" >"$dir/layouts/shuffled.trec"
  awk -v dir="$dir/layouts" '{ print > (dir "/dealt-" NR % 2 ".trec") }' "$dir/trec/run.trec"
  touch "$dir/layouts/done"
}

# targets: one row per performance target (docs/BENCHMARKS.md), one column
# per size measured.
targets() {
  local row cells
  echo
  echo "| target |$(printf ' %s |' $sizes)"
  echo "|---|$(printf -- '---|%.0s' $sizes)"
  for row in jsonl key split threads rss doubled trec compressed formats; do
    cells=""
    for s in $sizes; do
      case $row in
        jsonl) cells+="$(ratio "$s rgrade JSONL -j1" "$s parse-only baseline -j1") (-j1), $(ratio "$s rgrade JSONL -j2" "$s parse-only baseline -j2") (-j2) | " ;;
        key) cells+="$(ratio "$s rgrade JSONL from a compiled key -j2" "$s parse-only baseline, logs alone -j2") | " ;;
        split) cells+="$(ratio "$s rgrade TREC -j1" "$s TREC split baseline -j1") (-j1), $(ratio "$s rgrade TREC -j2" "$s TREC split baseline -j2") (-j2) | " ;;
        threads) cells+="$(ratio "$s rgrade JSONL -j1" "$s rgrade JSONL -j2") | " ;;
        rss) cells+="${RSS_MB["$s rgrade JSONL -j2"]} MB | " ;;
        doubled) cells+="${RSS_MB["$s rgrade JSONL -j2"]} → ${RSS_MB["$s rgrade JSONL + unlabeled (2x log) -j2"]} MB | " ;;
        trec) cells+="$(ratio "$s pytrec_eval TREC" "$s rgrade TREC -j2"), $(ratio "$s ranx TREC" "$s rgrade TREC -j2") | " ;;
        compressed) cells+="$(ratio "$s rgrade .jsonl.gz -j2" "$s decompress only .gz"), $(ratio "$s rgrade .jsonl.zst -j2" "$s decompress only .zst") | " ;;
        formats) cells+="$(ratio "$s rgrade OTLP -j2" "$s rgrade JSONL -j2"), $(ratio "$s rgrade Parquet -j2" "$s rgrade JSONL -j2") | " ;;
      esac
    done
    cells=${cells% }
    case $row in
      jsonl) echo "| JSONL over parse-only of labels and logs, same threads (at most 1.5x S, 2x M) | $cells" ;;
      key) echo "| JSONL from a compiled key over parse-only of the logs (at most 1.5x on M) | $cells" ;;
      split) echo "| TREC over splitting qrels and run (at most 1.3x) | $cells" ;;
      threads) echo "| 2 threads faster than 1, JSONL (at least 1.8x) | $cells" ;;
      rss) echo "| JSONL peak RSS (under 300 MB on S, 1 GiB on M) | $cells" ;;
      doubled) echo "| JSONL RSS when unlabeled traffic doubles the log (within 10%) | $cells" ;;
      trec) echo "| TREC faster than pytrec_eval, ranx (25x, 100x; --python) | $cells" ;;
      compressed) echo "| .gz, .zst over decompressing alone (at most 1.4x) | $cells" ;;
      formats) echo "| OTLP, Parquet over JSONL, the same captures, -j2 (Parquet at most 1x) | $cells" ;;
    esac
  done
}

echo "| run | wall s | CPU s | MB/s | peak RSS MB |"
echo "|---|---|---|---|---|"
for size in $sizes; do
  if [ "$size" = S ]; then make S 100000 100; else make M 1000000 10; fi
  d="$data/$size"
  out="$d/out"
  labels="$d/jsonl/labels.jsonl"
  plain=$(stat -c %s "$d/jsonl/logs.jsonl")
  for j in 1 2; do
    measure "$size parse-only baseline -j$j" "$plain" "$parse_only" -j "$j" "$labels" "$d/jsonl/logs.jsonl"
    measure "$size rgrade JSONL -j$j" "$plain" "$rgrade" grade -q -o "$out" --labels "$labels" -k 10 -j "$j" "$d/jsonl/logs.jsonl"
  done
  measure "$size parse-only baseline, logs alone -j2" "$plain" "$parse_only" -j 2 "$d/jsonl/logs.jsonl"
  measure "$size rgrade JSONL from a compiled key -j2" "$plain" "$rgrade" grade -q -o "$out" --labels "$d/jsonl/labels.rgx" -k 10 -j 2 "$d/jsonl/logs.jsonl"
  measure "$size rgrade JSONL + unlabeled (2x log) -j2" "$(stat -c %s "$d/doubled/logs.jsonl")" \
    "$rgrade" grade -q -o "$out" --labels "$labels" -k 10 -j 2 "$d/doubled/logs.jsonl"
  for z in gz zst; do
    measure "$size decompress only .$z" "$plain" "$parse_only" --decode-only "$d/jsonl/logs.jsonl.$z"
    measure "$size rgrade .jsonl.$z -j2" "$plain" "$rgrade" grade -q -o "$out" --labels "$labels" -k 10 -j 2 "$d/jsonl/logs.jsonl.$z"
  done
  otlp_bytes=$(stat -c %s "$d/otlp/traces.jsonl")
  for j in 1 2; do
    measure "$size rgrade OTLP -j$j" "$otlp_bytes" "$rgrade" grade -q -o "$out" --labels "$labels" -k 10 -j "$j" "$d/otlp/traces.jsonl"
  done
  # MB/s of Parquet counts its bytes on disk: zstd-compressed columns.
  parquet_bytes=$(stat -c %s "$d/parquet/logs.parquet")
  for j in 1 2; do
    measure "$size rgrade Parquet -j$j" "$parquet_bytes" "$rgrade" grade -q -o "$out" --labels "$labels" -k 10 -j "$j" "$d/parquet/logs.parquet"
  done
  trec_bytes=$(stat -c %s "$d/trec/run.trec")
  for j in 1 2; do
    measure "$size TREC split baseline -j$j" "$trec_bytes" "$parse_only" -j "$j" --trec "$d/trec/qrels.txt" "$d/trec/run.trec"
    measure "$size rgrade TREC -j$j" "$trec_bytes" "$rgrade" grade -q -o "$out" --labels "$d/trec/qrels.txt" -k 10 -j "$j" "$d/trec/run.trec"
  done
  layouts "$size"
  measure "$size rgrade TREC, lines shuffled -j2" "$trec_bytes" "$rgrade" grade -q -o "$out" --labels "$d/trec/labels.jsonl" -k 10 -j 2 "$d/layouts/shuffled.trec"
  measure "$size rgrade TREC, dealt over 2 files -j2" "$trec_bytes" "$rgrade" grade -q -o "$out" --labels "$d/trec/labels.jsonl" -k 10 -j 2 "$d/layouts/dealt-0.trec" "$d/layouts/dealt-1.trec"
  if [ "$python" = 1 ]; then
    tools=$(python_tools "$data")
    for tool in pytrec_eval ranx; do
      runs=1 measure "$size $tool TREC" "$trec_bytes" "$tools" benches/python_baseline.py "$tool" "$d/trec/labels.jsonl" "$d/trec/run.trec"
    done
  fi
done
targets
if [ "$shapes" = 1 ]; then
  echo
  benches/shapes.sh --runs "$runs" --data "$data/shapes" \
    $([ "$quick" = 1 ] && echo --quick) $([ "$python" = 1 ] && echo --python)
fi
