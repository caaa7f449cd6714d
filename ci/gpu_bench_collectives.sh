#!/usr/bin/env bash
# The collectives' tracing figures on one GPU (docs/benchmarks.md): bench_collectives at 64 KB to 256 MB per rank
# in powers of 4, worlds of 2, 4 and 8 ranks sharing the GPU, every kernel and variant of both APIs, Proton beside.
# About 5 minutes a world of 8 ranks at --reps 5 on one H200; extra arguments go to the benchmark
# (./ci/gpu_bench_collectives.sh --ranks 8 --kernels gather_matmul). PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
exec "$PYTHON" -m benchmarks.bench_collectives --backend gpu --reps "${IRIS_BENCH_REPS:-10}" "$@"
