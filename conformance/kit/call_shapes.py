"""The call-shape family: how a trace call is made, drawn per example, and what such a call must record.

Two tracing implementations drift where their languages differ, so a scenario should vary *how* it calls
``record_event_start/end`` and ``record_event`` as well as the data. A call shape is one **site**: a pointer
block (``SHAPE_NAMES``), a mask kind (``MASK_NAMES``), a Gluon layout for that block's rank (``layouts``), a record
kind (``RECORD_NAMES``) and a payload kind. ``SITES`` lists sites so that every shape meets every mask kind it
admits and every layout of its rank; a kernel loops over all of them with ``static_range`` (one compile serves
every site) and a run-time plan decides which program records which site, so run-time choices never compile
anything.
The launch-level choices (``LAUNCHES``: ``num_warps`` with an element type of each size, 1, 2, 4, 8 bytes; grid
axes) are made by launching once per entry of ``LAUNCHES``: every example covers every value.

Shapes, as element offsets from a program's ``origin`` (lane order is row-major):

    SCALAR    origin                                   a scalar pointer
    CONTIG    origin + j                (j < B1)       a 1-D block
    STRIDED   origin + j * step         (step 0 .. 3)  not contiguous (step 0: every lane the same element)
    REVERSED  origin + B1 - 1 - j                      descending
    GATHERED  origin + gather[j]                       pointers through an index load
    ROW       origin + j                (j < BN)       a tile's row: SliceLayout(0, tile layout) in Gluon
    COL       origin + i * ld           (i < BM)       a tile's column: SliceLayout(1, tile layout)
    TILE      origin + i * ld + j       [BM, BN]       a 2-D tile (ld >= BN)
    TILE_T    origin + i + j * ld       [BM, BN]       a column-major tile
    CUBE      origin + (a C1 + b) ld + c  [C0, C1, C2]  a 3-D block

Masks: NONE (no mask), SCALAR (a run-time flag, true or false), BLOCK (``bits`` at each lane's element), OFF
(a run-time condition false on every lane), ROWS / COLS (2-D and 3-D: bits of the first / last axis broadcast
over the block). The record of a site is what ``docs/design.md``, "Trace records", says: address = the lowest
active element (none: no address, size 0), payload_size = active lanes x element bytes (no mask: every lane; a
scalar mask applies to every lane).
"""

from __future__ import annotations

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from iris.tracing.events import EVENT_IDS

# ---- block sizes (one set: what varies is the shape, the layout and num_warps, not the size)
B1 = 64
BM, BN = 8, 16
C0, C1, C2 = 2, 4, 8
BUFFER = 768  # elements per buffer: origin (< 256) + the widest block (TILE_T: 7 + 15 ld < 512)

# ---- the dimensions
SCALAR, CONTIG, STRIDED, REVERSED, GATHERED, ROW, COL, TILE, TILE_T, CUBE = range(10)
SHAPE_NAMES = ("scalar", "contig", "strided", "reversed", "gathered", "row", "col", "tile", "tile_t", "cube")
NONE, FLAG, BLOCK, OFF, ROWS, COLS = range(6)
MASK_NAMES = ("none", "scalar", "block", "off", "rows", "cols")
INSTANT, RANGE, NESTED, SPANNED = range(4)
# nested: a range around an instant on the origin's element; spanned: a range given the block's span
# (``ctx.tracing.span(pointer, mask=mask)``) as its address, with no mask
RECORD_NAMES = ("instant", "range", "nested", "spanned")

RANK_OF = {SCALAR: 0, CONTIG: 1, STRIDED: 1, REVERSED: 1, GATHERED: 1, ROW: 2, COL: 2, TILE: 2, TILE_T: 2, CUBE: 3}
# ROW and COL are 1-D blocks in the layout of a tile (their layouts are slices of the 2-D set)


def _masks(shape: int) -> tuple[int, ...]:
    return (NONE, FLAG, BLOCK, OFF, ROWS, COLS) if shape in (TILE, TILE_T, CUBE) else (NONE, FLAG, BLOCK, OFF)


# ---- Gluon layouts per block rank, valid for any warp size (32 or 64) and num_warps in NUM_WARPS


