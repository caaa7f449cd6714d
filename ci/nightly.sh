#!/usr/bin/env bash
# The nightly gate (docs/ci.md, "CI and nightly gating"): the suite with the nightly profile on 1, 2, 4 and 8 ranks,
# the full mutation self-test, results in $IRIS_GATE_OUT (default conformance-gate/). Exit 0 only when the gate
# passes. Extra arguments go to `python -m conformance gate` (e.g. --backend cpu, --ranks 1,2); the nightly workflow
# adds --backend gpu --scale gpu (docs/suite.md, "Scale": num_warps, grids, traced loops and blocks drawn at GPU scale).
#
# IRIS_HYPOTHESIS_DB: the Hypothesis example database (default .hypothesis-db/ here); cache it between runs so
#   that last night's failing examples are tried first tonight (the gate refuses a value that names no folder).
# IRIS_GATE_BASELINE: a results.json of an earlier gate: the summary lists checks newly failing and fixed against
#   it. Unset: .gate-baseline/results.json when present; set, it must name a file that can be read.
# IRIS_GATE_OUT: the output folder (default conformance-gate/).
# A variable set but empty is refused (exit 2), as is a baseline that cannot be read: nothing runs.
# PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"

refuse() {  # one line naming the variable, its value and what was expected; exit 2 before anything runs
  echo "ci/nightly.sh: $1='${!1}': $2; expected $3" >&2
  exit 2
}
for name in IRIS_HYPOTHESIS_DB IRIS_GATE_BASELINE IRIS_GATE_OUT; do
  if [[ -v "$name" && -z "${!name}" ]]; then
    refuse "$name" "set but empty" "a path, or the variable unset for its default"
  fi
done
export IRIS_HYPOTHESIS_DB="${IRIS_HYPOTHESIS_DB-$PWD/.hypothesis-db}"
OUT="${IRIS_GATE_OUT-conformance-gate}"

args=(--profile nightly --ranks 1,2,4,8 --mutants --out "$OUT")
if [[ -v IRIS_GATE_BASELINE ]]; then
  if [[ -d "$IRIS_GATE_BASELINE" ]]; then
    refuse IRIS_GATE_BASELINE "a folder" "the results.json of an earlier gate"
  elif [[ ! -f "$IRIS_GATE_BASELINE" || ! -r "$IRIS_GATE_BASELINE" ]]; then
    refuse IRIS_GATE_BASELINE "no file that can be read" "the results.json of an earlier gate (unset: "\
".gate-baseline/results.json when present)"
  fi
  args+=(--baseline "$IRIS_GATE_BASELINE")
elif [[ -f .gate-baseline/results.json ]]; then
  args+=(--baseline .gate-baseline/results.json)
fi
exec "$PYTHON" -m conformance gate "${args[@]}" "$@"
