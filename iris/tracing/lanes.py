"""Slice order and lanes: the order a viewer must see begins and ends in, and which lane keeps slices apart.

A timeline track is a stack: an end closes the slice opened last on its track. So the begins and ends of
all slices are put in one order (``point_order``) that is by time, with ties broken so that slices that
nest stay nested: at one instant, ends of slices that began earlier come first (the later-begun one
first), then begins (the longer one first) and instants, then ends of zero-length slices. Every
exporter uses this one order.

A group of ranges (the ranges of one program) *fits* one track when, in that order, every range's end
finds its own begin on top of the stack (``fits_one_track``). A group that does not fit is spread over
lanes (``lanes``): greedy interval colouring, a lane freed by an end reused by the next begin, so no
two ranges of a lane overlap. Both run as a handful of sorts and prefix sums, with no per-slice step.
"""

from __future__ import annotations

import numpy as np

# Phase of a point at one instant: ends of ranges that began earlier, begins and instants, ends of empty ranges.
_END_EARLIER, _BEGIN, _END_EMPTY = 0, 1, 2


def point_order(start: np.ndarray, end: np.ndarray, is_range: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Begins (and instants) and ends of all slices, in viewer order.

    Returns ``(slice_of_point, is_end)``, one entry per point: every slice has a begin point, every
    range (``is_range``) also an end point at ``end``.
    """
    n = len(start)
    ranges = np.nonzero(is_range)[0]
    # Begins and ends sorted apart (records come nearly in time order), then merged: a stable sort of
    # two sorted runs is a linear merge.
    begins = np.argsort(start, kind="stable")
    ends = ranges[np.argsort(end[ranges], kind="stable")]
    slice_of = np.concatenate([begins, ends])
    is_end = np.concatenate([np.zeros(n, dtype=bool), np.ones(len(ranges), dtype=bool)])
    time = np.concatenate([start[begins], end[ends]])
    order = np.argsort(time, kind="stable")
    t = time[order]
    tied = np.zeros(len(t), dtype=bool)
    same = t[1:] == t[:-1]
    tied[1:] |= same
    tied[:-1] |= same
    if tied.any():
        # Reorder only the points that share their instant with another one.
        pos = np.nonzero(tied)[0]
        pts = order[pos]
        s, e = slice_of[pts], is_end[pts]
        empty = end[s] == start[s]
        phase = np.where(e, np.where(empty, _END_EMPTY, _END_EARLIER), _BEGIN)
        other = np.where(e, -start[s], -end[s])  # begins: longer first; ends: later-begun first
        index = np.where(e, -s, s)  # identical slices: begin in index order, end in reverse
        order[pos] = pts[np.lexsort((index, other, phase, t[pos]))]
    return slice_of[order], is_end[order]


def dense_ids(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``, by counting instead of sorting when the range is small."""
    values = np.asarray(values, dtype=np.int64)
    if not len(values):
        return values.copy(), np.zeros(0, dtype=np.int64)
    low, high = int(values.min()), int(values.max())
    if high - low > 4 * len(values) + 4096:
        uniq, inverse = np.unique(values, return_inverse=True)
        return uniq, inverse.astype(np.int64)
    present = np.bincount(values - low, minlength=high - low + 1) > 0
    rank = np.cumsum(present) - 1
    return np.nonzero(present)[0] + low, rank[values - low]


def _grouped(group_of_point: np.ndarray) -> np.ndarray:
    """Permutation that gathers the points of each group, keeping their order within the group."""
    _, dense = dense_ids(group_of_point)
    if dense.max(initial=0) < 1 << 16:
        return np.argsort(dense.astype(np.uint16), kind="stable")  # a radix sort
    return np.argsort(dense, kind="stable")


def fits_one_track(slice_of_point: np.ndarray, is_end: np.ndarray, group: np.ndarray,
                   is_range: np.ndarray) -> np.ndarray:
    """Per slice: False for a range whose end would close another slice on its group's single track.

    ``slice_of_point``/``is_end`` come from ``point_order``; ``group`` is per slice. An end closes its
    own begin exactly when the stack depth after the begin equals the depth before the end.
    """
    ok = np.ones(len(group), dtype=bool)
    keep = is_range[slice_of_point]
    s, e = slice_of_point[keep], is_end[keep]
    if not len(s):
        return ok
    perm = _grouped(group[s])
    s, e = s[perm], e[perm]
    depth_after = np.cumsum(np.where(e, -1, 1))  # every group is balanced: it starts and ends at depth 0
    begin_depth = np.zeros(len(group), dtype=np.int64)
    end_depth = np.zeros(len(group), dtype=np.int64)
    begin_depth[s[~e]] = depth_after[~e]
    end_depth[s[e]] = depth_after[e] + 1
    ok[s[e]] = begin_depth[s[e]] == end_depth[s[e]]
    return ok


def lanes(slice_of_point: np.ndarray, is_end: np.ndarray, group: np.ndarray, is_range: np.ndarray,
          select: np.ndarray) -> np.ndarray:
    """Lane (0, 1, ...) of every selected range so ranges of one group and lane never overlap; others 0.

    Greedy colouring in point order: an end frees its lane, a begin takes the lane freed last, or a new
    one. As brackets: ends open, begins close; a begin is matched to the end just before it at the same
    level of the running sum, and inherits that end's lane; an unmatched begin opens lane ``-level``.
    """
    out = np.zeros(len(group), dtype=np.int64)
    keep = (is_range & select)[slice_of_point]
    s, e = slice_of_point[keep], is_end[keep]
    if not len(s):
        return out
    perm = _grouped(group[s])
    s, e, g = s[perm], e[perm], group[s[perm]]
    after = np.cumsum(np.where(e, 1, -1))  # free lanes, relative to the group's start
    level = np.where(e, after, after + 1)  # a begin's level is the count before it takes a lane
    _, g_dense = dense_ids(g)
    span = 2 * len(s) + 1
    bucket = np.argsort(g_dense.astype(np.int64) * span + (level + len(s)), kind="stable")
    bs, be, bl = s[bucket], e[bucket], level[bucket]
    same_bucket = np.zeros(len(bucket), dtype=bool)
    same_bucket[1:] = (g_dense[bucket][1:] == g_dense[bucket][:-1]) & (bl[1:] == bl[:-1])
    begins = ~be
    matched = begins & same_bucket & np.concatenate([[False], be[:-1]])
    parent = np.arange(len(group))
    lane = np.zeros(len(group), dtype=np.int64)
    parent[bs[matched]] = bs[np.nonzero(matched)[0] - 1]
    roots = begins & ~matched
    lane[bs[roots]] = -bl[roots]
    while True:  # pointer jumping: about log2(longest chain of reuses) rounds
        up = parent[parent]
        if np.array_equal(up, parent):
            break
        parent = up
    chosen = np.nonzero(is_range & select)[0]
    out[chosen] = lane[parent[chosen]]
    return out
