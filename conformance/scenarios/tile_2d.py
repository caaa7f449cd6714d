"""A traced store range per 2-D tile of a [gm BM, gn BN] buffer to rank (r + offset) % R, masked by edges and rows.

Model, per rank r writing to t = (r + offset) % R; tile (pm, pn) of grid (gm, gn), pid = pm + pn gm; row-major
element e = i S + j (S = gn BN) active iff i < M, j < N, rows_r[i]; A(pm, pn) = active e of the tile:
    event  store range: pid, pid_m pm, pid_n pn, target t, address = buf[min A] on r (local pointer),
           size |A| x bytes, payload 0; then, with TRACE_OPS (drawn), the store's own range: the same
    memory rank q: buf[e] = e % 512 + 1 + 512 s for e active for s = (q - offset) % R; 0 elsewhere
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.auto_ops import call_events
from conformance.kit.helpers import block_event, cast, cdiv
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_2d, warp_size


@triton.jit(do_not_specialize=["M", "N", "stride", "target"])
def triton_kernel(ctx_t, buf, rows, M, N, stride, target, TRACE_OPS: tl.constexpr, BM: tl.constexpr,
                  BN: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    row_on = (rm < M) & (tl.load(rows + rm) != 0)
    mask = row_on[:, None] & (rn[None, :] < N)
    index = rm[:, None] * stride + rn[None, :]
    h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + index, pid_m, pid_n, mask=mask)
    ctx.store(buf + index, (index % 512 + 1 + 512 * ctx.rank).to(buf.dtype.element_ty), target, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["M", "N", "stride", "target"])
def gluon_kernel(ctx_t, buf, rows, M, N, stride, target, TRACE_OPS: gl.constexpr, BM: gl.constexpr,
                 BN: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_2d(warp_size(), gl.num_warps())
    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    rm = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    rn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    row_on = (rm < M) & (gl.load(rows + rm) != 0)
    mask = gl.expand_dims(row_on, 1) & gl.expand_dims(rn < N, 0)
    index = gl.expand_dims(rm, 1) * stride + gl.expand_dims(rn, 0)
    h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + index, pid_m, pid_n, mask=mask)
    ctx.store(buf + index, (index % 512 + 1 + 512 * ctx.cur_rank).to(buf.dtype.element_ty), target, mask=mask)
    ctx.tracing.record_event_end(h)


@st.composite
def params(draw, world_size):
    bm = draw(S.tile_size(), label="BM")
    bn = draw(S.tile_size(), label="BN")
    m = draw(S.axis_length(3 * bm), label="M")
    n = draw(S.axis_length(3 * bn), label="N")
    return {
        "M": m,
        "N": n,
        "BM": bm,
        "BN": bn,
        "dtype": draw(S.dtype_name(S.exact_dtypes(512 * world_size)), label="dtype"),  # values below 512 R
        "TRACE_OPS": draw(S.trace_ops(), label="TRACE_OPS"),
        "offset": draw(S.rank_offset(world_size), label="offset"),
        "rows": draw(S.per_rank(world_size, lambda r: S.mask_bits(cdiv(m, bm) * bm)), label="rows"),
    }


def _shape(p):
    return cdiv(p["M"], p["BM"]) * p["BM"], cdiv(p["N"], p["BN"]) * p["BN"]


def setup(rank, p):
    rank.buffer("buf", _shape(p), p["dtype"])
    rank.buffer("rows", len(p["rows"][0]), "int8", fill=p["rows"][rank.rank])


def launch(kernel, rank, p):
    target = (rank.rank + p["offset"]) % rank.world_size
    height, width = _shape(p)
    grid = (height // p["BM"], width // p["BN"])
    kernel[grid](rank.ctx, rank.buffers["buf"], rank.buffers["rows"], p["M"], p["N"], width, target,
                 **rank.world_constexprs, TRACE_OPS=p["TRACE_OPS"], BM=p["BM"], BN=p["BN"])


def _active(p, rows, pm, pn):
    """Row-major element indices of tile (pm, pn) that the mask keeps, ascending."""
    width = _shape(p)[1]
    return [i * width + j for i in range(pm * p["BM"], (pm + 1) * p["BM"]) if i < p["M"] and rows[i]
            for j in range(pn * p["BN"], (pn + 1) * p["BN"]) if j < p["N"]]


def model(p, world_size):
    height, width = _shape(p)
    gm, gn = height // p["BM"], width // p["BN"]
    events, memory = {}, {}
    for r in range(world_size):
        target = (r + p["offset"]) % world_size
        events[r] = []
        for pm in range(gm):
            for pn in range(gn):
                pid, lanes = pm + pn * gm, _active(p, p["rows"][r], pm, pn)
                events[r].append(block_event("store", "range", pid=pid, pid_m=pm, pid_n=pn, rank=r, target=target,
                                             buffer="buf", heap_rank=r, lanes=lanes, dtype=p["dtype"]))
                events[r] += call_events(p, "store", rank=r, pid=pid, pid_m=pm, pid_n=pn, target=target, buffer="buf",
                                         heap_rank=r, lanes=lanes)
        s = (r - p["offset"]) % world_size
        written = {e for pm in range(gm) for pn in range(gn) for e in _active(p, p["rows"][s], pm, pn)}
        buf = [e % 512 + 1 + 512 * s if e in written else 0 for e in range(height * width)]
        memory[r] = {"buf": cast(buf, p["dtype"])}
    return Model(events, memory)


SCENARIO = Scenario(
    name="tile_2d",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
