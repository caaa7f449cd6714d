"""The collectives users trace, as the benchmark times them, in both APIs, each traced or not by constexprs.

- ``all_gather``: program p pulls block p of every rank's ``src`` (``ctx.get``) into that rank's block of its ``out``;
  one ``fetch`` phase per peer.
- ``reduce_scatter``: program p sums block p of its own chunk (``rank L``) of every rank's ``src`` (``ctx.load``), one
  ``fetch`` phase per peer, then stores the sum (``ctx.store``), a ``reduce`` phase.
- ``all_to_all``: program p puts block p of chunk t of its ``src`` into rank t's ``dst`` at this rank's chunk
  (``ctx.put``), one ``put`` phase per peer.
- ``gather_matmul``: an all-gather fused with a matmul: program p, for each peer s, ``wait``s for s's flag (one
  acquire ``ctx.atomic_cas`` after a poll that is no op), ``fetch``es its [BM, K] block of s's shard of A
  (``ctx.load``) and ``compute``s block p of s's rows of C = A B (``out`` [R M, N], ``ctx.store``).

Every kernel takes the same switches (constexprs): ``TRACING`` (tracing compiled in), ``AUTO`` (every op records its
own range: ``trace_ops``), ``BRACKET`` (a manual range around each phase, named as above), ``RECORD`` (what a bracketed
range of a tile is given, ``RECORDS``) and ``PROTON`` (a Proton intra-kernel scope around each phase, with the same
names; Proton records only when its instrumentation was on at compile time). Rank and world size are read at run time,
so one compile serves every world.

``RECORDS``: what a bracketed record of a tile block (``base + offs`` under ``mask``) is given, each decoding to the
same event (the benchmark checks that):

- ``block``: the pointer block and its mask (the library reduces it at every record: the default);
- ``span``: ``ctx.tracing.span`` of the block, made once before the peer loop (the block and mask are the same for
  every peer; a block that moves by a scalar per peer, ``gather_matmul``'s output, is shifted);
- ``offsets``: a span made once from the block's 32-bit offsets from ``base`` (one int32 min-reduction instead of an
  int64 one over every element's address) and the active count summed from the mask as int32;
- ``bounds``: ``ctx.tracing.contiguous_span`` of the bounds the mask was made of (no reduction: first offset and
  active count in scalars; exact for the masks here, ``offs < n`` and ``rows < M``).

The matmul: Triton's ``tl.dot`` (the compiler picks the target's matrix instruction: wgmma on sm_90, mfma on gfx942).
Gluon in Triton 3.6 has no portable matrix instruction: ``warpgroup_mma`` (Hopper) takes shared-memory operands and
async waits, ``mma_v2`` (``gluon.language.nvidia.ampere``, which sm_90 runs) and ``mfma``
(``gluon.language.amd.cdna3``) take register operands in their own layouts, and ``gl.dot_fma`` is the only one for
every target (FMA). ``MATH="mma"`` picks ``mma_v2`` where a warp is 32 lanes and ``mfma`` where it is 64, both on
register operands as Triton's ``tl.dot`` does with its own choice; ``MATH="fma"`` is ``gl.dot_fma`` (what the
interpreter runs: its Gluon shim maps ``dot_fma`` to ``tl.dot`` and refuses vendor builtins).
"""

import triton
import triton.language as tl
import triton.profiler.language as pl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import AMDMFMALayout
from triton.experimental.gluon.language.amd.cdna3 import mfma
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_2d, warp_size
from iris.experimental.tracing import _block_min, _block_sum  # the reductions a Gluon record makes, as it makes them
from iris.tracing.record_constexpr import element_bytes
from iris.tracing.span import TraceSpan

RECORDS = {"block": 0, "span": 1, "offsets": 2, "bounds": 3}
NO_OFFSET = tl.constexpr(2**31 - 1)  # the 32-bit min-reduction's value for an inactive lane
SPIN_LIMIT = tl.constexpr(1 << 20)  # polls of a flag before a wait gives up (the flags are set before any launch)


# ---------------------------------------------------------------------------------------------------------- Triton


