"""The Gluon kernel cannot be compiled (a static assertion fails); the Triton kernel is fine."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from tests.conformance.faulty._base import scenario


@gluon.jit
def gluon_kernel(ctx_t, out, BLOCK: gl.constexpr):
    gl.static_assert(BLOCK < 0, "BLOCK must be negative (a kernel that never compiles)")


SCENARIO = scenario("gluon_does_not_compile", gluon_kernel=gluon_kernel)
