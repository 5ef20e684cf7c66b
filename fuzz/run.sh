#!/usr/bin/env bash
# Fuzz rgrade's readers: build every target once, then run each for
# MINUTES minutes, one after another and one libFuzzer process at a time,
# niced (docs/DESIGN.md, "Fuzzing"). Seeds come from data-samples/ at run
# time; the corpus grows in fuzz/corpus/TARGET, crashes land in
# fuzz/artifacts/TARGET. Exits 1 if any target crashed.
#
#   fuzz/run.sh MINUTES [TARGET...]
set -euo pipefail

usage="usage: fuzz/run.sh MINUTES [TARGET...]"
minutes=${1:?$usage}
[[ $minutes =~ ^[1-9][0-9]*$ ]] || { echo "$usage (MINUTES a whole number)" >&2; exit 2; }
shift

fuzz=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
samples="$fuzz/../data-samples"
cd "$fuzz"

targets=("$@")
if ((${#targets[@]} == 0)); then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# -a: overflow checks and debug assertions, as in the test suite.
nice cargo +nightly fuzz build -O -a
triple=$(rustc +nightly -vV | sed -n 's/^host: //p')
bin="$fuzz/target/$triple/release"

# The targets' scratch files (rgrade reads most inputs from a path) live
# in memory and go when the run ends.
scratch=$(mktemp -d /dev/shm/rgrade-fuzz.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

# Copy the seeds of target $1 into its corpus directory $2.
seed() {
    local corpus=$2
    case $1 in
    jsonl_records)
        cp "$samples/seed/logs.jsonl" "$corpus/seed-logs.jsonl"
        cp "$samples/diagnostics/logs.jsonl" "$corpus/diagnostics-logs.jsonl"
        head -n 5 "$samples/realistic/logs/part-000.jsonl" >"$corpus/realistic-logs.jsonl"
        ;;
    otlp_spans)
        head -n 1 "$samples/traces/otlp/openinference.jsonl" >"$corpus/openinference.jsonl"
        head -n 1 "$samples/traces/otlp/genai.jsonl" >"$corpus/genai.jsonl"
        ;;
    parquet_logs)
        cp "$samples"/traces/parquet/{events,events_structs,results_long,phoenix_spans}.parquet "$corpus/"
        ;;
    labels_parquet)
        cp "$samples/traces/parquet/labels.parquet" "$corpus/labels.parquet"
        ;;
    trec_lines)
        printf 'q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\n7 Q0 8 1 -3e1 dense extra\n' \
            >"$corpus/run.txt"
        printf 'q_id,doc_id,score,run,stage\nq1,d1,2.5,bm25,final\n7,"8",1.0,dense,retrieve\nq2,d2,NaN,bm25,final\n' \
            >"$corpus/run.csv"
        ;;
    labels_jsonl)
        cp "$samples/seed/labels.jsonl" "$corpus/seed-labels.jsonl"
        cp "$samples/diagnostics/labels.jsonl" "$corpus/diagnostics-labels.jsonl"
        head -n 5 "$samples/realistic/labels.jsonl" >"$corpus/realistic-labels.jsonl"
        ;;
    labels_qrels)
        printf 'q1 0 d1 1\nq1 0 d2 2\nq2 0 d3 0\n7 Q0 8 -1\n' >"$corpus/qrels.txt"
        ;;
    labels_csv)
        printf 'query_id,doc_id,grade,task,language,required\nq1,d1,2,howto,en,true\nq1,d2,0,howto,en,true\nq2,,,billing,"d,e",false\n' \
            >"$corpus/labels.csv"
        ;;
    compare_rules)
        cp "$samples/compare/rules.toml" "$corpus/rules.toml"
        ;;
    arrow_tables)
        # Three rows of query_id strings and results lists of known ids.
        printf '\x03\x01\x00\x00\x01\x00\x01\x01\x01\x02\x01\x09\x02\x01\x01\x03\x02\x01\x01\x04\x02\x01\x01\x03' \
            >"$corpus/wide.bin"
        ;;
    compare_per_query)
        cp "$samples/diagnostics/expected/per_query.csv" "$corpus/per_query.csv"
        ;;
    compiled_key)
        # Spliced at 0, nothing replaced: the target's own key, whole.
        printf '\x00\x00\x00' >"$corpus/whole-key.bin"
        ;;
    *)
        echo "fuzz/run.sh: no seeds for target $1" >&2
        ;;
    esac
}

# The dictionary of tokens target $1 is fuzzed with, if any.
dictionary() {
    case $1 in
    jsonl_records | labels_jsonl | otlp_spans) echo "$fuzz/json.dict" ;;
    compare_rules) echo "$fuzz/toml.dict" ;;
    compare_per_query) echo "$fuzz/per_query.dict" ;;
    esac
}

crashed=0
printf '%-18s %7s %12s %8s %6s %7s %7s\n' target minutes executions exec/s cov corpus crashes
for target in "${targets[@]}"; do
    corpus="$fuzz/corpus/$target"
    artifacts="$fuzz/artifacts/$target"
    mkdir -p "$corpus" "$artifacts"
    seed "$target" "$corpus"
    dict=$(dictionary "$target")
    log="$scratch/$target.log"
    before=$(find "$artifacts" -name 'crash-*' | wc -l)
    status=0
    TMPDIR="$scratch" nice -n 19 "$bin/$target" \
        -max_total_time=$((minutes * 60)) -print_final_stats=1 \
        -artifact_prefix="$artifacts/" ${dict:+-dict="$dict"} \
        "$corpus" >"$log" 2>&1 || status=$?
    after=$(find "$artifacts" -name 'crash-*' | wc -l)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(sed -n 's/.* cov: \([0-9]*\) .*/\1/p' "$log" | tail -n 1)
    entries=$(find "$corpus" -type f | wc -l)
    printf '%-18s %7s %12s %8s %6s %7s %7s\n' "$target" "$minutes" "${execs:-?}" \
        "${rate:-?}" "${cov:-?}" "$entries" "$((after - before))"
    if ((status != 0)); then
        crashed=1
        echo "  $target stopped with status $status; its log's tail:" >&2
        tail -n 30 "$log" | sed 's/^/    /' >&2
    fi
done
exit "$crashed"