@triton.jit
def triton_span_of(ctx, base, offs, mask, first, active, RECORD: tl.constexpr):
    """The span a bracketed record of ``base + offs`` under ``mask`` is given for ``RECORD`` 1 to 3 (``RECORDS``);
    ``first`` and ``active`` are the block's first offset and active elements (the bounds its mask was made of)."""
    if RECORD == 1:
        span = ctx.tracing.span(base + offs, mask=mask)
    elif RECORD == 2:
        lowest = tl.min(tl.where(mask, offs, NO_OFFSET), axis=None)
        count = tl.sum(mask.to(tl.int32), axis=None)
        address = (base + lowest).to(tl.int64, bitcast=False)
        span = TraceSpan(tl.where(count > 0, address, 0), count * element_bytes(base.dtype))
    else:
        tl.static_assert(RECORD == 3, "a span is made for RECORD 1 to 3")
        span = ctx.tracing.contiguous_span(base, first, active)
    return span


@triton.jit
def triton_shifted(span, nbytes):
    """``span`` moved ``nbytes`` bytes up (a block that moves by a scalar per peer); no address stays none."""
    return TraceSpan(tl.where(span.nbytes > 0, span.lowest + nbytes, 0), span.nbytes)


@triton.jit(do_not_specialize=["n"])
def triton_all_gather(ctx_t, src, out, n, BLOCK: tl.constexpr, TRACING: tl.constexpr, AUTO: tl.constexpr,
                      BRACKET: tl.constexpr, RECORD: tl.constexpr, PROTON: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=TRACING, trace_ops=AUTO)
    pid = tl.program_id(0)
    start = pid * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    where = src + offs
    lanes = mask
    if BRACKET and RECORD != 0:
        where = triton_span_of(ctx, src, offs, mask, start, tl.minimum(tl.maximum(n - start, 0), BLOCK), RECORD)
        lanes = None
    i = n * 0
    while i < ctx.world_size:
        t = (ctx.rank + i) % ctx.world_size
        if PROTON:
            pl.enter_scope("fetch")
        if BRACKET:
            h = ctx.tracing.record_event_start(TraceEvent().fetch, t, where, pid, 0, mask=lanes, payload=i)
        ctx.get(src + offs, out + t * n + offs, t, mask=mask)
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("fetch")
        i += 1


@triton.jit(do_not_specialize=["chunk"])
def triton_reduce_scatter(ctx_t, src, out, chunk, BLOCK: tl.constexpr, TRACING: tl.constexpr, AUTO: tl.constexpr,
                          BRACKET: tl.constexpr, RECORD: tl.constexpr, PROTON: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=TRACING, trace_ops=AUTO)
    pid = tl.program_id(0)
    start = pid * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < chunk
    share = ctx.rank * chunk + offs
    active = tl.minimum(tl.maximum(chunk - start, 0), BLOCK)
    where = src + share
    lanes = mask
    made = out + offs
    made_lanes = mask
    if BRACKET and RECORD != 0:
        where = triton_span_of(ctx, src, share, mask, ctx.rank * chunk + start, active, RECORD)
        made = triton_span_of(ctx, out, offs, mask, start, active, RECORD)
        lanes = None
        made_lanes = None
    acc = tl.zeros([BLOCK], dtype=src.dtype.element_ty)
    i = chunk * 0
    while i < ctx.world_size:
        t = (ctx.rank + i) % ctx.world_size
        if PROTON:
            pl.enter_scope("fetch")
        if BRACKET:
            h = ctx.tracing.record_event_start(TraceEvent().fetch, t, where, pid, 0, mask=lanes, payload=i)
        acc += ctx.load(src + share, t, mask=mask, other=0)
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("fetch")
        i += 1
    if PROTON:
        pl.enter_scope("reduce")
    if BRACKET:
        h = ctx.tracing.record_event_start(TraceEvent().reduce, ctx.rank, made, pid, 0, mask=made_lanes,
                                           payload=ctx.world_size)
    ctx.store(out + offs, acc, ctx.rank, mask=mask)
    if BRACKET:
        ctx.tracing.record_event_end(h)
    if PROTON:
        pl.exit_scope("reduce")


