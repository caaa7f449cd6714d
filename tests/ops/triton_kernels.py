"""Triton kernels for the op and tracing tests (twin: gluon_kernels.py)."""

import triton
import triton.language as tl

from conformance.kit import call_shapes as C
from conformance.kit import call_shapes_constexpr as K
from conformance.kit.call_shapes_device import triton_mask, triton_offsets
from iris import DeviceContext, TraceEvent


@triton.jit
def op_kernel(ctx_t, src, dst, ret, n, peer, peer2, rank: tl.constexpr, world: tl.constexpr, OP: tl.constexpr,
              BLOCK: tl.constexpr, TRACE_OPS: tl.constexpr = False):
    """Apply ``OP`` on blocks of ``BLOCK`` elements; atomics write their old values to ``ret``. ``TRACE_OPS``: the op
    records its own events (auto-tracing); off, the kernel has no tracing code."""
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=TRACE_OPS, trace_ops=TRACE_OPS)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if OP == "load":
        tl.store(dst + offs, ctx.load(src + offs, peer, mask=mask), mask=mask)
    elif OP == "store":
        ctx.store(dst + offs, tl.load(src + offs, mask=mask), peer, mask=mask)
    elif OP == "get":
        ctx.get(src + offs, dst + offs, peer, mask=mask)
    elif OP == "put":
        ctx.put(src + offs, dst + offs, peer, mask=mask)
    elif OP == "copy":
        ctx.copy(src + offs, dst + offs, peer, peer2, mask=mask)
    else:
        val = tl.load(src + offs, mask=mask)
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
            tl.static_assert(OP == "atomic_cas", "unknown OP")
            # Compare against the initial value: exactly one rank wins each element.
            cmp = tl.load(ret + offs, mask=mask)
            old = ctx.atomic_cas(dst + offs, cmp, val, peer, sem="acq_rel", scope="sys")
        tl.store(ret + offs, old, mask=mask)


@triton.jit
def trace_1d_kernel(ctx_t, buf, n, target, payload, rank: tl.constexpr, world: tl.constexpr, BLOCK: tl.constexpr,
                    USE_MASK: tl.constexpr, TRACING: tl.constexpr):
    """One traced store range per program over a 1-D block; ``buf`` is int32."""
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=TRACING)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if USE_MASK:
        h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, mask=mask,
                                           payload=payload + pid)
        ctx.store(buf + offs, offs, target, mask=mask)
    else:
        h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, payload=payload + pid)
        ctx.store(buf + offs, offs, target)
    ctx.tracing.record_event_end(h)


@triton.jit
def trace_mask_kernel(ctx_t, buf, bits, rank: tl.constexpr, world: tl.constexpr, BLOCK: tl.constexpr):
    """One instant per program whose mask is read from ``bits`` (int8, one per element)."""
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=True)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = tl.load(bits + offs) != 0
    ctx.tracing.record_event(TraceEvent().load, rank, buf + offs, pid, 0, mask=mask)


@triton.jit
def trace_2d_kernel(ctx_t, buf, M, N, stride, rank: tl.constexpr, world: tl.constexpr, BM: tl.constexpr,
                    BN: tl.constexpr):
    """One traced range per 2-D tile of an int64 [M, N] matrix, masked at the edges."""
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=True)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    ptrs = buf + rm[:, None] * stride + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    h = ctx.tracing.record_event_start(TraceEvent().put, rank, ptrs, pid_m, pid_n, mask=mask)
    ctx.store(ptrs, (rm[:, None] * 1000 + rn[None, :]).to(tl.int64), rank, mask=mask)
    ctx.tracing.record_event_end(h)


@triton.jit
def trace_loop_kernel(ctx_t, buf, ITERS: tl.constexpr, rank: tl.constexpr, world: tl.constexpr):
    """Per program: ITERS ranges with the loop index as payload, each with a nested instant on a scalar."""
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=True)
    pid = tl.program_id(0)
    for i in range(ITERS):
        h = ctx.tracing.record_event_start(TraceEvent().compute, rank, buf + pid, pid, i, payload=i)
        ctx.tracing.record_event(TraceEvent().user, rank, buf + pid, pid, i, payload=i * 10)
        ctx.tracing.record_event_end(h)


@triton.jit
def untraced_1d_kernel(ctx_t, buf, n, target, payload, rank: tl.constexpr, world: tl.constexpr,
                       BLOCK: tl.constexpr, USE_MASK: tl.constexpr, TRACING: tl.constexpr):
    """``trace_1d_kernel`` with every tracing call removed (for the compiled-off comparison)."""
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=TRACING)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if USE_MASK:
        ctx.store(buf + offs, offs, target, mask=mask)
    else:
        ctx.store(buf + offs, offs, target)


