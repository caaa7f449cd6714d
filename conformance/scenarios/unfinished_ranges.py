"""Ranges started and never ended: per program an open `compute` range, then a masked put in an ended `put` range.

Model, per rank r writing to t = (r + offset) % R, program p over block B(p) and lanes L(p) = {j in B(p): j < n,
bits_r[j]}; events of program p in program order:
    compute range, never ended (kind unfinished): pid p, pid_n 0, target r, address dst[p BLOCK] on r,
                  size BLOCK x bytes (no mask), payload payload + p
    put range (ended):                            pid p, pid_n 1, target t, address dst[min L(p)] on r,
                  size |L(p)| x bytes, payload payload
    with TRACE_OPS (drawn), the put's own range after it (auto_ops.call_events): pid_n 0, payload 0, else the same
    memory rank q: dst[j] = src_s[j] for j in L of s = (q - offset) % R, 0 elsewhere
           src_q[j] = j + 1 + 512 q on every rank q (unchanged)
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.auto_ops import call_events
from conformance.kit.helpers import block_event, cdiv, launch_blocks, peer, program_lanes, setup_masked, transfer_memory
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "target", "payload"])
def triton_kernel(ctx_t, src, dst, bits, n, target, payload, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    ctx.tracing.record_event_start(TraceEvent().compute, ctx.rank, dst + offs, pid, 0, payload=payload + pid)
    h = ctx.tracing.record_event_start(TraceEvent().put, target, dst + offs, pid, 1, mask=mask, payload=payload)
    ctx.put(src + offs, dst + offs, target, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "target", "payload"])
def gluon_kernel(ctx_t, src, dst, bits, n, target, payload, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    ctx.tracing.record_event_start(TraceEvent().compute, ctx.cur_rank, dst + offs, pid, 0, payload=payload + pid)
    h = ctx.tracing.record_event_start(TraceEvent().put, target, dst + offs, pid, 1, mask=mask, payload=payload)
    ctx.put(src + offs, dst + offs, target, mask=mask)
    ctx.tracing.record_event_end(h)


def params(world_size):
    return S.masked_block(world_size)


def setup(rank, p):
    setup_masked(rank, p, "dst", source=True)


def launch(kernel, rank, p):
    b = rank.buffers
    launch_blocks(kernel, rank, p, b["src"], b["dst"], b["bits"], p["n"], peer(rank, p), p["payload"])


def model(p, world_size):
    block, dtype = p["BLOCK"], p["dtype"]
    events = {}
    for r in range(world_size):
        target = (r + p["offset"]) % world_size
        events[r] = []
        for pid in range(cdiv(p["n"], block)):
            lanes = program_lanes(p, r, pid)
            events[r] += [
                block_event("compute", "unfinished", pid=pid, rank=r, target=r, buffer="dst", heap_rank=r,
                            lanes=list(range(pid * block, (pid + 1) * block)), dtype=dtype, payload=p["payload"] + pid),
                block_event("put", "range", pid=pid, pid_n=1, rank=r, target=target, buffer="dst", heap_rank=r,
                            lanes=lanes, dtype=dtype, payload=p["payload"]),
                *call_events(p, "put", rank=r, pid=pid, target=target, buffer="dst", heap_rank=r, lanes=lanes),
            ]
    return Model(events, transfer_memory(p, world_size, lambda r: r, lambda r: (r + p["offset"]) % world_size))


SCENARIO = Scenario(
    name="unfinished_ranges",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