@triton.jit(do_not_specialize=["chunk"])
def triton_all_to_all(ctx_t, src, dst, chunk, BLOCK: tl.constexpr, TRACING: tl.constexpr, AUTO: tl.constexpr,
                      BRACKET: tl.constexpr, RECORD: tl.constexpr, PROTON: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=TRACING, trace_ops=AUTO)
    pid = tl.program_id(0)
    start = pid * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < chunk
    slot = ctx.rank * chunk + offs
    where = dst + slot
    lanes = mask
    if BRACKET and RECORD != 0:
        where = triton_span_of(ctx, dst, slot, mask, ctx.rank * chunk + start,
                               tl.minimum(tl.maximum(chunk - start, 0), BLOCK), RECORD)
        lanes = None
    i = chunk * 0
    while i < ctx.world_size:
        t = (ctx.rank + i) % ctx.world_size
        if PROTON:
            pl.enter_scope("put")
        if BRACKET:
            h = ctx.tracing.record_event_start(TraceEvent().put, t, where, pid, 0, mask=lanes, payload=i)
        ctx.put(src + t * chunk + offs, dst + slot, t, mask=mask)
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("put")
        i += 1


@triton.jit(do_not_specialize=["M"])
def triton_gather_matmul(ctx_t, a, b, out, flags, M, K: tl.constexpr, N: tl.constexpr, BM: tl.constexpr,
                         TRACING: tl.constexpr, AUTO: tl.constexpr, BRACKET: tl.constexpr, RECORD: tl.constexpr,
                         PROTON: tl.constexpr, MATH: tl.constexpr = "mma"):
    ctx = DeviceContext.initialize(ctx_t, tracing=TRACING, trace_ops=AUTO)
    pid = tl.program_id(0)
    start = pid * BM
    rows = start + tl.arange(0, BM)
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)
    bt = tl.load(b + rk[:, None] * N + rn[None, :])
    offs = rows[:, None] * K + rk[None, :]
    mask = (rows[:, None] < M) & (rk[None, :] < K)
    c_offs = rows[:, None] * N + rn[None, :]
    c_mask = (rows[:, None] < M) & (rn[None, :] < N)
    active = tl.minimum(tl.maximum(M - start, 0), BM)
    fetched = a + offs
    fetched_lanes = mask
    made = triton_span_of(ctx, out, c_offs, c_mask, start * N, active * N, 3)  # the compute range's, for RECORD 1-3
    if BRACKET and RECORD != 0:
        fetched = triton_span_of(ctx, a, offs, mask, start * K, active * K, RECORD)
        fetched_lanes = None
        made = triton_span_of(ctx, out, c_offs, c_mask, start * N, active * N, RECORD)
    i = M * 0
    while i < ctx.world_size:
        s = (ctx.rank + i) % ctx.world_size
        flag = flags + s
        if PROTON:
            pl.enter_scope("wait")
        if BRACKET:
            h = ctx.tracing.record_event_start(TraceEvent().wait, s, flag, pid, 0, payload=i)
        seen = tl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")  # a poll: no op, never traced
        spins = M * 0
        while (seen != 1) & (spins < SPIN_LIMIT):
            seen = tl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")
            spins += 1
        ctx.atomic_cas(flag, 1, 1, ctx.rank, sem="acquire", scope="sys")
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("wait")
        tl.debug_barrier()  # no thread reads the block before the flag is seen
        if PROTON:
            pl.enter_scope("fetch")
        if BRACKET:
            h = ctx.tracing.record_event_start(TraceEvent().fetch, s, fetched, pid, 0, mask=fetched_lanes, payload=i)
        at = ctx.load(a + offs, s, mask=mask, other=0.0)
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("fetch")
            pl.enter_scope("compute")
        block = out + s * M * N
        if BRACKET:
            if RECORD == 0:
                h = ctx.tracing.record_event_start(TraceEvent().compute, ctx.rank, block + c_offs, pid, 0,
                                                   mask=c_mask, payload=i)
            else:
                moved = triton_shifted(made, (s * M * N).to(tl.int64) * element_bytes(out.dtype))
                h = ctx.tracing.record_event_start(TraceEvent().compute, ctx.rank, moved, pid, 0, payload=i)
        c = tl.dot(at, bt)
        ctx.store(block + c_offs, c.to(out.dtype.element_ty), ctx.rank, mask=c_mask)
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("compute")
        i += 1


