"""Per program an outer range holding a put range, an instant and a get range; events in claim order.

An event is created when a range starts or an instant is recorded; ending a range only fills its duration.
Model, per rank r with t = (r + offset) % R, f = (r - offset) % R, program p over block B(p) and lanes
L(p) = {j in B(p): j < n, bits_r[j]}; events of program p in program order (= order of the start/instant calls):
    compute range (outer, started first, ended last): target r, address dst[p BLOCK] on r, size BLOCK x bytes,
                  payload 0
    put range     (inner 1): target t, address dst[min L(p)] on r, size |L(p)| x bytes, payload 1
    user instant  (between the inner ranges): target t, address src[p] on r, size 1 x bytes, payload 2
    get range     (inner 2): target f, address src[min L(p)] on r, size |L(p)| x bytes, payload 3
    with TRACE_OPS (drawn), the put's and the get's own ranges right after theirs: the same but payload 0
    memory rank q: dst[j] = src_s[j] for j in L of s = (q - offset) % R, 0 elsewhere (put by s)
                   back[j] = src_f[j] for j in L of q, 0 elsewhere (got from f = (q - offset) % R)
                   src_q[j] = j + 1 + 512 q (unchanged)
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.auto_ops import call_events
from conformance.kit.helpers import block_event, cast, cdiv, masked_values, program_lanes, setup_masked, source_values
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "target", "source"])
def triton_kernel(ctx_t, src, dst, back, bits, n, target, source, TRACE_OPS: tl.constexpr,
                  BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    outer = ctx.tracing.record_event_start(TraceEvent().compute, ctx.rank, dst + offs, pid, 0, payload=0)
    inner = ctx.tracing.record_event_start(TraceEvent().put, target, dst + offs, pid, 0, mask=mask, payload=1)
    ctx.put(src + offs, dst + offs, target, mask=mask)
    ctx.tracing.record_event_end(inner)
    ctx.tracing.record_event(TraceEvent().user, target, src + pid, pid, 0, payload=2)
    inner = ctx.tracing.record_event_start(TraceEvent().get, source, src + offs, pid, 0, mask=mask, payload=3)
    ctx.get(src + offs, back + offs, source, mask=mask)
    ctx.tracing.record_event_end(inner)
    ctx.tracing.record_event_end(outer)


@gluon.jit(do_not_specialize=["n", "target", "source"])
def gluon_kernel(ctx_t, src, dst, back, bits, n, target, source, TRACE_OPS: gl.constexpr,
                 BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    outer = ctx.tracing.record_event_start(TraceEvent().compute, ctx.cur_rank, dst + offs, pid, 0, payload=0)
    inner = ctx.tracing.record_event_start(TraceEvent().put, target, dst + offs, pid, 0, mask=mask, payload=1)
    ctx.put(src + offs, dst + offs, target, mask=mask)
    ctx.tracing.record_event_end(inner)
    ctx.tracing.record_event(TraceEvent().user, target, src + pid, pid, 0, payload=2)
    inner = ctx.tracing.record_event_start(TraceEvent().get, source, src + offs, pid, 0, mask=mask, payload=3)
    ctx.get(src + offs, back + offs, source, mask=mask)
    ctx.tracing.record_event_end(inner)
    ctx.tracing.record_event_end(outer)


def params(world_size):
    return S.masked_block(world_size, payload=False)


def setup(rank, p):
    setup_masked(rank, p, "dst", "back", source=True)


def launch(kernel, rank, p):
    target = (rank.rank + p["offset"]) % rank.world_size
    source = (rank.rank - p["offset"]) % rank.world_size
    b = rank.buffers
    kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, b["src"], b["dst"], b["back"], b["bits"], p["n"], target, source,
                                         **rank.world_constexprs, TRACE_OPS=p["TRACE_OPS"],
                                         BLOCK=p["BLOCK"])


def model(p, world_size):
    n, block, length, dtype = p["n"], p["BLOCK"], len(p["bits"][0]), p["dtype"]
    events, memory = {}, {}
    for r in range(world_size):
        t, f = (r + p["offset"]) % world_size, (r - p["offset"]) % world_size
        events[r] = []
        for pid in range(cdiv(n, block)):
            lanes_p = program_lanes(p, r, pid)
            for name, kind, target, buf, lanes, payload in (
                ("compute", "range", r, "dst", list(range(pid * block, (pid + 1) * block)), 0),
                ("put", "range", t, "dst", lanes_p, 1),
                ("user", "instant", t, "src", [pid], 2),
                ("get", "range", f, "src", lanes_p, 3),
            ):
                events[r].append(block_event(name, kind, pid=pid, rank=r, target=target, buffer=buf, heap_rank=r,
                                             lanes=lanes, dtype=dtype, payload=payload))
                if name in ("put", "get"):  # the op inside the range
                    events[r] += call_events(p, name, rank=r, pid=pid, target=target, buffer=buf, heap_rank=r,
                                             lanes=lanes)
        s = (r - p["offset"]) % world_size
        memory[r] = {
            "src": cast(source_values(r, length), dtype),
            "dst": cast(masked_values(p, s, source_values(s, length)), dtype),
            "back": cast(masked_values(p, r, source_values(f, length)), dtype),
        }
    return Model(events, memory)


SCENARIO = Scenario(
    name="nested_ranges",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
