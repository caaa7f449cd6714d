"""Tracing compiled in but switched off at run time (``shmem.tracing.disable()`` before the launch): nothing recorded.

Model, per rank r writing to t = (r + offset) % R, program p over lanes L(p) = {j in block p : j < n}:
    events  none on any rank (the kernel's store range and its instant are skipped); attempted = 0
    memory rank q: buf[j] = j + 1000 s + 1 where s = (q - offset) % R and j < n; 0 elsewhere
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.helpers import cast, cdiv
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "target", "payload"])
def triton_kernel(ctx_t, buf, n, target, payload, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, mask=mask, payload=payload)
    ctx.store(buf + offs, (offs + 1000 * ctx.rank + 1).to(buf.dtype.element_ty), target, mask=mask)
    ctx.tracing.record_event_end(h)
    ctx.tracing.record_event(TraceEvent().user, target, buf + pid * BLOCK, pid, 0, payload=payload)


@gluon.jit(do_not_specialize=["n", "target", "payload"])
def gluon_kernel(ctx_t, buf, n, target, payload, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, mask=mask, payload=payload)
    ctx.store(buf + offs, (offs + 1000 * ctx.cur_rank + 1).to(buf.dtype.element_ty), target, mask=mask)
    ctx.tracing.record_event_end(h)
    ctx.tracing.record_event(TraceEvent().user, target, buf + pid * BLOCK, pid, 0, payload=payload)


@st.composite
def params(draw, world_size):
    return {
        "n": draw(S.element_count(), label="n"),
        "BLOCK": draw(S.block_size(), label="BLOCK"),
        "dtype": draw(S.dtype_name(S.ATOMIC_DTYPES), label="dtype"),
        "offset": draw(S.rank_offset(world_size), label="offset"),
        "payload": draw(S.payload(), label="payload"),
    }


def setup(rank, p):
    rank.buffer("buf", cdiv(p["n"], p["BLOCK"]) * p["BLOCK"], p["dtype"])


def launch(kernel, rank, p):
    rank.shmem.tracing.disable()  # the context's tracing block becomes zeros; the kernel still has tracing code
    target = (rank.rank + p["offset"]) % rank.world_size
    kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, rank.buffers["buf"], p["n"], target, p["payload"],
                                        **rank.world_constexprs, BLOCK=p["BLOCK"])


def model(p, world_size):
    length = cdiv(p["n"], p["BLOCK"]) * p["BLOCK"]
    memory = {}
    for q in range(world_size):
        s = (q - p["offset"]) % world_size
        memory[q] = {"buf": cast([j + 1000 * s + 1 if j < p["n"] else 0 for j in range(length)], p["dtype"])}
    return Model({r: [] for r in range(world_size)}, memory)


SCENARIO = Scenario(
    name="runtime_off",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
