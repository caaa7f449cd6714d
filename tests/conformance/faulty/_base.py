"""A correct one-block store scenario that the faulty modules copy and break in one place each."""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit.helpers import block_event
from conformance.kit.scenario import Scenario
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size

BLOCK = 32


@triton.jit
def triton_kernel(ctx_t, out, rank: tl.constexpr, world: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=True)
    offs = tl.arange(0, BLOCK)
    h = ctx.tracing.record_event_start(TraceEvent().store, rank, out + offs, 0, 0)
    ctx.store(out + offs, offs + 1, rank)
    ctx.tracing.record_event_end(h)


@gluon.jit
def gluon_kernel(ctx_t, out, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    offs = gl.arange(0, BLOCK, layout=blocked_1d(warp_size(), gl.num_warps()))
    h = ctx.tracing.record_event_start(TraceEvent().store, ctx.cur_rank, out + offs, 0, 0)
    ctx.store(out + offs, offs + 1, ctx.cur_rank)
    ctx.tracing.record_event_end(h)


def params(world_size):
    return st.just({"BLOCK": BLOCK})


def setup(rank, p):
    rank.buffer("out", p["BLOCK"], "int32")


def launch(kernel, rank, p):
    kernel[(1,)](rank.ctx, rank.buffers["out"], **rank.world_constexprs, BLOCK=p["BLOCK"])


def model(p, world_size):
    lanes = list(range(p["BLOCK"]))
    events = {r: [block_event("store", "range", pid=0, rank=r, target=r, buffer="out", heap_rank=r, lanes=lanes,
                              dtype="int32")] for r in range(world_size)}
    return Model(events, {r: {"out": [j + 1 for j in lanes]} for r in range(world_size)})


def scenario(name: str, **changes) -> Scenario:
    """This scenario under ``name`` with some members replaced."""
    members = dict(name=name, description=f"faulty on purpose: {name}", triton_kernel=triton_kernel,
                   gluon_kernel=gluon_kernel, params=params, setup=setup, launch=launch, model=model)
    return Scenario(**(members | changes))
