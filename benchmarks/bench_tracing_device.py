"""Device cost of trace events, both APIs, each against its untraced twin measured in the same run (GPU).

    python -m benchmarks.bench_tracing_device [--pairs 1000] [--reps 30] [--chunk 64]

Prints, per API:
  one program   ns per start+end pair: one program recording ``--pairs`` pairs in a loop, minus the same loop
                compiled without tracing (``tracing=False``: no tracing code at all);
  claims/event  slot claims (device-wide atomics) per event of that loop, from the device's claim counter
                (record semantics v2: one per ``--chunk`` events; a regression to per-event claims reads 1);
  claim floor   the same loop doing only what a per-event slot claim pays: a relaxed ``atomic_add`` on a
                counter and one store at the slot it returned (the store waits for the round trip);
  all SMs busy  ns per pair amortized: 8 programs per SM, 64 pairs each, minus the untraced twin;
  persistent    traced/untraced time of a persistent kernel: one program per SM looping over tiles, each tile
                some register work then a store to every rank, one range per tile and target (>= 1 ms untraced);
  all-scatter   traced/untraced time of the all_scatter scenario's kernels (each tile stored to every rank, one
                range per tile and target) on a world of ``--ranks`` ranks sharing the GPUs.
Every timed launch starts with the trace buffers reset and room for every event, so no record is dropped for
lack of capacity. Times are medians of CUDA-event timings over ``--reps`` launches after a warm-up. Not a
test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import iris
from conformance.scenarios import all_scatter
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_2d, warp_size
from iris.ranks import backend_env, launch


@triton.jit(do_not_specialize=["n"])
def triton_pairs(ctx_t, out, n, rank: tl.constexpr, world: tl.constexpr, TRACING: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=TRACING)
    pid = tl.program_id(0)
    acc = pid * 0
    for i in range(n):
        h = ctx.tracing.record_event_start(TraceEvent().put, 0, out + pid, pid, 0, payload=i)
        acc += i
        ctx.tracing.record_event_end(h)
    tl.store(out + pid, acc)


@gluon.jit(do_not_specialize=["n"])
def gluon_pairs(ctx_t, out, n, TRACING: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING)
    pid = gl.program_id(0)
    acc = pid * 0
    for i in range(n):
        h = ctx.tracing.record_event_start(TraceEvent().put, 0, out + pid, pid, 0, payload=i)
        acc += i
        ctx.tracing.record_event_end(h)
    gl.store(out + pid, acc)


@triton.jit(do_not_specialize=["n"])
def triton_claim_floor(counter, slots, n):
    for i in range(n):
        slot = tl.atomic_add(counter, 1, sem="relaxed")
        tl.store(slots + slot, i)


@gluon.jit(do_not_specialize=["n"])
def gluon_claim_floor(counter, slots, n):
    for i in range(n):
        slot = gl.atomic_add(counter, 1, sem="relaxed")
        gl.store(slots + slot, i)


@triton.jit(do_not_specialize=["tiles", "work"])
def triton_persistent(ctx_t, out, tiles, work, rank: tl.constexpr, world: tl.constexpr, BM: tl.constexpr,
                      BN: tl.constexpr, TRACING: tl.constexpr, HINT: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=TRACING)
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    for tile in range(tl.program_id(0), tiles, tl.num_programs(0)):
        acc = (rm + rn + tile).to(tl.float32)
        for _ in range(work):  # register work standing in for a GEMM tile's
            acc = acc * 0.999 + 1.0
        ptrs = out + (rank * tiles + tile) * BM * BN + rm * BN + rn
        for i in range(world):
            t = (rank + i) % world
            h = ctx.tracing.record_event_start(TraceEvent().put, t, ptrs, tile, i, payload=tile)
            ctx.store(ptrs, acc, t, hint=HINT)
            ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["tiles", "work"])
def gluon_persistent(ctx_t, out, tiles, work, BM: gl.constexpr, BN: gl.constexpr, TRACING: gl.constexpr,
                     HINT: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING)
    layout: gl.constexpr = blocked_2d(warp_size(), gl.num_warps())
    rm = gl.expand_dims(gl.arange(0, BM, layout=gl.SliceLayout(1, layout)), 1)
    rn = gl.expand_dims(gl.arange(0, BN, layout=gl.SliceLayout(0, layout)), 0)
    for tile in range(gl.program_id(0), tiles, gl.num_programs(0)):
        acc = (rm + rn + tile).to(gl.float32)
        for _ in range(work):  # register work standing in for a GEMM tile's
            acc = acc * 0.999 + 1.0
        ptrs = out + (ctx.cur_rank * tiles + tile) * BM * BN + rm * BN + rn
        for i in range(ctx.num_ranks):
            t = (ctx.cur_rank + i) % ctx.num_ranks
            h = ctx.tracing.record_event_start(TraceEvent().put, t, ptrs, tile, i, payload=tile)
            ctx.store(ptrs, acc, t, hint=HINT)
            ctx.tracing.record_event_end(h)


def _median_ms(shmem, launch_once, reps: int, alone: bool = False) -> float:
    """Median time of ``launch_once()`` over ``reps`` launches, trace counter zeroed before each one; every rank
    launches in step (a barrier before each launch) unless this rank runs ``alone``."""
    for _ in range(3):
        shmem.tracing.reset()
        launch_once()
    times = []
    for _ in range(reps):
        shmem.tracing.reset()
        if not alone:
            shmem.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch_once()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _pairs_launcher(api: str, shmem, out, n: int, programs: int, tracing: bool):
    ctx, rank, world = shmem.get_device_context(), shmem.get_rank(), shmem.get_num_ranks()
    if api == "triton":
        return lambda: triton_pairs[(programs,)](ctx, out, n, rank, world, TRACING=tracing, num_warps=4)
    return lambda: gluon_pairs[(programs,)](ctx, out, n, TRACING=tracing, num_warps=4)


def _scatter_launcher(api: str, shmem, out, m: int, n: int, tracing: bool, hint=None, bm: int = 64, bn: int = 64):
    ctx = shmem.get_device_context()
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    if api == "triton":
        return lambda: all_scatter.triton_kernel[grid](ctx, out, m, n, BM=bm, BN=bn, TRACING=tracing, HINT=hint,
                                                       num_warps=4)
    return lambda: all_scatter.gluon_kernel[grid](ctx, out, m, n, BM=bm, BN=bn, TRACING=tracing, HINT=hint,
                                                  num_warps=4)


PERSISTENT_TILE = 64
PERSISTENT_TILES_PER_SM = 16
PERSISTENT_WORK = 2048  # register work per tile: the untraced kernel runs >= 1 ms on one H200


def _persistent_launcher(api: str, shmem, out, sms: int, tracing: bool):
    ctx, rank, world = shmem.get_device_context(), shmem.get_rank(), shmem.get_num_ranks()
    tiles, b = PERSISTENT_TILES_PER_SM * sms, PERSISTENT_TILE
    if api == "triton":
        return lambda: triton_persistent[(sms,)](ctx, out, tiles, PERSISTENT_WORK, rank, world, BM=b, BN=b,
                                                 TRACING=tracing, HINT=(1, b), num_warps=4)
    return lambda: gluon_persistent[(sms,)](ctx, out, tiles, PERSISTENT_WORK, BM=b, BN=b, TRACING=tracing,
                                            HINT=(1, b), num_warps=4)


def _claims_per_event(shmem, launch_once, events: int) -> float:
    """Slot claims (device-wide atomics) per event of one launch, from the device's claim counter."""
    shmem.tracing.reset()
    launch_once()
    return shmem.tracing.claimed / shmem.tracing.chunk / events


