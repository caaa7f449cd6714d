"""Viewer order of slice begins and ends, the one-track test, and lanes, against a plain stack simulation."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iris.tracing import lanes
from tests.cpu_unit.checks import check, check_that

pytestmark = pytest.mark.cpu_unit

# (group, start, length or None for an instant)
_SLICES = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 12), st.one_of(st.none(), st.integers(0, 6))),
                   min_size=1, max_size=30)


def _arrays(slices):
    group = np.array([g for g, _, _ in slices], dtype=np.int64)
    start = np.array([s for _, s, _ in slices], dtype=np.int64)
    is_range = np.array([n is not None for _, _, n in slices])
    end = start + np.array([n or 0 for _, _, n in slices], dtype=np.int64)
    return group, start, end, is_range


def _stack_fits(points, group, is_range) -> dict:
    """Per group: does a viewer's stack (an end closes the slice opened last) close every range itself?"""
    stacks, ok = {}, {}
    for s, is_end in points:
        if not is_range[s]:
            continue
        g = int(group[s])
        stack = stacks.setdefault(g, [])
        ok.setdefault(g, True)
        if is_end:
            ok[g] &= stack.pop() == s
        else:
            stack.append(s)
    return ok


@settings(max_examples=200, deadline=None)  # timing varies on a loaded machine
@given(_SLICES)
def test_point_order(slices):
    group, start, end, is_range = _arrays(slices)
    s, is_end = lanes.point_order(start, end, is_range)
    check("points", len(s), len(slices) + int(is_range.sum()))
    times = np.where(is_end, end[s], start[s])
    check_that("times", times.tolist(), bool(np.all(np.diff(times) >= 0)), "non-decreasing")
    seen = set()
    for i, e in zip(s.tolist(), is_end.tolist(), strict=True):
        check("end after its begin", (i in seen) if e else (i not in seen), True, f"slice {i}")
        seen.add(i)
    # Ranges that nest (one inside another, equal bounds included) keep nesting: a single group of
    # pairwise nested-or-disjoint ranges always fits one track.
    pts = list(zip(s.tolist(), is_end.tolist(), strict=True))
    ranges = [(int(start[i]), int(end[i])) for i in np.nonzero(is_range)[0]]
    laminar = all(a1 <= b0 or b1 <= a0 or (a0 <= b0 and b1 <= a1) or (b0 <= a0 and a1 <= b1)
                  for k, (a0, a1) in enumerate(ranges) for (b0, b1) in ranges[k + 1:])
    if laminar:
        check("laminar ranges fit", _stack_fits(pts, np.zeros_like(group), is_range).get(0, True), True)


@settings(max_examples=200, deadline=None)  # timing varies on a loaded machine
@given(_SLICES)
def test_point_order_per_group_is_the_order_of_the_group_alone(slices):
    """With groups, each group's points come in the order ``point_order`` gives that group by itself."""
    group, start, end, is_range = _arrays(slices)
    s, is_end = lanes.point_order(start, end, is_range, group)
    times = np.where(is_end, end[s], start[s])
    check_that("times", times.tolist(), bool(np.all(np.diff(times) >= 0)), "non-decreasing")
    with mock.patch.object(lanes, "_SHIFTS_MAX", 1):  # every crowded instant through the sort instead
        s_sorted, is_end_sorted = lanes.point_order(start, end, is_range, group)
    check("order when ties are sorted", (s_sorted.tolist(), is_end_sorted.tolist()), (s.tolist(), is_end.tolist()))
    for g in np.unique(group).tolist():
        members = np.flatnonzero(group == g)
        alone, alone_end = lanes.point_order(start[members], end[members], is_range[members])
        mine = group[s] == g
        check("points of the group", list(zip(s[mine].tolist(), is_end[mine].tolist(), strict=True)),
              list(zip(members[alone].tolist(), alone_end.tolist(), strict=True)), f"group {g}")


