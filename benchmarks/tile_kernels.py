"""The tile kernels whose tracing cost the benchmarks measure, in both APIs, each traced or untraced by a constexpr.

- ``persistent``: one program per SM loops over 64x64 tiles: register work standing in for a GEMM tile's, then the
  tile stored to every rank, each store bracketed by a ``put`` range (``AUTO=False``) or auto-traced (``AUTO=True``).
- ``scatter_auto``: the all-scatter of ``conformance/scenarios/all_scatter.py`` (every tile of every rank stored to
  every rank) with its stores auto-traced instead of bracketed (``trace_ops=TRACING``, no manual range).
- ``tile_load``: each program loads its tile of a peer's (``(rank + 1) % world``) ``src``, auto-traced, and stores
  the tile's sum into ``out[pid]`` on its own rank.
- ``scatter_parts``: the all-scatter traced in part only, ``PART`` of ``PARTS`` (``benchmarks/bench_scatter_parts.py``
  times each against the untraced kernel, to tell apart what a traced tile pays for).

The bracketed all-scatter is the scenario's own kernel (``all_scatter.triton_kernel`` with ``TRACE_OPS=False``);
``scatter_auto`` and ``scatter_parts`` make their tiles with the scenario's own helpers (``all_scatter.triton_tile``,
``all_scatter.gluon_tile``), so every all-scatter here stores what the scenario's does.
``benchmarks/bench_tracing_device.py`` times them on a GPU; ``benchmarks/bench_tile_resources.py`` reads their
registers and instructions from the cross-compiled code.
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.scenarios.all_scatter import gluon_tile, triton_tile
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_2d, warp_size
from iris.tracing.record_constexpr import NO_ADDRESS, element_bytes
from iris.tracing.span import TraceSpan


@triton.jit(do_not_specialize=["tiles", "work"])
def triton_persistent(ctx_t, out, tiles, work, rank: tl.constexpr, world: tl.constexpr, BM: tl.constexpr,
                      BN: tl.constexpr, TRACING: tl.constexpr, HINT: tl.constexpr, AUTO: tl.constexpr = False):
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=TRACING, trace_ops=AUTO)
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    for tile in range(tl.program_id(0), tiles, tl.num_programs(0)):
        acc = (rm + rn + tile).to(tl.float32)
        for _ in range(work):  # register work standing in for a GEMM tile's
            acc = acc * 0.999 + 1.0
        ptrs = out + (rank * tiles + tile) * BM * BN + rm * BN + rn
        for i in range(world):
            t = (rank + i) % world
            if AUTO:  # the store records its own range
                ctx.store(ptrs, acc, t, hint=HINT)
            else:
                h = ctx.tracing.record_event_start(TraceEvent().put, t, ptrs, tile, i, payload=tile)
                ctx.store(ptrs, acc, t, hint=HINT)
                ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["tiles", "work"])
def gluon_persistent(ctx_t, out, tiles, work, BM: gl.constexpr, BN: gl.constexpr, TRACING: gl.constexpr,
                     HINT: gl.constexpr, AUTO: gl.constexpr = False):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING, trace_ops=AUTO)
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
            if AUTO:  # the store records its own range
                ctx.store(ptrs, acc, t, hint=HINT)
            else:
                h = ctx.tracing.record_event_start(TraceEvent().put, t, ptrs, tile, i, payload=tile)
                ctx.store(ptrs, acc, t, hint=HINT)
                ctx.tracing.record_event_end(h)


@triton.jit(do_not_specialize=["M", "N"])
def triton_scatter_auto(ctx_t, out, M, N, BM: tl.constexpr, BN: tl.constexpr, TRACING: tl.constexpr,
                        HINT: tl.constexpr = None):
    ctx = DeviceContext.initialize(ctx_t, tracing=TRACING, trace_ops=TRACING)
    _, _, mask, tile, ptrs = triton_tile(ctx, out, M, N, BM, BN)
    i = M * 0
    while i < ctx.world_size:
        ctx.store(ptrs, tile, (ctx.rank + i) % ctx.world_size, mask=mask, hint=HINT)
        i += 1


@gluon.jit(do_not_specialize=["M", "N"])
def gluon_scatter_auto(ctx_t, out, M, N, BM: gl.constexpr, BN: gl.constexpr, TRACING: gl.constexpr,
                       HINT: gl.constexpr = None):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING, trace_ops=TRACING)
    _, _, mask, tile, ptrs = gluon_tile(ctx, out, M, N, BM, BN)
    i = M * 0
    while i < ctx.num_ranks:
        ctx.store(ptrs, tile, (ctx.cur_rank + i) % ctx.num_ranks, mask=mask, hint=HINT)
        i += 1


@triton.jit(do_not_specialize=["M", "N"])
def triton_tile_load(ctx_t, src, out, M, N, BM: tl.constexpr, BN: tl.constexpr, TRACING: tl.constexpr,
                     HINT: tl.constexpr = None):
    ctx = DeviceContext.initialize(ctx_t, tracing=TRACING, trace_ops=TRACING)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = ctx.load(src + rm[:, None] * N + rn[None, :], (ctx.rank + 1) % ctx.world_size, mask=mask, other=0.0,
                    hint=HINT)
    tl.store(out + tl.program_id(0) + tl.program_id(1) * tl.num_programs(0), tl.sum(tile, axis=None))


@gluon.jit(do_not_specialize=["M", "N"])
def gluon_tile_load(ctx_t, src, out, M, N, BM: gl.constexpr, BN: gl.constexpr, TRACING: gl.constexpr,
                    HINT: gl.constexpr = None):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING, trace_ops=TRACING)
    layout: gl.constexpr = blocked_2d(warp_size(), gl.num_warps())
    rm = gl.expand_dims(gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, layout)), 1)
    rn = gl.expand_dims(gl.program_id(1) * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, layout)), 0)
    mask = (rm < M) & (rn < N)
    tile = ctx.load(src + rm * N + rn, (ctx.cur_rank + 1) % ctx.num_ranks, mask=mask, other=0.0, hint=HINT)
    gl.store(out + gl.program_id(0) + gl.program_id(1) * gl.num_programs(0), gl.sum(gl.sum(tile, axis=1), axis=0))


# What scatter_parts traces, by PART: tracing compiled off; compiled on, initialize's claim and no record; one instant
# before or after the stores; a put range around each store (the scenario's), whose record reduces the tile, or is
# given a span made by the library (two block reductions), by one fused (lowest, count) reduction, a constant span
# (no reduction: the floor a cheaper reduction can reach), or a span of one of the two reductions alone (the lowest
# active address, 64-bit; the active count, 32-bit), the other field constant.
PARTS = {"untraced": 0, "claim": 1, "before": 2, "after": 3, "bracketed": 4, "span": 5, "fused": 6, "constant": 7,
         "lowest": 8, "count": 9}


@triton.jit
def _triton_lowest_and_count(lowest0, count0, lowest1, count1):
    return tl.minimum(lowest0, lowest1), count0 + count1


@triton.jit
def _triton_span(ptrs, lowest, count):
    """The span a record of ``ptrs`` writes for (lowest active address, active count): address 0 where no lane is
    active (``lowest`` is ``NO_ADDRESS``), size the count x element bytes."""
    return TraceSpan(tl.where(lowest == NO_ADDRESS, 0, lowest), count * element_bytes(ptrs.dtype))


@triton.jit
def triton_part_span(ctx, ptrs, mask, PART: tl.constexpr):
    """The span scatter_parts' records of ``ptrs`` under ``mask`` are given for ``PART`` 5 to 9 (``PARTS``)."""
    addr = ptrs.to(tl.int64, bitcast=False)
    lowest = tl.where(mask, addr, NO_ADDRESS)
    count = tl.where(mask, 1, 0)
    no_lowest = tl.program_id(0).to(tl.int64) * 0  # what the constant span and the count alone write
    every = tl.program_id(0) * 0 + ptrs.numel  # what the constant span and the lowest address alone write
    if PART == 5:
        span = ctx.tracing.span(ptrs, mask=mask)
    elif PART == 6:  # one fused reduction
        lowest = tl.reshape(lowest, [addr.numel], can_reorder=True)
        count = tl.reshape(count, [addr.numel], can_reorder=True)
        lowest, count = tl.reduce((lowest, count), 0, _triton_lowest_and_count)
        span = _triton_span(ptrs, lowest, count)
    elif PART == 7:
        span = _triton_span(ptrs, no_lowest, every)
    elif PART == 8:
        span = _triton_span(ptrs, tl.min(lowest, axis=None), every)
    else:
        tl.static_assert(PART == 9, "a part given a span is one of 5 to 9")
        span = _triton_span(ptrs, no_lowest, tl.sum(count, axis=None))
    return span


