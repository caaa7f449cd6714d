"""``ctx.tracing.span``: a record given a span and a mask is refused when the kernel compiles, in both APIs, with the
reason (a span carries its mask). What a span records is the conformance suite's (``all_scatter`` draws ``SPAN``,
``call_shapes`` has the ``spanned`` record kind); what it saves, ``tests/cpu_compile/test_tile_resources.py``
(``scatter_span``)."""

import pytest
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from benchmarks.cross_compile import compile_jit
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size

SIGNATURE = {"ctx_t": "*i64", "buf": "*i32", "MASKED": "constexpr"}


@triton.jit
def triton_span_record(ctx_t, buf, MASKED: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)
    offs = tl.arange(0, 64)
    span = ctx.tracing.span(buf + offs, mask=offs < 3)
    if MASKED:
        ctx.tracing.record_event(TraceEvent().put, 0, span, 0, 0, mask=offs < 3)
    else:
        ctx.tracing.record_event(TraceEvent().put, 0, span, 0, 0)


@gluon.jit
def gluon_span_record(ctx_t, buf, MASKED: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    offs = gl.arange(0, 64, layout=blocked_1d(warp_size(), gl.num_warps()))
    span = ctx.tracing.span(buf + offs, mask=offs < 3)
    if MASKED:
        ctx.tracing.record_event(TraceEvent().put, 0, span, 0, 0, mask=offs < 3)
    else:
        ctx.tracing.record_event(TraceEvent().put, 0, span, 0, 0)


KERNELS = {"triton": triton_span_record, "gluon": gluon_span_record}


def _messages(error: BaseException) -> str:
    """The messages of ``error`` and of every error it was raised from."""
    found = []
    while error is not None:
        found.append(str(error))
        error = error.__cause__ or error.__context__
    return "\n".join(found)


@pytest.mark.parametrize("api", KERNELS)
def test_a_record_given_a_span_and_a_mask_is_refused_with_the_reason(api):
    with pytest.raises(triton.CompilationError) as caught:
        compile_jit(api, KERNELS[api], "sm_90", {"MASKED": True}, SIGNATURE)
    assert "a record given a span takes no mask: pass it to ctx.tracing.span" in _messages(caught.value)


@pytest.mark.parametrize("target", ["sm_90", "gfx942"])
@pytest.mark.parametrize("api", KERNELS)
def test_a_record_given_a_span_reduces_nothing(api, target):
    """The span's two reductions (lowest address, active count) are the kernel's only ones: the record adds none."""
    compiled = compile_jit(api, KERNELS[api], target, {"MASKED": False}, SIGNATURE)
    assert compiled.asm["ttgir"].count('"tt.reduce"') == 2, compiled.asm["ttgir"]
