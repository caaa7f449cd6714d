"""Device side of the call-shape family (``conformance.kit.call_shapes``): one site's pointer block, mask, pid and
record, written twice: Triton first, then the Gluon twin in the same order with the same signatures.

The Triton helpers take the site's ``LAYOUT`` too and ignore it (Triton's compiler picks layouts); the Gluon
helpers build every block in ``layout_of(SHAPE, LAYOUT, warp_size(), num_warps())``, ROW and COL as slices of
the tile layout, CUBE through slices of a 3-D layout.
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.kit import call_shapes as C
from conformance.kit import call_shapes_constexpr as K
from conformance.kit.call_shapes_constexpr import SOURCE_KEY
from iris import TraceEvent
from iris.experimental.layouts import warp_size

# ---------------------------------------------------------------------------------------------------- Triton


@triton.jit
def triton_offsets(SHAPE: tl.constexpr, LAYOUT: tl.constexpr, origin, step, ld, gather):
    """Element offsets of ``SHAPE``'s lanes (``call_shapes.offsets``)."""
    if SHAPE == K.SCALAR:
        offs = origin
    elif SHAPE == K.CONTIG:
        offs = origin + tl.arange(0, K.B1)
    elif SHAPE == K.STRIDED:
        offs = origin + tl.arange(0, K.B1) * step
    elif SHAPE == K.REVERSED:
        offs = origin + (K.B1 - 1 - tl.arange(0, K.B1))
    elif SHAPE == K.GATHERED:
        offs = origin + tl.load(gather + tl.arange(0, K.B1))
    elif SHAPE == K.ROW:
        offs = origin + tl.arange(0, K.BN)
    elif SHAPE == K.COL:
        offs = origin + tl.arange(0, K.BM) * ld
    elif SHAPE == K.TILE:
        offs = origin + tl.arange(0, K.BM)[:, None] * ld + tl.arange(0, K.BN)[None, :]
    elif SHAPE == K.TILE_T:
        offs = origin + tl.arange(0, K.BM)[:, None] + tl.arange(0, K.BN)[None, :] * ld
    else:
        tl.static_assert(SHAPE == K.CUBE, "unknown SHAPE")
        a = tl.arange(0, K.C0)[:, None, None]
        b = tl.arange(0, K.C1)[None, :, None]
        offs = origin + (a * K.C1 + b) * ld + tl.arange(0, K.C2)[None, None, :]
    return offs


@triton.jit
def triton_mask(SHAPE: tl.constexpr, LAYOUT: tl.constexpr, MASK: tl.constexpr, offs, origin, bits, flag):
    """The mask of kind ``MASK`` (not NONE) over ``offs`` (``call_shapes.active``)."""
    if MASK == K.FLAG:
        mask = flag != 0
    elif MASK == K.BLOCK:
        mask = tl.load(bits + offs) != 0
    elif MASK == K.OFF:
        mask = offs < origin
    elif SHAPE == K.CUBE:
        if MASK == K.ROWS:
            mask = (tl.load(bits + origin + tl.arange(0, K.C0)) != 0)[:, None, None]
        else:
            mask = (tl.load(bits + origin + tl.arange(0, K.C2)) != 0)[None, None, :]
    elif MASK == K.ROWS:
        mask = (tl.load(bits + origin + tl.arange(0, K.BM)) != 0)[:, None]
    else:
        tl.static_assert(MASK == K.COLS, "unknown MASK")
        mask = (tl.load(bits + origin + tl.arange(0, K.BN)) != 0)[None, :]
    return mask


@triton.jit
def triton_pid_sources():
    """The values pid_m and pid_n are taken from (``call_shapes.PID_SOURCES``), once per program."""
    a0 = tl.program_id(0)
    a1 = tl.program_id(1)
    a2 = tl.program_id(2)
    linear = a0 + a1 * tl.num_programs(0) + a2 * tl.num_programs(0) * tl.num_programs(1)
    return a0, a1, a2, linear, (a0 - a1) * 5 + a2 * 3 - 1


@triton.jit
def triton_record(ctx, RECORD: tl.constexpr, EVENT: tl.constexpr, target, pointer, pid_m, pid_n, mask, payload,
                  inner):
    """Record the site: an instant, a range, a range around an instant on ``inner``, or a range given the block's span
    (``call_shapes.RECORD_NAMES``)."""
    tl.static_assert(SOURCE_KEY == SOURCE_KEY, "keys the compile cache on the call-shape tables")
    if RECORD == K.INSTANT:
        ctx.tracing.record_event(EVENT, target, pointer, pid_m, pid_n, mask=mask, payload=payload)
    elif RECORD == K.SPANNED:
        span = ctx.tracing.span(pointer, mask=mask)
        h = ctx.tracing.record_event_start(EVENT, target, span, pid_m, pid_n, payload=payload)
        ctx.tracing.record_event_end(h)
    else:
        h = ctx.tracing.record_event_start(EVENT, target, pointer, pid_m, pid_n, mask=mask, payload=payload)
        if RECORD == K.NESTED:
            ctx.tracing.record_event(TraceEvent().user, target, inner, pid_m, pid_n)
        ctx.tracing.record_event_end(h)


# ----------------------------------------------------------------------------------------------------- Gluon


