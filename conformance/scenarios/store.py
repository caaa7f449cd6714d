"""A masked ctx.store of a local block to rank (r + offset) % R, then a `store` instant per program.

Model, per rank r writing to t = (r + offset) % R, program p over lanes L(p) = {j in block p: j < n, bits_r[j]}:
    event  store instant (recorded after the store): pid p, target t, address = dst[min L(p)] on r (local pointer),
           size |L(p)| x bytes, payload = n; before it, with TRACE_OPS (drawn), the store's own range
           (auto_ops.call_events): the same target and lanes, payload 0
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
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "target"])
def triton_kernel(ctx_t, src, dst, bits, n, target, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    ctx.store(dst + offs, tl.load(src + offs, mask=mask), target, mask=mask)
    ctx.tracing.record_event(TraceEvent().store, target, dst + offs, pid, 0, mask=mask, payload=n)


@gluon.jit(do_not_specialize=["n", "target"])
def gluon_kernel(ctx_t, src, dst, bits, n, target, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    ctx.store(dst + offs, gl.load(src + offs, mask=mask), target, mask=mask)
    ctx.tracing.record_event(TraceEvent().store, target, dst + offs, pid, 0, mask=mask, payload=n)


def params(world_size):
    return S.masked_block(world_size, payload=False)


def setup(rank, p):
    setup_masked(rank, p, "dst", source=True)


def launch(kernel, rank, p):
    b = rank.buffers
    launch_blocks(kernel, rank, p, b["src"], b["dst"], b["bits"], p["n"], peer(rank, p))


def model(p, world_size):
    def target(r):
        return (r + p["offset"]) % world_size

    events = {r: per_program_events(p, r, "store", "instant", target=target(r), buffer="dst", payload=p["n"])
              for r in range(world_size)}
    return Model(events, transfer_memory(p, world_size, lambda r: r, target))


SCENARIO = Scenario(
    name="store",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