# ----------------------------------------------------------------------------------------------------------- Gluon


@gluon.constexpr_function
def vector_1d(warp_size, num_warps):
    """Four consecutive elements a thread (16-byte accesses of float32), threads then warps."""
    return gl.BlockedLayout([4], [warp_size], [num_warps], [0])


@gluon.constexpr_function
def rows_of_8(warp_size, num_warps):
    """Eight consecutive elements a thread (16-byte accesses of float16), 8 threads a row of 64, warps down."""
    return gl.BlockedLayout([1, 8], [warp_size // 8, 8], [num_warps, 1], [1, 0])


@gluon.constexpr_function
def matmul_layout(math, warp_size, num_warps):
    """The accumulator's layout of the matmul ``math`` on float16 operands: ``mma`` is ``mma_v2`` (NVIDIA, 32 lanes a
    warp) or ``mfma`` 32x32x8 (AMD CDNA3, 64 lanes), ``fma`` is ``gl.dot_fma`` on a blocked layout."""
    if math == "fma":
        return blocked_2d(warp_size, num_warps)
    if warp_size == 32:
        return gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, 8])
    return AMDMFMALayout(version=3, instr_shape=[32, 32, 8], transposed=True, warps_per_cta=[num_warps, 1])


@gluon.constexpr_function
def operand_layout(math, warp_size, num_warps, index):
    """The layout of operand ``index`` (0: A, 1: B) of the matmul ``math`` (``matmul_layout``)."""
    k_width = 0 if math == "fma" else (2 if warp_size == 32 else 4)  # float16 elements a 32-bit register (mfma: 4)
    return gl.DotOperandLayout(index, matmul_layout(math, warp_size, num_warps), k_width)


@gluon.jit
def gluon_span_of(ctx, base, offs, mask, first, active, RECORD: gl.constexpr):
    """The span a bracketed record of ``base + offs`` under ``mask`` is given for ``RECORD`` 1 to 3 (``RECORDS``);
    ``first`` and ``active`` are the block's first offset and active elements (the bounds its mask was made of)."""
    if RECORD == 1:
        span = ctx.tracing.span(base + offs, mask=mask)
    elif RECORD == 2:
        lowest = _block_min(gl.where(mask, offs, NO_OFFSET))
        count = _block_sum(mask.to(gl.int32))
        address = (base + lowest).to(gl.int64, bitcast=False)
        span = TraceSpan(gl.where(count > 0, address, 0), count * element_bytes(base.dtype))
    else:
        gl.static_assert(RECORD == 3, "a span is made for RECORD 1 to 3")
        span = ctx.tracing.contiguous_span(base, first, active)
    return span


@gluon.jit
def gluon_shifted(span, nbytes):
    """``span`` moved ``nbytes`` bytes up (a block that moves by a scalar per peer); no address stays none."""
    return TraceSpan(gl.where(span.nbytes > 0, span.lowest + nbytes, 0), span.nbytes)


@gluon.jit(do_not_specialize=["n"])
def gluon_all_gather(ctx_t, src, out, n, BLOCK: gl.constexpr, TRACING: gl.constexpr, AUTO: gl.constexpr,
                     BRACKET: gl.constexpr, RECORD: gl.constexpr, PROTON: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING, trace_ops=AUTO)
    layout: gl.constexpr = vector_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    start = pid * BLOCK
    offs = start + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    where = src + offs
    lanes = mask
    if BRACKET and RECORD != 0:
        where = gluon_span_of(ctx, src, offs, mask, start, gl.minimum(gl.maximum(n - start, 0), BLOCK), RECORD)
        lanes = None
    i = n * 0
    while i < ctx.num_ranks:
        t = (ctx.cur_rank + i) % ctx.num_ranks
        if PROTON:
            pl.enter_scope("fetch")
        if BRACKET:
            h = ctx.tracing.record_event_start(TraceEvent().fetch, t, where, pid, 0, mask=lanes, payload=i)
        ctx.get(src + offs, out + t * n + offs, t, mask=mask)
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("fetch")
        i += 1


