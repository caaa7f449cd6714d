"""The Gluon kernel takes a parameter the Triton kernel does not (``n``)."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from tests.conformance.faulty._base import scenario


@gluon.jit
def gluon_kernel(ctx_t, out, n, BLOCK: gl.constexpr):
    gl.store(out, n)


SCENARIO = scenario("mismatched_params", gluon_kernel=gluon_kernel)
