"""Device cost of trace events, both APIs, each against its untraced twin measured in the same run.

    python -m benchmarks.bench_tracing_device [--backend gpu|cpu] [--pairs 1000] [--reps 30] [--chunk 64]
                                              [--ranks 1] [--size 4096] [--sms N] [--work 2048]

Prints, per API:
  one program   ns per start+end pair: the slope of a least-squares line through the times of one program
                recording ``--pairs`` / 4, / 2 and x 1 pairs in a loop (three distinct lengths: ``--pairs`` is at
                least 4), minus the slope of the same loop compiled without tracing (``tracing=False``: no tracing
                code at all), and the R^2 of the traced line; the points of both lines (loop length, untraced and
                traced median ms) close the row;
  claims/event  slot claims (device-wide atomics) per event of that loop, from the device's claim counter
                (record semantics v2: one per ``--chunk`` events; a regression to per-event claims reads 1);
  claim floor   the same loop doing only what a per-event slot claim pays: a relaxed ``atomic_add`` on a
                counter and one store at the slot it returned (the store waits for the round trip);
  all SMs busy  ns per pair amortized: 8 programs per SM, 64 pairs each, minus the untraced twin;
  short         ns per program of a grid of many short programs (64 per SM, one pair each), minus the untraced
                twin: what initializing tracing (a program's first claim) costs where programs are many and short;
  persistent    traced/untraced time of a persistent kernel: one program per SM (``--sms``, default the GPU's
                count) looping over 16 tiles each, each tile ``--work`` iterations of register work then a store
                to every rank, one range per tile and target (>= 1 ms untraced on one H200);
  all-scatter   traced/untraced time of the all_scatter scenario's kernels (each tile stored to every rank, one
                range per tile and target) on a world of ``--ranks`` ranks sharing the GPUs, each timing
                ``--scatter-launches`` launches back to back (50: about 1.3 ms untraced on one H200); min, median, max;
  span          traced/untraced time of the all-scatter whose ranges are given the tile's span (``ctx.tracing.span``,
                computed once per tile before the loop over targets: no block reduction per record), timed in turn
                with the all-scatter; min, median, max per launch and registers per thread follow the row;
  registers     registers per thread of the persistent and all-scatter kernels, traced and untraced (GPU only;
                ``benchmarks/bench_tile_resources.py`` reads them from code cross-compiled on any machine):
                a traced kernel that needs more fits fewer programs on an SM, which a grid of many short
                memory-bound programs (the all-scatter) pays in time;
  bytes/record  the device's record size.
With ``--auto``, then, per API, auto-tracing (``trace_ops=True``: every op records its own range):
  store, load   ns per auto-traced op in one program (a scalar ``ctx.store`` or ``ctx.load`` to the own rank in a
                loop): the slope of the traced loop's line minus the untraced twin's, and R^2; a load's range ends
                on its value, a store's once issued;
  all SMs       ns per auto-traced store amortized over 8 programs per SM, 64 stores each;
  persistent    traced/untraced time of the persistent kernel with its stores auto-traced instead of bracketed;
  all-scatter   traced/untraced time of the all-scatter with its stores auto-traced instead of bracketed
  auto          (``benchmarks/tile_kernels.py``'s scatter_auto), timed as the all-scatter is;
  tile load     traced/untraced time of ``tile_kernels``' tile_load: each 64x64 tile of the all-scatter's buffer
                loaded from the next rank, auto-traced (the range ends on the loaded value), and summed; min,
                median, max per launch and registers per thread follow the row.
Every timed launch (or group of launches) starts with the trace buffers reset and room for every event, so no
record is dropped for lack of capacity. Times are medians of CUDA-event timings over ``--reps`` launches after a
warm-up; the persistent kernel's variants, and the all-scatter's, are timed in turn (one launch of each per round),
so a drift of the GPU's clocks reaches traced and untraced alike. Not a test: it prints figures and asserts nothing.

``--backend cpu`` (the default where torch sees no GPU) runs the same kernels of both APIs on CPU ranks under
the Triton interpreter at the tiny sizes of ``DEFAULTS["cpu"]`` (4 pairs, one warm-up and one timed launch, one
64x64 all-scatter tile, 1 "SM" of 2 busy programs with 4 pairs each, 2 persistent tiles of 2 work iterations; the
flags override them), timed with ``time.perf_counter``. The test command runs it so
(``tests/benchmarks/test_benchmarks.py``) to catch a script that no longer runs; those figures say nothing about a
GPU's.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import iris
from benchmarks.bench_tile_resources import KERNELS as TILE_KERNELS
from benchmarks.tile_kernels import gluon_persistent, triton_persistent
from iris import DeviceContext, TraceEvent
from iris import context_layout as layout
from iris.cli_args import OneLineParser, add_chunk, chosen_backend, int_at_least, int_in, world_size
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.ranks import backend_env, launch
from iris.tracing.core import MAX_EVENTS
from iris.world import device_index

PERSISTENT_TILE = 64  # persistent tiles are PERSISTENT_TILE x PERSISTENT_TILE
_LAUNCH_CONSTEXPRS = ("BM", "BN", "TRACING", "HINT")  # what _tile_launcher passes; the rest name a kernel's variant
SPAN_TILES = ("scatter_span",)  # the all-scatter recording a span computed once per tile (bench_tile_resources.KERNELS)
AUTO_TILES = ("scatter_auto", "tile_load")  # the auto-traced tile kernels --auto times (bench_tile_resources.KERNELS)


@dataclasses.dataclass(frozen=True)
class Sizes:
    """What one run launches (the first five are flags)."""

    pairs: int  # start+end pairs of the one-program loop
    reps: int  # timed launches per figure
    size: int  # all-scatter rows and columns per rank
    sms: int | None  # programs standing for SMs (all-SMs loop, persistent kernel); None: the GPU's (``main``)
    work: int  # register-work iterations per persistent tile
    scatter_launches: int = 50  # all-scatter launches per timing
    tiles_per_sm: int = 16  # persistent tiles per program
    busy_programs_per_sm: int = 8  # programs per SM of the all-SMs loop
    busy_pairs: int = 64  # pairs per program of the all-SMs loop
    short_programs_per_sm: int = 64  # one-pair programs per SM of the short-programs grid
    warmup: int = 3  # untimed launches before the timed ones
    heap: int | None = 1 << 30  # symmetric heap bytes per rank, more if the buffers need it; None: what they need


DEFAULTS = {
    "gpu": Sizes(pairs=1000, reps=30, size=4096, sms=None, work=2048),  # work: untraced persistent >= 1 ms (H200)
    # the interpreter runs every op as Python calls: just enough to run each kernel of both APIs, timed
    "cpu": Sizes(pairs=4, reps=1, size=64, sms=1, work=2, scatter_launches=1, tiles_per_sm=2, busy_programs_per_sm=2,
                 busy_pairs=4, short_programs_per_sm=2, warmup=1, heap=None),
}


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


@triton.jit(do_not_specialize=["n"])
def triton_ops(ctx_t, out, n, rank: tl.constexpr, world: tl.constexpr, OP: tl.constexpr, TRACE_OPS: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=TRACE_OPS, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    acc = pid * 0
    for i in range(n):
        if OP == "store":
            ctx.store(out + pid, i, rank)
        else:
            acc += ctx.load(out + pid, rank)
    tl.store(out + pid, acc)


@gluon.jit(do_not_specialize=["n"])
def gluon_ops(ctx_t, out, n, OP: gl.constexpr, TRACE_OPS: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACE_OPS, trace_ops=TRACE_OPS)
    pid = gl.program_id(0)
    acc = pid * 0
    for i in range(n):
        if OP == "store":
            ctx.store(out + pid, i, ctx.cur_rank)
        else:
            acc += ctx.load(out + pid, ctx.cur_rank)
    gl.store(out + pid, acc)


def _time_ms(device: torch.device, launch_once) -> float:
    """Milliseconds of one ``launch_once()``: CUDA events on a GPU, ``time.perf_counter`` on the CPU (where the
    interpreter runs the kernel before the launch returns)."""
    if device.type != "cuda":
        start = time.perf_counter()
        launch_once()
        return (time.perf_counter() - start) * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    launch_once()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _interleaved_ms(shmem, launchers: dict, sizes: Sizes, alone: bool = False) -> dict:
    """Times of each of ``launchers`` (key -> launch_once) taken in turn, one launch of each per round
    (``sizes.warmup`` untimed rounds, then ``sizes.reps`` timed ones), trace counter zeroed before each launch: a
    drift of the GPU's clocks during the measurement reaches every launcher alike, so their ratios hold from run to
    run. Every rank launches in step (a barrier before each timed launch) unless this rank runs ``alone``."""
    for _ in range(sizes.warmup):
        for launch_once in launchers.values():
            shmem.tracing.reset()
            launch_once()
    times: dict = {key: [] for key in launchers}
    for _ in range(sizes.reps):
        for key, launch_once in launchers.items():
            shmem.tracing.reset()
            if not alone:
                shmem.barrier()
            times[key].append(_time_ms(shmem.device, launch_once))
    return times


def _times_ms(shmem, launch_once, sizes: Sizes, alone: bool = False) -> list[float]:
    """Times of ``launch_once()`` over ``sizes.reps`` launches after ``sizes.warmup`` (``_interleaved_ms`` of one)."""
    return _interleaved_ms(shmem, {None: launch_once}, sizes, alone)[None]


def _median_ms(shmem, launch_once, sizes: Sizes, alone: bool = False) -> float:
    """Median of ``_times_ms``."""
    return statistics.median(_times_ms(shmem, launch_once, sizes, alone))


FIT_POINTS = 3  # the fewest distinct loop lengths a line is fitted through: any line passes through two points
MIN_PAIRS = 4  # the shortest --pairs whose loop lengths (pair_counts) are FIT_POINTS distinct ones


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """(slope, R^2) of the least-squares line through the points, at least ``FIT_POINTS`` of them at distinct x
    (ValueError otherwise: through one or two, the line and its R^2 of 1 would say nothing)."""
    if len(set(xs)) < FIT_POINTS:
        raise ValueError(f"a line through the points at x = {', '.join(map(str, xs))}: {len(set(xs))} distinct x; "
                         f"expected at least {FIT_POINTS}")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    total = sum((y - my) ** 2 for y in ys)
    residual = sum((y - my - slope * (x - mx)) ** 2 for x, y in zip(xs, ys, strict=True))
    return slope, (1.0 - residual / total) if total > 0 else 1.0


def pair_counts(pairs: int) -> list[int]:
    """The loop lengths the one-program line is fitted through: ``pairs`` / 4, / 2 and x 1 (distinct from
    ``MIN_PAIRS`` on)."""
    return sorted({max(1, pairs // 4), max(1, pairs // 2), pairs})


def _pairs_launcher(api: str, shmem, out, n: int, programs: int, tracing: bool):
    ctx, rank, world = shmem.get_device_context(), shmem.get_rank(), shmem.get_num_ranks()
    if api == "triton":
        return lambda: triton_pairs[(programs,)](ctx, out, n, rank, world, TRACING=tracing, num_warps=4)
    return lambda: gluon_pairs[(programs,)](ctx, out, n, TRACING=tracing, num_warps=4)


def _tile_launcher(api: str, shmem, out, m: int, n: int, tracing: bool, hint=None, launches: int = 1,
                   kernel: str = "all_scatter", src=None, bm: int = 64, bn: int = 64):
    """Launches of the tile kernel ``kernel`` of ``bench_tile_resources.KERNELS`` over an ``m`` x ``n`` grid of
    ``bm`` x ``bn`` tiles, ``launches`` back to back: "all_scatter" (the scenario's: a put range around each store),
    "scatter_span" (the same, each range given the tile's span, computed once), "scatter_auto" (its stores
    auto-traced instead) or "tile_load" (a peer's tile of ``src`` loaded, auto-traced, and
    summed into ``out``)."""
    ctx = shmem.get_device_context()
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    args = (ctx, out, m, n) if src is None else (ctx, src, out, m, n)
    tile_kernel = TILE_KERNELS[kernel]
    extra = {k: v for k, v in tile_kernel.traced.items() if k not in _LAUNCH_CONSTEXPRS}  # the variant's own
    jit = getattr(tile_kernel, api)

    def launch_all():
        for _ in range(launches):
            launch_all.kernel = jit[grid](*args, BM=bm, BN=bn, TRACING=tracing, HINT=hint, num_warps=4, **extra)

    return launch_all


def _persistent_launcher(api: str, shmem, out, sms: int, sizes: Sizes, tracing: bool, auto: bool = False):
    ctx, rank, world = shmem.get_device_context(), shmem.get_rank(), shmem.get_num_ranks()
    tiles, b = sizes.tiles_per_sm * sms, PERSISTENT_TILE
    kernel, args = ((triton_persistent, (ctx, out, tiles, sizes.work, rank, world)) if api == "triton"
                    else (gluon_persistent, (ctx, out, tiles, sizes.work)))  # Gluon reads rank and world at run time

    def launch_once():
        launch_once.kernel = kernel[(sms,)](*args, BM=b, BN=b, TRACING=tracing, HINT=(1, b), AUTO=auto, num_warps=4)

    return launch_once


def _ops_launcher(api: str, shmem, out, n: int, programs: int, op: str, trace_ops: bool):
    ctx, rank, world = shmem.get_device_context(), shmem.get_rank(), shmem.get_num_ranks()
    if api == "triton":
        return lambda: triton_ops[(programs,)](ctx, out, n, rank, world, OP=op, TRACE_OPS=trace_ops, num_warps=4)
    return lambda: gluon_ops[(programs,)](ctx, out, n, OP=op, TRACE_OPS=trace_ops, num_warps=4)


def _line(shmem, launcher, counts: list[int], sizes: Sizes, alone: bool) -> tuple[float, float, list[float]]:
    """(slope ms per unit, R^2, the median ms at each loop length) of the times of ``launcher(k)`` for each loop
    length k of ``counts``."""
    times = [_median_ms(shmem, launcher(k), sizes, alone) for k in counts]
    slope, r2 = fit(counts, times)
    return slope, r2, times


def _claims_per_event(shmem, launch_once, events: int) -> float:
    """Slot claims (device-wide atomics) per event of one launch, from the device's claim counter."""
    shmem.tracing.reset()
    launch_once()
    return shmem.tracing.claimed / shmem.tracing.chunk / events


def _progress(shmem, what: str) -> None:
    """Rank 0 says what it measures next, on stderr (a GPU run takes a minute or more)."""
    if shmem.get_rank() == 0:
        print(f"bench_tracing_device: {what}", file=sys.stderr, flush=True)


def _registers(launcher) -> int | None:
    """Registers per thread of the kernel ``launcher`` launched last (None under the interpreter, which compiles
    nothing). A traced kernel that needs more can fit fewer programs on an SM (occupancy), which is what a traced
    kernel of many short, memory-bound programs pays most."""
    return getattr(getattr(launcher, "kernel", None), "n_regs", None)


def _points(counts: list[int], untraced: list[float], traced: list[float]) -> tuple[tuple[int, float, float], ...]:
    """The points two lines were fitted through: (loop length, untraced median ms, traced median ms) each."""
    return tuple(zip(counts, untraced, traced, strict=True))


def points_text(what: str, points: tuple) -> str:
    """``what`` and the points its lines were fitted through, printed beside the slopes they gave."""
    return f"{what} line through " + ", ".join(f"{k}: {u:.4f}/{t:.4f}" for k, u, t in points) + " ms untraced/traced"


def _spread(times: list[float]) -> tuple[float, float, float]:
    """(min, median, max)."""
    return min(times), statistics.median(times), max(times)


def _buffer_bytes(sizes: Sizes, world: int, sms: int) -> int:
    """Heap bytes of ``measure``'s buffers: the loops' output, the all-scatter's, the persistent kernel's and the
    tile load's sums."""
    tile_elements = sizes.tiles_per_sm * sms * PERSISTENT_TILE * PERSISTENT_TILE
    programs = max(sizes.busy_programs_per_sm, sizes.short_programs_per_sm) * sms
    return 4 * (programs + world * sizes.size * sizes.size + world * tile_elements + triton.cdiv(sizes.size, 64) ** 2)


def trace_slots(sizes: Sizes, world: int, sms: int, chunk: int) -> int:
    """Trace slots ``measure`` enables on every rank: room for the most events one timed launch (or group of
    launches) records, and a chunk for every program of the largest grid, so no record is dropped."""
    busy_programs, short = sizes.busy_programs_per_sm * sms, sizes.short_programs_per_sm * sms
    scatter_tiles = triton.cdiv(sizes.size, 64) ** 2
    room = max(sizes.pairs, busy_programs * sizes.busy_pairs, short, sizes.scatter_launches * world * scatter_tiles,
               sizes.tiles_per_sm * sms * world)
    return room + max(busy_programs, short, sizes.scatter_launches * scatter_tiles) * chunk


def gpu_sms() -> int:
    """SMs of rank 0's GPU (``iris.world.device_index``); every rank's GPU is taken to be the same."""
    return torch.cuda.get_device_properties(device_index(0, torch.cuda.device_count())).multi_processor_count


def measure(sizes: Sizes, chunk: int, auto_tracing: bool = True) -> dict:
    """Rank job: every figure for both APIs. Rank 0 alone times the loops (the others wait: kernels of several
    processes on one GPU are time-sliced, so a peer's kernel would land in the timing); every rank runs the
    persistent kernel and the all-scatter together, since they write to all of them."""
    sms = sizes.sms or gpu_sms()  # main sets it
    shmem = iris.iris(max(sizes.heap or 0, _buffer_bytes(sizes, torch.distributed.get_world_size(), sms) + (1 << 20)))
    busy_programs, busy_pairs, pairs, m = sizes.busy_programs_per_sm * sms, sizes.busy_pairs, sizes.pairs, sizes.size
    world = shmem.get_num_ranks()
    tiles = sizes.tiles_per_sm * sms
    short = sizes.short_programs_per_sm * sms
    shmem.tracing.enable(trace_slots(sizes, world, sms, chunk), chunk)  # every event and every program's chunk fit
    out = shmem.zeros(max(busy_programs, short), dtype=torch.int32)
    scatter = shmem.zeros((world * m, m), dtype=torch.float32)
    tile_sums = shmem.zeros(triton.cdiv(m, 64) ** 2, dtype=torch.float32)  # tile_load's output
    persistent = shmem.zeros(world * tiles * PERSISTENT_TILE * PERSISTENT_TILE, dtype=torch.float32)
    figures: dict = {"rank": shmem.get_rank(), "device": shmem.device.type, "sms": sms, "chunk": chunk,
                     "record_bytes": 8 * layout.RECORD_WORDS}
    alone = shmem.get_rank() == 0
    counter = torch.zeros(1, dtype=torch.int64, device=shmem.device)
    slots = torch.empty((sizes.warmup + sizes.reps) * pairs, dtype=torch.int32, device=shmem.device)  # one API's
    counts = pair_counts(pairs)
    for api in ("triton", "gluon"):
        _progress(shmem, f"{api}: one program, claims, claim floor, all SMs, short programs")
        counter.zero_()  # the claim floor's launches of this API fill slots from the start
        lines = {False: (0.0, 1.0), True: (0.0, 1.0)}
        points = {False: [0.0] * len(counts), True: [0.0] * len(counts)}  # the median ms at each loop length
        busy, few, floor, claims = {False: 0.0, True: 0.0}, {False: 0.0, True: 0.0}, 0.0, 0.0
        if alone:
            for t in (False, True):
                slope, r2, points[t] = _line(shmem, lambda k, t=t, a=api: _pairs_launcher(a, shmem, out, k, 1, t),
                                             counts, sizes, alone)
                lines[t] = (slope, r2)
            claims = _claims_per_event(shmem, _pairs_launcher(api, shmem, out, pairs, 1, True), 2 * pairs)
            claim = triton_claim_floor if api == "triton" else gluon_claim_floor
            floor = _median_ms(shmem, lambda k=claim: k[(1,)](counter, slots, pairs, num_warps=4), sizes, alone)
            busy = {t: _median_ms(shmem, _pairs_launcher(api, shmem, out, busy_pairs, busy_programs, t), sizes, alone)
                    for t in (False, True)}
            few = {t: _median_ms(shmem, _pairs_launcher(api, shmem, out, 1, short, t), sizes, alone)
                   for t in (False, True)}
        auto = {}
        if alone and auto_tracing:
            _progress(shmem, f"{api}: auto-traced ops")
            for op in ("store", "load"):
                op_lines = {t: _line(shmem, lambda k, t=t, op=op, a=api: _ops_launcher(a, shmem, out, k, 1, op, t),
                                     counts, sizes, alone) for t in (False, True)}
                auto[op] = ((op_lines[True][0] - op_lines[False][0]) * 1e6, op_lines[True][1])
                auto[f"{op}_points"] = _points(counts, op_lines[False][2], op_lines[True][2])
            auto_busy = {t: _median_ms(shmem, _ops_launcher(api, shmem, out, busy_pairs, busy_programs, "store", t),
                                       sizes, alone) for t in (False, True)}
            auto["busy"] = (auto_busy[True] - auto_busy[False]) * 1e6 / (busy_programs * busy_pairs)
        shmem.barrier()
        _progress(shmem, f"{api}: persistent kernel, all-scatter")
        kinds = (False, True, "auto") if auto_tracing else (False, True)
        pers_launchers = {k: _persistent_launcher(api, shmem, persistent, sms, sizes, k is not False, auto=k == "auto")
                          for k in kinds}
        pers = {k: statistics.median(times) for k, times in _interleaved_ms(shmem, pers_launchers, sizes).items()}
        pers_auto = pers.get("auto", 0.0)
        scat_launchers = {(t, h): _tile_launcher(api, shmem, scatter, m, m, t, h, sizes.scatter_launches)
                          for t in (False, True) for h in (None, (1, 64))}
        tiles = SPAN_TILES + (AUTO_TILES if auto_tracing else ())  # each against its untraced twin, in turn
        scat_launchers |= {(name, t): _tile_launcher(api, shmem, tile_sums if name == "tile_load" else scatter, m, m,
                                                     t, (1, 64), sizes.scatter_launches, kernel=name,
                                                     src=scatter if name == "tile_load" else None)
                           for name in tiles for t in (False, True)}
        scat = _interleaved_ms(shmem, scat_launchers, sizes)
        per_launch = {k: sorted(v / sizes.scatter_launches for v in times) for k, times in scat.items()}
        figures[api] = {
            "one_program_ns_per_pair": (lines[True][0] - lines[False][0]) * 1e6,
            "one_program_r2": lines[True][1],
            "one_program_points": _points(counts, points[False], points[True]),
            "one_program_untraced_ms": points[False][-1],
            "claims_per_event": claims,
            "claim_floor_ns_per_pair": (floor - points[False][-1]) * 1e6 / pairs,
            "busy_ns_per_pair": (busy[True] - busy[False]) * 1e6 / (busy_programs * busy_pairs),
            "short_ns_per_program": (few[True] - few[False]) * 1e6 / short,
            "short_untraced_ms": few[False],
            "persistent_ratio": pers[True] / pers[False],
            "persistent_untraced_ms": pers[False],
            "all_scatter_ratio": statistics.median(per_launch[(True, (1, 64))])
            / statistics.median(per_launch[(False, (1, 64))]),
            "all_scatter_traced_ms": _spread(per_launch[(True, (1, 64))]),
            "all_scatter_untraced_ms": _spread(per_launch[(False, (1, 64))]),
            "all_scatter_untraced_no_hint_ms": statistics.median(per_launch[(False, None)]),
            "auto_store_ns_per_op": auto.get("store", (0.0, 1.0))[0], "auto_store_r2": auto.get("store", (0.0, 1.0))[1],
            "auto_load_ns_per_op": auto.get("load", (0.0, 1.0))[0], "auto_load_r2": auto.get("load", (0.0, 1.0))[1],
            "auto_busy_ns_per_op": auto.get("busy", 0.0),
            "auto_store_points": auto.get("store_points", ()), "auto_load_points": auto.get("load_points", ()),
            "persistent_auto_ratio": pers_auto / pers[False],
            **{name: (_spread(per_launch[(name, True)]), _spread(per_launch[(name, False)]),
                      (_registers(scat_launchers[(name, True)]), _registers(scat_launchers[(name, False)])))
               for name in tiles},  # traced and untraced ms (min, median, max), registers traced/untraced
            "persistent_registers": (_registers(pers_launchers[True]), _registers(pers_launchers[False])),
            "all_scatter_registers": (_registers(scat_launchers[(True, (1, 64))]),
                                      _registers(scat_launchers[(False, (1, 64))])),
        }
    shmem.barrier()
    shmem.close()
    return figures


HEADER = (f"{'api':8s} {'one program ns/pair (R^2)':>26s} {'claims/event':>13s} {'claim floor':>12s} "
          f"{'all SMs ns/pair':>16s} {'short ns/program':>17s} {'persistent t/u':>15s} {'all-scatter t/u':>16s} "
          f"{'span t/u':>9s}")


AUTO_HEADER = (f"{'api':8s} {'auto store ns/op (R^2)':>24s} {'auto load ns/op (R^2)':>23s} "
               f"{'all SMs store ns/op':>20s} {'persistent auto t/u':>20s} {'all-scatter auto t/u':>21s} "
               f"{'tile load t/u':>14s}")


def _tile_ratio(figure: tuple) -> float:
    """Traced/untraced median time of one tile kernel's figure (traced spread, untraced spread, registers)."""
    return figure[0][1] / figure[1][1]


def _tile_spreads(f: dict, names: tuple[str, ...]) -> str:
    """The per-launch spreads and registers of the tile kernels ``names``."""
    return "; ".join(f"{name} per launch min/median/max: untraced {u[0]:.3f}/{u[1]:.3f}/{u[2]:.3f} ms, traced "
                     f"{t[0]:.3f}/{t[1]:.3f}/{t[2]:.3f} ms, registers traced/untraced {_pair(r)}"
                     for name, (t, u, r) in ((name, f[name]) for name in names))


def auto_row(api: str, f: dict) -> str:
    """One API's line of the auto-tracing table."""
    ratios = {name: _tile_ratio(f[name]) for name in AUTO_TILES}
    spreads = _tile_spreads(f, AUTO_TILES)
    return (f"{api:8s} {f['auto_store_ns_per_op']:15.1f} ({f['auto_store_r2']:.4f}) "
            f"{f['auto_load_ns_per_op']:14.1f} ({f['auto_load_r2']:.4f}) {f['auto_busy_ns_per_op']:20.2f} "
            f"{f['persistent_auto_ratio']:20.4f} {ratios['scatter_auto']:21.4f} {ratios['tile_load']:14.4f}   "
            f"({spreads}; {points_text('store', f['auto_store_points'])}; "
            f"{points_text('load', f['auto_load_points'])})")


def row(api: str, f: dict) -> str:
    """One API's line of the table."""
    traced, untraced = f["all_scatter_traced_ms"], f["all_scatter_untraced_ms"]
    return (f"{api:8s} {f['one_program_ns_per_pair']:17.1f} ({f['one_program_r2']:.4f}) "
            f"{f['claims_per_event']:13.4f} {f['claim_floor_ns_per_pair']:12.1f} {f['busy_ns_per_pair']:16.2f} "
            f"{f['short_ns_per_program']:17.2f} {f['persistent_ratio']:15.4f} {f['all_scatter_ratio']:16.4f} "
            f"{_tile_ratio(f['scatter_span']):9.4f}   "
            f"(untraced: loop {f['one_program_untraced_ms']:.3f} ms, short {f['short_untraced_ms']:.3f} ms, "
            f"persistent {f['persistent_untraced_ms']:.3f} ms; all-scatter per launch min/median/max: untraced "
            f"{untraced[0]:.3f}/{untraced[1]:.3f}/{untraced[2]:.3f} ms, traced {traced[0]:.3f}/{traced[1]:.3f}/"
            f"{traced[2]:.3f} ms, untraced without the hint {f['all_scatter_untraced_no_hint_ms']:.3f} ms; "
            f"registers per thread traced/untraced: persistent {_pair(f['persistent_registers'])}, all-scatter "
            f"{_pair(f['all_scatter_registers'])}; {_tile_spreads(f, SPAN_TILES)}; "
            f"{points_text('one program', f['one_program_points'])})")


def _pair(registers: tuple) -> str:
    """``traced/untraced`` registers, ``-`` where nothing was compiled (the interpreter)."""
    return "/".join("-" if r is None else str(r) for r in registers)


def main(argv: list[str] | None = None) -> list[dict]:
    """Print the table; return every rank's figures. Bad input is refused in one line on stderr, exit code 2, before
    any rank starts."""
    p = OneLineParser(prog="python -m benchmarks.bench_tracing_device", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=("gpu", "cpu"), default=None,
                   help="gpu, or cpu: the Triton interpreter on CPU ranks (default: gpu where torch sees one)")
    p.add_argument("--pairs", type=int_in("--pairs", MIN_PAIRS, why="the one-program line is fitted through loops "
                                          f"of pairs/4, pairs/2 and pairs: {FIT_POINTS} distinct lengths"),
                   default=None, help=f"start+end pairs of the one-program loop, at least {MIN_PAIRS} (gpu 1000, "
                   "cpu 4)")
    p.add_argument("--reps", type=int_at_least("--reps", 1), default=None,
                   help="timed launches per figure, median printed (gpu 30, cpu 1)")
    add_chunk(p)
    p.add_argument("--ranks", type=world_size(), default=1,
                   help="ranks of the all-scatter world (ranks sharing one GPU are time-sliced: use 1 there)")
    p.add_argument("--size", type=int_at_least("--size", 1), default=None,
                   help="all-scatter output rows and columns per rank (gpu 4096, cpu 64)")
    p.add_argument("--sms", type=int_at_least("--sms", 1), default=None,
                   help="programs standing for SMs in the all-SMs loop and the persistent kernel (gpu: its SM "
                   "count, cpu 1)")
    p.add_argument("--work", type=int_at_least("--work", 1), default=None,
                   help="register-work iterations per persistent tile (gpu 2048, cpu 2)")
    p.add_argument("--auto", action="store_true", help="also measure auto-tracing (trace_ops=True)")
    p.add_argument("--scatter-launches", type=int_at_least("--scatter-launches", 1), default=None,
                   help="all-scatter launches per timing (gpu 50, cpu 1)")
    args = p.parse_args(argv)
    backend = chosen_backend(p, args.backend)
    given = {k: v for k in ("pairs", "reps", "size", "sms", "work", "scatter_launches")
             if (v := getattr(args, k)) is not None}
    sizes = dataclasses.replace(DEFAULTS[backend], **given)
    sizes = dataclasses.replace(sizes, sms=sizes.sms or gpu_sms())  # the GPU's SM count, for every rank
    slots = trace_slots(sizes, args.ranks, sizes.sms, args.chunk)
    if slots > MAX_EVENTS:
        values = ", ".join(f"--{k.replace('_', '-')} {getattr(sizes, k)}" for k in ("pairs", "size", "scatter_launches",
                                                                                    "sms"))
        p.error(f"--chunk {args.chunk}, --ranks {args.ranks}, {values}: every rank would trace into {slots} slots "
                f"(room for a launch's events and a chunk for each of its programs), more than tracing holds "
                f"({MAX_EVENTS}: slots are 32-bit); expected smaller values")
    results = launch(measure, args.ranks, sizes, args.chunk, args.auto, timeout=600, env=backend_env(backend))
    r0 = results[0]
    timer = "CUDA events" if r0["device"] == "cuda" else "perf_counter, Triton interpreter"
    print(f"{backend}: {args.ranks} ranks, {r0['sms']} SMs, chunk {r0['chunk']}, {r0['record_bytes']} bytes/record; "
          f"one program: {', '.join(map(str, pair_counts(sizes.pairs)))} pairs, claims from one launch of "
          f"{sizes.pairs}; all SMs: "
          f"{sizes.busy_programs_per_sm} programs/SM x {sizes.busy_pairs} pairs; short: "
          f"{sizes.short_programs_per_sm} programs/SM x 1 pair; persistent: 1 program/SM, {sizes.tiles_per_sm} "
          f"tiles/SM, {sizes.work} work iterations/tile; all-scatter {sizes.size}x{sizes.size} per rank, 64x64 tiles, "
          f"hint (1, 64), {sizes.scatter_launches} launches per timing; medians of {sizes.reps} (rank 0, {timer})")
    print(HEADER)
    for api in ("triton", "gluon"):
        print(row(api, r0[api]))
    if args.auto:
        print(AUTO_HEADER)
        for api in ("triton", "gluon"):
            print(auto_row(api, r0[api]))
    return results


if __name__ == "__main__":
    main()
