"""conformance.kit.call_shapes and its scenario: the site table covers every dimension, the layouts are valid for
both warp sizes, the model's lanes and masks are the documented ones, and every drawn example covers every
value of every launch-level dimension."""

from __future__ import annotations

import math

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from conformance.kit import call_shapes as C
from conformance.scenarios import call_shapes as scenario

pytestmark = pytest.mark.cpu_unit

BLOCK_SHAPES = {C.SCALAR: (), C.CONTIG: (C.B1,), C.STRIDED: (C.B1,), C.REVERSED: (C.B1,), C.GATHERED: (C.B1,),
                C.ROW: (C.BN,), C.COL: (C.BM,), C.TILE: (C.BM, C.BN), C.TILE_T: (C.BM, C.BN),
                C.CUBE: (C.C0, C.C1, C.C2)}


def test_every_shape_meets_every_mask_it_admits_once_and_every_layout_of_its_rank():
    pairs = [(site[0], site[1]) for site in C.SITES]
    assert len(pairs) == len(set(pairs)) == C.NUM_SITES
    for shape in range(len(C.SHAPE_NAMES)):
        masks = {m for s, m in pairs if s == shape}
        broadcast = {C.ROWS, C.COLS} if len(BLOCK_SHAPES[shape]) >= 2 and shape not in (C.ROW, C.COL) else set()
        assert masks == {C.NONE, C.FLAG, C.BLOCK, C.OFF} | broadcast, C.SHAPE_NAMES[shape]
        layouts = {site[2] for site in C.SITES if site[0] == shape}
        assert layouts == set(range(C.LAYOUT_COUNT[C.RANK_OF[shape]])), C.SHAPE_NAMES[shape]


def test_every_record_kind_payload_kind_pid_source_and_event_occurs():
    assert {site[3] for site in C.SITES} == {C.INSTANT, C.RANGE, C.NESTED, C.SPANNED}
    assert {(site[3], site[4]) for site in C.SITES} == {(r, p) for r in range(len(C.RECORD_NAMES)) for p in (0, 1)}
    assert {site[6] for site in C.SITES} == {site[7] for site in C.SITES} == set(range(len(C.PID_SOURCES)))
    assert all(site[6] != site[7] for site in C.SITES)
    from iris.tracing.events import EVENT_IDS
    assert {site[5] for site in C.SITES} == set(EVENT_IDS.values())


@pytest.mark.parametrize("warp_size", [32, 64])
@pytest.mark.parametrize("num_warps", C.NUM_WARPS)
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_layouts_are_valid_for_the_warp_size_and_num_warps(warp_size, num_warps, rank):
    layouts = C.layouts(rank, warp_size, num_warps)
    assert len(layouts) == C.LAYOUT_COUNT[rank]
    for layout in layouts:
        assert len(layout.size_per_thread) == len(layout.order) == rank, layout
        assert math.prod(layout.threads_per_warp) == warp_size, layout
        assert math.prod(layout.warps_per_cta) == num_warps, layout
        assert sorted(layout.order) == list(range(rank)), layout
    assert any(max(layout.size_per_thread) > 1 for layout in layouts)
    if rank >= 2:
        assert len({tuple(layout.order) for layout in layouts}) >= 2, "both orders"
        assert len({tuple(layout.threads_per_warp) for layout in layouts}) >= 2


def test_launches_cover_every_num_warps_and_element_size():
    assert sorted(nw for nw, _ in C.LAUNCHES) == sorted(C.NUM_WARPS) == [1, 2, 4, 8]
    assert sorted(C.ELEMENT_BYTES[d] for _, d in C.LAUNCHES) == [1, 2, 4, 8]


