"""Producer/consumer ring: each rank puts a block to the next rank, raises its flag, waits for its own, reads it.

One program per rank (grid (1,)), so a program never waits for another program of its own rank.
Model, per rank r with next = (r + 1) % R and prev = (r - 1) % R, chunk k over lanes L(k) = {j in chunk k : j < n}:
    events  put range per chunk k: pid 0, target next, lanes L(k) of src on r, payload k
            atomic_xchg range (the release of next's flag): target next, address flag[0] on r, 1 element, payload 1
            wait range (acquire spin on the own flag): target r, address flag[0] on r, 1 element, payload prev
            load instant per chunk k: target r, lanes L(k) of dst on r, payload prev (-1 if the wait gave up)
    memory rank r: dst[j] = result[j] = 256 prev + j for j < n, 0 elsewhere; flag = [1]
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.helpers import active_lanes, block_event, cast, cdiv, spin_limit
from conformance.kit.scenario import Scenario, first_sentence
from conformance.scenarios._collectives import padded_length
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "limit"])
def triton_kernel(ctx_t, src, dst, result, flag, n, limit, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)
    nxt = (ctx.rank + 1) % ctx.world_size
    prv = (ctx.rank + ctx.world_size - 1) % ctx.world_size
    k = n * 0
    while k * BLOCK < n:
        offs = k * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        h = ctx.tracing.record_event_start(TraceEvent().put, nxt, src + offs, 0, 0, mask=mask, payload=k)
        ctx.put(src + offs, dst + offs, nxt, mask=mask)
        ctx.tracing.record_event_end(h)
        k += 1
    tl.debug_barrier()  # every thread's stores happen before the release below
    h = ctx.tracing.record_event_start(TraceEvent().atomic_xchg, nxt, flag, 0, 0, payload=1)
    ctx.atomic_xchg(flag, 1, nxt, sem="release", scope="sys")
    ctx.tracing.record_event_end(h)
    h = ctx.tracing.record_event_start(TraceEvent().wait, ctx.rank, flag, 0, 0, payload=prv)
    seen = ctx.atomic_cas(flag, 1, 1, ctx.rank, sem="acquire", scope="sys")
    spins = limit * 0
    while (seen != 1) & (spins < limit):
        seen = ctx.atomic_cas(flag, 1, 1, ctx.rank, sem="acquire", scope="sys")
        spins += 1
    ctx.tracing.record_event_end(h)
    tl.debug_barrier()
    got = tl.where(seen == 1, prv, -1)
    k = n * 0
    while k * BLOCK < n:
        offs = k * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(result + offs, ctx.load(dst + offs, ctx.rank, mask=mask, volatile=True), mask=mask)
        ctx.tracing.record_event(TraceEvent().load, ctx.rank, dst + offs, 0, 0, mask=mask, payload=got)
        k += 1


@gluon.jit(do_not_specialize=["n", "limit"])
def gluon_kernel(ctx_t, src, dst, result, flag, n, limit, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    nxt = (ctx.cur_rank + 1) % ctx.num_ranks
    prv = (ctx.cur_rank + ctx.num_ranks - 1) % ctx.num_ranks
    k = n * 0
    while k * BLOCK < n:
        offs = k * BLOCK + gl.arange(0, BLOCK, layout=layout)
        mask = offs < n
        h = ctx.tracing.record_event_start(TraceEvent().put, nxt, src + offs, 0, 0, mask=mask, payload=k)
        ctx.put(src + offs, dst + offs, nxt, mask=mask)
        ctx.tracing.record_event_end(h)
        k += 1
    gl.thread_barrier()  # every thread's stores happen before the release below
    h = ctx.tracing.record_event_start(TraceEvent().atomic_xchg, nxt, flag, 0, 0, payload=1)
    ctx.atomic_xchg(flag, 1, nxt, sem="release", scope="sys")
    ctx.tracing.record_event_end(h)
    h = ctx.tracing.record_event_start(TraceEvent().wait, ctx.cur_rank, flag, 0, 0, payload=prv)
    seen = ctx.atomic_cas(flag, 1, 1, ctx.cur_rank, sem="acquire", scope="sys")
    spins = limit * 0
    while (seen != 1) & (spins < limit):
        seen = ctx.atomic_cas(flag, 1, 1, ctx.cur_rank, sem="acquire", scope="sys")
        spins += 1
    ctx.tracing.record_event_end(h)
    gl.thread_barrier()
    got = gl.where(seen == 1, prv, -1)
    k = n * 0
    while k * BLOCK < n:
        offs = k * BLOCK + gl.arange(0, BLOCK, layout=layout)
        mask = offs < n
        gl.store(result + offs, ctx.load(dst + offs, ctx.cur_rank, mask=mask, volatile=True), mask=mask)
        ctx.tracing.record_event(TraceEvent().load, ctx.cur_rank, dst + offs, 0, 0, mask=mask, payload=got)
        k += 1


def _largest(world_size, n, block):
    """Every message value is below 256 (R - 1) + its length: below 256 R at up to 256 elements."""
    return max(256 * world_size, 256 * (world_size - 1) + cdiv(n, block) * block)


@st.composite
def params(draw, world_size):
    n, block = draw(S.element_count(256), label="n"), draw(S.block_size(), label="BLOCK")
    return {
        "n": n,
        "BLOCK": block,
        "dtype": draw(S.dtype_name(S.exact_dtypes(_largest(world_size, n, block))), label="dtype"),
    }


def _data(r, p):
    """Rank r's message: 256 r + j (j < its length), exact in every dtype drawn for R ranks (``_largest``)."""
    return cast([256 * r + j for j in range(padded_length(p))], p["dtype"])


def setup(rank, p):
    length = padded_length(p)
    rank.buffer("src", length, p["dtype"], fill=_data(rank.rank, p))
    rank.buffer("dst", length, p["dtype"])
    rank.buffer("result", length, p["dtype"])
    rank.buffer("flag", 1, "int32")


def launch(kernel, rank, p):
    b = rank.buffers
    kernel[(1,)](rank.ctx, b["src"], b["dst"], b["result"], b["flag"], p["n"], spin_limit(rank),
                 **rank.world_constexprs, BLOCK=p["BLOCK"])


def model(p, world_size):
    n, block, dtype = p["n"], p["BLOCK"], p["dtype"]
    chunks = range(cdiv(n, block))
    events, memory = {}, {}
    for r in range(world_size):
        nxt, prv = (r + 1) % world_size, (r - 1) % world_size

        def ev(name, kind, target, buffer, lanes, payload, elem=dtype, r=r):
            return block_event(name, kind, pid=0, rank=r, target=target, buffer=buffer, heap_rank=r, lanes=lanes,
                               dtype=elem, payload=payload)

        events[r] = (
            [ev("put", "range", nxt, "src", active_lanes(k * block, block, n), k) for k in chunks]
            + [ev("atomic_xchg", "range", nxt, "flag", [0], 1, "int32")]
            + [ev("wait", "range", r, "flag", [0], prv, "int32")]
            + [ev("load", "instant", r, "dst", active_lanes(k * block, block, n), prv) for k in chunks]
        )
        received = [v if j < n else 0 for j, v in enumerate(_data(prv, p))]
        memory[r] = {"dst": cast(received, dtype), "result": cast(received, dtype), "flag": [1]}
    return Model(events, memory)


SCENARIO = Scenario(
    name="message_passing",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
    waits_on_peers=True,
)
