"""The Triton kernel of the last rank stores its block far outside every allocation (for the memory checker)."""

import triton
import triton.language as tl

from tests.conformance.faulty._base import scenario

FAR = tl.constexpr(1 << 40)  # elements past the buffer: no allocation lies there


@triton.jit
def triton_kernel(ctx_t, out, rank: tl.constexpr, world: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if rank == world - 1:
        tl.store(out + offs + FAR, offs + 1)
    else:
        tl.store(out + offs, offs + 1)


SCENARIO = scenario("out_of_bounds", triton_kernel=triton_kernel)
