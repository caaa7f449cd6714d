"""What a traced all-scatter tile pays for, part by part, both APIs, each part against the untraced kernel.

    python -m benchmarks.bench_scatter_parts [--backend gpu|cpu] [--reps 30] [--size 4096] [--launches 50]
                                             [--chunk 64]

One rank; the all-scatter of ``--size`` x ``--size`` float32 in 64x64 tiles (``benchmarks/tile_kernels.py``'s
scatter_parts, hint (1, 64)), traced in part only. Prints, per API, for each part: the median milliseconds per
launch, its ratio to the untraced kernel's, and registers per thread (GPU only):

  untraced   tracing compiled off
  off        the bracketed kernel with tracing switched off at run time (a context whose trace block is zero)
  claim      tracing compiled on: initialize's claim, no record
  before     one instant record of the tile before its stores
  after      one instant record of the tile after its stores
  bracketed  a put range around each store, its record reducing the tile (the all_scatter scenario's kernel)
  span       the same, given the tile's span (``ctx.tracing.span``: two block reductions)
  fused      the same, given a span made by one fused (lowest, count) reduction
  constant   the same, given a constant span (no reduction: the floor a cheaper reduction can reach)
  lowest     the same, given a span of the lowest active address alone (one 64-bit reduction; size constant)
  count      the same, given a span of the active count alone (one 32-bit reduction; address constant)

Every part is timed in turn with the others (one group of ``--launches`` launches of each per round, ``--reps``
rounds after a warm-up; trace buffers reset before each group, with room for every event), so a drift of the GPU's
clocks reaches them alike. Not a test: it prints figures and asserts nothing. ``--backend cpu`` (the default where
torch sees no GPU) runs every part of both APIs once under the Triton interpreter at a 64x64 size (one tile),
timed with ``time.perf_counter``: the test command runs it so to catch a script that no longer runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

import torch
import triton

import iris
from benchmarks.bench_tracing_device import DEFAULTS, Sizes, _interleaved_ms, _registers
from benchmarks.tile_kernels import PARTS, gluon_scatter_parts, triton_scatter_parts
from iris import context_layout
from iris.cli_args import OneLineParser, add_chunk, chosen_backend, int_at_least
from iris.ranks import backend_env, launch
from iris.tracing.core import MAX_EVENTS

TILE = 64
ROWS = ("untraced", "off", *[p for p in PARTS if p != "untraced"])  # "off" is the bracketed part, switched off
SIZES = {"gpu": {"size": 4096, "launches": 50}, "cpu": {"size": 64, "launches": 1}}


def trace_slots(size: int, launches: int, chunk: int) -> int:
    """Slots one group of launches can claim: a chunk for each program (a program records at most two events)."""
    return launches * triton.cdiv(size, TILE) ** 2 * max(chunk, 2)


def _launcher(kernel, grid: tuple, args: tuple, part: int, launches: int):
    """``launches`` launches of ``kernel``'s ``part`` back to back; the last one's compiled kernel kept on it (its
    registers)."""

    def launch_all():
        for _ in range(launches):
            launch_all.kernel = kernel[grid](*args, BM=TILE, BN=TILE, PART=part, HINT=(1, TILE), num_warps=4)

    return launch_all


def measure(sizes: Sizes, size: int, launches: int, chunk: int) -> dict:
    """Rank job: (ms per launch median, min, max, ratio to untraced, registers) of every row, per API."""
    shmem = iris.iris(max(sizes.heap or 0, 4 * size * size + (1 << 20)))
    shmem.tracing.enable(trace_slots(size, launches, chunk), chunk)
    ctx = shmem.get_device_context()
    off = ctx.clone()
    off[context_layout.TRACE_ENABLED] = 0  # tracing switched off at run time
    out = shmem.zeros((size, size), dtype=torch.float32)
    grid = (triton.cdiv(size, TILE), triton.cdiv(size, TILE))
    figures: dict = {"device": shmem.device.type}
    for api, kernel in (("triton", triton_scatter_parts), ("gluon", gluon_scatter_parts)):
        launchers = {}
        for row in ROWS:
            part, context = (PARTS["bracketed"], off) if row == "off" else (PARTS[row], ctx)
            launchers[row] = _launcher(kernel, grid, (context, out, size, size), part, launches)
        times = _interleaved_ms(shmem, launchers, sizes, alone=True)
        untraced = statistics.median(times["untraced"])
        figures[api] = {row: (statistics.median(t) / launches, min(t) / launches, max(t) / launches,
                              statistics.median(t) / untraced, _registers(launchers[row]))
                        for row, t in times.items()}
    shmem.close()
    return figures


def row(api: str, parts: dict) -> str:
    """One API's line: each part's median ms per launch, ratio to untraced, (min-max) and registers."""
    cells = [f"{name} {ms:.4f} x{ratio:.3f} ({low:.4f}-{high:.4f}, {'-' if regs is None else regs} reg)"
             for name, (ms, low, high, ratio, regs) in parts.items()]
    return f"{api:7s} " + "; ".join(cells)


def main(argv: list[str] | None = None) -> dict:
    """Print a line per API; return rank 0's figures. Bad input is refused in one line on stderr, exit code 2."""
    p = OneLineParser(prog="python -m benchmarks.bench_scatter_parts", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=("gpu", "cpu"), default=None,
                   help="gpu, or cpu: the Triton interpreter on a CPU rank (default: gpu where torch sees one)")
    p.add_argument("--reps", type=int_at_least("--reps", 1), default=None, help="timed rounds (gpu 30, cpu 1)")
    p.add_argument("--size", type=int_at_least("--size", 1), default=None,
                   help="all-scatter rows and columns (gpu 4096, cpu 64)")
    p.add_argument("--launches", type=int_at_least("--launches", 1), default=None,
                   help="launches per timing (gpu 50, cpu 1)")
    add_chunk(p)
    args = p.parse_args(argv)
    backend = chosen_backend(p, args.backend)
    sizes = DEFAULTS[backend] if args.reps is None else dataclasses.replace(DEFAULTS[backend], reps=args.reps)
    size = args.size or SIZES[backend]["size"]
    launches = args.launches or SIZES[backend]["launches"]
    slots = trace_slots(size, launches, args.chunk)
    if slots > MAX_EVENTS:
        p.error(f"--size {size}, --launches {launches}, --chunk {args.chunk}: a group of launches would claim {slots} "
                f"trace slots, more than tracing holds ({MAX_EVENTS}); expected smaller values")
    figures = launch(measure, 1, sizes, size, launches, args.chunk, timeout=600, env=backend_env(backend))[0]
    timer = "CUDA events" if figures["device"] == "cuda" else "perf_counter, Triton interpreter"
    print(f"{backend}: all-scatter {size}x{size} float32, 1 rank, {TILE}x{TILE} tiles, hint (1, {TILE}), chunk "
          f"{args.chunk}, {launches} launches per timing; ms per launch, median of {sizes.reps} ({timer}), "
          f"x traced/untraced, (min-max), registers per thread")
    for api in ("triton", "gluon"):
        print(row(api, figures[api]))
    return figures


if __name__ == "__main__":
    main()