@gluon.jit
def gluon_offsets(SHAPE: gl.constexpr, LAYOUT: gl.constexpr, origin, step, ld, gather):
    """Element offsets of ``SHAPE``'s lanes (``call_shapes.offsets``), in the site's layout."""
    L: gl.constexpr = C.layout_of(SHAPE, LAYOUT, warp_size(), gl.num_warps())
    if SHAPE == K.SCALAR:
        offs = origin
    elif SHAPE == K.CONTIG:
        offs = origin + gl.arange(0, K.B1, layout=L)
    elif SHAPE == K.STRIDED:
        offs = origin + gl.arange(0, K.B1, layout=L) * step
    elif SHAPE == K.REVERSED:
        offs = origin + (K.B1 - 1 - gl.arange(0, K.B1, layout=L))
    elif SHAPE == K.GATHERED:
        offs = origin + gl.load(gather + gl.arange(0, K.B1, layout=L))
    elif SHAPE == K.ROW:
        offs = origin + gl.arange(0, K.BN, layout=gl.SliceLayout(0, L))
    elif SHAPE == K.COL:
        offs = origin + gl.arange(0, K.BM, layout=gl.SliceLayout(1, L)) * ld
    elif SHAPE == K.TILE:
        rows = gl.expand_dims(gl.arange(0, K.BM, layout=gl.SliceLayout(1, L)), 1)
        offs = origin + rows * ld + gl.expand_dims(gl.arange(0, K.BN, layout=gl.SliceLayout(0, L)), 0)
    elif SHAPE == K.TILE_T:
        rows = gl.expand_dims(gl.arange(0, K.BM, layout=gl.SliceLayout(1, L)), 1)
        offs = origin + rows + gl.expand_dims(gl.arange(0, K.BN, layout=gl.SliceLayout(0, L)), 0) * ld
    else:
        gl.static_assert(SHAPE == K.CUBE, "unknown SHAPE")
        a = gl.expand_dims(gl.expand_dims(gl.arange(0, K.C0, layout=gl.SliceLayout(1, gl.SliceLayout(2, L))), 1), 2)
        b = gl.expand_dims(gl.expand_dims(gl.arange(0, K.C1, layout=gl.SliceLayout(0, gl.SliceLayout(2, L))), 0), 2)
        c = gl.expand_dims(gl.expand_dims(gl.arange(0, K.C2, layout=gl.SliceLayout(0, gl.SliceLayout(1, L))), 0), 1)
        offs = origin + (a * K.C1 + b) * ld + c
    return offs


@gluon.jit
def gluon_mask(SHAPE: gl.constexpr, LAYOUT: gl.constexpr, MASK: gl.constexpr, offs, origin, bits, flag):
    """The mask of kind ``MASK`` (not NONE) over ``offs`` (``call_shapes.active``), in the site's layout."""
    L: gl.constexpr = C.layout_of(SHAPE, LAYOUT, warp_size(), gl.num_warps())
    if MASK == K.FLAG:
        mask = flag != 0
    elif MASK == K.BLOCK:
        mask = gl.load(bits + offs) != 0
    elif MASK == K.OFF:
        mask = offs < origin
    elif SHAPE == K.CUBE:
        if MASK == K.ROWS:
            a = gl.arange(0, K.C0, layout=gl.SliceLayout(1, gl.SliceLayout(2, L)))
            mask = gl.expand_dims(gl.expand_dims(gl.load(bits + origin + a) != 0, 1), 2)
        else:
            c = gl.arange(0, K.C2, layout=gl.SliceLayout(0, gl.SliceLayout(1, L)))
            mask = gl.expand_dims(gl.expand_dims(gl.load(bits + origin + c) != 0, 0), 1)
    elif MASK == K.ROWS:
        rows = gl.arange(0, K.BM, layout=gl.SliceLayout(1, L))
        mask = gl.expand_dims(gl.load(bits + origin + rows) != 0, 1)
    else:
        gl.static_assert(MASK == K.COLS, "unknown MASK")
        cols = gl.arange(0, K.BN, layout=gl.SliceLayout(0, L))
        mask = gl.expand_dims(gl.load(bits + origin + cols) != 0, 0)
    return mask


@gluon.jit
def gluon_pid_sources():
    """The values pid_m and pid_n are taken from (``call_shapes.PID_SOURCES``), once per program."""
    a0 = gl.program_id(0)
    a1 = gl.program_id(1)
    a2 = gl.program_id(2)
    linear = a0 + a1 * gl.num_programs(0) + a2 * gl.num_programs(0) * gl.num_programs(1)
    return a0, a1, a2, linear, (a0 - a1) * 5 + a2 * 3 - 1


@gluon.jit
def gluon_record(ctx, RECORD: gl.constexpr, EVENT: gl.constexpr, target, pointer, pid_m, pid_n, mask, payload,
                 inner):
    """Record the site: an instant, a range, a range around an instant on ``inner``, or a range given the block's span
    (``call_shapes.RECORD_NAMES``)."""
    gl.static_assert(SOURCE_KEY == SOURCE_KEY, "keys the compile cache on the call-shape tables")
    if RECORD == K.INSTANT:
        ctx.tracing.record_event(EVENT, target, pointer, pid_m, pid_n, mask=mask, payload=payload)
    elif RECORD == K.SPANNED:
        span = ctx.tracing.span(pointer, mask=mask)
        h = ctx.tracing.record_event_start(EVENT, target, span, pid_m, pid_n, payload=payload)
        ctx.tracing.record_event_end(h)
    else:
        h = ctx.tracing.record_event_start(EVENT, target, pointer, pid_m, pid_n, mask=mask, payload=payload)
        if RECORD == K.NESTED:
            ctx.tracing.record_event(TraceEvent().user, target, inner, pid_m, pid_n)
        ctx.tracing.record_event_end(h)
