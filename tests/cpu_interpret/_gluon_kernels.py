"""Gluon kernels for test_gluon_interpret.py; import only after ``interpreter_gluon.install()``.

Deliberately written like real Gluon code: no ``triton.language`` import, layouts everywhere.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonJITFunction
from triton.language.core import _aggregate


@gluon.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, SIZE_PER_THREAD: gl.constexpr):
    num_warps: gl.constexpr = gl.num_warps()
    layout: gl.constexpr = gl.BlockedLayout([SIZE_PER_THREAD], [32], [num_warps], [0])
    BLOCK: gl.constexpr = SIZE_PER_THREAD * 32 * num_warps
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    x = gl.load(x_ptr + offs, mask=mask, other=0.0, cache_modifier=".cg")
    y = gl.load(y_ptr + offs, mask=mask, other=0.0)
    gl.store(out_ptr + offs, x + y, mask=mask, cache_modifier=".wb")


@gluon.jit
def tile_affine(x_ptr, out_ptr, M, N, stride_m, BM: "gl.constexpr", BN: "gl.constexpr"):
    # String annotations on purpose: what modules with `from __future__ import annotations` produce.
    blocked: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [gl.num_warps(), 1], [1, 0])
    rows = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, blocked))
    cols = gl.program_id(1) * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, blocked))
    r2 = gl.expand_dims(rows, 1)
    c2 = gl.expand_dims(cols, 0)
    r2, c2 = gl.broadcast(r2, c2)
    mask = (r2 < M) & (c2 < N)
    x = gl.load(x_ptr + r2 * stride_m + c2, mask=mask, other=0)
    bias = gl.full([BM, BN], 7, gl.int32, layout=blocked) + gl.zeros_like(x)
    y = gl.convert_layout(x * 3 + bias, gl.BlockedLayout([1, 1], [32, 1], [gl.num_warps(), 1], [0, 1]))
    y = gl.set_auto_layout(y, blocked)
    y = gl.where(mask, y, gl.zeros([BM, BN], gl.int32, layout=x.type.layout))
    gl.store(out_ptr + r2 * N + c2, y, mask=mask)


@gluon.jit
def _abs_max_combine(a, b):
    return gl.maximum(gl.abs(a), gl.abs(b))


@gluon.jit
def _add_combine(a, b):
    return a + b


@gluon.jit
def reductions(x_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [4, 8], [gl.num_warps(), 1], [1, 0])
    rows = gl.arange(0, M, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, N, layout=gl.SliceLayout(0, layout))
    x = gl.load(x_ptr + gl.expand_dims(rows, 1) * N + gl.expand_dims(cols, 0))
    cols_out = gl.arange(0, N, layout=gl.SliceLayout(0, layout))
    rows_out = gl.arange(0, M, layout=gl.SliceLayout(1, layout))
    gl.store(out_ptr + cols_out, gl.sum(x, axis=0))  # [0, N)
    gl.store(out_ptr + N + rows_out, gl.min(x, axis=1))  # [N, N+M)
    gl.store(out_ptr + N + M + rows_out, gl.max(x, 1))  # [N+M, N+2M)
    gl.store(out_ptr + N + 2 * M, gl.sum(x))
    gl.store(out_ptr + N + 2 * M + 1, gl.min(x))
    gl.store(out_ptr + N + 2 * M + 2, gl.max(x))
    gl.store(out_ptr + N + 2 * M + 3, gl.reduce(x, None, _abs_max_combine))
    gl.store(out_ptr + N + 2 * M + 4 + cols_out, gl.reduce(x, 0, _abs_max_combine))
    scanned = gl.associative_scan(x, 1, _add_combine)
    gl.store(out_ptr + 2 * N + 2 * M + 4 + cols_out, gl.sum(scanned, axis=0))


@gluon.jit
def atomics(counter_ptr, flag_ptr, xchg_ptr, minmax_ptr, bits_ptr, old_ptr, BLOCK: gl.constexpr):
    pid = gl.program_id(0)
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, BLOCK, layout=layout)
    gl.atomic_add(counter_ptr + offs * 0, 1, mask=offs < 3)  # 3 increments per program, one counter
    gl.atomic_add(counter_ptr + 1, 1, sem="relaxed", scope="gpu")
    old = gl.atomic_cas(flag_ptr, 0, pid + 1, sem="acq_rel", scope="gpu")
    gl.store(old_ptr + pid, old)
    gl.atomic_xchg(xchg_ptr, pid, sem="release", scope="sys")
    gl.atomic_min(minmax_ptr, pid + 10, sem="acquire", scope="cta")
    gl.atomic_max(minmax_ptr + 1, pid + 10)
    bit = gl.to_tensor(1) << pid
    gl.atomic_or(bits_ptr, bit)
    gl.atomic_xor(bits_ptr + 1, bit)
    gl.atomic_and(bits_ptr + 2, ~bit)


@gluon.jit
def _scale(x, factor: gl.constexpr = 2, offset=0):
    return x * factor + offset


@gluon.jit
def device_calls(x_ptr, out_ptr, BLOCK: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=gl.BlockedLayout([1], [32], [gl.num_warps()], [0]))
    x = gl.load(x_ptr + offs)
    gl.store(out_ptr + offs, _scale(x))
    gl.store(out_ptr + BLOCK + offs, _scale(x, 3, offset=1))


@gluon.jit
def control_flow(out_ptr, n, MODE: gl.constexpr, STEPS: gl.constexpr = 4):
    pid = gl.program_id(0)
    acc = gl.to_tensor(0)
    for i in range(n):  # runtime trip count
        acc += i
    for j in range(0, n, 2):
        acc += 100 + j * 0
    for k in gl.static_range(STEPS):
        acc += k * 1000
    if pid % 2 == 0:  # runtime if on a scalar tensor
        acc += 10000
    else:
        acc -= 10000
    if MODE == 1:  # constexpr if
        acc = acc * 2
    gl.store(out_ptr + pid, acc)
    gl.store(out_ptr + gl.num_programs(0) + pid, gl.program_id(1) * 10 + gl.num_programs(1))


@gluon.jit
def casts(x_ptr, out_ptr, n):
    addr = x_ptr.to(gl.uint64)  # pointer -> int
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, 32, layout=layout)
    mask = offs < n
    ptrs = (addr + offs.to(gl.uint64) * 4).to(gl.pointer_type(gl.int32))  # int -> pointer
    x = gl.load(ptrs, mask=mask)
    y = gl.cast(x, gl.float32) * 0.5
    gl.store(out_ptr + offs, y.to(gl.int32, bitcast=False) + gl.cast(x, gl.int16).to(gl.int32), mask=mask)


@_aggregate
class Affine:
    base: gl.tensor
    scale: gl.constexpr

    def __init__(self, base, scale):
        self.base = base
        self.scale = gl.constexpr(scale)

    @gluon.jit
    def apply(self, x):
        return x * self.scale + gl.load(self.base)

    @gluon.jit
    def apply_twice(self, x):
        return self.apply(self.apply(x))


@gluon.jit
def aggregate_method(base_ptr, x_ptr, out_ptr, BLOCK: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=gl.BlockedLayout([1], [32], [gl.num_warps()], [0]))
    f = Affine(base_ptr, 3)
    x = gl.load(x_ptr + offs)
    gl.store(out_ptr + offs, f.apply(x))
    gl.store(out_ptr + BLOCK + offs, f.apply_twice(x))


@gluon.jit
def uses_inline_asm(x_ptr):
    x = gl.load(x_ptr)
    y = gl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=gl.int32, is_pure=True, pack=1)
    gl.store(x_ptr, y)


@gluon.jit
def _partition(x_ptr):
    gl.store(x_ptr, 1)


@gluon.jit
def uses_warp_specialize(x_ptr):
    gl.warp_specialize([(_partition, (x_ptr,)), (_partition, (x_ptr,))], [1], [24])


@gluon.jit
def uses_shared_memory(x_ptr):
    """Stores 3 j + 1 to a shared allocation, loads it back and writes it to ``x_ptr[j]``, j < 32."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    smem = gl.allocate_shared_memory(gl.int32, [32], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    j = gl.arange(0, 32, layout=layout)
    smem.store(3 * j + 1)
    gl.thread_barrier()
    gl.store(x_ptr + j, smem.load(layout))


