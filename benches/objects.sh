#!/usr/bin/env bash
# Object storage against the same files on disk: `rgrade grade` of
# `rgrade gen` logs (JSONL, gzip, Parquet) read from an S3-compatible
# server on 127.0.0.1 (moto's, started here), then from local files.
#
#   benches/objects.sh [--queries N] [--runs N] [--data DIR] [--rgrade BIN]
#
# Needs a Python with `moto[server]` (and boto3) as $PYTHON (default
# python3); --rgrade names the binary (default: target/release/rgrade,
# built here). Prints a Markdown table, each row the median of --runs runs
# (3 by default), and each format's object-storage time over its local
# time, the median of --runs rounds that each run both in turn
# (docs/BENCHMARKS.md, "Object storage"). Data lives in --data
# (default /tmp/rgrade-objects), never in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3 queries=100000 data=/tmp/rgrade-objects rgrade=
while [ $# -gt 0 ]; do
  case "$1" in
    --queries) queries=$2; shift ;;
    --runs) runs=$2; shift ;;
    --data) data=$2; shift ;;
    --rgrade) rgrade=$2; shift ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done
python=${PYTHON:-python3}
if [ -z "$rgrade" ]; then
  cargo build --release --quiet --bin rgrade
  rgrade=target/release/rgrade
fi

mkdir -p "$data"
if [ ! -f "$data/jsonl/logs.jsonl" ]; then
  "$rgrade" gen --queries "$queries" --results 30 -o "$data/jsonl" >/dev/null
  "$rgrade" gen --queries "$queries" --results 30 --format parquet -o "$data/parquet" >/dev/null
  mkdir -p "$data/gzip"
  cp "$data/jsonl/labels.jsonl" "$data/gzip/"
  gzip -c "$data/jsonl/logs.jsonl" >"$data/gzip/logs.jsonl.gz"
fi

# The server, on a free port, for as long as this script runs.
port_file=$(mktemp)
"$python" -c '
import sys, time
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
open(sys.argv[1], "w").write(str(server.get_host_and_port()[1]))
time.sleep(86400)
' "$port_file" >/dev/null 2>&1 &
server=$!
trap 'kill $server' EXIT
until [ -s "$port_file" ]; do sleep 0.2; done
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1 AWS_ALLOW_HTTP=true
export AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$port_file")
"$python" -c '
import boto3, pathlib, sys
s3 = boto3.client("s3")
s3.create_bucket(Bucket="bench")
root = pathlib.Path(sys.argv[1])
for path in root.rglob("*"):
    if path.is_file():
        s3.upload_file(str(path), "bench", path.relative_to(root).as_posix())
' "$data"

# Each round runs a format's local grading, then its object-storage one,
# so both see the same load: on a shared machine the load drifts between
# rounds, and the ratio of a round's pair is what compares. A row is the
# round of median wall time; the ratio is the median of the rounds'.
stats=$(mktemp)
declare -A RUNS RATIOS
# timed LABEL COMMAND...: one run, its "wall cpu rss" added to RUNS[LABEL];
# a failed run stops the bench.
timed() {
  local label=$1; shift
  sync
  if ! /usr/bin/time -o "$stats" -f '%e %U %S %M' "$@" >/dev/null 2>&1; then
    echo "$label: the run failed: $*" >&2
    exit 1
  fi
  RUNS[$label]+=$(tail -n 1 "$stats" | awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }')$'\n'
}
# median WORDS: the middle line of WORDS, sorted by number.
median() { printf '%s' "$1" | sort -n | sed -n "$(( (runs + 1) / 2 ))p"; }

echo "| run | wall s | CPU s | MB/s | peak RSS MB |"
echo "|---|---|---|---|---|"
for format in jsonl gzip parquet; do
  logs=$(cd "$data/$format" && ls logs.*)
  bytes=$(stat -c %s "$data/$format/$logs")
  for _ in $(seq "$runs"); do
    timed "$format local" "$rgrade" grade --labels "$data/$format/labels.jsonl" -q \
      --repeats last "$data/$format/$logs"
    timed "$format s3" "$rgrade" grade --labels "s3://bench/$format/labels.jsonl" -q \
      --repeats last "s3://bench/$format/$logs"
    local_wall=$(printf '%s' "${RUNS[$format local]}" | tail -n 1 | cut -d' ' -f1)
    s3_wall=$(printf '%s' "${RUNS[$format s3]}" | tail -n 1 | cut -d' ' -f1)
    RATIOS[$format]+=$(awk -v a="$s3_wall" -v b="$local_wall" 'BEGIN { printf "%.2f", a / b }')$'\n'
  done
  for where in local s3; do
    read -r wall cpu rss < <(median "${RUNS[$format $where]}")
    awk -v l="$format $where" -v w="$wall" -v c="$cpu" -v r="$rss" -v b="$bytes" 'BEGIN {
      printf "| %s | %.2f | %.2f | %.0f | %.0f |\n", l, w, c, b / 1e6 / w, r / 1024 }'
  done
done
rm -f "$stats"
echo
for format in jsonl gzip parquet; do
  echo "$format: object storage / local = $(median "${RATIOS[$format]}")x" \
    "(rounds: $(printf '%s' "${RATIOS[$format]}" | paste -sd' '))"
done
