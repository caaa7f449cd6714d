"""Slice order and lanes: the order a viewer must see begins and ends in, and which lane keeps slices apart.

A timeline track is a stack: an end closes the slice opened last on its track. So the begins and ends of
all slices are put in one order (``point_order``) that is by time, with ties broken so that slices that
nest stay nested: at one instant, ends of slices that began earlier come first (the later-begun one
first), then begins (the longer one first) and instants, then ends of zero-length slices. Ties are
broken within a group (the slices that share a track or its lanes) only: what happens at one instant
on different tracks needs no order. Every exporter uses this one order.

A group of ranges (the ranges of one program) *fits* one track when, in that order, every range's end
finds its own begin on top of the stack (``fits_one_track``; ``doubtful`` settles most groups without the
order). A group that does not fit is spread over lanes (``lanes``): greedy interval colouring, a lane freed
by an end reused by the next begin, so no two ranges of a lane overlap. Both run as a handful of sorts and
prefix sums, with no per-slice step.
"""

from __future__ import annotations

import numpy as np
import torch

# Phase of a point at one instant: ends of ranges that began earlier, begins and instants, ends of empty ranges.
_END_EARLIER, _BEGIN, _END_EMPTY = 0, 1, 2
_SHIFTS_MAX = 16  # longest run of points at one instant resolved by shifted compares instead of a sort