def test_offsets_of_each_shape_by_hand():
    gather = list(range(2 * C.B1 - 1, -1, -2))[: C.B1]
    assert C.offsets(C.SCALAR, 7, 2, 20, gather) == [7]
    assert C.offsets(C.CONTIG, 7, 2, 20, gather)[:3] == [7, 8, 9]
    assert C.offsets(C.STRIDED, 7, 3, 20, gather)[:3] == [7, 10, 13]
    assert C.offsets(C.STRIDED, 7, 0, 20, gather) == [7] * C.B1
    assert C.offsets(C.REVERSED, 7, 2, 20, gather)[:2] == [7 + C.B1 - 1, 7 + C.B1 - 2]
    assert C.offsets(C.GATHERED, 7, 2, 20, gather)[:2] == [7 + 127, 7 + 125]
    assert C.offsets(C.ROW, 7, 2, 20, gather) == [7 + j for j in range(C.BN)]
    assert C.offsets(C.COL, 7, 2, 20, gather) == [7 + 20 * i for i in range(C.BM)]
    tile = C.offsets(C.TILE, 7, 2, 20, gather)
    assert (tile[0], tile[1], tile[C.BN]) == (7, 8, 27)
    tile_t = C.offsets(C.TILE_T, 7, 2, 20, gather)
    assert (tile_t[0], tile_t[1], tile_t[C.BN]) == (7, 27, 8)
    cube = C.offsets(C.CUBE, 7, 2, 20, gather)
    assert (cube[0], cube[1], cube[C.C2], cube[C.C1 * C.C2]) == (7, 8, 27, 7 + 20 * C.C1)
    for shape, dims in BLOCK_SHAPES.items():
        assert len(C.offsets(shape, 0, 1, C.BN, gather)) == math.prod(dims)


def test_masks_by_hand():
    bits = [0] * C.BUFFER
    bits[3], bits[4], bits[5] = 1, 0, 1
    tile = C.offsets(C.TILE, 3, 1, C.BN, [0] * C.B1)
    rows = C.active(C.TILE, C.ROWS, tile, 3, bits, 1)
    assert rows[: 2 * C.BN] == [True] * C.BN + [False] * C.BN  # row i takes bits[3 + i]
    cols = C.active(C.TILE, C.COLS, tile, 3, bits, 1)
    assert cols[:3] == [True, False, True] and cols[C.BN: C.BN + 3] == [True, False, True]  # column j: bits[3 + j]
    cube = C.offsets(C.CUBE, 3, 1, C.BN, [0] * C.B1)
    planes = C.active(C.CUBE, C.ROWS, cube, 3, bits, 1)
    assert planes == [True] * (C.C1 * C.C2) + [False] * (C.C1 * C.C2)
    assert C.active(C.CONTIG, C.FLAG, [3, 4], 3, bits, 0) == [False, False]
    assert C.active(C.CONTIG, C.OFF, [3, 4], 3, bits, 1) == [False, False]
    assert C.active(C.CONTIG, C.BLOCK, [3, 4], 3, bits, 0) == [True, False]


@settings(max_examples=12, deadline=None, database=None)
@given(data=st.data(), world_size=st.integers(1, 3))
def test_every_example_covers_every_launch_dimension_and_stays_in_its_buffers(data, world_size):
    p = data.draw(scenario.params(world_size))
    axes = sorted(len(scenario._grid(p, j)[: 1 + (j + p["axes_shift"]) % 3]) for j in range(len(C.LAUNCHES)))
    assert set(axes) == {1, 2, 3}
    flags = {(shape + p["flag_shift"]) % 2 for shape, mask, *_ in C.SITES if mask == C.FLAG}
    assert flags == {0, 1}
    assert {scenario._part(p, s) for s in range(C.NUM_SITES)} == set(range(len(C.LAUNCHES)))
    assert p["loop_reps"] >= 64 and {-(2**63), 2**63 - 1, -1} <= set(p["pays"])
    model = scenario.model(p, world_size)
    for r, events in model.events.items():
        buffers = {e.address.buffer for e in events if e.address is not None}
        assert buffers == {f"buf_{d}" for _, d in C.LAUNCHES}, (r, buffers)
        assert all(0 <= e.address.index < C.BUFFER for e in events if e.address is not None)
        assert {e.kind for e in events} == {"range", "instant"}
        assert len(events) <= scenario.SCENARIO.max_events


def test_the_simplest_example_runs_several_programs_on_every_launch():
    first = settings(database=None, max_examples=1, phases=(Phase.generate,))  # the simplest example
    p = find(scenario.params(2), lambda p: True, settings=first)
    assert [scenario._programs(p, j) for j in range(len(C.LAUNCHES))] == [2, 4, 8, 2]
    assert 0 < sum(p["on"]) < C.NUM_SITES
