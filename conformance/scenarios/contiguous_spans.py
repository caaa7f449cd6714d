"""A store range recorded twice per program: once reducing its masked pointer block, once given the block's bounds.

Each program covers BLOCK elements from pid BLOCK under the mask ``offs < n``, and EXTRA programs (drawn) lie past n,
their blocks empty. The first range reduces ``buf + offs`` under the mask; the second, inside it, is given
``ctx.tracing.contiguous_span(buf, pid BLOCK, clamp(n - pid BLOCK, 0, BLOCK))``: no reduction, the same fields.
Model, per rank r storing to t = (r + offset) % R, program p over lanes L(p) = {j in [p BLOCK, (p + 1) BLOCK): j < n}:
    events  store range (reduced), then store range (given the span): pid p, target t, address buf[min L(p)] on r
            (none where L(p) is empty), size |L(p)| x bytes, payloads 0 and 1
    memory  rank q: buf[j] = j + 1 + 512 s for j < n, where s = (q - offset) % R; 0 elsewhere
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.helpers import (
    SOURCE_STRIDE,
    active_lanes,
    block_event,
    cast,
    cdiv,
    largest_source_value,
    peer,
    source_values,
)
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size

STRIDE = tl.constexpr(SOURCE_STRIDE)


@triton.jit(do_not_specialize=["n", "target"])
def triton_kernel(ctx_t, buf, n, target, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)
    pid = tl.program_id(0)
    first = pid * BLOCK
    offs = first + tl.arange(0, BLOCK)
    mask = offs < n
    reduced = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, mask=mask, payload=0)
    span = ctx.tracing.contiguous_span(buf, first, tl.minimum(tl.maximum(n - first, 0), BLOCK))
    given = ctx.tracing.record_event_start(TraceEvent().store, target, span, pid, 0, payload=1)
    ctx.store(buf + offs, (offs + 1 + STRIDE * ctx.rank).to(buf.dtype.element_ty), target, mask=mask)
    ctx.tracing.record_event_end(given)
    ctx.tracing.record_event_end(reduced)


@gluon.jit(do_not_specialize=["n", "target"])
def gluon_kernel(ctx_t, buf, n, target, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    first = pid * BLOCK
    offs = first + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    reduced = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, mask=mask, payload=0)
    span = ctx.tracing.contiguous_span(buf, first, gl.minimum(gl.maximum(n - first, 0), BLOCK))
    given = ctx.tracing.record_event_start(TraceEvent().store, target, span, pid, 0, payload=1)
    ctx.store(buf + offs, (offs + 1 + STRIDE * ctx.cur_rank).to(buf.dtype.element_ty), target, mask=mask)
    ctx.tracing.record_event_end(given)
    ctx.tracing.record_event_end(reduced)


def _programs(p: dict) -> int:
    return cdiv(p["n"], p["BLOCK"]) + p["EXTRA"]


@st.composite
def params(draw, world_size):
    p = {"n": draw(S.element_count(), label="n"), "BLOCK": draw(S.block_size(), label="BLOCK"),
         "EXTRA": draw(st.integers(0, 2), label="EXTRA")}
    length = _programs(p) * p["BLOCK"]
    p["dtype"] = draw(S.dtype_name(S.exact_dtypes(largest_source_value(world_size, length))), label="dtype")
    p["offset"] = draw(S.rank_offset(world_size), label="offset")
    return p


def setup(rank, p):
    rank.buffer("buf", _programs(p) * p["BLOCK"], p["dtype"])


def launch(kernel, rank, p):
    kernel[(_programs(p),)](rank.ctx, rank.buffers["buf"], p["n"], peer(rank, p), **rank.world_constexprs,
                            BLOCK=p["BLOCK"])


def model(p, world_size):
    n, block, dtype = p["n"], p["BLOCK"], p["dtype"]
    length = _programs(p) * block
    events, memory = {}, {}
    for r in range(world_size):
        t, s = (r + p["offset"]) % world_size, (r - p["offset"]) % world_size
        events[r] = [block_event("store", "range", pid=pid, rank=r, target=t, buffer="buf", heap_rank=r,
                                 lanes=active_lanes(pid * block, block, n), dtype=dtype, payload=payload)
                     for pid in range(_programs(p)) for payload in (0, 1)]
        memory[r] = {"buf": cast([v if j < n else 0 for j, v in enumerate(source_values(s, length))], dtype)}
    return Model(events, memory)


SCENARIO = Scenario(
    name="contiguous_spans",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
