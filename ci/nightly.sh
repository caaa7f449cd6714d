#!/usr/bin/env bash
# The nightly gate (docs/ci.md, "CI and nightly gating"): the suite with the nightly profile on 1, 2, 4 and 8 ranks,
# the full mutation self-test, results in $IRIS_GATE_OUT (default conformance-gate/). Exit 0 only when the gate
# passes. Extra arguments go to `python -m conformance gate` (e.g. --backend cpu, --ranks 1,2); the nightly workflow
# adds --backend gpu --scale gpu (docs/suite.md, "Scale": num_warps, grids, traced loops and blocks drawn at GPU scale).
#
# IRIS_HYPOTHESIS_DB: the Hypothesis example database (default .hypothesis-db/ here); cache it between runs so
#   that last night's failing examples are tried first tonight.
# IRIS_GATE_BASELINE: a results.json of an earlier gate (default .gate-baseline/results.json when present):
#   the summary lists checks newly failing and fixed against it.
# PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
export IRIS_HYPOTHESIS_DB="${IRIS_HYPOTHESIS_DB:-$PWD/.hypothesis-db}"
OUT="${IRIS_GATE_OUT:-conformance-gate}"
BASELINE="${IRIS_GATE_BASELINE:-.gate-baseline/results.json}"

args=(--profile nightly --ranks 1,2,4,8 --mutants --out "$OUT")
if [[ -f "$BASELINE" ]]; then
  args+=(--baseline "$BASELINE")
fi
exec "$PYTHON" -m conformance gate "${args[@]}" "$@"
