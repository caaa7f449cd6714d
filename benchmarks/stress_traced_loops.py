"""Does every traced loop finish? One program loops over traced calls, launch after launch, on a fresh rank per case.

    python -m benchmarks.stress_traced_loops [--backend gpu|cpu] [--launches 20] [--timeout 30]
                                            [--loops 250,1000] [--warps 4,8]

A case is an API (Triton, Gluon), what the loop traces (``pairs``: a manual start+end pair per iteration, as the
device benchmark's one-program loop; ``store``/``load``: one auto-traced op per iteration, ``trace_ops=True``), the
program's ``num_warps`` and the loop length. Each case runs in its own rank process: ``--launches`` launches of one
program, ``tracing.reset()`` before each, each synchronized, then its records checked (one event per iteration, in
slots 0 .. n - 1, none dropped). A launch that does not finish within ``--timeout`` seconds stops the rank and reads
"did not finish" (the rank's kernel cannot be cancelled, only its process ended); the script exits 1 if any case
did not finish or recorded wrongly.

Why it exists: on one H200, loops of 128 or more iterations in programs of 4 or 8 warps did not finish within a few
launches, in both APIs, while 1 or 2 warps, 64 iterations and the untraced loop did. Every warp read the cursor with
a plain load, which ptxas takes to give all of a warp's lanes one value; a warp's 64-bit load is served a half-warp
at a time, so a store by warp 0 could split another warp's lanes across the chunk-refill branch, and the half that
missed the loop's exit (a counter in the warp's shared uniform registers) looped on. The cursor is now read by lane
0 alone and shuffled to the warp (``iris.tracing.hw.load_lane0``); this script is the check that it stays fixed.

Why it stays beside the conformance suite: the suite's GPU-scale draws take over its role as the check that such
loops finish (``counted_loop``: this loop's form, ``for i in range(n)`` over a run-time argument, with ``num_warps`` of
4 or more and hundreds of records a program, where a loop that does not finish fails the gate as ``hang``;
``auto_loops`` for loops of auto-traced stores and loads), but a conformance example launches each API once; an
intermittent hang needs one configuration launched over and over, and this script says how often it fails.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

import iris
from benchmarks.bench_tracing_device import gluon_ops, gluon_pairs, triton_ops, triton_pairs
from iris.cli_args import OneLineParser, choice_list, chosen_backend, int_at_least, int_list, positive_number
from iris.ranks import MAX_TIMEOUT_S, RankDied, RankError, RankTimeout, backend_env, launch
from iris.tracing.core import MAX_EVENTS

KINDS = ("pairs", "store", "load")
CHUNK = 64


def _launcher(api: str, kind: str, shmem, out, n: int, warps: int):
    """One launch of the case's one-program loop."""
    ctx = shmem.get_device_context()
    if api == "triton":
        rank, world = shmem.get_rank(), shmem.get_num_ranks()
        if kind == "pairs":
            return lambda: triton_pairs[(1,)](ctx, out, n, rank, world, TRACING=True, num_warps=warps)
        return lambda: triton_ops[(1,)](ctx, out, n, rank, world, OP=kind, TRACE_OPS=True, num_warps=warps)
    if kind == "pairs":
        return lambda: gluon_pairs[(1,)](ctx, out, n, TRACING=True, num_warps=warps)
    return lambda: gluon_ops[(1,)](ctx, out, n, OP=kind, TRACE_OPS=True, num_warps=warps)


def wrong_records(slots: list[int], dropped: int, n: int) -> str | None:
    """What is wrong with a launch's records, or None: one event per iteration, in slots 0 .. n - 1, none dropped."""
    if slots == list(range(n)) and dropped == 0:
        return None
    return f"slots {slots[:4]}...{slots[-2:]} ({len(slots)}, expected 0..{n - 1}), dropped {dropped}"


