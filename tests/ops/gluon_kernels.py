"""Gluon kernels for the op and tracing tests (twin: triton_kernels.py; same names, parameters and order).

The Triton twins also take ``rank``/``world`` constexprs; these do not: ``IrisDeviceCtx`` reads the rank
and world size from the context at run time, so one compile serves every rank (``op_jobs.world_constexprs``
passes them to the Triton launches only). Tracing goes through ``GluonDeviceTracing``.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.kit import call_shapes as C
from conformance.kit import call_shapes_constexpr as K
from conformance.kit.call_shapes_device import gluon_mask, gluon_offsets
from iris import TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, blocked_2d, warp_size


@gluon.jit
def op_kernel(ctx_t, src, dst, ret, n, peer, peer2, OP: gl.constexpr, BLOCK: gl.constexpr,
              TRACE_OPS: gl.constexpr = False):
    """Apply ``OP`` on blocks of ``BLOCK`` elements; atomics write their old values to ``ret``. ``TRACE_OPS``: the op
    records its own events (auto-tracing); off, the kernel has no tracing code."""
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACE_OPS, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    if OP == "load":
        gl.store(dst + offs, ctx.load(src + offs, peer, mask=mask), mask=mask)
    elif OP == "store":
        ctx.store(dst + offs, gl.load(src + offs, mask=mask), peer, mask=mask)
    elif OP == "get":
        ctx.get(src + offs, dst + offs, peer, mask=mask)
    elif OP == "put":
        ctx.put(src + offs, dst + offs, peer, mask=mask)
    elif OP == "copy":
        ctx.copy(src + offs, dst + offs, peer, peer2, mask=mask)
    else:
        val = gl.load(src + offs, mask=mask)
        if OP == "atomic_add":
            old = ctx.atomic_add(dst + offs, val, peer, mask=mask)
        elif OP == "atomic_sub":
            old = ctx.atomic_sub(dst + offs, val, peer, mask=mask, sem="acq_rel", scope="gpu")
        elif OP == "atomic_xchg":
            old = ctx.atomic_xchg(dst + offs, val, peer, mask=mask)
        elif OP == "atomic_xor":
            old = ctx.atomic_xor(dst + offs, val, peer, mask=mask, sem="relaxed")
        elif OP == "atomic_and":
            old = ctx.atomic_and(dst + offs, val, peer, mask=mask)
        elif OP == "atomic_or":
            old = ctx.atomic_or(dst + offs, val, peer, mask=mask, scope="sys")
        elif OP == "atomic_min":
            old = ctx.atomic_min(dst + offs, val, peer, mask=mask)
        elif OP == "atomic_max":
            old = ctx.atomic_max(dst + offs, val, peer, mask=mask)
        else:
            gl.static_assert(OP == "atomic_cas", "unknown OP")
            # Compare against the initial value: exactly one rank wins each element.
            cmp = gl.load(ret + offs, mask=mask)
            old = ctx.atomic_cas(dst + offs, cmp, val, peer, sem="acq_rel", scope="sys")
        gl.store(ret + offs, old, mask=mask)


@gluon.jit
def trace_1d_kernel(ctx_t, buf, n, target, payload, BLOCK: gl.constexpr, USE_MASK: gl.constexpr,
                    TRACING: gl.constexpr):
    """One traced store range per program over a 1-D block; ``buf`` is int32."""
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    if USE_MASK:
        h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, mask=mask,
                                           payload=payload + pid)
        ctx.store(buf + offs, offs, target, mask=mask)
    else:
        h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, payload=payload + pid)
        ctx.store(buf + offs, offs, target)
    ctx.tracing.record_event_end(h)


@gluon.jit
def trace_mask_kernel(ctx_t, buf, bits, BLOCK: gl.constexpr):
    """One instant per program whose mask is read from ``bits`` (int8, one per element)."""
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = gl.load(bits + offs) != 0
    ctx.tracing.record_event(TraceEvent().load, ctx.cur_rank, buf + offs, pid, 0, mask=mask)


@gluon.jit
def trace_2d_kernel(ctx_t, buf, M, N, stride, BM: gl.constexpr, BN: gl.constexpr):
    """One traced range per 2-D tile of an int64 [M, N] matrix, masked at the edges."""
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_2d(warp_size(), gl.num_warps())
    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    rm = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    rn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    rm2 = gl.expand_dims(rm, 1)
    rn2 = gl.expand_dims(rn, 0)
    ptrs = buf + rm2 * stride + rn2
    mask = (rm2 < M) & (rn2 < N)
    h = ctx.tracing.record_event_start(TraceEvent().put, ctx.cur_rank, ptrs, pid_m, pid_n, mask=mask)
    ctx.store(ptrs, (rm2 * 1000 + rn2).to(gl.int64), ctx.cur_rank, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit
def trace_loop_kernel(ctx_t, buf, ITERS: gl.constexpr):
    """Per program: ITERS ranges with the loop index as payload, each with a nested instant on a scalar."""
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    pid = gl.program_id(0)
    for i in range(ITERS):
        h = ctx.tracing.record_event_start(TraceEvent().compute, ctx.cur_rank, buf + pid, pid, i, payload=i)
        ctx.tracing.record_event(TraceEvent().user, ctx.cur_rank, buf + pid, pid, i, payload=i * 10)
        ctx.tracing.record_event_end(h)


@gluon.jit
def untraced_1d_kernel(ctx_t, buf, n, target, payload, BLOCK: gl.constexpr, USE_MASK: gl.constexpr,
                       TRACING: gl.constexpr):
    """``trace_1d_kernel`` with every tracing call removed (for the compiled-off comparison)."""
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    if USE_MASK:
        ctx.store(buf + offs, offs, target, mask=mask)
    else:
        ctx.store(buf + offs, offs, target)


@gluon.jit
def trace_layouts_kernel(ctx_t, buf, bits, flags, BM: gl.constexpr, BN: gl.constexpr):
    """One program; one ``user`` instant per pointer shape x mask kind, numbered by payload (``LAYOUT_CASES``)."""
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_2d(warp_size(), gl.num_warps())
    rm = gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    rn = gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    on = gl.load(flags) != 0
    off = gl.load(flags + 1) != 0
    row = buf + rn
    col = buf + rm * BN
    tile = buf + gl.expand_dims(rm, 1) * BN + gl.expand_dims(rn, 0)
    row_bits = gl.load(bits + rn) != 0
    col_bits = gl.load(bits + BN + rm) != 0
    me = ctx.cur_rank
    ev = TraceEvent().user
    ctx.tracing.record_event(ev, me, row, 0, 1, mask=row_bits, payload=1)
    ctx.tracing.record_event(ev, me, col, 0, 2, mask=col_bits, payload=2)
    ctx.tracing.record_event(ev, me, tile, 0, 3, payload=3)
    ctx.tracing.record_event(ev, me, tile, 0, 4, mask=on, payload=4)
    ctx.tracing.record_event(ev, me, tile, 0, 5, mask=off, payload=5)
    ctx.tracing.record_event(ev, me, tile, 0, 6, mask=gl.expand_dims(col_bits, 1), payload=6)
    ctx.tracing.record_event(ev, me, buf + 3, 0, 7, mask=on, payload=7)
    ctx.tracing.record_event(ev, me, buf + 3, 0, 8, mask=off, payload=8)
    ctx.tracing.record_event(ev, me, buf + 3, 0, 9, payload=9)


@gluon.jit
def trace_unfinished_kernel(ctx_t, buf):
    """Opens a range on a scalar pointer and never ends it."""
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    ctx.tracing.record_event_start(TraceEvent().wait, ctx.cur_rank, buf + gl.program_id(0), gl.program_id(0), 0)


@gluon.jit
def trace_shapes_kernel(ctx_t, buf, bits, TRACING: gl.constexpr):
    """A traced masked store range on every block of ``call_shapes.LAYOUT_SITES``: 1-D, a tile's row and column,
    a 2-D tile and a 3-D block, each in every layout of its rank's set (Triton: the compiler's); ``buf`` int32."""
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING)
    for s in gl.static_range(K.NUM_LAYOUT_SITES):
        offs = gluon_offsets(C.layout_site_shape(s), C.layout_site_layout(s), 0, 1, K.BN, bits)
        mask = gluon_mask(C.layout_site_shape(s), C.layout_site_layout(s), K.BLOCK, offs, 0, bits, 1)
        h = ctx.tracing.record_event_start(TraceEvent().store, ctx.cur_rank, buf + offs, 0, s, mask=mask)
        ctx.store(buf + offs, offs, ctx.cur_rank, mask=mask)
        ctx.tracing.record_event_end(h)


@gluon.jit
def untraced_shapes_kernel(ctx_t, buf, bits, TRACING: gl.constexpr):
    """``trace_shapes_kernel`` with every tracing call removed (for the compiled-off comparison)."""
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING)
    for s in gl.static_range(K.NUM_LAYOUT_SITES):
        offs = gluon_offsets(C.layout_site_shape(s), C.layout_site_layout(s), 0, 1, K.BN, bits)
        mask = gluon_mask(C.layout_site_shape(s), C.layout_site_layout(s), K.BLOCK, offs, 0, bits, 1)
        ctx.store(buf + offs, offs, ctx.cur_rank, mask=mask)
