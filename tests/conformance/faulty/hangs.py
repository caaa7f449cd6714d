"""The Triton kernel of the last rank spins on a flag nobody sets: a kernel that never finishes."""

import triton
import triton.language as tl

from tests.conformance.faulty._base import scenario


@triton.jit
def triton_kernel(ctx_t, out, rank: tl.constexpr, world: tl.constexpr, BLOCK: tl.constexpr):
    if rank == world - 1:
        while tl.atomic_add(out, 0, sem="relaxed") == 0:
            pass


SCENARIO = scenario("hangs", triton_kernel=triton_kernel)