def run_case(api: str, kind: str, warps: int, n: int, launches: int) -> dict:
    """Rank job: ``launches`` synchronized launches of one case; the slowest launch and the first wrong record."""
    shmem = iris.iris(1 << 20)
    shmem.tracing.enable(n + CHUNK, CHUNK)
    out = shmem.zeros(1, dtype=torch.int32)
    launch_once = _launcher(api, kind, shmem, out, n, warps)
    slowest, wrong = 0.0, None
    for i in range(launches):
        shmem.tracing.reset()
        t0 = time.perf_counter()
        launch_once()
        if shmem.device.type == "cuda":
            torch.cuda.synchronize(shmem.device)
        slowest = max(slowest, time.perf_counter() - t0)
        records = shmem.tracing.events()
        problem = wrong_records(records["op_index"].tolist(), records.dropped, n)
        if wrong is None and problem:
            wrong = f"launch {i}: {problem}"
    return {"slowest_ms": 1e3 * slowest, "wrong": wrong}


def num_warps_allowed() -> tuple[int, ...]:
    """The ``num_warps`` Triton compiles: a power of two, at most 1024 threads a program (32 warps of 32 lanes; 16 of
    64 on AMD)."""
    lanes = 64 if torch.version.hip else 32
    return tuple(1 << k for k in range((1024 // lanes).bit_length()))


def main(argv: list[str] | None = None) -> int:
    """Print a line per case; return 1 if any case did not finish or recorded wrongly. Bad input is refused in one
    line on stderr, exit code 2, before any rank starts."""
    p = OneLineParser(prog="python -m benchmarks.stress_traced_loops", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=("gpu", "cpu"), default=None, help="default: gpu where torch sees one")
    p.add_argument("--launches", type=int_at_least("--launches", 1), default=None,
                   help="launches per case (gpu 20, cpu 2)")
    p.add_argument("--timeout", type=positive_number("--timeout", maximum=MAX_TIMEOUT_S), default=30.0,
                   help="seconds a case may take, start-up included")
    p.add_argument("--loops", type=int_list("--loops", 1, MAX_EVENTS - CHUNK, why="loop lengths: the trace holds an "
                                            "event per iteration and a chunk", example="250,1000",
                                            item="loop length"),
                   default=None, help="loop lengths (gpu 250,1000; cpu 4)")
    p.add_argument("--warps", type=int_list("--warps", allowed=num_warps_allowed(), why="num_warps: a power of two, "
                                            "at most 1024 threads a program", example="4,8",
                                            item="num_warps"),
                   default=None, help="num_warps values (gpu 4,8; cpu 4)")
    p.add_argument("--kinds", type=choice_list("--kinds", KINDS, item="kind"), default=KINDS,
                   help=f"what the loop traces, a comma list of {', '.join(KINDS)} (default: all)")
    args = p.parse_args(argv)
    backend = chosen_backend(p, args.backend)
    kinds = args.kinds
    launches = args.launches or (20 if backend == "gpu" else 2)
    loops = args.loops or ([250, 1000] if backend == "gpu" else [4])
    warps_list = args.warps or ([4, 8] if backend == "gpu" else [4])
    print(f"{backend}: one program, chunk {CHUNK}, {launches} launches per case, tracing.reset() before each, "
          f"timeout {args.timeout:g} s per case")
    print(f"{'api':<7} {'traces':<6} {'warps':>5} {'loop':>5}  result")
    failed = 0
    for api in ("triton", "gluon"):
        for kind in kinds:
            for warps in warps_list:
                for n in loops:
                    try:
                        r = launch(run_case, 1, api, kind, warps, n, launches, timeout=args.timeout,
                                   env=backend_env(backend))[0]
                        result = (f"finished {launches}/{launches}, slowest {r['slowest_ms']:.2f} ms"
                                  if r["wrong"] is None else f"recorded wrongly: {r['wrong']}")
                    except RankTimeout:
                        result = f"did not finish in {args.timeout:g} s"
                    except (RankError, RankDied) as e:
                        result = f"failed: {str(e).splitlines()[0]}"
                    failed += not result.startswith("finished")
                    print(f"{api:<7} {kind:<6} {warps:>5} {n:>5}  {result}", flush=True)
    print(f"{failed} case(s) did not finish or recorded wrongly" if failed else "every case finished")
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
