"""The Gluon tracing's block reductions reach every lane that holds an element, in a layout wider than its block.

Triton 3.6 reduces a Gluon *linear* layout whose lanes repeat elements over the wrong lanes, and a reduction with
``axis=None`` flattens a 2-D block into one (``iris/experimental/tracing.py`` says more): for an [8, 16] block in
``BlockedLayout([1, 4], [4, 8], [1, 1], [1, 0])`` on one warp, lanes 4 apart hold the same columns and the rows
sit at lane offsets 8 and 16, yet the flattened minimum's shuffles cross offsets 1, 2, 4, 8, so the record of a
block whose one active lane is in rows 2-3 or 6-7 had no address on one H200. The Gluon twin reduces axis by axis;
this compiles its ``_address_and_size`` for that block and reads the lane offsets its warp shuffles cross.
"""

from __future__ import annotations

import re

import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from iris.experimental.tracing import _address_and_size, _value_bits
from tests.cpu_compile.compile_helpers import compile_function

pytestmark = pytest.mark.cpu_compile

WIDE: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [1, 1], [1, 0])  # 4 x 32 elements a warp: columns repeat
LANE_OFFSETS = {1, 2, 8, 16}  # columns 4 and 8 apart (lanes 1, 2), rows 1 and 2 apart (lanes 8, 16)


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