@gluon.jit
def _gluon_lowest_and_count(lowest0, count0, lowest1, count1):
    return gl.minimum(lowest0, lowest1), count0 + count1


@gluon.jit
def _gluon_span(ptrs, lowest, count):
    """The span a record of ``ptrs`` writes for (lowest active address, active count): address 0 where no lane is
    active (``lowest`` is ``NO_ADDRESS``), size the count x element bytes."""
    return TraceSpan(gl.where(lowest == NO_ADDRESS, 0, lowest), count * element_bytes(ptrs.dtype))


@gluon.jit
def gluon_part_span(ctx, ptrs, mask, PART: gl.constexpr):
    """The span scatter_parts' records of ``ptrs`` under ``mask`` are given for ``PART`` 5 to 9 (``PARTS``), each
    reduction one axis at a time."""
    addr = ptrs.to(gl.int64, bitcast=False)
    lowest = gl.where(mask, addr, NO_ADDRESS)
    count = gl.where(mask, (addr * 0 + 1).to(gl.int32), 0)  # the library's form (its layout)
    no_lowest = gl.program_id(0).to(gl.int64) * 0  # what the constant span and the count alone write
    every = gl.program_id(0) * 0 + ptrs.numel  # what the constant span and the lowest address alone write
    if PART == 5:
        span = ctx.tracing.span(ptrs, mask=mask)
    elif PART == 6:  # one fused reduction an axis
        for _ in gl.static_range(len(ptrs.shape)):
            lowest, count = gl.reduce((lowest, count), 0, _gluon_lowest_and_count)
        span = _gluon_span(ptrs, lowest, count)
    elif PART == 7:
        span = _gluon_span(ptrs, no_lowest, every)
    elif PART == 8:
        span = _gluon_span(ptrs, gl.min(gl.min(lowest, axis=0), axis=0), every)
    else:
        gl.static_assert(PART == 9, "a part given a span is one of 5 to 9")
        span = _gluon_span(ptrs, no_lowest, gl.sum(gl.sum(count, axis=0), axis=0))
    return span


