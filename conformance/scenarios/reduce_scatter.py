"""Reduce-scatter by loads: rank r sums chunk r of every rank's input (its share), peer by peer, into its output.

``src`` holds R chunks of L = cdiv(n, BLOCK) BLOCK elements (chunk k at k L); rank r reads chunk r of each peer with
``ctx.load`` inside a ``fetch`` range and adds it to a running sum, then stores the sum inside a ``reduce`` range.
Peer order is a run-time buffer (``_collectives``), drawn per rank; values are integers exact in the drawn dtype, so
the sum does not depend on the order. Grid (cdiv(n, BLOCK),); lanes of program p on rank r:
L_r(p) = {j in block p : j < n, bits_r[j]}.
Model, per rank r, program p, step i = 0 .. R-1 with peer t = order[r][i]:
    events fetch range: pid p, target t, address src[r L + min L_r(p)] on r, |L_r(p)| x bytes, payload i; then,
           with TRACE_OPS (drawn), load's own range (auto_ops.call_events), inside it: the same, named load,
           payload 0
           after the loop: reduce range: target r, address out[min L_r(p)] on r, the same size, payload R; then
           (TRACE_OPS) store's own range, inside it: the same, named store, payload 0
    memory rank r: out[j] = sum over q of src_q[r L + j] for j in L_r, OUT_FILL elsewhere;
           src_q[k L + j] = (q R + k) L + j + 1 (unchanged)
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model, inside
from conformance.kit import strategies as S
from conformance.kit.auto_ops import call_events
from conformance.kit.helpers import active_lanes, block_event, cast, cdiv
from conformance.kit.scenario import Scenario, first_sentence
from conformance.scenarios._collectives import checked_orders, distinct_source, padded_length, setup_order
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size

OUT_FILL = -1  # lanes the mask leaves out keep it


@triton.jit(do_not_specialize=["n"])
def triton_kernel(ctx_t, src, out, bits, order, n, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    share = src + ctx.rank * ((n + BLOCK - 1) // BLOCK * BLOCK) + offs
    acc = tl.zeros([BLOCK], dtype=src.dtype.element_ty)
    i = n * 0
    while i < ctx.world_size:
        t = tl.load(order + i)
        h = ctx.tracing.record_event_start(TraceEvent().fetch, t, share, pid, 0, mask=mask, payload=i)
        acc += ctx.load(share, t, mask=mask, other=0)
        ctx.tracing.record_event_end(h)
        i += 1
    h = ctx.tracing.record_event_start(TraceEvent().reduce, ctx.rank, out + offs, pid, 0, mask=mask,
                                       payload=ctx.world_size)
    ctx.store(out + offs, acc, ctx.rank, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n"])
def gluon_kernel(ctx_t, src, out, bits, order, n, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    share = src + ctx.cur_rank * ((n + BLOCK - 1) // BLOCK * BLOCK) + offs
    acc = gl.zeros([BLOCK], dtype=src.dtype.element_ty, layout=layout)
    i = n * 0
    while i < ctx.num_ranks:
        t = gl.load(order + i)
        h = ctx.tracing.record_event_start(TraceEvent().fetch, t, share, pid, 0, mask=mask, payload=i)
        acc += ctx.load(share, t, mask=mask, other=0)
        ctx.tracing.record_event_end(h)
        i += 1
    h = ctx.tracing.record_event_start(TraceEvent().reduce, ctx.cur_rank, out + offs, pid, 0, mask=mask,
                                       payload=ctx.num_ranks)
    ctx.store(out + offs, acc, ctx.cur_rank, mask=mask)
    ctx.tracing.record_event_end(h)


def _largest(world_size: int, length: int) -> int:
    """The largest sum: every rank's last element of the last chunk, sum of (q R + R) L over q = R^2 L (R + 1) / 2."""
    return world_size * world_size * length * (world_size + 1) // 2


@st.composite
def params(draw, world_size):
    n, block = draw(S.element_count(), label="n"), draw(S.block_size(), label="BLOCK")
    length = cdiv(n, block) * block
    return {
        "n": n,
        "BLOCK": block,
        "dtype": draw(S.dtype_name(S.exact_dtypes(_largest(world_size, length))), label="dtype"),
        "TRACE_OPS": draw(S.trace_ops(), label="TRACE_OPS"),
        "order": draw(S.peer_orders(world_size), label="order"),
        "bits": draw(S.per_rank(world_size, lambda r: S.mask_bits(length)), label="bits"),
    }


def setup(rank, p):
    source = distinct_source(rank.rank, p, rank.world_size)
    rank.buffer("src", rank.world_size * padded_length(p), p["dtype"], fill=source)
    rank.buffer("out", padded_length(p), p["dtype"], fill=OUT_FILL)
    rank.buffer("bits", padded_length(p), "int8", fill=p["bits"][rank.rank])
    setup_order(rank, p)


def launch(kernel, rank, p):
    b = rank.buffers
    kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, b["src"], b["out"], b["bits"], b["order"], p["n"],
                                        **rank.world_constexprs, TRACE_OPS=p["TRACE_OPS"], BLOCK=p["BLOCK"])


def model(p, world_size):
    n, block, dtype, length = p["n"], p["BLOCK"], p["dtype"], padded_length(p)
    order = checked_orders(p, world_size)
    srcs = [distinct_source(q, p, world_size) for q in range(world_size)]
    events, memory = {}, {}
    for r in range(world_size):
        events[r] = []
        for pid in range(cdiv(n, block)):
            lanes = active_lanes(pid * block, block, n, p["bits"][r])
            share = [r * length + j for j in lanes]
            program = []
            for i, t in enumerate(order[r]):
                program.append(block_event("fetch", "range", pid=pid, rank=r, target=t, buffer="src", heap_rank=r,
                                           lanes=share, dtype=dtype, payload=i))
                program += inside(call_events(p, "load", rank=r, pid=pid, target=t, buffer="src", heap_rank=r,
                                              lanes=share), len(program) - 1)
            program.append(block_event("reduce", "range", pid=pid, rank=r, target=r, buffer="out", heap_rank=r,
                                       lanes=lanes, dtype=dtype, payload=world_size))
            program += inside(call_events(p, "store", rank=r, pid=pid, target=r, buffer="out", heap_rank=r,
                                          lanes=lanes), len(program) - 1)
            events[r] += program
        active = set(active_lanes(0, length, n, p["bits"][r]))
        out = [sum(src[r * length + j] for src in srcs) if j in active else OUT_FILL for j in range(length)]
        memory[r] = {"out": cast(out, dtype), "src": srcs[r]}
    return Model(events, memory)


SCENARIO = Scenario(
    name="reduce_scatter",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