@settings(max_examples=200, deadline=None)  # timing varies on a loaded machine
@given(_SLICES)
def test_fits_one_track_agrees_with_a_stack(slices):
    group, start, end, is_range = _arrays(slices)
    s, is_end = lanes.point_order(start, end, is_range)
    fits = lanes.fits_one_track(s, is_end, group, is_range, start, end)
    want = _stack_fits(zip(s.tolist(), is_end.tolist(), strict=True), group, is_range)
    for g, ok in want.items():
        check("group fits", bool(fits[group == g].all()), ok, f"group {g}")
    check("instants always fit", bool(fits[~is_range].all()), True)
    # The doubt computed ahead from the viewer order's begins (as the timeline does) decides the same.
    ahead = lanes.doubtful(group, is_range, start, end, s[~is_end])
    check("fits with the doubt computed ahead", lanes.fits_one_track(s, is_end, group, is_range, start, end,
                                                                     ahead).tolist(), fits.tolist())
    if bool(np.all(start[1:] >= start[:-1])):  # in start order: the doubt needs no viewer order
        check("fits with the doubt of start order", lanes.fits_one_track(
            s, is_end, group, is_range, start, end, lanes.doubtful(group, is_range, start, end)).tolist(),
            fits.tolist())


@settings(max_examples=200, deadline=None)  # timing varies on a loaded machine
@given(_SLICES)
def test_lanes_never_overlap_and_are_as_few_as_the_depth(slices):
    group, start, end, is_range = _arrays(slices)
    s, is_end = lanes.point_order(start, end, is_range)
    lane = lanes.lanes(s, is_end, group, is_range, np.ones(len(group), dtype=bool))
    check("instants on lane 0", lane[~is_range].tolist(), [0] * int((~is_range).sum()))
    open_lane, depth, most = {}, {}, {}
    for i, e in zip(s.tolist(), is_end.tolist(), strict=True):
        if not is_range[i]:
            continue
        key, g = (int(group[i]), int(lane[i])), int(group[i])
        if e:
            check("lane closes its own range", open_lane.pop(key), i, f"slice {i}")
            depth[g] -= 1
        else:
            check_that("lane free", key, key not in open_lane, "no open range on this lane", f"slice {i}")
            open_lane[key] = i
            depth[g] = depth.get(g, 0) + 1
            most[g] = max(most.get(g, 0), depth[g])
    for g, d in most.items():
        check("lanes used", int(lane[is_range & (group == g)].max()) + 1, d, f"group {g}")


def test_dense_ids_match_unique():
    for values in ([5, 3, 5, 9, 3], [0], [], [-(2**40), 7, 2**40], list(range(100, 0, -3))):
        v = np.array(values, dtype=np.int64)
        uniq, inverse = lanes.dense_ids(v)
        want_u, want_i = np.unique(v, return_inverse=True)
        check("uniques", uniq.tolist(), want_u.tolist(), str(values))
        check("inverse", inverse.tolist(), want_i.tolist(), str(values))


@pytest.mark.parametrize("threads", [1, lanes.TORCH_SORT_THREADS], ids=["radix", "torch"])
def test_stable_sort_is_numpys_stable_sort_at_every_span(monkeypatch, threads):
    """Sorted keys and the stable permutation, as numpy's stable sort gives them, on both paths (numpy's radix
    passes, torch's sort): ties keep their order, negative and large values, 16-bit keys and read-only arrays
    included."""
    monkeypatch.setattr(lanes.torch, "get_num_threads", lambda: threads)
    rng = np.random.default_rng(3)
    for low, span, n in [(0, 10, 50), (-5, 11, 100), (10**12, 70_000, 2000), (-(2**40), 2**31, 5000),
                         (0, 2**40, 300), (7, 1, 10), (2**62, 2**20, 100)]:
        v = low + rng.integers(0, span, n)
        for runs in (False, True):
            ordered, order = lanes.stable_sort(v, runs=runs)
            check("order", order.tolist(), np.argsort(v, kind="stable").tolist(), f"span {span}, runs={runs}")
            check("sorted", ordered.tolist(), np.sort(v).tolist(), f"span {span}, runs={runs}")
    small = rng.integers(0, 9, 40).astype(np.uint16)
    small.flags.writeable = False
    check("order of read-only uint16 keys", lanes.stable_argsort(small).tolist(),
          np.argsort(small, kind="stable").tolist())
    check("empty", lanes.stable_argsort(np.zeros(0, dtype=np.int64)).tolist(), [])
