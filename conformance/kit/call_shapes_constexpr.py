"""The call-shape constants (``conformance.kit.call_shapes``) as ``tl.constexpr``, for the kernels of the family.

Derived, nothing defined: a kernel reads ``K.B1`` (a constexpr module attribute) where the host reads
``call_shapes.B1`` (an int), as ``iris.context_layout_constexpr`` does for the context layout.
"""

import hashlib
from pathlib import Path

import triton.language as tl

from conformance.kit import call_shapes as _C

for _name in ("B1", "BM", "BN", "C0", "C1", "C2", "NUM_SITES", "NUM_LAYOUT_SITES", "PLAN_FIELDS", "PLAN_TARGET",
              "PLAN_FLAG", "SCALAR", "CONTIG", "STRIDED", "REVERSED", "GATHERED", "ROW", "COL", "TILE", "TILE_T",
              "CUBE", "NONE", "FLAG", "BLOCK", "OFF", "ROWS", "COLS", "INSTANT", "RANGE", "NESTED",
              "SPANNED"):
    globals()[_name] = tl.constexpr(getattr(_C, _name))

# Triton's compile cache keys a kernel on the jit sources it calls and the constexprs it reads by name, not on
# module attributes nor on the tables the constexpr functions of call_shapes read: the device helpers read this
# key by name, so editing call_shapes.py or this file recompiles them.
SOURCE_KEY = tl.constexpr(hashlib.sha256(b"".join(
    (Path(__file__).parent / f).read_bytes() for f in ("call_shapes.py", "call_shapes_constexpr.py"))).hexdigest())
