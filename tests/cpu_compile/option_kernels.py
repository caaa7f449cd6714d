"""One op with its options as constexprs, in both APIs (same parameters), for the machine-code checks of
``test_op_options_asm.py``: ``OP`` on one block of ``BLOCK`` int32 elements of rank 1's heap, with the cache
modifiers ``LOAD_CM``/``STORE_CM`` and the pointer hint ``HINT`` passed by keyword as upstream code does.

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
    "HINT": "constexpr", "BLOCK": "constexpr",
}  # fmt: skip


@triton.jit
def triton_options_kernel(ctx_t, src, dst, n, other, rank: tl.constexpr, world: tl.constexpr, OP: tl.constexpr,
                          LOAD_CM: tl.constexpr, STORE_CM: tl.constexpr, HINT: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, rank, world)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if OP == "load":
        data = ctx.load(src + offs, 1, mask=mask, other=other, cache_modifier=LOAD_CM, hint=HINT)
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
def gluon_options_kernel(ctx_t, src, dst, n, other, rank: gl.constexpr, world: gl.constexpr, OP: gl.constexpr,
                         LOAD_CM: gl.constexpr, STORE_CM: gl.constexpr, HINT: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t)
    layout: gl.constexpr = gl.BlockedLayout([4], [warp_size()], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    if OP == "load":
        data = ctx.load(src + offs, 1, mask=mask, other=other, cache_modifier=LOAD_CM, hint=HINT)
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


KERNELS = {"triton": triton_options_kernel, "gluon": gluon_options_kernel}