@gluon.jit
def report_launch(out_ptr):
    gl.thread_barrier()
    gl.store(out_ptr, gl.num_warps())
    gl.store(out_ptr + 1, gl.num_ctas())


def _offset_add(self, x):
    return x + gl.load(self.base)


@_aggregate
class Offset:
    base: gl.tensor

    def __init__(self, base):
        self.base = base

    add = GluonJITFunction(_offset_add)  # as if decorated before install()


def _fill_impl(out_ptr, base_ptr, value, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, BLOCK, layout=layout)
    gl.store(out_ptr + offs, Offset(base_ptr).add(gl.zeros([BLOCK], gl.int32, layout) + value))


# As if decorated before install(): plain GluonJITFunctions still launch, call and bind under the interpreter.
fill_decorated_before_install = GluonJITFunction(_fill_impl)


# ---- native Gluon tracing (iris.experimental.tracing) on the shim ----------------------------------------

from iris.experimental.tracing import GluonDeviceTracing  # noqa: E402  (after install(), like the kernels above)


@gluon.jit
def native_tracing(ctx_t, buf, bits, BLOCK: gl.constexpr):
    """Per program: a masked range over its block (event 3, target 1, payload pid + 10), then an instant on a
    scalar pointer (event 4, target 0, no payload)."""
    tracing = GluonDeviceTracing.initialize(ctx_t, True)
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = gl.load(bits + offs) != 0
    h = tracing.record_event_start(3, 1, buf + offs, pid, 7, mask=mask, payload=pid + 10)
    tracing.record_event_end(h)
    tracing.record_event(4, 0, buf + pid, pid, 8)
