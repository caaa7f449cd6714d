"""What tracing costs a kernel's compile: seconds for one compile of a kernel of ``OPS`` peer loads and as many
stores, untraced and auto-traced (every op records its range), both APIs, cross-compiled for GPU targets on any
machine (no GPU needed).

    python -m benchmarks.bench_compile_time [--ops 4,8,16,32] [--targets sm_90,gfx942] [--reps 1]

The kernel (``triton_op_pairs``, ``gluon_op_pairs``): ``OPS`` times, a masked load of a peer's block and a store of
it, plus one, to the peer, statically unrolled as a kernel with that many ops is. Each compile runs in an empty Triton
cache of its own (a compile the cache serves times nothing); a first, untimed compile loads the compiler. Per target
and API it prints a row per ``OPS``: untraced and auto-traced seconds (the least of ``--reps`` compiles) and their
ratio. A launch compiles each specialization of a kernel once per process and cache, so this is what the first launch
of a traced kernel (and every autotuning candidate) waits. Not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from benchmarks.cross_compile import TARGETS, compile_jit, run_script
from iris import DeviceContext
from iris.cli_args import OneLineParser, choice_list, int_at_least, int_list
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size

BLOCK = tl.constexpr(256)
NUM_WARPS = 4
OPS = (4, 8, 16, 32)
COMPILE_TARGETS = ("sm_90", "gfx942")
SIGNATURE = {"ctx_t": "*i64", "src": "*fp32", "dst": "*fp32", "n": "i32", "OPS": "constexpr", "TRACING": "constexpr"}
MAX_OPS = 256


@triton.jit
def triton_op_pairs(ctx_t, src, dst, n, OPS: tl.constexpr, TRACING: tl.constexpr):
    """``OPS`` loads of the next rank's block ``i`` of ``src`` and stores of it, plus one, to its ``dst``; each op
    records its range when ``TRACING``."""
    ctx = DeviceContext.initialize(ctx_t, tracing=TRACING, trace_ops=TRACING)
    peer = (ctx.rank + 1) % ctx.world_size
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    for i in tl.static_range(OPS):
        mask = offs < n - i
        x = ctx.load(src + i * n + offs, peer, mask=mask)
        ctx.store(dst + i * n + offs, x + 1, peer, mask=mask)


@gluon.jit
def gluon_op_pairs(ctx_t, src, dst, n, OPS: gl.constexpr, TRACING: gl.constexpr):
    """The Gluon twin of ``triton_op_pairs``."""
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING, trace_ops=TRACING)
    peer = (ctx.cur_rank + 1) % ctx.num_ranks
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=blocked_1d(warp_size(), gl.num_warps()))
    for i in gl.static_range(OPS):
        mask = offs < n - i
        x = ctx.load(src + i * n + offs, peer, mask=mask)
        ctx.store(dst + i * n + offs, x + 1, peer, mask=mask)


def compile_seconds(api: str, target: str, ops: int, traced: bool) -> float:
    """Seconds one compile of ``api``'s kernel of ``ops`` op pairs takes for ``target``, in an empty cache."""
    fn = gluon_op_pairs if api == "gluon" else triton_op_pairs
    with tempfile.TemporaryDirectory(prefix="bench-compile-time-") as cache:
        start = time.perf_counter()
        compile_jit(api, fn, target, {"OPS": ops, "TRACING": traced}, SIGNATURE, num_warps=NUM_WARPS, cache=cache)
        return time.perf_counter() - start


def rows(ops: tuple[int, ...], targets: tuple[str, ...], reps: int, progress=lambda text: None) -> list[dict]:
    """A row per target, API and ``ops``: the least untraced and auto-traced seconds of ``reps`` compiles each,
    taken in turn."""
    compile_seconds("triton", targets[0], 1, False)  # untimed: loads the compiler
    found = []
    for target in targets:
        for api in ("triton", "gluon"):
            for n in ops:
                times: dict[bool, list[float]] = {False: [], True: []}
                for _ in range(reps):
                    for traced in (False, True):
                        times[traced].append(compile_seconds(api, target, n, traced))
                found.append({"target": target, "api": api, "ops": n, "untraced": min(times[False]),
                              "auto": min(times[True])})
                progress(f"{target} {api} {n} ops")
    return found


HEADER = f"{'target':6s} {'api':6s} {'ops':>4s} {'untraced s':>10s} {'auto s':>8s} {'auto/untraced':>13s}"


def line(row: dict) -> str:
    return (f"{row['target']:6s} {row['api']:6s} {row['ops']:4d} {row['untraced']:10.2f} {row['auto']:8.2f} "
            f"{row['auto'] / row['untraced']:13.2f}")


def main(argv: list[str] | None = None) -> list[dict]:
    """Print the table; return its rows. Bad input is refused in one line on stderr, exit code 2."""
    p = OneLineParser(prog="python -m benchmarks.bench_compile_time", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", type=int_list("--ops", 1, MAX_OPS, example="4,8,16,32", item="op count"), default=OPS,
                   help=f"comma list of op pairs a kernel holds, 1 to {MAX_OPS} (default {','.join(map(str, OPS))})")
    p.add_argument("--targets", type=choice_list("--targets", tuple(TARGETS), item="target"), default=COMPILE_TARGETS,
                   help=f"comma list of {', '.join(TARGETS)} (default {','.join(COMPILE_TARGETS)})")
    p.add_argument("--reps", type=int_at_least("--reps", 1), default=1, help="compiles of each, the least kept")
    args = p.parse_args(argv)
    found = rows(args.ops, args.targets, args.reps,
                 progress=lambda text: print(f"bench_compile_time: {text}", file=sys.stderr, flush=True))
    heading = (f"one compile each in an empty cache, {BLOCK.value}-element blocks, num_warps {NUM_WARPS}, "
               f"triton {triton.__version__}; least of {args.reps}")
    print("\n".join([heading, HEADER, *map(line, found)]))
    return found


if __name__ == "__main__":
    run_script(main, __spec__.name)
