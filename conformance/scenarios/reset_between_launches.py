"""Launch, ``shmem.tracing.reset()``, launch again: only the second launch's events remain, numbered from 0.

Model, per rank r writing to t = (r + offset) % R; launch k (1, 2) covers n_k elements with payload P_k:
    events  second launch only, program p of cdiv(n2, BLOCK): store range, target t, lanes {j in block p : j < n2}
            of buf on r, payload P2 + p; attempted = that count (the reset zeroed the counter, so the kept
            rows are the second launch's slots 0 .. k-1)
    memory rank q: buf[j] = j + P2 for j < n2, j + P1 for n2 <= j < n1, 0 elsewhere (one writer per buffer)
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.helpers import active_lanes, block_event, cast, cdiv
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
    h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, mask=mask,
                                       payload=payload + pid)
    ctx.store(buf + offs, (offs + payload).to(buf.dtype.element_ty), target, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "target", "payload"])
def gluon_kernel(ctx_t, buf, n, target, payload, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, mask=mask,
                                       payload=payload + pid)
    ctx.store(buf + offs, (offs + payload).to(buf.dtype.element_ty), target, mask=mask)
    ctx.tracing.record_event_end(h)


@st.composite
def params(draw, world_size):
    return {
        "n1": draw(S.element_count(), label="n1"),
        "n2": draw(S.element_count(), label="n2"),
        "BLOCK": draw(S.block_size(), label="BLOCK"),
        "dtype": draw(S.dtype_name(S.ATOMIC_DTYPES), label="dtype"),
        "offset": draw(S.rank_offset(world_size), label="offset"),
        "payload1": draw(S.payload(), label="payload1"),
        "payload2": draw(S.payload(), label="payload2"),
    }


def _length(p):
    return cdiv(max(p["n1"], p["n2"]), p["BLOCK"]) * p["BLOCK"]


def setup(rank, p):
    rank.buffer("buf", _length(p), p["dtype"])


def launch(kernel, rank, p):
    target = (rank.rank + p["offset"]) % rank.world_size

    def run(n, payload):
        kernel[(cdiv(n, p["BLOCK"]),)](rank.ctx, rank.buffers["buf"], n, target, payload,
                                       **rank.world_constexprs, BLOCK=p["BLOCK"])

    run(p["n1"], p["payload1"])
    rank.shmem.tracing.reset()  # waits for the first launch, then zeroes the counter and the records
    run(p["n2"], p["payload2"])


def model(p, world_size):
    n1, n2, block = p["n1"], p["n2"], p["BLOCK"]
    events, memory = {}, {}
    for r in range(world_size):
        target = (r + p["offset"]) % world_size
        events[r] = [
            block_event("store", "range", pid=pid, rank=r, target=target, buffer="buf", heap_rank=r,
                        lanes=active_lanes(pid * block, block, n2), dtype=p["dtype"], payload=p["payload2"] + pid)
            for pid in range(cdiv(n2, block))
        ]
        values = [j + p["payload2"] if j < n2 else j + p["payload1"] if j < n1 else 0 for j in range(_length(p))]
        memory[r] = {"buf": cast(values, p["dtype"])}
    return Model(events, memory)


SCENARIO = Scenario(
    name="reset_between_launches",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