def point_order(start: np.ndarray, end: np.ndarray, is_range: np.ndarray,
                group: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Begins (and instants) and ends of all slices, in viewer order.

    Returns ``(slice_of_point, is_end)``, one entry per point: every slice has a begin point, every
    range (``is_range``) also an end point at ``end``. With ``group`` (per slice; default: one group)
    ties are broken only between points of one group: points of different groups land on different
    tracks, so their order at one instant is left as the sort put it.
    """
    n = len(start)
    ranges = np.flatnonzero(is_range)
    # Begins and ends sorted apart, then merged: a stable sort of two sorted runs is a linear merge.
    # The first two sorts need not be stable: every tie that matters is put in order below.
    ends = ranges[stable_argsort(end[ranges])]
    if in_start_order(start):  # records mostly are
        slice_of = np.concatenate([np.arange(n), ends])
        time = np.concatenate([start, end[ends]])
    else:
        begins = stable_argsort(start)
        slice_of = np.concatenate([begins, ends])
        time = np.concatenate([start[begins], end[ends]])
    t, order = stable_sort(time, runs=True)
    slice_of = slice_of[order]
    is_end = order >= n
    same = np.flatnonzero(t[1:] == t[:-1])
    if len(same):
        _break_ties(slice_of, is_end, t, same, start, end, group)
    return slice_of, is_end


def in_start_order(start: np.ndarray) -> bool:
    """Whether the slices are in start order already (then no sort finds their begin order)."""
    return bool(np.all(start[1:] >= start[:-1]))


TORCH_SORT_THREADS = 4  # torch's sort from this many threads up; numpy's radix passes below


def stable_sort(values: np.ndarray, runs: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``values`` sorted (as int64) and the stable permutation that sorts them.

    With ``TORCH_SORT_THREADS`` torch threads or more, torch's CPU sort: a radix sort on every core this process
    may use (on one 16-CPU host 17 ms for 2M int64 keys, where numpy's stable sort took 121 ms and its 16-bit
    radix passes 93 ms). With fewer, numpy's, which beats torch's on one or two threads: its merge sort where
    ``runs`` says the values are a few sorted runs (it merges them), else 16-bit radix passes.
    """
    keys = np.ascontiguousarray(values, dtype=np.int64)
    if torch.get_num_threads() < TORCH_SORT_THREADS:
        order = np.argsort(keys, kind="stable") if runs else _radix_argsort(keys)
        return keys[order], order
    if not keys.flags.writeable:  # torch shares the memory and wants it writable (it does not write it)
        keys = keys.copy()
    ordered, order = torch.sort(torch.from_numpy(keys), stable=True)
    return ordered.numpy(), order.numpy()


def _radix_argsort(values: np.ndarray) -> np.ndarray:
    """A stable argsort of int64 ``values``; within a 32-bit range by 16-bit radix passes, 2x numpy's own."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    low = int(values.min())
    span = int(values.max()) - low
    if span >= 1 << 32:
        return np.argsort(values, kind="stable")
    digit = values.astype(np.uint16)  # the low 16 bits of values - low (the cast keeps the low bits)
    digit -= np.uint16(low & 0xFFFF)
    order = np.argsort(digit, kind="stable")  # numpy sorts 16-bit keys by radix
    if span < 1 << 16:
        return order
    high = ((values[order] - low) >> 16).astype(np.uint16)
    return order[np.argsort(high, kind="stable")]


def stable_argsort(values: np.ndarray) -> np.ndarray:
    """The stable permutation that sorts the integers ``values`` (``stable_sort``)."""
    return stable_sort(values)[1]


def _break_ties(slice_of: np.ndarray, is_end: np.ndarray, t: np.ndarray, same: np.ndarray, start: np.ndarray,
                end: np.ndarray, group: np.ndarray | None) -> None:
    """Put the points that share their instant and their group in viewer order, in place.

    ``same``: positions ``i`` with ``t[i] == t[i + 1]``. Only points that share their (instant, group)
    with another point are reordered, among the positions they hold: every instant keeps its positions.
    """
    tied = np.zeros(len(t), dtype=bool)
    tied[same] = True
    tied[same + 1] = True
    pos = np.flatnonzero(tied)
    first = np.concatenate([[True], t[pos[1:]] != t[pos[:-1]]])
    run = np.cumsum(first)  # one id per instant
    g = np.zeros(len(pos), dtype=np.int64) if group is None else group[slice_of[pos]]
    length = np.diff(np.append(np.flatnonzero(first), len(pos)))[run - 1]  # points at this instant
    dup = np.zeros(len(pos), dtype=bool)
    short = length <= _SHIFTS_MAX
    for d in range(1, int(length[short].max(initial=1))):  # compare each point with the next ones
        m = (run[d:] == run[:-d]) & (g[d:] == g[:-d])
        dup[d:] |= m
        dup[:-d] |= m
    long = np.flatnonzero(~short)  # crowded instants (e.g. the window end): sorted instead
    if len(long):
        by = long[np.lexsort((g[long], run[long]))]
        m = (run[by][1:] == run[by][:-1]) & (g[by][1:] == g[by][:-1])
        dup[by[1:][m]] = True
        dup[by[:-1][m]] = True
    if not dup.any():
        return
    d = pos[dup]
    s, e = slice_of[d], is_end[d]
    empty = end[s] == start[s]
    phase = np.where(e, np.where(empty, _END_EMPTY, _END_EARLIER), _BEGIN)
    other = np.where(e, -start[s], -end[s])  # begins: longer first; ends: later-begun first
    index = np.where(e, -s, s)  # identical slices: begin in index order, end in reverse
    # Sorted by instant first, so each instant's points go back into that instant's positions.
    by = np.lexsort((index, other, phase, g[dup], run[dup]))
    slice_of[d], is_end[d] = s[by], e[by]


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


def fits_one_track(slice_of_point: np.ndarray, is_end: np.ndarray, group: np.ndarray, is_range: np.ndarray,
                   start: np.ndarray, end: np.ndarray, doubt: np.ndarray | None | str = "compute") -> np.ndarray:
    """Per slice: False for a range whose end would close another slice on its group's single track.

    ``slice_of_point``/``is_end`` come from ``point_order``; ``group``, ``start`` and ``end`` are per
    slice. Most groups are settled by ``doubtful`` (``doubt``: its result, where it was computed ahead); in the
    others an end closes its own begin exactly when the stack depth after the begin equals the depth before the
    end.
    """
    ok = np.ones(len(group), dtype=bool)
    if isinstance(doubt, str):
        doubt = doubtful(group, is_range, start, end, None if in_start_order(start) else slice_of_point[~is_end])
    if doubt is None:
        return ok
    kept = np.flatnonzero((is_range & doubt)[slice_of_point])
    if not len(kept):
        return ok
    # The range points gathered per group in viewer order: one sort of (group, position, is_end) keys.
    _, dense = dense_ids(group[slice_of_point[kept]])
    pos_bits = int(kept[-1]).bit_length()
    key = (dense << (pos_bits + 1)) | (kept << 1) | is_end[kept]
    key = stable_sort(key)[0]
    e = (key & 1).astype(bool)
    s = slice_of_point[(key >> 1) & ((1 << pos_bits) - 1)]
    depth_after = np.cumsum(np.where(e, -1, 1))  # every group is balanced: it starts and ends at depth 0
    begin_depth = np.zeros(len(group), dtype=np.int64)
    end_depth = np.zeros(len(group), dtype=np.int64)
    begin_depth[s[~e]] = depth_after[~e]
    ends = s[e]
    end_depth[ends] = depth_after[e] + 1
    ok[ends] = begin_depth[ends] == end_depth[ends]
    return ok


def doubtful(group: np.ndarray, is_range: np.ndarray, start: np.ndarray, end: np.ndarray,
             begins: np.ndarray | None = None) -> np.ndarray | None:
    """Per slice, whether its group may not fit one track and needs the full test; None when no group does.

    ``begins``: the slices in begin order (``point_order``'s begins); None where the slices are in start order
    already, so this needs no point order and can run beside ``point_order``.

    A group fits for sure when, in begin order, each of its ranges ends before the next one begins,
    leaving out the ranges that end last of all (at the trace window's end, as unfinished ranges do):
    those enclose every range that begins after them, so they only need that no range is open across
    their begin.
    """
    begins = np.flatnonzero(is_range) if begins is None else begins[is_range[begins]]
    if not len(begins):
        return None
    g, order = stable_sort(group[begins])  # the ranges grouped, in begin order within a group
    begins = begins[order]
    b_start, b_end = start[begins], end[begins]
    last = b_end == b_end.max()
    inner = np.flatnonzero(~last)
    gi = g[inner]
    bad = (gi[1:] == gi[:-1]) & (b_end[inner[:-1]] > b_start[inner[1:]])
    bad_groups = [gi[1:][bad]]
    prev = np.maximum.accumulate(np.where(last, -1, np.arange(len(begins))))  # the latest range before, not last
    at = np.flatnonzero(last & (prev >= 0))
    p = prev[at]
    across = (g[p] == g[at]) & (b_start[p] < b_start[at]) & (b_start[at] < b_end[p])
    bad_groups.append(g[at][across])
    bad_groups = np.concatenate(bad_groups)
    if not len(bad_groups):
        return None
    return np.isin(group, bad_groups)


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
    g, perm = stable_sort(group[s])  # the points gathered per group, in order within a group
    s, e = s[perm], e[perm]
    after = np.cumsum(np.where(e, 1, -1))  # free lanes, relative to the group's start
    level = np.where(e, after, after + 1)  # a begin's level is the count before it takes a lane
    _, g_dense = dense_ids(g)
    span = 2 * len(s) + 1
    bucket = stable_argsort(g_dense.astype(np.int64) * span + (level + len(s)))
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
