"""GEMM-style all-scatter: every tile of every rank is stored into every rank's output at its rank's rows.

Grid (gm, gn) = (cdiv(M, BM), cdiv(N, BN)) per rank; output ``out`` is [R M, N], rank r's rows at r M.
Model, per rank r, tile (pm, pn) (pid = pm + pn gm), step i = 0 .. R-1 with target t = (r + i) % R:
    events  put range: pid_m pm, pid_n pn, target t, payload i, lanes = the tile's rows < M and cols < N,
            address out[(r M + pm BM) N + pn BN] on r (the local tile); then, with TRACE_OPS (drawn), the store's
            own range (auto_ops.call_events): the same but named store, payload 0
    memory every rank q: out[r M + m][c] = 1000000 r + 1000 m + c for every r, m < M, c < N (all written)
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Addr, Event, Model
from conformance.kit import strategies as S
from conformance.kit.auto_ops import call_events
from conformance.kit.helpers import ELEMENT_BYTES, cast, cdiv
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_2d, warp_size

DTYPES = ("int32", "float32", "int64")  # tile values stay below 2**24: exact in float32
OUT_FILL = -1  # every element must be overwritten


@triton.jit
def triton_tile(ctx, out, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """This program's tile: (pid_m, pid_n, mask, values, pointers into ``out`` at its rank's rows); the benchmarks'
    all-scatter kernels (``benchmarks/tile_kernels.py``) make their tiles with it too."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = (ctx.rank * 1000000 + rm[:, None] * 1000 + rn[None, :]).to(out.dtype.element_ty)
    ptrs = out + (ctx.rank * M + rm[:, None]) * N + rn[None, :]
    return pid_m, pid_n, mask, tile, ptrs


@gluon.jit
def gluon_tile(ctx, out, M, N, BM: gl.constexpr, BN: gl.constexpr):
    """This program's tile: (pid_m, pid_n, mask, values, pointers into ``out`` at its rank's rows); the benchmarks'
    all-scatter kernels (``benchmarks/tile_kernels.py``) make their tiles with it too."""
    layout: gl.constexpr = blocked_2d(warp_size(), gl.num_warps())
    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    rm = gl.expand_dims(pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, layout)), 1)
    rn = gl.expand_dims(pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, layout)), 0)
    mask = (rm < M) & (rn < N)
    tile = (ctx.cur_rank * 1000000 + rm * 1000 + rn).to(out.dtype.element_ty)
    ptrs = out + (ctx.cur_rank * M + rm) * N + rn
    return pid_m, pid_n, mask, tile, ptrs


@triton.jit(do_not_specialize=["M", "N"])
def triton_kernel(ctx_t, out, M, N, BM: tl.constexpr, BN: tl.constexpr, TRACING: tl.constexpr = True,
                  HINT: tl.constexpr = None, TRACE_OPS: tl.constexpr = False, SPAN: tl.constexpr = False):
    ctx = DeviceContext.initialize(ctx_t, tracing=TRACING, trace_ops=TRACE_OPS)
    pid_m, pid_n, mask, tile, ptrs = triton_tile(ctx, out, M, N, BM, BN)
    if SPAN:  # the tile's record fields, reduced once for every peer's record
        where = ctx.tracing.span(ptrs, mask=mask)
        lanes = None
    else:
        where = ptrs
        lanes = mask
    i = M * 0
    while i < ctx.world_size:
        t = (ctx.rank + i) % ctx.world_size
        h = ctx.tracing.record_event_start(TraceEvent().put, t, where, pid_m, pid_n, mask=lanes, payload=i)
        ctx.store(ptrs, tile, t, mask=mask, hint=HINT)
        ctx.tracing.record_event_end(h)
        i += 1


@gluon.jit(do_not_specialize=["M", "N"])
def gluon_kernel(ctx_t, out, M, N, BM: gl.constexpr, BN: gl.constexpr, TRACING: gl.constexpr = True,
                 HINT: gl.constexpr = None, TRACE_OPS: gl.constexpr = False, SPAN: gl.constexpr = False):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING, trace_ops=TRACE_OPS)
    pid_m, pid_n, mask, tile, ptrs = gluon_tile(ctx, out, M, N, BM, BN)
    if SPAN:  # the tile's record fields, reduced once for every peer's record
        where = ctx.tracing.span(ptrs, mask=mask)
        lanes = None
    else:
        where = ptrs
        lanes = mask
    i = M * 0
    while i < ctx.num_ranks:
        t = (ctx.cur_rank + i) % ctx.num_ranks
        h = ctx.tracing.record_event_start(TraceEvent().put, t, where, pid_m, pid_n, mask=lanes, payload=i)
        ctx.store(ptrs, tile, t, mask=mask, hint=HINT)
        ctx.tracing.record_event_end(h)
        i += 1


@st.composite
def params(draw, world_size):
    return {
        "M": draw(S.axis_length(100), label="M"),
        "N": draw(S.axis_length(100), label="N"),
        "BM": draw(S.block_size(large=False), label="BM"),
        "BN": draw(S.block_size(large=False), label="BN"),
        "dtype": draw(S.dtype_name(DTYPES), label="dtype"),
        "TRACE_OPS": draw(S.trace_ops(), label="TRACE_OPS"),
        "SPAN": draw(st.booleans(), label="SPAN"),
    }


def setup(rank, p):
    rank.buffer("out", (rank.world_size * p["M"], p["N"]), p["dtype"], fill=OUT_FILL)


def launch(kernel, rank, p):
    grid = (cdiv(p["M"], p["BM"]), cdiv(p["N"], p["BN"]))
    kernel[grid](rank.ctx, rank.buffers["out"], p["M"], p["N"], **rank.world_constexprs, BM=p["BM"], BN=p["BN"],
                 TRACE_OPS=p["TRACE_OPS"], SPAN=p["SPAN"])


def model(p, world_size):
    M, N, BM, BN, dtype = p["M"], p["N"], p["BM"], p["BN"], p["dtype"]
    gm, gn = cdiv(M, BM), cdiv(N, BN)
    events = {}
    for r in range(world_size):
        events[r] = []
        for pm in range(gm):
            for pn in range(gn):
                pid, address = pm + pn * gm, Addr(r, "out", (r * M + pm * BM) * N + pn * BN)
                size = min(BM, M - pm * BM) * min(BN, N - pn * BN) * ELEMENT_BYTES[dtype]
                tile = [(r * M + m) * N + c for m in range(pm * BM, min(M, (pm + 1) * BM))  # the store's lanes
                        for c in range(pn * BN, min(N, (pn + 1) * BN))] if p["TRACE_OPS"] else []
                for i in range(world_size):
                    t = (r + i) % world_size
                    events[r].append(Event(name="put", kind="range", pid=pid, pid_m=pm, pid_n=pn, cur_rank=r,
                                           target_rank=t, address=address, payload_size=size, payload=i))
                    events[r] += call_events(p, "store", rank=r, pid=pid, pid_m=pm, pid_n=pn, target=t,
                                             buffer="out", heap_rank=r, lanes=tile)
    out = [cast([1000000 * r + 1000 * m + c for c in range(N)], dtype) for r in range(world_size) for m in range(M)]
    return Model(events, {q: {"out": out} for q in range(world_size)})


SCENARIO = Scenario(
    name="all_scatter",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
