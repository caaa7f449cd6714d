"""The Gluon kernel stores ``offs + 2`` where the model (and Triton) store ``offs + 1``: gluon vs model fails."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from iris import TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size
from tests.conformance.faulty._base import scenario


@gluon.jit
def gluon_kernel(ctx_t, out, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    offs = gl.arange(0, BLOCK, layout=blocked_1d(warp_size(), gl.num_warps()))
    h = ctx.tracing.record_event_start(TraceEvent().store, ctx.cur_rank, out + offs, 0, 0)
    ctx.store(out + offs, offs + 2, ctx.cur_rank)
    ctx.tracing.record_event_end(h)


SCENARIO = scenario("diverging", gluon_kernel=gluon_kernel)