@gluon.jit(do_not_specialize=["chunk"])
def gluon_reduce_scatter(ctx_t, src, out, chunk, BLOCK: gl.constexpr, TRACING: gl.constexpr, AUTO: gl.constexpr,
                         BRACKET: gl.constexpr, RECORD: gl.constexpr, PROTON: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING, trace_ops=AUTO)
    layout: gl.constexpr = vector_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    start = pid * BLOCK
    offs = start + gl.arange(0, BLOCK, layout=layout)
    mask = offs < chunk
    share = ctx.cur_rank * chunk + offs
    active = gl.minimum(gl.maximum(chunk - start, 0), BLOCK)
    where = src + share
    lanes = mask
    made = out + offs
    made_lanes = mask
    if BRACKET and RECORD != 0:
        where = gluon_span_of(ctx, src, share, mask, ctx.cur_rank * chunk + start, active, RECORD)
        made = gluon_span_of(ctx, out, offs, mask, start, active, RECORD)
        lanes = None
        made_lanes = None
    acc = gl.zeros([BLOCK], dtype=src.dtype.element_ty, layout=layout)
    i = chunk * 0
    while i < ctx.num_ranks:
        t = (ctx.cur_rank + i) % ctx.num_ranks
        if PROTON:
            pl.enter_scope("fetch")
        if BRACKET:
            h = ctx.tracing.record_event_start(TraceEvent().fetch, t, where, pid, 0, mask=lanes, payload=i)
        acc += ctx.load(src + share, t, mask=mask, other=0)
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("fetch")
        i += 1
    if PROTON:
        pl.enter_scope("reduce")
    if BRACKET:
        h = ctx.tracing.record_event_start(TraceEvent().reduce, ctx.cur_rank, made, pid, 0, mask=made_lanes,
                                           payload=ctx.num_ranks)
    ctx.store(out + offs, acc, ctx.cur_rank, mask=mask)
    if BRACKET:
        ctx.tracing.record_event_end(h)
    if PROTON:
        pl.exit_scope("reduce")


@gluon.jit(do_not_specialize=["chunk"])
def gluon_all_to_all(ctx_t, src, dst, chunk, BLOCK: gl.constexpr, TRACING: gl.constexpr, AUTO: gl.constexpr,
                     BRACKET: gl.constexpr, RECORD: gl.constexpr, PROTON: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING, trace_ops=AUTO)
    layout: gl.constexpr = vector_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    start = pid * BLOCK
    offs = start + gl.arange(0, BLOCK, layout=layout)
    mask = offs < chunk
    slot = ctx.cur_rank * chunk + offs
    where = dst + slot
    lanes = mask
    if BRACKET and RECORD != 0:
        where = gluon_span_of(ctx, dst, slot, mask, ctx.cur_rank * chunk + start,
                              gl.minimum(gl.maximum(chunk - start, 0), BLOCK), RECORD)
        lanes = None
    i = chunk * 0
    while i < ctx.num_ranks:
        t = (ctx.cur_rank + i) % ctx.num_ranks
        if PROTON:
            pl.enter_scope("put")
        if BRACKET:
            h = ctx.tracing.record_event_start(TraceEvent().put, t, where, pid, 0, mask=lanes, payload=i)
        ctx.put(src + t * chunk + offs, dst + slot, t, mask=mask)
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("put")
        i += 1


@gluon.jit
def _gluon_matmul(at, bt, MATH: gl.constexpr, N: gl.constexpr):
    """C = A B for float16 blocks ``at`` [BM, K] and ``bt`` [K, N], float32, in the blocked layout of the loads."""
    loaded: gl.constexpr = rows_of_8(warp_size(), gl.num_warps())
    acc = gl.zeros([at.shape[0], N], gl.float32, matmul_layout(MATH, warp_size(), gl.num_warps()))
    a_op = gl.convert_layout(at, operand_layout(MATH, warp_size(), gl.num_warps(), 0))
    b_op = gl.convert_layout(bt, operand_layout(MATH, warp_size(), gl.num_warps(), 1))
    if MATH == "fma":
        c = gl.dot_fma(a_op, b_op, acc)
    elif warp_size() == 32:
        c = mma_v2(a_op, b_op, acc)
    else:
        c = mfma(a_op, b_op, acc)
    return gl.convert_layout(c, loaded)


