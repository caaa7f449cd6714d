#!/usr/bin/env bash
# Every scenario at 1 and 2 ranks under each of compute-sanitizer's four tools, on one CUDA GPU (docs/sanitizers.md):
# one gate per tool (`python -m conformance gate --backend gpu --ranks 1,2 --examples 1 --sanitize TOOL`), the four at
# once by default, each in its own process with its own rank pools and output folder, then each tool's verdict, what
# fails it (with the tool's first lines), the cases it could not run and why, and the reports that are not ours.
# Exit 0 only when every tool's gate passes; 2 when the arguments are refused.
# Extra arguments go to every gate, after the defaults (e.g. --examples 2, --scenario store, --seed 7).
#
# IRIS_SANITIZE_OUT: the output folder (default conformance-sanitize/; set but empty, or not a folder that can be
#   made and written, it is refused, exit 2): <tool>/ holds a gate's results.json,
#   junit.xml and summary.md, <tool>.log its console output as it runs.
# IRIS_SANITIZE_PARALLEL: how many gates run at once (default 4, all of them; fewer run in waves, in the order
#   memcheck, racecheck, synccheck, initcheck; 1 runs them one after another).
# IRIS_COMPILE_WORKERS: compile processes per gate (default: the CPUs divided among the gates that run at once).
# PYTHON picks the interpreter (default python3).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
if [[ -v IRIS_SANITIZE_OUT && -z "$IRIS_SANITIZE_OUT" ]]; then
  echo "IRIS_SANITIZE_OUT=''; expected the output folder, or the variable unset for conformance-sanitize" >&2
  exit 2
fi
OUT="${IRIS_SANITIZE_OUT-conformance-sanitize}"
if [[ -e "$OUT" && ! -d "$OUT" ]]; then
  echo "IRIS_SANITIZE_OUT=$OUT: exists and is not a folder; expected the output folder (new or existing)" >&2
  exit 2
fi
TOOLS=(memcheck racecheck synccheck initcheck)
PARALLEL="${IRIS_SANITIZE_PARALLEL:-${#TOOLS[@]}}"
if ! [[ "$PARALLEL" =~ ^[1-9][0-9]*$ ]] || (( PARALLEL > ${#TOOLS[@]} )); then
  echo "IRIS_SANITIZE_PARALLEL=$PARALLEL; expected how many gates run at once, 1 to ${#TOOLS[@]}" >&2
  exit 2
fi
CPUS="$(nproc)"
export IRIS_COMPILE_WORKERS="${IRIS_COMPILE_WORKERS:-$(( CPUS > PARALLEL ? CPUS / PARALLEL : 1 ))}"
made=""
[[ -d "$OUT" ]] || made=1
if ! mkdir -p "$OUT" 2>/dev/null || [[ ! -w "$OUT" ]]; then
  echo "IRIS_SANITIZE_OUT=$OUT: cannot be made or written; expected an output folder that can be written" >&2
  [[ -z "$made" ]] || rmdir "$OUT" 2>/dev/null
  exit 2
fi

section() {  # the lines of section "## $2" of the Markdown file $1, up to the next section
  awk -v heading="## $2" '$0 == heading { on = 1; next } /^## / { on = 0 } on && NF' "$1"
}

codes=()
for (( first = 0; first < ${#TOOLS[@]}; first += PARALLEL )); do  # the gates in waves of PARALLEL
  pids=()
  for tool in "${TOOLS[@]:first:PARALLEL}"; do
    "$PYTHON" -m conformance gate --backend gpu --ranks 1,2 --examples 1 --sanitize "$tool" --out "$OUT/$tool" "$@" \
      > "$OUT/$tool.log" 2>&1 &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do
    wait "$pid"
    codes+=("$?")
  done
done

status=0
for i in "${!TOOLS[@]}"; do
  tool="${TOOLS[$i]}" code="${codes[$i]}"
  if [[ "$code" == 2 ]]; then  # bad input: every gate got the same arguments and refused them in one line
    cat "$OUT/$tool.log" >&2
    for t in "${TOOLS[@]}"; do rm -f "$OUT/$t.log"; done
    [[ -z "$made" ]] || rmdir "$OUT"
    exit 2
  fi
  (( code == 0 )) || status=1
  echo "== $tool: exit code $code; $(grep -E '^gate (PASSED|FAILED)' "$OUT/$tool.log" || echo 'no verdict: see the log')"
  if [[ -f "$OUT/$tool/summary.md" ]]; then
    section "$OUT/$tool/summary.md" "What fails the gate" | head -n 20
    grep -A 6 "compute-sanitizer $tool reported" "$OUT/$tool.log" | head -n 40  # the tool's own words
    section "$OUT/$tool/summary.md" "Not run"
    section "$OUT/$tool/summary.md" "Sanitizer reports that are not ours"
  else
    tail -n 20 "$OUT/$tool.log"
  fi
  echo "   ($OUT/$tool/summary.md, $OUT/$tool.log)"
done
exit "$status"
