"""Layouts for Gluon kernels derived from the target: warp size 32 (NVIDIA) or 64 (AMD CDNA).

``warp_size()`` reads the compile target; under the interpreter layouts are erased and it reads 32.
"""

import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from iris._builtins import builtin


@builtin
def warp_size(_semantic=None):
    """Threads per warp of the kernel's target, as a constexpr."""
    if _semantic is None:
        return tl.constexpr(32)
    return tl.constexpr(_semantic.builder.options.warp_size)


@gluon.constexpr_function
def blocked_1d(warp_size, num_warps):
    """One element per thread, threads then warps along the only dimension."""
    return gl.BlockedLayout([1], [warp_size], [num_warps], [0])


@gluon.constexpr_function
def blocked_2d(warp_size, num_warps):
    """Rows across warps, columns across the threads of a warp."""
    return gl.BlockedLayout([1, 1], [1, warp_size], [num_warps, 1], [1, 0])