@triton.jit(do_not_specialize=["M", "N"])
def triton_scatter_parts(ctx_t, out, M, N, BM: tl.constexpr, BN: tl.constexpr, PART: tl.constexpr,
                         HINT: tl.constexpr = None):
    ctx = DeviceContext.initialize(ctx_t, tracing=PART != 0)
    pid_m, pid_n, mask, tile, ptrs = triton_tile(ctx, out, M, N, BM, BN)
    where = ptrs
    lanes = mask
    if PART >= 5:  # the records are given a span
        where = triton_part_span(ctx, ptrs, mask, PART)
        lanes = None
    if PART == 2:
        ctx.tracing.record_event(TraceEvent().put, ctx.rank, ptrs, pid_m, pid_n, mask=mask)
    i = M * 0
    while i < ctx.world_size:
        t = (ctx.rank + i) % ctx.world_size
        if PART >= 4:
            h = ctx.tracing.record_event_start(TraceEvent().put, t, where, pid_m, pid_n, mask=lanes, payload=i)
            ctx.store(ptrs, tile, t, mask=mask, hint=HINT)
            ctx.tracing.record_event_end(h)
        else:
            ctx.store(ptrs, tile, t, mask=mask, hint=HINT)
        i += 1
    if PART == 3:
        ctx.tracing.record_event(TraceEvent().put, ctx.rank, ptrs, pid_m, pid_n, mask=mask)


@gluon.jit(do_not_specialize=["M", "N"])
def gluon_scatter_parts(ctx_t, out, M, N, BM: gl.constexpr, BN: gl.constexpr, PART: gl.constexpr,
                        HINT: gl.constexpr = None):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=PART != 0)
    pid_m, pid_n, mask, tile, ptrs = gluon_tile(ctx, out, M, N, BM, BN)
    where = ptrs
    lanes = mask
    if PART >= 5:  # the records are given a span
        where = gluon_part_span(ctx, ptrs, mask, PART)
        lanes = None
    if PART == 2:
        ctx.tracing.record_event(TraceEvent().put, ctx.cur_rank, ptrs, pid_m, pid_n, mask=mask)
    i = M * 0
    while i < ctx.num_ranks:
        t = (ctx.cur_rank + i) % ctx.num_ranks
        if PART >= 4:
            h = ctx.tracing.record_event_start(TraceEvent().put, t, where, pid_m, pid_n, mask=lanes, payload=i)
            ctx.store(ptrs, tile, t, mask=mask, hint=HINT)
            ctx.tracing.record_event_end(h)
        else:
            ctx.store(ptrs, tile, t, mask=mask, hint=HINT)
        i += 1
    if PART == 3:
        ctx.tracing.record_event(TraceEvent().put, ctx.cur_rank, ptrs, pid_m, pid_n, mask=mask)
