#!/usr/bin/env bash
# Rebuilds this sample: `rgrade gen` traffic, sharded and compressed as a
# rotating log writer leaves it, plus the flaws real captures have.
# Usage: data-samples/realistic/make.sh [path/to/rgrade]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rgrade=${1:-"$here/../../target/release/rgrade"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$rgrade" gen --queries 300 --results 20 --seed 7 --unlabeled 20 -o "$tmp" 2>/dev/null
cp "$tmp/labels.jsonl" "$here/labels.jsonl"
rm -rf "$here/logs" && mkdir -p "$here/logs"

# Two shards: the first plain, the second gzip-compressed.
head -n 320 "$tmp/logs.jsonl" > "$here/logs/part-000.jsonl"
{
  tail -n +321 "$tmp/logs.jsonl"
  # A client retried three requests: the same captures again, slower.
  sed -n '5,7p' "$tmp/logs.jsonl" | sed -E 's/"latency_ms":[0-9.]+/"latency_ms":950.0/'
  # A blank line left by a crashed writer.
  echo
  # A line cut off mid-write.
  sed -n '8p' "$tmp/logs.jsonl" | cut -c 1-150
  # A capture without its results.
  echo '{"query_id":"q000010","stage":"final","run":"bm25-v3","latency_ms":12.0}'
  # Results logged as a string, not a list.
  echo '{"query_id":"q000011","stage":"final","run":"bm25-v3","results":"kb/billing/tax-changes#chunk-0045"}'
  # A ranking that lists one chunk twice (a merge bug upstream).
  echo '{"query_id":"q000001","stage":"final","run":"bm25-v3","results":["kb/billing/tax-changes#chunk-0045","kb/articles/tags-basics#chunk-0002","kb/billing/tax-changes#chunk-0045"],"latency_ms":80.5}'
  # Bytes that are not UTF-8.
  printf '{"query_id":"q000012","stage":"final","run":"bm25-v3","results":["caf\xe9"]}\n'
} > "$tmp/part-001.jsonl"
gzip -9n < "$tmp/part-001.jsonl" > "$here/logs/part-001.jsonl.gz"
