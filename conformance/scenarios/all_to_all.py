"""All-to-all by puts: rank r sends its block for each peer t to t, where it lands in t's slot r.

``src`` and ``dst`` hold R blocks of L = cdiv(n, BLOCK) BLOCK elements (block k at k L): rank r's block t goes out
with ``ctx.put`` inside a ``put`` range to ``dst`` block r of rank t, under r's mask for that block (a different
mask per peer). Peer order is a run-time buffer (``_collectives``), drawn per rank. Grid (cdiv(n, BLOCK),); lanes of
program p on rank r for peer t: L_r(p, t) = {j in block p : j < n, bits_r[t L + j]}.
Model, per rank r, program p, step i = 0 .. R-1 with peer t = order[r][i]:
    events put range: pid p, target t, address dst[r L + min L_r(p, t)] on r (put's local to_ptr),
           |L_r(p, t)| x bytes, payload i; then, with TRACE_OPS (drawn), put's own range (auto_ops.call_events),
           inside it: the same, payload 0
    memory rank q: dst[s L + j] = src_s[q L + j] for j in L_s(., q), DST_FILL elsewhere;
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

DST_FILL = -1  # lanes no sender writes keep it


@triton.jit(do_not_specialize=["n"])
def triton_kernel(ctx_t, src, dst, bits, order, n, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    length = (n + BLOCK - 1) // BLOCK * BLOCK
    slot = dst + ctx.rank * length + offs
    i = n * 0
    while i < ctx.world_size:
        t = tl.load(order + i)
        mask = (offs < n) & (tl.load(bits + t * length + offs) != 0)
        h = ctx.tracing.record_event_start(TraceEvent().put, t, slot, pid, 0, mask=mask, payload=i)
        ctx.put(src + t * length + offs, slot, t, mask=mask)
        ctx.tracing.record_event_end(h)
        i += 1


@gluon.jit(do_not_specialize=["n"])
def gluon_kernel(ctx_t, src, dst, bits, order, n, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    length = (n + BLOCK - 1) // BLOCK * BLOCK
    slot = dst + ctx.cur_rank * length + offs
    i = n * 0
    while i < ctx.num_ranks:
        t = gl.load(order + i)
        mask = (offs < n) & (gl.load(bits + t * length + offs) != 0)
        h = ctx.tracing.record_event_start(TraceEvent().put, t, slot, pid, 0, mask=mask, payload=i)
        ctx.put(src + t * length + offs, slot, t, mask=mask)
        ctx.tracing.record_event_end(h)
        i += 1


@st.composite
def params(draw, world_size):
    n, block = draw(S.element_count(), label="n"), draw(S.block_size(), label="BLOCK")
    length = cdiv(n, block) * block
    return {
        "n": n,
        "BLOCK": block,
        "dtype": draw(S.dtype_name(S.exact_dtypes(world_size * world_size * length)), label="dtype"),  # src values
        "TRACE_OPS": draw(S.trace_ops(), label="TRACE_OPS"),
        "order": draw(S.peer_orders(world_size), label="order"),
        "bits": draw(S.per_rank(world_size, lambda r: S.mask_bits(world_size * length)), label="bits"),
    }


def setup(rank, p):
    size = rank.world_size * padded_length(p)
    rank.buffer("src", size, p["dtype"], fill=distinct_source(rank.rank, p, rank.world_size))
    rank.buffer("dst", size, p["dtype"], fill=DST_FILL)
    rank.buffer("bits", size, "int8", fill=p["bits"][rank.rank])
    setup_order(rank, p)


def launch(kernel, rank, p):
    b = rank.buffers
    kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, b["src"], b["dst"], b["bits"], b["order"], p["n"],
                                        **rank.world_constexprs, TRACE_OPS=p["TRACE_OPS"], BLOCK=p["BLOCK"])


def _lanes(p: dict, r: int, start: int, block: int, t: int) -> list[int]:
    """Lanes j in start .. start + block that rank r sends to peer t: j < n and r's bit of block t set."""
    length = padded_length(p)
    return active_lanes(start, block, p["n"], p["bits"][r][t * length: (t + 1) * length])


def model(p, world_size):
    n, block, dtype, length = p["n"], p["BLOCK"], p["dtype"], padded_length(p)
    order = checked_orders(p, world_size)
    srcs = [distinct_source(q, p, world_size) for q in range(world_size)]
    events, memory = {}, {}
    for r in range(world_size):
        events[r] = []
        for pid in range(cdiv(n, block)):
            program = []
            for i, t in enumerate(order[r]):
                slot = [r * length + j for j in _lanes(p, r, pid * block, block, t)]
                program.append(block_event("put", "range", pid=pid, rank=r, target=t, buffer="dst", heap_rank=r,
                                           lanes=slot, dtype=dtype, payload=i))
                program += inside(call_events(p, "put", rank=r, pid=pid, target=t, buffer="dst", heap_rank=r,
                                              lanes=slot), len(program) - 1)
            events[r] += program
    for q in range(world_size):
        dst = [DST_FILL] * (world_size * length)
        for s in range(world_size):
            for j in _lanes(p, s, 0, length, q):
                dst[s * length + j] = srcs[s][q * length + j]
        memory[q] = {"dst": cast(dst, dtype), "src": srcs[q]}
    return Model(events, memory)


SCENARIO = Scenario(
    name="all_to_all",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
