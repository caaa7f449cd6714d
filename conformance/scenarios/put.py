"""Each rank puts a masked local block into rank (r + offset) % R through ctx.put, in a `put` range.

Model, per rank r writing to t = (r + offset) % R, program p over lanes L(p) = {j in block p: j < n, bits_r[j]}:
    event  put range: pid p, target t, address = dst[min L(p)] on r (the local to_ptr), size |L(p)| x bytes,
           payload = payload + p
    memory rank q: dst[j] = src_s[j] for j in L of s = (q - offset) % R, 0 elsewhere
           src_q[j] = j + 1 + 512 q on every rank q (unchanged)
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.helpers import launch_blocks, peer, per_program_events, setup_masked, transfer_memory
from conformance.kit.scenario import Scenario
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "target", "payload"])
def triton_kernel(ctx_t, src, dst, bits, n, target, payload, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().put, target, dst + offs, pid, 0, mask=mask,
                                       payload=payload + pid)
    ctx.put(src + offs, dst + offs, target, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "target", "payload"])
def gluon_kernel(ctx_t, src, dst, bits, n, target, payload, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().put, target, dst + offs, pid, 0, mask=mask,
                                       payload=payload + pid)
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
    def target(r):
        return (r + p["offset"]) % world_size

    events = {r: per_program_events(p, r, "put", "range", target=target(r), buffer="dst",
                                    payload=lambda pid: p["payload"] + pid) for r in range(world_size)}
    return Model(events, transfer_memory(p, world_size, lambda r: r, target))


SCENARIO = Scenario(
    name="put",
    description=__doc__.splitlines()[0],
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
