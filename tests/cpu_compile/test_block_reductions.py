"""The Gluon tracing's block reductions reach every lane that holds an element, in a layout wider than its block.

Triton 3.6 reduces a Gluon *linear* layout whose lanes repeat elements over the wrong lanes, and a reduction with
``axis=None`` flattens a 2-D block into one (``iris/experimental/tracing.py`` says more): for an [8, 16] block in
``BlockedLayout([1, 4], [4, 8], [1, 1], [1, 0])`` on one warp, lanes 4 apart hold the same columns and the rows
sit at lane offsets 8 and 16, yet the flattened minimum's shuffles cross offsets 1, 2, 4, 8, so the record of a
block whose one active lane is in rows 2-3 or 6-7 had no address on one H200. The Gluon twin reduces axis by axis;
this compiles its ``_address_and_size`` for that block and reads the lane offsets its warp shuffles cross. A block
whose every element one thread holds in one register (``_held_once``) has its minimum taken flattened, in one
reduction, on 32-lane warps (``_flat_min``): its shuffles must still cross every lane offset, and the choice must
refuse every layout with copies.
"""

from __future__ import annotations

import re

import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from iris.experimental.tracing import _address_and_size, _block_min, _flat_min, _held_once, _value_bits
from tests.cpu_compile.compile_helpers import compile_function

pytestmark = pytest.mark.cpu_compile

WIDE: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [1, 1], [1, 0])  # 4 x 32 elements a warp: columns repeat
LANE_OFFSETS = {1, 2, 8, 16}  # columns 4 and 8 apart (lanes 1, 2), rows 1 and 2 apart (lanes 8, 16)
HELD: gl.constexpr = gl.BlockedLayout([1, 1], [4, 8], [1, 1], [1, 0])  # a 4 x 8 tile: an [8, 16] block, no copies


@gluon.jit
def wide_tile_kernel(bits, out, VALUE: gl.constexpr):
    rows = gl.expand_dims(gl.arange(0, 8, layout=gl.SliceLayout(1, WIDE)), 1)
    offs = rows + gl.expand_dims(gl.arange(0, 16, layout=gl.SliceLayout(0, WIDE)), 0) * 32
    mask = gl.load(bits + offs) != 0
    if VALUE:
        gl.store(out, _value_bits(gl.load(out + offs)))
    else:
        lowest, size = _address_and_size(out + offs, mask)
        gl.store(out, lowest)
        gl.store(out + 1, size.to(gl.int64))


def shuffle_offsets(ptx: str) -> set[int]:
    """The lane offsets of the butterfly shuffles in ``ptx``."""
    return {int(m) for m in re.findall(r"shfl\.sync\.bfly\.b32\s+%r\d+, %r\d+, (\d+),", ptx)}


@pytest.mark.parametrize("value", [False, True], ids=["address_and_size", "value_bits"])
def test_wide_layout_reductions_cross_every_element_lane(value):
    ptx = compile_function("gluon", wide_tile_kernel, "sm_90", {"VALUE": value}, {"bits": "*i8", "out": "*i64"},
                           num_warps=1)["ptx"]
    offsets = shuffle_offsets(ptx)
    assert LANE_OFFSETS <= offsets, f"the reductions cross lane offsets {sorted(offsets)}; they must cross " \
                                    f"{sorted(LANE_OFFSETS)} to reach every row and column of the block"


@gluon.jit
def held_min_kernel(out):
    rows = gl.expand_dims(gl.arange(0, 8, layout=gl.SliceLayout(1, HELD)), 1)
    offs = rows * 16 + gl.expand_dims(gl.arange(0, 16, layout=gl.SliceLayout(0, HELD)), 0)
    gl.store(out, _block_min(gl.load(out + offs)))


@gluon.jit
def wide_min_kernel(out):
    rows = gl.expand_dims(gl.arange(0, 8, layout=gl.SliceLayout(1, WIDE)), 1)
    offs = rows + gl.expand_dims(gl.arange(0, 16, layout=gl.SliceLayout(0, WIDE)), 0) * 32
    gl.store(out, _block_min(gl.load(out + offs)))


