"""One op with its options as constexprs, in both APIs (same parameters), for the machine-code checks of
``test_op_options_asm.py``: ``OP`` on one block of ``BLOCK`` int32 elements of rank 1's heap, with the cache
modifiers ``LOAD_CM``/``STORE_CM``, ``VOLATILE`` (load) and the pointer hint ``HINT`` passed by keyword as upstream
code does.

The Gluon layout gives each thread 4 contiguous elements, so a hinted access can become one 128-bit access,
as Triton's own layout choice allows for the Triton kernel.
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from iris import DeviceContext
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import warp_size

SIGNATURE = {
    "ctx_t": "*i64", "src": "*i32", "dst": "*i32", "n": "i32", "other": "i32",
    "rank": "constexpr", "world": "constexpr", "OP": "constexpr", "LOAD_CM": "constexpr", "STORE_CM": "constexpr",
    "VOLATILE": "constexpr", "HINT": "constexpr", "BLOCK": "constexpr",
}  # fmt: skip


@triton.jit
def triton_options_kernel(ctx_t, src, dst, n, other, rank: tl.constexpr, world: tl.constexpr, OP: tl.constexpr,
                          LOAD_CM: tl.constexpr, STORE_CM: tl.constexpr, VOLATILE: tl.constexpr, HINT: tl.constexpr,
                          BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, rank, world)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if OP == "load":
        data = ctx.load(src + offs, 1, mask=mask, other=other, cache_modifier=LOAD_CM, volatile=VOLATILE, hint=HINT)
        tl.store(dst + offs, data, mask=mask)
    elif OP == "store":
        ctx.store(dst + offs, tl.load(src + offs, mask=mask), 1, mask=mask, cache_modifier=STORE_CM, hint=HINT)
    elif OP == "get":
        ctx.get(src + offs, dst + offs, 1, mask=mask, other=other, load_cache_modifier=LOAD_CM,
                store_cache_modifier=STORE_CM, hint=HINT)
    elif OP == "put":
        ctx.put(src + offs, dst + offs, 1, mask=mask, other=other, load_cache_modifier=LOAD_CM,
                store_cache_modifier=STORE_CM, hint=HINT)
    elif OP == "copy":
        ctx.copy(src + offs, dst + offs, 1, 0, mask=mask, other=other, load_cache_modifier=LOAD_CM,
                 store_cache_modifier=STORE_CM, hint=HINT)
    else:
        tl.static_assert(OP == "atomic_add", "unknown OP")
        tl.store(src + offs, ctx.atomic_add(dst + offs, offs, 1, mask=mask, sem="relaxed", hint=HINT), mask=mask)


@gluon.jit
def gluon_options_kernel(ctx_t, src, dst, n, other, OP: gl.constexpr,
                         LOAD_CM: gl.constexpr, STORE_CM: gl.constexpr, VOLATILE: gl.constexpr, HINT: gl.constexpr,
                         BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t)
    layout: gl.constexpr = gl.BlockedLayout([4], [warp_size()], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    if OP == "load":
        data = ctx.load(src + offs, 1, mask=mask, other=other, cache_modifier=LOAD_CM, volatile=VOLATILE, hint=HINT)
        gl.store(dst + offs, data, mask=mask)
    elif OP == "store":
        ctx.store(dst + offs, gl.load(src + offs, mask=mask), 1, mask=mask, cache_modifier=STORE_CM, hint=HINT)
    elif OP == "get":
        ctx.get(src + offs, dst + offs, 1, mask=mask, other=other, load_cache_modifier=LOAD_CM,
                store_cache_modifier=STORE_CM, hint=HINT)
    elif OP == "put":
        ctx.put(src + offs, dst + offs, 1, mask=mask, other=other, load_cache_modifier=LOAD_CM,
                store_cache_modifier=STORE_CM, hint=HINT)
    elif OP == "copy":
        ctx.copy(src + offs, dst + offs, 1, 0, mask=mask, other=other, load_cache_modifier=LOAD_CM,
                 store_cache_modifier=STORE_CM, hint=HINT)
    else:
        gl.static_assert(OP == "atomic_add", "unknown OP")
        gl.store(src + offs, ctx.atomic_add(dst + offs, offs, 1, mask=mask, sem="relaxed", hint=HINT), mask=mask)


TILE_SIGNATURE = {"ctx_t": "*i64", "buf": "*i32", "rank": "constexpr", "world": "constexpr", "HINT": "constexpr",
                  "BM": "constexpr", "BN": "constexpr"}


@triton.jit
def triton_tile_kernel(ctx_t, buf, rank: tl.constexpr, world: tl.constexpr, HINT: tl.constexpr, BM: tl.constexpr,
                       BN: tl.constexpr):
    """Store a ``BM`` x ``BN`` tile (rows of ``BN`` contiguous elements) into rank 1's ``buf`` with ``hint``."""
    ctx = DeviceContext.initialize(ctx_t, rank, world)
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    ctx.store(buf + offs, offs, 1, hint=HINT)


@gluon.jit
def gluon_tile_kernel(ctx_t, buf, HINT: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr):
    """Store a ``BM`` x ``BN`` tile (rows of ``BN`` contiguous elements) into rank 1's ``buf`` with ``hint``."""
    ctx = IrisDeviceCtx.initialize(ctx_t)
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [1, warp_size()], [gl.num_warps(), 1], [1, 0])
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    offs = gl.expand_dims(rows, 1) * BN + gl.expand_dims(cols, 0)
    ctx.store(buf + offs, offs, 1, hint=HINT)


KERNELS = {"triton": triton_options_kernel, "gluon": gluon_options_kernel}
TILE_KERNELS = {"triton": triton_tile_kernel, "gluon": gluon_tile_kernel}