@gluon.jit(do_not_specialize=["M"])
def gluon_gather_matmul(ctx_t, a, b, out, flags, M, K: gl.constexpr, N: gl.constexpr, BM: gl.constexpr,
                        TRACING: gl.constexpr, AUTO: gl.constexpr, BRACKET: gl.constexpr, RECORD: gl.constexpr,
                        PROTON: gl.constexpr, MATH: gl.constexpr = "mma"):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=TRACING, trace_ops=AUTO)
    layout: gl.constexpr = rows_of_8(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    start = pid * BM
    rows = gl.expand_dims(start + gl.arange(0, BM, layout=gl.SliceLayout(1, layout)), 1)
    rk_cols = gl.expand_dims(gl.arange(0, K, layout=gl.SliceLayout(0, layout)), 0)
    rk_rows = gl.expand_dims(gl.arange(0, K, layout=gl.SliceLayout(1, layout)), 1)
    rn = gl.expand_dims(gl.arange(0, N, layout=gl.SliceLayout(0, layout)), 0)
    bt = gl.load(b + rk_rows * N + rn)
    offs = rows * K + rk_cols
    mask = (rows < M) & (rk_cols < K)
    c_offs = rows * N + rn
    c_mask = (rows < M) & (rn < N)
    active = gl.minimum(gl.maximum(M - start, 0), BM)
    fetched = a + offs
    fetched_lanes = mask
    made = gluon_span_of(ctx, out, c_offs, c_mask, start * N, active * N, 3)  # the compute range's, for RECORD 1-3
    if BRACKET and RECORD != 0:
        fetched = gluon_span_of(ctx, a, offs, mask, start * K, active * K, RECORD)
        fetched_lanes = None
        made = gluon_span_of(ctx, out, c_offs, c_mask, start * N, active * N, RECORD)
    i = M * 0
    while i < ctx.num_ranks:
        s = (ctx.cur_rank + i) % ctx.num_ranks
        flag = flags + s
        if PROTON:
            pl.enter_scope("wait")
        if BRACKET:
            h = ctx.tracing.record_event_start(TraceEvent().wait, s, flag, pid, 0, payload=i)
        seen = gl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")  # a poll: no op, never traced
        spins = M * 0
        while (seen != 1) & (spins < SPIN_LIMIT):
            seen = gl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")
            spins += 1
        ctx.atomic_cas(flag, 1, 1, ctx.cur_rank, sem="acquire", scope="sys")
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("wait")
        gl.thread_barrier()  # no thread reads the block before the flag is seen
        if PROTON:
            pl.enter_scope("fetch")
        if BRACKET:
            h = ctx.tracing.record_event_start(TraceEvent().fetch, s, fetched, pid, 0, mask=fetched_lanes, payload=i)
        at = ctx.load(a + offs, s, mask=mask, other=0.0)
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("fetch")
            pl.enter_scope("compute")
        block = out + s * M * N
        if BRACKET:
            if RECORD == 0:
                h = ctx.tracing.record_event_start(TraceEvent().compute, ctx.cur_rank, block + c_offs, pid, 0,
                                                   mask=c_mask, payload=i)
            else:
                moved = gluon_shifted(made, (s * M * N).to(gl.int64) * element_bytes(out.dtype))
                h = ctx.tracing.record_event_start(TraceEvent().compute, ctx.cur_rank, moved, pid, 0, payload=i)
        c = _gluon_matmul(at, bt, MATH, N)
        ctx.store(block + c_offs, c.to(out.dtype.element_ty), ctx.cur_rank, mask=c_mask)
        if BRACKET:
            ctx.tracing.record_event_end(h)
        if PROTON:
            pl.exit_scope("compute")
        i += 1
