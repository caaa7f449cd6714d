"""Each rank loads a masked block from rank (r + offset) % R via ctx.load (off lanes read `other`), stores it locally.

Model, per rank r reading from s = (r + offset) % R, program p over lanes L(p) = {j in block p: j < n, bits_r[j]}:
    event  load range: pid p, target s, address = src[min L(p)] on r (the local pointer), size |L(p)| x bytes,
           payload = payload + p; then, with TRACE_OPS (drawn), the load's own range (auto_ops.call_events):
           the same but payload 0
    memory rank r: dst[j] = src_s[j] for j in L, other for the other j < n, 0 for j >= n
           src_q[j] = j + 1 + 512 q on every rank q (unchanged)
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.helpers import launch_blocks, peer, per_program_events, setup_masked, transfer_memory
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "source", "other", "payload"])
def triton_kernel(ctx_t, src, dst, bits, n, source, other, payload, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    mask = inside & (tl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().load, source, src + offs, pid, 0, mask=mask,
                                       payload=payload + pid)
    data = ctx.load(src + offs, source, mask=mask, other=other)
    ctx.tracing.record_event_end(h)
    tl.store(dst + offs, data, mask=inside)


@gluon.jit(do_not_specialize=["n", "source", "other", "payload"])
def gluon_kernel(ctx_t, src, dst, bits, n, source, other, payload, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    inside = offs < n
    mask = inside & (gl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().load, source, src + offs, pid, 0, mask=mask,
                                       payload=payload + pid)
    data = ctx.load(src + offs, source, mask=mask, other=other)
    ctx.tracing.record_event_end(h)
    gl.store(dst + offs, data, mask=inside)


def params(world_size):
    return S.masked_block(world_size, other=S.other_value())


def setup(rank, p):
    setup_masked(rank, p, "dst", source=True)


def launch(kernel, rank, p):
    b = rank.buffers
    launch_blocks(kernel, rank, p, b["src"], b["dst"], b["bits"], p["n"], peer(rank, p), p["other"], p["payload"])


def model(p, world_size):
    def source(r):
        return (r + p["offset"]) % world_size

    events = {r: per_program_events(p, r, "load", "range", target=source(r), buffer="src",
                                    payload=lambda pid: p["payload"] + pid) for r in range(world_size)}
    return Model(events, transfer_memory(p, world_size, source, lambda r: r, other=p["other"]))


SCENARIO = Scenario(
    name="load",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