def measure(pairs: int, reps: int, m: int, n: int, chunk: int) -> dict:
    """Rank job: every figure for both APIs. Rank 0 alone times the loops (the others wait: kernels of several
    processes on one GPU are time-sliced, so a peer's kernel would land in the timing); every rank runs the
    persistent kernel and the all-scatter together, since they write to all of them."""
    shmem = iris.iris(1 << 30)
    sms = torch.cuda.get_device_properties(shmem.device).multi_processor_count
    busy_programs, busy_pairs = 8 * sms, 64
    world = shmem.get_num_ranks()
    tiles = PERSISTENT_TILES_PER_SM * sms
    room = max(pairs, busy_programs * busy_pairs, 4 * triton.cdiv(m, 64) * triton.cdiv(n, 64), tiles * world)
    shmem.tracing.enable(room + busy_programs * chunk, chunk)  # every event and every program's chunk fit
    out = shmem.zeros(max(busy_programs, 1), dtype=torch.int32)
    scatter = shmem.zeros((world * m, n), dtype=torch.float32)
    persistent = shmem.zeros(world * tiles * PERSISTENT_TILE * PERSISTENT_TILE, dtype=torch.float32)
    figures: dict = {"rank": shmem.get_rank(), "sms": sms, "chunk": chunk}
    alone = shmem.get_rank() == 0
    counter = torch.zeros(1, dtype=torch.int64, device=shmem.device)
    slots = torch.empty((reps + 4) * pairs, dtype=torch.int32, device=shmem.device)  # never reset: room for all
    for api in ("triton", "gluon"):
        one, busy, floor, claims = {False: 0.0, True: 0.0}, {False: 0.0, True: 0.0}, 0.0, 0.0
        if alone:
            one = {t: _median_ms(shmem, _pairs_launcher(api, shmem, out, pairs, 1, t), reps, alone)
                   for t in (False, True)}
            claims = _claims_per_event(shmem, _pairs_launcher(api, shmem, out, pairs, 1, True), 2 * pairs)
            claim = triton_claim_floor if api == "triton" else gluon_claim_floor
            floor = _median_ms(shmem, lambda k=claim: k[(1,)](counter, slots, pairs, num_warps=4), reps, alone)
            busy = {t: _median_ms(shmem, _pairs_launcher(api, shmem, out, busy_pairs, busy_programs, t), reps, alone)
                    for t in (False, True)}
        shmem.barrier()
        pers = {t: _median_ms(shmem, _persistent_launcher(api, shmem, persistent, sms, t), reps) for t in (False, True)}
        scat = {(t, h): _median_ms(shmem, _scatter_launcher(api, shmem, scatter, m, n, t, h), reps)
                for t in (False, True) for h in (None, (1, 64))}
        figures[api] = {
            "one_program_ns_per_pair": (one[True] - one[False]) * 1e6 / pairs,
            "one_program_untraced_ms": one[False],
            "claims_per_event": claims,
            "claim_floor_ns_per_pair": (floor - one[False]) * 1e6 / pairs,
            "busy_ns_per_pair": (busy[True] - busy[False]) * 1e6 / (busy_programs * busy_pairs),
            "persistent_ratio": pers[True] / pers[False],
            "persistent_untraced_ms": pers[False],
            "all_scatter_ratio": scat[(True, (1, 64))] / scat[(False, (1, 64))],
            "all_scatter_untraced_ms": scat[(False, (1, 64))],
            "all_scatter_untraced_no_hint_ms": scat[(False, None)],
        }
    shmem.barrier()
    shmem.close()
    return figures


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=1000, help="start+end pairs of the one-program loop")
    p.add_argument("--reps", type=int, default=30, help="timed launches per figure (median)")
    p.add_argument("--chunk", type=int, default=64, help="slots a program claims at a time (tracing.enable)")
    p.add_argument("--ranks", type=int, default=1,
                   help="ranks of the all-scatter world (ranks sharing one GPU are time-sliced: use 1 there)")
    p.add_argument("--size", type=int, default=4096, help="all-scatter output rows and columns per rank")
    args = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_tracing_device needs a GPU (torch.cuda.is_available() is False)")
    results = launch(measure, args.ranks, args.pairs, args.reps, args.size, args.size, args.chunk, timeout=600,
                     env=backend_env("gpu"))
    r0 = results[0]
    print(f"{args.ranks} ranks, {r0['sms']} SMs, chunk {r0['chunk']}; one program: {args.pairs} pairs; all SMs: "
          f"8 programs/SM x 64 pairs; persistent: 1 program/SM, {PERSISTENT_TILES_PER_SM} tiles/SM; all-scatter "
          f"{args.size}x{args.size} per rank, 64x64 tiles, hint (1, 64); medians of {args.reps} launches (rank 0)")
    print(f"{'api':8s} {'one program ns/pair':>20s} {'claims/event':>13s} {'claim floor':>12s} "
          f"{'all SMs ns/pair':>16s} {'persistent t/u':>15s} {'all-scatter t/u':>16s}")
    for api in ("triton", "gluon"):
        f = r0[api]
        print(f"{api:8s} {f['one_program_ns_per_pair']:20.1f} {f['claims_per_event']:13.4f} "
              f"{f['claim_floor_ns_per_pair']:12.1f} {f['busy_ns_per_pair']:16.2f} {f['persistent_ratio']:15.4f} "
              f"{f['all_scatter_ratio']:16.4f}   (untraced: loop {f['one_program_untraced_ms']:.3f} ms, persistent "
              f"{f['persistent_untraced_ms']:.3f} ms, all-scatter {f['all_scatter_untraced_ms']:.3f} ms, without "
              f"the hint {f['all_scatter_untraced_no_hint_ms']:.3f} ms)")


if __name__ == "__main__":
    main()
