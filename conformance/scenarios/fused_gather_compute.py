"""Fused gather and compute: each rank makes its tile, flags it ready on every peer, then waits for, fetches, sums.

The phases are marked with upstream's schema 1.2 ranges (``compute``, ``wait``, ``fetch``) around auto-traced ops.
Program p of rank r (grid (P,), P = cdiv(n, BLOCK) <= ``strategies.WAITING_PROGRAMS`` at every scale, so every
program of every rank is resident at once on a GPU) makes block p of its ``tile`` inside a ``compute`` range, then
sets flag ``ready[r P + p]`` on every rank (a release atomic, after a barrier: every thread's stores first). Then,
for each peer s in its drawn order, it waits inside a ``wait`` range until ``ready[s P + p]`` (its own heap) is 1,
fetches block p of s's tile with a remote ``ctx.load`` inside a ``fetch`` range and adds it to a running sum, which it
stores inside a second ``compute`` range. A program waits only on programs of the same index of other ranks (or on
itself), each of which sets its flags before it waits: no wait can block the program it waits for, on a GPU or under
the interpreter (which runs a rank's programs in order; ranks are processes that run at once).

The wait polls with a plain relaxed ``tl.atomic_cas``/``gl.atomic_cas`` on its own heap's flag, not an iris op: how
often it polls depends on timing, so an auto-traced poll would record a count no model can give (``message_passing``
polls with ``ctx.atomic_cas`` and so cannot draw ``TRACE_OPS``). Once a poll sees the flag (or the spin gives up:
then the next fetch's payload is -1, a divergence rather than a hang, as in ``message_passing``), one acquire
``ctx.atomic_cas`` reads it again, the op that orders the fetch after the producer's stores: a single op, traced with
``TRACE_OPS`` like every other, inside the ``wait`` range, which ends after it. So every event's count is
deterministic, and a wait range that ends before its flag is seen shows: the acquire's range then lies outside it
(the model nests each op's own range in the range around it, ``Event.within``, which the comparison checks on the
timestamps).
Model, per rank r, program p, block lanes B(p) = {j in block p : j < n}, L_r(p) = {j in B(p) : bits_r[j]}:
    events compute range: target r, address tile[min B(p)] on r, |B(p)| x bytes, payload PRODUCE; then (TRACE_OPS)
           store's own range: the same, named store, payload 0
           per step i, t = order[r][i]: (TRACE_OPS) atomic_xchg's own range: target t, address ready[r P + p] on r,
           4 bytes
           per step i, s = order[r][i]: wait range: target s, address ready[s P + p] on r, 4 bytes, payload i;
           then (TRACE_OPS) atomic_cas's own range (the acquire, inside it): target r, the same address and size;
           fetch range: target s, address tile[min L_r(p)] on r, |L_r(p)| x bytes, payload i (-1: the flag never
           came); then (TRACE_OPS) load's own range: the same, named load, payload 0
           compute range: target r, address out[min L_r(p)] on r, |L_r(p)| x bytes, payload COMBINE; then
           (TRACE_OPS) store's own range: the same, payload 0
    memory rank r: tile[j] = r L + j + 1 for j < n, 0 elsewhere (L = P BLOCK); out[j] = sum over s of (s L + j + 1)
           for j in L_r, OUT_FILL elsewhere; ready = [1] * (R P)
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model, inside
from conformance.kit import strategies as S
from conformance.kit.auto_ops import call_events
from conformance.kit.helpers import active_lanes, block_event, cast, cdiv, spin_limit
from conformance.kit.scenario import Scenario, first_sentence
from conformance.scenarios._collectives import checked_orders, padded_length, setup_order
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size

PRODUCE, COMBINE = 0, 1  # the payloads the kernels give their two compute ranges
OUT_FILL = -1  # lanes the mask leaves out keep it


@triton.jit(do_not_specialize=["n", "limit"])
def triton_kernel(ctx_t, tile, out, ready, bits, order, n, limit, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    made = offs < n
    h = ctx.tracing.record_event_start(TraceEvent().compute, ctx.rank, tile + offs, pid, 0, mask=made, payload=0)
    ctx.store(tile + offs, (ctx.rank * programs * BLOCK + offs + 1).to(tile.dtype.element_ty), ctx.rank, mask=made)
    ctx.tracing.record_event_end(h)
    tl.debug_barrier()  # every thread's stores happen before the releases below
    i = n * 0
    while i < ctx.world_size:
        ctx.atomic_xchg(ready + ctx.rank * programs + pid, 1, tl.load(order + i), sem="release", scope="sys")
        i += 1
    mask = made & (tl.load(bits + offs) != 0)
    acc = tl.zeros([BLOCK], dtype=tile.dtype.element_ty)
    i = n * 0
    while i < ctx.world_size:
        s = tl.load(order + i)
        flag = ready + s * programs + pid
        h = ctx.tracing.record_event_start(TraceEvent().wait, s, flag, pid, 0, payload=i)
        seen = tl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")  # a poll: not an iris op, never traced
        spins = limit * 0
        while (seen != 1) & (spins < limit):
            seen = tl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")
            spins += 1
        seen = ctx.atomic_cas(flag, 1, 1, ctx.rank, sem="acquire", scope="sys")  # the acquire: one op, traced
        ctx.tracing.record_event_end(h)
        tl.debug_barrier()  # no thread reads the tile before the flag is seen
        h = ctx.tracing.record_event_start(TraceEvent().fetch, s, tile + offs, pid, 0, mask=mask,
                                           payload=tl.where(seen == 1, i, -1))
        acc += ctx.load(tile + offs, s, mask=mask, other=0, volatile=True)
        ctx.tracing.record_event_end(h)
        i += 1
    h = ctx.tracing.record_event_start(TraceEvent().compute, ctx.rank, out + offs, pid, 0, mask=mask, payload=1)
    ctx.store(out + offs, acc, ctx.rank, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "limit"])
def gluon_kernel(ctx_t, tile, out, ready, bits, order, n, limit, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    made = offs < n
    h = ctx.tracing.record_event_start(TraceEvent().compute, ctx.cur_rank, tile + offs, pid, 0, mask=made, payload=0)
    ctx.store(tile + offs, (ctx.cur_rank * programs * BLOCK + offs + 1).to(tile.dtype.element_ty), ctx.cur_rank,
              mask=made)
    ctx.tracing.record_event_end(h)
    gl.thread_barrier()  # every thread's stores happen before the releases below
    i = n * 0
    while i < ctx.num_ranks:
        ctx.atomic_xchg(ready + ctx.cur_rank * programs + pid, 1, gl.load(order + i), sem="release", scope="sys")
        i += 1
    mask = made & (gl.load(bits + offs) != 0)
    acc = gl.zeros([BLOCK], dtype=tile.dtype.element_ty, layout=layout)
    i = n * 0
    while i < ctx.num_ranks:
        s = gl.load(order + i)
        flag = ready + s * programs + pid
        h = ctx.tracing.record_event_start(TraceEvent().wait, s, flag, pid, 0, payload=i)
        seen = gl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")  # a poll: not an iris op, never traced
        spins = limit * 0
        while (seen != 1) & (spins < limit):
            seen = gl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")
            spins += 1
        seen = ctx.atomic_cas(flag, 1, 1, ctx.cur_rank, sem="acquire", scope="sys")  # the acquire: one op, traced
        ctx.tracing.record_event_end(h)
        gl.thread_barrier()  # no thread reads the tile before the flag is seen
        h = ctx.tracing.record_event_start(TraceEvent().fetch, s, tile + offs, pid, 0, mask=mask,
                                           payload=gl.where(seen == 1, i, -1))
        acc += ctx.load(tile + offs, s, mask=mask, other=0, volatile=True)
        ctx.tracing.record_event_end(h)
        i += 1
    h = ctx.tracing.record_event_start(TraceEvent().compute, ctx.cur_rank, out + offs, pid, 0, mask=mask, payload=1)
    ctx.store(out + offs, acc, ctx.cur_rank, mask=mask)
    ctx.tracing.record_event_end(h)


@st.composite
def params(draw, world_size):
    block = draw(S.block_size(), label="BLOCK")
    n = draw(S.waiting_element_count(block), label="n")
    length = cdiv(n, block) * block
    return {
        "n": n,
        "BLOCK": block,
        "dtype": draw(S.dtype_name(S.exact_dtypes(length * world_size * (world_size + 1) // 2)), label="dtype"),
        "TRACE_OPS": draw(S.trace_ops(), label="TRACE_OPS"),
        "order": draw(S.peer_orders(world_size), label="order"),
        "bits": draw(S.per_rank(world_size, lambda r: S.mask_bits(length)), label="bits"),
    }


def setup(rank, p):
    length = padded_length(p)
    rank.buffer("tile", length, p["dtype"])
    rank.buffer("out", length, p["dtype"], fill=OUT_FILL)
    rank.buffer("ready", rank.world_size * cdiv(p["n"], p["BLOCK"]), "int32")
    rank.buffer("bits", length, "int8", fill=p["bits"][rank.rank])
    setup_order(rank, p)


def launch(kernel, rank, p):
    b = rank.buffers
    kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, b["tile"], b["out"], b["ready"], b["bits"], b["order"], p["n"],
                                        spin_limit(rank), **rank.world_constexprs, TRACE_OPS=p["TRACE_OPS"],
                                        BLOCK=p["BLOCK"])


def _tile(s: int, p: dict) -> list[int]:
    """Rank s's tile as its kernel makes it: s L + j + 1 for j < n, 0 (never written) elsewhere."""
    length = padded_length(p)
    return [s * length + j + 1 if j < p["n"] else 0 for j in range(length)]