@triton.jit
def trace_layouts_kernel(ctx_t, buf, bits, flags, rank: tl.constexpr, world: tl.constexpr, BM: tl.constexpr,
                         BN: tl.constexpr):
    """One program; one ``user`` instant per pointer shape x mask kind, numbered by payload (``LAYOUT_CASES``)."""
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=True)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    on = tl.load(flags) != 0
    off = tl.load(flags + 1) != 0
    row = buf + rn
    col = buf + rm * BN
    tile = buf + rm[:, None] * BN + rn[None, :]
    row_bits = tl.load(bits + rn) != 0
    col_bits = tl.load(bits + BN + rm) != 0
    me = rank
    ev = TraceEvent().user
    ctx.tracing.record_event(ev, me, row, 0, 1, mask=row_bits, payload=1)
    ctx.tracing.record_event(ev, me, col, 0, 2, mask=col_bits, payload=2)
    ctx.tracing.record_event(ev, me, tile, 0, 3, payload=3)
    ctx.tracing.record_event(ev, me, tile, 0, 4, mask=on, payload=4)
    ctx.tracing.record_event(ev, me, tile, 0, 5, mask=off, payload=5)
    ctx.tracing.record_event(ev, me, tile, 0, 6, mask=col_bits[:, None], payload=6)
    ctx.tracing.record_event(ev, me, buf + 3, 0, 7, mask=on, payload=7)
    ctx.tracing.record_event(ev, me, buf + 3, 0, 8, mask=off, payload=8)
    ctx.tracing.record_event(ev, me, buf + 3, 0, 9, payload=9)


@triton.jit
def trace_unfinished_kernel(ctx_t, buf, rank: tl.constexpr, world: tl.constexpr):
    """Opens a range on a scalar pointer and never ends it."""
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=True)
    ctx.tracing.record_event_start(TraceEvent().wait, rank, buf + tl.program_id(0), tl.program_id(0), 0)


@triton.jit
def rank_check_kernel(ctx_t, rank: tl.constexpr, world: tl.constexpr):
    """Only initializes the context (its device assertions compare rank/world with the context)."""
    DeviceContext.initialize(ctx_t, rank, world)


@triton.jit(do_not_specialize=["rank_arg", "world_arg"])
def rank_forms_kernel(ctx_t, buf, out, rank_arg, world_arg, FORM: tl.constexpr):
    """``DeviceContext.initialize`` with rank and world size read from the context (``FORM="context"``: one compile
    serves every rank) or given as run-time values (``FORM="tensor"``, checked against the context); writes
    ``ctx.rank``/``ctx.world_size`` to ``out`` (int64) and, traced, ``100 + rank`` to ``buf[rank]`` (int32) on the
    next rank. ``rank_arg``/``world_arg`` are not specialized: a 1 would be compiled in as a constant."""
    if FORM == "context":
        ctx = DeviceContext.initialize(ctx_t, tracing=True)
    else:
        tl.static_assert(FORM == "tensor", "FORM is 'context' or 'tensor'")
        ctx = DeviceContext.initialize(ctx_t, rank_arg, world_arg, tracing=True)
    tl.store(out, ctx.rank)
    tl.store(out + 1, ctx.world_size)
    target = (ctx.rank + 1) % ctx.world_size
    h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + ctx.rank, 0, 0, payload=ctx.world_size)
    ctx.store(buf + ctx.rank, (100 + ctx.rank).to(tl.int32), target)
    ctx.tracing.record_event_end(h)


@triton.jit
def trace_shapes_kernel(ctx_t, buf, bits, rank: tl.constexpr, world: tl.constexpr, TRACING: tl.constexpr):
    """A traced masked store range on every block of ``call_shapes.LAYOUT_SITES``: 1-D, a tile's row and column,
    a 2-D tile and a 3-D block, each in every layout of its rank's set (Triton: the compiler's); ``buf`` int32."""
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=TRACING)
    for s in tl.static_range(K.NUM_LAYOUT_SITES):
        offs = triton_offsets(C.layout_site_shape(s), C.layout_site_layout(s), 0, 1, K.BN, bits)
        mask = triton_mask(C.layout_site_shape(s), C.layout_site_layout(s), K.BLOCK, offs, 0, bits, 1)
        h = ctx.tracing.record_event_start(TraceEvent().store, rank, buf + offs, 0, s, mask=mask)
        ctx.store(buf + offs, offs, rank, mask=mask)
        ctx.tracing.record_event_end(h)


@triton.jit
def untraced_shapes_kernel(ctx_t, buf, bits, rank: tl.constexpr, world: tl.constexpr, TRACING: tl.constexpr):
    """``trace_shapes_kernel`` with every tracing call removed (for the compiled-off comparison)."""
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=TRACING)
    for s in tl.static_range(K.NUM_LAYOUT_SITES):
        offs = triton_offsets(C.layout_site_shape(s), C.layout_site_layout(s), 0, 1, K.BN, bits)
        mask = triton_mask(C.layout_site_shape(s), C.layout_site_layout(s), K.BLOCK, offs, 0, bits, 1)
        ctx.store(buf + offs, offs, rank, mask=mask)