@gluon.constexpr_function
def layouts(rank, warp_size, num_warps):
    """The Gluon layouts drawn for blocks of ``rank`` dimensions: size_per_thread above 1, several
    threads_per_warp and warps_per_cta shapes, both orders (``rank`` 2 also serves ROW and COL as slices)."""
    w, n = warp_size, num_warps
    hi = 2 if n >= 2 else 1  # warps_per_cta split over both dimensions where there are warps to split
    lo = n // hi
    if rank == 1:
        return (gl.BlockedLayout([1], [w], [n], [0]), gl.BlockedLayout([2], [w], [n], [0]),
                gl.BlockedLayout([4], [w], [n], [0]))
    if rank == 2:
        return (gl.BlockedLayout([1, 1], [1, w], [n, 1], [1, 0]),
                gl.BlockedLayout([2, 2], [w // 4, 4], [1, n], [0, 1]),
                gl.BlockedLayout([1, 4], [4, w // 4], [hi, lo], [1, 0]),
                gl.BlockedLayout([4, 1], [w // 2, 2], [lo, hi], [0, 1]))
    return (gl.BlockedLayout([1, 1, 1], [1, 4, w // 4], [n, 1, 1], [2, 1, 0]),
            gl.BlockedLayout([1, 2, 2], [2, w // 8, 4], [1, 1, n], [0, 1, 2]))


LAYOUT_COUNT = {0: 1, 1: 3, 2: 4, 3: 2}  # len(layouts(rank, ...)); a scalar pointer has none


@gluon.constexpr_function
def layout_of(shape, index, warp_size, num_warps):
    """The layout of site ``shape`` with layout ``index`` (a scalar pointer's is None)."""
    rank = RANK_OF[shape]
    return None if rank == 0 else layouts(rank, warp_size, num_warps)[index]


# ---- where pid_m and pid_n come from (a run-time choice per site)
PID_SOURCES = ("axis0", "axis1", "axis2", "linear", "expression")  # expression: (a0 - a1) * 5 + a2 * 3 - 1


def pid_source(source: int, axes: tuple[int, int, int], grid: tuple[int, int, int]) -> int:
    """The value a kernel passes as pid_m or pid_n for ``source`` (``PID_SOURCES``) in program ``axes``."""
    a0, a1, a2 = axes
    return (a0, a1, a2, a0 + a1 * grid[0] + a2 * grid[0] * grid[1], (a0 - a1) * 5 + a2 * 3 - 1)[source]


# ---- the sites: every (shape, mask) pair and every (shape, layout) pair at least once


def _sites() -> tuple[tuple[int, ...], ...]:
    """(shape, mask, layout, record, has_payload, event_id, pid_m source, pid_n source) per site."""
    events = tuple(EVENT_IDS.values())
    sources = len(PID_SOURCES)
    out = []
    for shape in range(len(SHAPE_NAMES)):
        for i, mask in enumerate(_masks(shape)):
            s = len(out)
            layout = (i + shape) % LAYOUT_COUNT[RANK_OF[shape]]
            record = (s // 4) % len(RECORD_NAMES)  # not s % 4, which would tie a kind to one launch (its part)
            out.append((shape, mask, layout, record, (s // 3) % 2, events[s % len(events)], s % sources,
                        (s + 2) % sources))
    return tuple(out)


SITES = _sites()
NUM_SITES = len(SITES)


@triton.constexpr_function
def site_shape(s):
    return SITES[s][0]


@triton.constexpr_function
def site_mask(s):
    return SITES[s][1]


@triton.constexpr_function
def site_layout(s):
    return SITES[s][2]


@triton.constexpr_function
def site_record(s):
    return SITES[s][3]


@triton.constexpr_function
def site_has_payload(s):
    return bool(SITES[s][4])


@triton.constexpr_function
def site_event(s):
    return SITES[s][5]


@triton.constexpr_function
def site_pid_m(s):
    return SITES[s][6]


@triton.constexpr_function
def site_pid_n(s):
    return SITES[s][7]


# ---- every layout of the sets, one block of each rank's form (the cross-compile tier compiles each per num_warps)
LAYOUT_SITES = tuple((shape, i) for shape in (CONTIG, ROW, COL, TILE, CUBE)
                     for i in range(LAYOUT_COUNT[RANK_OF[shape]]))
NUM_LAYOUT_SITES = len(LAYOUT_SITES)


@triton.constexpr_function
def layout_site_shape(s):
    return LAYOUT_SITES[s][0]


@triton.constexpr_function
def layout_site_layout(s):
    return LAYOUT_SITES[s][1]


# ---- the launches: num_warps x element size, one launch each per example

NUM_WARPS = (1, 2, 4, 8)
LAUNCHES = ((1, "int8"), (2, "bfloat16"), (4, "float32"), (8, "int64"))
ELEMENT_BYTES = {"int8": 1, "bfloat16": 2, "float32": 4, "int64": 8}

# ---- the run-time plan: one int32 row per site, [gate of launch 0 .. 3, target rank, scalar-mask flag]
# gate: 0 the site is not recorded in that launch, 1 only program 0 records it, 2 every program does
PLAN_TARGET, PLAN_FLAG = len(LAUNCHES), len(LAUNCHES) + 1
PLAN_FIELDS = len(LAUNCHES) + 2

# ---- the model of one site


def offsets(shape: int, origin: int, step: int, ld: int, gather: list[int]) -> list[int]:
    """Element offsets of ``shape``'s lanes, row-major (see the module docstring)."""
    if shape == SCALAR:
        return [origin]
    if shape == CONTIG:
        return [origin + j for j in range(B1)]
    if shape == STRIDED:
        return [origin + j * step for j in range(B1)]
    if shape == REVERSED:
        return [origin + B1 - 1 - j for j in range(B1)]
    if shape == GATHERED:
        return [origin + gather[j] for j in range(B1)]
    if shape == ROW:
        return [origin + j for j in range(BN)]
    if shape == COL:
        return [origin + i * ld for i in range(BM)]
    if shape == TILE:
        return [origin + i * ld + j for i in range(BM) for j in range(BN)]
    if shape == TILE_T:
        return [origin + i + j * ld for i in range(BM) for j in range(BN)]
    return [origin + (a * C1 + b) * ld + c for a in range(C0) for b in range(C1) for c in range(C2)]


def active(shape: int, mask: int, lanes: list[int], origin: int, bits: list[int], flag: int) -> list[bool]:
    """Which lanes of ``shape`` are active under ``mask`` (``lanes`` from ``offsets``)."""
    if mask == NONE:
        return [True] * len(lanes)
    if mask == FLAG:
        return [bool(flag)] * len(lanes)
    if mask == BLOCK:
        return [bool(bits[e]) for e in lanes]
    if mask == OFF:
        return [False] * len(lanes)
    first, last = (BM, BN) if shape in (TILE, TILE_T) else (C0, C2)
    per = len(lanes) // first  # lanes per index of the first axis
    if mask == ROWS:
        return [bool(bits[origin + k // per]) for k in range(len(lanes))]
    return [bool(bits[origin + k % last]) for k in range(len(lanes))]