def model(p, world_size):
    n, block, dtype, length = p["n"], p["BLOCK"], p["dtype"], padded_length(p)
    programs = cdiv(n, block)
    order = checked_orders(p, world_size)
    flags = {**p, "dtype": "int32"}  # the flags' element type, for their ops' own ranges

    def ev(name, r, pid, target, buffer, lanes, payload, elem=dtype):
        return block_event(name, "range", pid=pid, rank=r, target=target, buffer=buffer, heap_rank=r, lanes=lanes,
                           dtype=elem, payload=payload)

    tiles = [_tile(s, p) for s in range(world_size)]
    events, memory = {}, {}
    for r in range(world_size):
        events[r] = []
        for pid in range(programs):
            made = active_lanes(pid * block, block, n)
            lanes = active_lanes(pid * block, block, n, p["bits"][r])
            program = [ev("compute", r, pid, r, "tile", made, PRODUCE)]
            program += inside(call_events(p, "store", rank=r, pid=pid, target=r, buffer="tile", heap_rank=r,
                                          lanes=made), 0)
            for t in order[r]:
                program += call_events(flags, "atomic_xchg", rank=r, pid=pid, target=t, buffer="ready", heap_rank=r,
                                       lanes=[r * programs + pid])
            for i, s in enumerate(order[r]):
                flag = [s * programs + pid]
                program.append(ev("wait", r, pid, s, "ready", flag, i, "int32"))
                program += inside(call_events(flags, "atomic_cas", rank=r, pid=pid, target=r, buffer="ready",
                                              heap_rank=r, lanes=flag, block=flag), len(program) - 1)
                program.append(ev("fetch", r, pid, s, "tile", lanes, i))
                program += inside(call_events(p, "load", rank=r, pid=pid, target=s, buffer="tile", heap_rank=r,
                                              lanes=lanes), len(program) - 1)
            program.append(ev("compute", r, pid, r, "out", lanes, COMBINE))
            program += inside(call_events(p, "store", rank=r, pid=pid, target=r, buffer="out", heap_rank=r,
                                          lanes=lanes), len(program) - 1)
            events[r] += program
        active = set(active_lanes(0, length, n, p["bits"][r]))
        out = [sum(tile[j] for tile in tiles) if j in active else OUT_FILL for j in range(length)]
        memory[r] = {"tile": cast(tiles[r], dtype), "out": cast(out, dtype),
                     "ready": [1] * (world_size * programs)}
    return Model(events, memory)


SCENARIO = Scenario(
    name="fused_gather_compute",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
    waits_on_peers=True,
)
