# Timing helpers shared by the benchmark scripts (sourced, not run).
# The caller sets $runs, the number of runs a measure takes the median of.

# Medians by label, for the targets tables.
declare -A WALL RSS_MB

# measure LABEL BYTES COMMAND...: median wall time of $runs runs, with the
# CPU time and peak RSS of that run, printed as a Markdown table row.
measure() {
  local label=$1 bytes=$2; shift 2
  local results=() stats
  stats=$(mktemp)
  for _ in $(seq "$runs"); do
    sync
    /usr/bin/time -o "$stats" -f '%e %U %S %M' "$@" >/dev/null 2>&1 || true
    results+=("$(tail -n 1 "$stats")")
  done
  rm -f "$stats"
  local wall user sys rss
  read -r wall user sys rss < <(printf '%s\n' "${results[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  WALL[$label]=$wall
  RSS_MB[$label]=$(( (rss + 512) / 1024 ))
  awk -v l="$label" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v b="$bytes" 'BEGIN {
    printf "| %s | %.2f | %.2f | %.0f | %.0f |\n", l, w, u + s, b / 1e6 / w, r / 1024 }'
}

# ratio A B: the wall time of run A over that of run B.
ratio() {
  awk -v a="${WALL[$1]:-0}" -v b="${WALL[$2]:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else printf "-" }'
}

# python_tools DIR: a throwaway venv in DIR with pytrec_eval and ranx, the
# tools users would otherwise run; prints its python.
python_tools() {
  local venv=$1/venv
  [ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" -q install pytrec-eval-terrier ranx; } >&2
  echo "$venv/bin/python"
}