def test_min_of_a_wide_block_crosses_every_element_lane():
    ptx = compile_function("gluon", wide_min_kernel, "sm_90", {}, {"out": "*i64"}, num_warps=1)["ptx"]
    offsets = shuffle_offsets(ptx)
    assert LANE_OFFSETS <= offsets, f"the minimum alone crosses lane offsets {sorted(offsets)}, not " \
                                    f"{sorted(LANE_OFFSETS)}: it misses rows of a block whose lanes hold copies"


CUBE: gl.constexpr = gl.BlockedLayout([1, 1, 1], [1, 4, 8], [1, 1, 1], [2, 1, 0])  # a [2, 4, 8] block held once


@gluon.jit
def held_cube_min_kernel(out):
    i = gl.expand_dims(gl.expand_dims(gl.arange(0, 2, layout=gl.SliceLayout(1, gl.SliceLayout(2, CUBE))), 1), 2)
    j = gl.expand_dims(gl.expand_dims(gl.arange(0, 4, layout=gl.SliceLayout(0, gl.SliceLayout(2, CUBE))), 0), 2)
    k = gl.expand_dims(gl.expand_dims(gl.arange(0, 8, layout=gl.SliceLayout(0, gl.SliceLayout(1, CUBE))), 0), 1)
    gl.store(out, _block_min(gl.load(out + i * 32 + j * 8 + k)))


@pytest.mark.parametrize("kernel", [held_min_kernel, held_cube_min_kernel], ids=["tile", "cube"])
def test_flattened_min_crosses_every_lane(kernel):
    ptx = compile_function("gluon", kernel, "sm_90", {}, {"out": "*i64"}, num_warps=1)["ptx"]
    offsets = shuffle_offsets(ptx)
    assert offsets == {1, 2, 4, 8, 16}, f"the flattened minimum crosses lane offsets {sorted(offsets)}, not 1 .. 16"
    shuffles = len(re.findall(r"shfl\.sync\.bfly\.b32", ptx))
    assert shuffles == 10, f"{shuffles} shuffles: one reduction over 32 lanes is 5 steps of two 32-bit shuffles"


@pytest.mark.parametrize("layout, shape, held", [
    (HELD, [8, 16], True),
    (HELD, [16, 32], True),
    (HELD, [4, 16], True),
    (HELD, [8, 4], False),  # columns repeat across lanes
    (HELD, [2, 16], False),  # rows repeat across lanes
    (WIDE, [8, 16], False),
    (gl.BlockedLayout([2, 1], [1, 32], [4, 1], [1, 0]), [64, 64], True),
    (gl.BlockedLayout([2, 1], [1, 32], [4, 1], [1, 0]), [4, 64], False),  # warps 2 and 3 repeat warps 0 and 1
    (gl.BlockedLayout([1, 4], [1, 32], [1, 1], [1, 0]), [1, 64], False),  # registers repeat across lanes
    (gl.SliceLayout(0, HELD), [16], False),
    (gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0], cga_layout=[[1, 0]]), [64, 64], False),
])
def test_held_once_only_without_copies(layout, shape, held):
    assert _held_once(layout, shape) is held


@pytest.mark.parametrize("layout, shape, warp_size, flat", [
    (HELD, [8, 16], 32, True),
    (HELD, [8, 16], 64, False),  # gfx942: the per-axis reductions take fewer instructions there
    (CUBE, [2, 4, 8], 32, True),
    (gl.BlockedLayout([1], [32], [4], [0]), [256], 32, False),  # one axis: one reduction either way
    (WIDE, [8, 16], 32, False),
])
def test_flat_min_only_where_held_once_on_32_lanes(layout, shape, warp_size, flat):
    assert _flat_min(gl.distributed_type(gl.int64, shape, layout), warp_size) is flat


def test_flat_min_not_for_a_scalar():
    assert _flat_min(gl.int64, 32) is False
