"""All-gather by pulls: every rank gets every rank's [M, N] tile into its rows of its own [R M, N] output, tile by tile.

A gather by ``get`` rather than by stores pushed to peers (upstream's all-gather pushes with stores): ``all_scatter``
checks that push already, a loop of stores over peers, so this one checks the other direction, a loop of remote
reads whose peer is ``get``'s ``from_rank`` and whose local end is its ``to_ptr``; each is marked as a user marks a
transfer it waits for, a ``fetch`` range. Peer order is a run-time buffer (``_collectives``), drawn per rank.
Grid (gm, gn) = (cdiv(M, BM), cdiv(N, BN)); ``src`` is [M, N], ``out`` [R M, N]; element e = m N + c of a tile.
Model, per rank r, tile (pm, pn) (pid = pm + pn gm), step i = 0 .. R-1 with peer t = order[r][i]:
    lanes  A_r(pm, pn) = {m N + c : m, c in the tile, m < M, c < N, rows_r[m]}
    events fetch range: pid, pid_m pm, pid_n pn, target t, address src[min A] on r, |A| x bytes, payload i; then,
           with TRACE_OPS (drawn), get's own range (auto_ops.call_events), inside it: the same, named get, payload 0
    memory rank r: out[t M + m][c] = src_t[m][c] = (t M + m) N + c + 1 where rows_r[m] (m < M, c < N), OUT_FILL
           elsewhere; src_r unchanged
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model, inside
from conformance.kit import strategies as S
from conformance.kit.auto_ops import call_events
from conformance.kit.helpers import block_event, cast, cdiv
from conformance.kit.scenario import Scenario, first_sentence
from conformance.scenarios._collectives import checked_orders, setup_order
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_2d, warp_size

OUT_FILL = -1  # rows a rank's mask leaves out keep it


@triton.jit(do_not_specialize=["M", "N"])
def triton_kernel(ctx_t, src, out, rows, order, M, N, TRACE_OPS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    row_on = (rm < M) & (tl.load(rows + rm) != 0)
    mask = row_on[:, None] & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    i = M * 0
    while i < ctx.world_size:
        t = tl.load(order + i)
        h = ctx.tracing.record_event_start(TraceEvent().fetch, t, src + offs, pid_m, pid_n, mask=mask, payload=i)
        ctx.get(src + offs, out + t * M * N + offs, t, mask=mask)
        ctx.tracing.record_event_end(h)
        i += 1


@gluon.jit(do_not_specialize=["M", "N"])
def gluon_kernel(ctx_t, src, out, rows, order, M, N, TRACE_OPS: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_2d(warp_size(), gl.num_warps())
    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    rm = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    rn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    row_on = (rm < M) & (gl.load(rows + rm) != 0)
    mask = gl.expand_dims(row_on, 1) & gl.expand_dims(rn < N, 0)
    offs = gl.expand_dims(rm, 1) * N + gl.expand_dims(rn, 0)
    i = M * 0
    while i < ctx.num_ranks:
        t = gl.load(order + i)
        h = ctx.tracing.record_event_start(TraceEvent().fetch, t, src + offs, pid_m, pid_n, mask=mask, payload=i)
        ctx.get(src + offs, out + t * M * N + offs, t, mask=mask)
        ctx.tracing.record_event_end(h)
        i += 1


@st.composite
def params(draw, world_size):
    bm = draw(S.block_size(large=False), label="BM")
    bn = draw(S.block_size(large=False), label="BN")
    m = draw(S.axis_length(48), label="M")
    n = draw(S.axis_length(48), label="N")
    return {
        "M": m,
        "N": n,
        "BM": bm,
        "BN": bn,
        "dtype": draw(S.dtype_name(S.exact_dtypes(world_size * m * n)), label="dtype"),  # values up to R M N
        "TRACE_OPS": draw(S.trace_ops(), label="TRACE_OPS"),
        "order": draw(S.peer_orders(world_size), label="order"),
        "rows": draw(S.per_rank(world_size, lambda r: S.mask_bits(cdiv(m, bm) * bm)), label="rows"),
    }


def _tile(r: int, p: dict) -> list[list[int]]:
    """Rank r's tile: element (m, c) holds (r M + m) N + c + 1, its index in every rank's output, plus one."""
    M, N = p["M"], p["N"]
    return [cast([(r * M + m) * N + c + 1 for c in range(N)], p["dtype"]) for m in range(M)]


def setup(rank, p):
    rank.buffer("src", (p["M"], p["N"]), p["dtype"], fill=_tile(rank.rank, p))
    rank.buffer("out", (rank.world_size * p["M"], p["N"]), p["dtype"], fill=OUT_FILL)
    rank.buffer("rows", len(p["rows"][0]), "int8", fill=p["rows"][rank.rank])
    setup_order(rank, p)


def launch(kernel, rank, p):
    b = rank.buffers
    grid = (cdiv(p["M"], p["BM"]), cdiv(p["N"], p["BN"]))
    kernel[grid](rank.ctx, b["src"], b["out"], b["rows"], b["order"], p["M"], p["N"], **rank.world_constexprs,
                 TRACE_OPS=p["TRACE_OPS"], BM=p["BM"], BN=p["BN"])


def _lanes(p: dict, rows: list[int], pm: int, pn: int) -> list[int]:
    """Row-major indices m N + c of tile (pm, pn) that the mask keeps, ascending."""
    M, N, BM, BN = p["M"], p["N"], p["BM"], p["BN"]
    return [m * N + c for m in range(pm * BM, min(M, (pm + 1) * BM)) if rows[m]
            for c in range(pn * BN, min(N, (pn + 1) * BN))]


def model(p, world_size):
    M, N, dtype = p["M"], p["N"], p["dtype"]
    gm, gn = cdiv(M, p["BM"]), cdiv(N, p["BN"])
    order = checked_orders(p, world_size)
    events, memory = {}, {}
    for r in range(world_size):
        events[r] = []
        for pm in range(gm):
            for pn in range(gn):
                pid, lanes = pm + pn * gm, _lanes(p, p["rows"][r], pm, pn)
                program = []
                for i, t in enumerate(order[r]):
                    program.append(block_event("fetch", "range", pid=pid, pid_m=pm, pid_n=pn, rank=r, target=t,
                                               buffer="src", heap_rank=r, lanes=lanes, dtype=dtype, payload=i))
                    program += inside(call_events(p, "get", rank=r, pid=pid, pid_m=pm, pid_n=pn, target=t,
                                                  buffer="src", heap_rank=r, lanes=lanes), len(program) - 1)
                events[r] += program
        out = [row if p["rows"][r][m] else cast([OUT_FILL] * N, dtype)
               for t in range(world_size) for m, row in enumerate(_tile(t, p))]
        memory[r] = {"out": out, "src": _tile(r, p)}
    return Model(events, memory)


SCENARIO = Scenario(
    name="all_gather",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
