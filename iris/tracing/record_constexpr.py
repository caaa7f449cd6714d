"""Compile-time values of a trace record that are not language: shared by both tracing implementations.

``DeviceTracing`` (Triton, ``iris/device/tracing.py``) and ``GluonDeviceTracing`` (Gluon,
``iris/experimental/tracing.py``) each write their own claim, guard, reductions and stores; what they
compute from is defined here once: the bytes per element of a pointer block, the no-address sentinel and the
bound on a program's threads.
"""

import triton
import triton.language as tl

# Identity of the min-reduction over masked-off lanes; a block whose minimum is still this had no active lane.
NO_ADDRESS = tl.constexpr(0x7FFFFFFFFFFFFFFF)

# Threads a program has at most (1024 on every backend: 32 warps of 32, 16 waves of 64). A block of this many
# elements has one owner per element in any program, which the Triton tracing's chunk claim relies on.
MAX_THREADS = tl.constexpr(1024)


@triton.constexpr_function
def element_bytes(pointer_dtype):
    """Bytes per element pointed to by a pointer (block) of ``pointer_dtype``."""
    return pointer_dtype.element_ty.primitive_bitwidth // 8


@triton.constexpr_function
def bits_type(dtype):
    """The signed integer type as wide as ``dtype`` (its bits reinterpreted; 1-bit values widen to int8)."""
    return tl.dtype(f"int{max(8, dtype.primitive_bitwidth)}")
