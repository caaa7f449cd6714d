"""Three-way comparison of one example: Triton vs model, Gluon vs model, Triton vs Gluon.

Observed events are normalized first (``conformance.check.normalize``): to the logical fields of ``Event``s
(``conformance.check.model``), addresses to (heap rank, buffer, index), keys to program order. Events are keyed by
``(cur_rank, pid, k)`` where ``k`` is the event's position within its program (programs claim slots in program
order, so sorting a program's events by ``op_index`` gives it). Each side is a set of numpy columns
(``conformance.check.columns.EventColumns``), compared all at once: ``Event``s and a ``Divergence`` are made only
for the first row that differs, so a million events compare in well under a second
(``benchmarks/bench_compare.py``).

Logical fields must be equal; physical fields (timestamps, durations, SM/CU/XCC ids) must be valid:
inside the launch window, ordered, in range for the device, and a range the model nests in another of its program
(``Event.within``) within that one's span. ``op_index`` must be the slot the event
was found in (record semantics v2: unique per rank, increasing in program order, not dense: slots a program
claimed and never used are holes), and each chunk of slots holds one program's records, its lowest slot a chunk
start. What the host reports is checked too: every host view of the counters (``_host_counters``: ``events()``'s
``attempted`` and ``dropped``, ``tracing.attempted``, ``tracing.dropped``, ``tracing.claimed``,
``tracing.trace_counter``), every word of the guard slot past ``max_events``, which no kernel may write
(``tracing.guard_changes()``), and the exported trace file's counts and events (``conformance.check.exported``),
against the model and each other. Memory is compared exactly. Each divergence names the check, rank, program,
event, field and both values, and carries the first diverging event of each side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from conformance.check.columns import COLUMNS, Codes, EventColumns, model_columns
from conformance.check.divergence import Divergence, between, vs_model
from conformance.check.model import Model
from conformance.check.normalize import AddressMap, exported_columns, records_columns
from iris.tracing.events import PHYSICAL_FIELDS, TRACE_FIELDS, event_name
from iris.tracing.guard import word_fields
from iris.tracing.hw import XCC_ID_LIMIT
from iris.tracing.records import KIND_NAMES, KIND_RANGE

if TYPE_CHECKING:
    from conformance.check.observation import ApiObservation, RankObservation
    from iris.tracing.guard import GuardWord
    from iris.tracing.records import TraceRecords

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

# ------------------------------------------------------------------------------------------------ comparison


def _compare_programs(check: str, rank: int, got: EventColumns, want: EventColumns, prefix_only: bool = False,
                      where_prefix: str = "") -> list[Divergence]:
    """The first divergence between two sides' events, program by program (pids in order) and event by event in
    each (``prefix_only``: ``got``'s programs may be prefixes of ``want``'s): the first logical field that differs,
    or else a program with another number of events."""
    same_pids = len(got.pids) == len(want.pids) and bool(np.all(got.pids == want.pids))
    pids = got.pids if same_pids else np.union1d(got.pids, want.pids)
    g_start, g_count = _programs(got, pids, same_pids)
    w_start, w_count = _programs(want, pids, same_pids)
    common = np.minimum(g_count, w_count)
    ends = np.cumsum(common)
    if np.array_equal(g_count, w_count):  # row i of one side against row i of the other
        g_rows = w_rows = None
    else:
        k = np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - common, common)
        g_rows, w_rows = np.repeat(g_start, common) + k, np.repeat(w_start, common) + k
    pair = _first_difference(got, want, g_rows, w_rows)
    counted = np.flatnonzero((g_count != w_count) & ~(prefix_only & (g_count < w_count)))
    program = None if pair is None else int(np.searchsorted(ends, pair, side="right"))
    if program is not None and (not len(counted) or program <= counted[0]):
        i, j = (pair, pair) if g_rows is None else (int(g_rows[pair]), int(w_rows[pair]))
        left, right = got.event(i), want.event(j)
        fields = left.diff(right)
        assert fields, f"their columns differ, the events do not: {left} vs {right}"
        where = f"{where_prefix}pid {pids[program]} event {i - int(g_start[program])}"
        return [Divergence(check, rank, where, fields[0], getattr(left, fields[0]), getattr(right, fields[0]), left,
                           right)]
    if not len(counted):
        return []
    p = int(counted[0])
    k = int(common[p])  # the first event one side has and the other has not
    left = got.event(int(g_start[p]) + k) if k < g_count[p] else None
    right = want.event(int(w_start[p]) + k) if k < w_count[p] else None
    return [Divergence(check, rank, f"{where_prefix}pid {pids[p]}", "events in program", int(g_count[p]),
                       int(w_count[p]), left, right)]


def _programs(side: EventColumns, pids: np.ndarray, same: bool) -> tuple[np.ndarray, np.ndarray]:
    """The first row and the number of events of each of ``pids`` on ``side`` (0 where it has none); ``same``:
    ``pids`` are the side's own."""
    if same:
        return side.starts, side.counts
    start, count = np.zeros(len(pids), dtype=np.int64), np.zeros(len(pids), dtype=np.int64)
    if len(side.pids):
        at = np.searchsorted(side.pids, pids)
        found = at < len(side.pids)
        found[found] = side.pids[at[found]] == pids[found]
        start[found], count[found] = side.starts[at[found]], side.counts[at[found]]
    return start, count


def _first_difference(got: EventColumns, want: EventColumns, g_rows: np.ndarray | None,
                      w_rows: np.ndarray | None) -> int | None:
    """The first pair (row i of both sides, or ``g_rows[i]`` against ``w_rows[i]``) whose columns differ."""
    differ = None
    for c in COLUMNS:
        a, b = got.columns[c], want.columns[c]
        if g_rows is not None:
            a, b = a[g_rows], b[w_rows]
        d = a != b
        differ = d if differ is None else np.logical_or(differ, d, out=differ)
    at = np.flatnonzero(differ) if differ is not None else ()
    return int(at[0]) if len(at) else None


class PhysicalCheck(NamedTuple):
    """The validity of one physical field: ``valid(columns, obs, t0, t1)`` marks every record that holds a valid
    value (the records' columns, the rank's observation, the launch window); ``expected(columns, i, obs, t0, t1)``
    says what record i should hold."""

    valid: Callable[..., np.ndarray]
    expected: Callable[..., str]


def _timestamp_valid(c: dict, obs: RankObservation, t0: int, t1: int) -> np.ndarray:
    return (c["timestamp"] >= t0) & (c["timestamp"] <= t1)


def _timestamp_expected(c: dict, i: int, obs: RankObservation, t0: int, t1: int) -> str:
    return f"within launch window [{t0}, {t1}]"


def _duration_valid(c: dict, obs: RankObservation, t0: int, t1: int) -> np.ndarray:
    d = c["duration_cycles"]
    return (c["kind"] != KIND_RANGE) | ((d >= 0) & _at_most(d, t1, c["timestamp"]))


def _duration_expected(c: dict, i: int, obs: RankObservation, t0: int, t1: int) -> str:
    return f"in [0, {t1 - int(c['timestamp'][i])}]"


def _at_most(x: np.ndarray, high: int, low: np.ndarray) -> np.ndarray:
    """``x <= high - low``, exact: where the difference leaves int64, those records are compared as Python ints."""
    out = x <= high - low
    wide = (low < high - _INT64_MAX) | (low > high - _INT64_MIN)
    if wide.any():
        out[wide] = [v <= high - w for v, w in zip(x[wide].tolist(), low[wide].tolist(), strict=True)]
    return out


def _cu_id_valid(c: dict, obs: RankObservation, t0: int, t1: int) -> np.ndarray:
    return (c["cu_id"] >= 0) & (c["cu_id"] < obs.cu_limit)


def _cu_id_expected(c: dict, i: int, obs: RankObservation, t0: int, t1: int) -> str:
    return f"in [0, {obs.cu_limit})"


def _xcc_id_valid(c: dict, obs: RankObservation, t0: int, t1: int) -> np.ndarray:
    return (c["xcc_id"] >= 0) & (c["xcc_id"] < XCC_ID_LIMIT[obs.backend])


def _xcc_id_expected(c: dict, i: int, obs: RankObservation, t0: int, t1: int) -> str:
    return f"in [0, {XCC_ID_LIMIT[obs.backend]})"


# The validity check of every physical field of ``events.FIELDS`` (tests/cpu_unit/test_compare.py: one each).
PHYSICAL_CHECKS: dict[str, PhysicalCheck] = {
    "timestamp": PhysicalCheck(_timestamp_valid, _timestamp_expected),
    "duration_cycles": PhysicalCheck(_duration_valid, _duration_expected),
    "cu_id": PhysicalCheck(_cu_id_valid, _cu_id_expected),
    "xcc_id": PhysicalCheck(_xcc_id_valid, _xcc_id_expected),
}


def _physical(api: str, rank: int, records: TraceRecords, obs: RankObservation) -> list[Divergence]:
    """The first record (in slot order) with a physical field out of range, and its first such field."""
    if not len(records):
        return []
    t0, t1 = obs.apis[api].window
    c = records.columns
    invalid = {name: ~PHYSICAL_CHECKS[name].valid(c, obs, t0, t1) for name in PHYSICAL_FIELDS}
    at = np.flatnonzero(np.logical_or.reduce(list(invalid.values())))
    if not len(at):
        return []
    i = int(at[0])
    name = next(n for n in PHYSICAL_FIELDS if invalid[n][i])
    return [Divergence(vs_model(api), rank, f"pid {int(c['pid'][i])} op_index {int(c['op_index'][i])}", name,
                       int(c[name][i]), PHYSICAL_CHECKS[name].expected(c, i, obs, t0, t1))]


def _containment(check: str, rank: int, records: TraceRecords, events: list) -> list[Divergence]:
    """Every range the model nests in another (``Event.within``: an op's own range inside the manual range around the
    call, an acquire inside the wait for its flag) starts at or after that range's start and ends at or before its
    end: one clock per program, so this holds on every device. Checked in programs whose events the logical
    comparison pairs one to one (as many as the model's); the first that breaks it is reported."""
    programs: dict[int, list] = {}
    for e in events:
        programs.setdefault(e.pid, []).append(e)
    nested = {pid: evs for pid, evs in programs.items() if any(e.within is not None for e in evs)}
    if not nested or not len(records):
        return []
    c = records.columns
    order = np.lexsort((c["op_index"], c["pid"]))
    pid, start, kind = c["pid"][order], c["timestamp"][order], c["kind"][order]
    end = start + c["duration_cycles"][order]
    pids, first, count = np.unique(pid, return_index=True, return_counts=True)
    for p, evs in nested.items():
        at = int(np.searchsorted(pids, p))
        if at == len(pids) or pids[at] != p or count[at] != len(evs):
            continue
        base = int(first[at])
        for k, e in enumerate(evs):  # Model refuses a within that names no earlier event
            i, o = base + k, base + (e.within if e.within is not None else k)
            if e.within is None or kind[i] != KIND_RANGE or kind[o] != KIND_RANGE:
                continue
            if start[i] < start[o] or end[i] > end[o]:
                return [Divergence(check, rank, f"pid {p} event {k}", "span",
                                   f"[{int(start[i])}, {int(end[i])}]",
                                   f"within event {e.within}'s [{int(start[o])}, {int(end[o])}]")]
    return []


def _op_indices(check: str, rank: int, records: TraceRecords, max_events: int, chunk: int) -> list[Divergence]:
    """Every event's op_index is the slot it was found in (so unique per rank), below the max_events; and the
    slots fill whole chunks, each chunk one program's: a program id's lowest slot starts a chunk (a program's
    first record takes the first slot of the chunk it claimed at initialize), and no chunk holds the records of
    two program ids (programs that share a cursor, or a chunk handed out twice, break one or the other). Records
    are taken in slot order; the first that breaks a rule is reported."""
    c = records.columns
    if not len(records):
        return []
    op_index, slot, pid = c["op_index"], c["slot"], c["pid"]
    moved = op_index != slot
    outside = (slot < 0) | (slot >= max_events)
    owner = pid[_first_of_each(slot // chunk)]  # the program of each record's chunk's first record
    shared = pid != owner
    at = np.flatnonzero(moved | outside | shared)
    if len(at):
        i = int(at[0])
        where = f"slot {int(slot[i])} (pid {int(pid[i])})"
        if moved[i]:
            return [Divergence(check, rank, where, "op_index", int(op_index[i]), int(slot[i]))]
        if outside[i]:
            return [Divergence(check, rank, where, "slot", int(slot[i]), f"in [0, {max_events})")]
        return [Divergence(check, rank, where, "chunk owner", int(pid[i]), f"pid {int(owner[i])} (chunk {chunk})")]
    pids, lowest = _lowest(pid, slot)
    off = np.flatnonzero(lowest % chunk)
    if len(off):
        p, s = int(pids[off[0]]), int(lowest[off[0]])
        return [Divergence(check, rank, f"slot {s} (pid {p})", "first slot", s, f"a multiple of the chunk {chunk}")]
    return []


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    """For each element, the index of the first element with its key."""
    if len(keys) < 2 or bool(np.all(keys[1:] >= keys[:-1])):  # in order (records in slot order): runs
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        return np.repeat(starts, np.diff(np.append(starts, len(keys))))
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first[inverse]


def _lowest(pid: np.ndarray, slot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each program id (sorted) and its lowest slot."""
    order = np.lexsort((slot, pid))
    pid, slot = pid[order], slot[order]
    first = np.flatnonzero(np.concatenate(([True], pid[1:] != pid[:-1])))
    return pid[first], slot[first]


ROWS_CHECKED = 4096  # ``events().rows()`` is read row by row up to this many events on a rank (every small example)


def _rows_view(check: str, rank: int, records: TraceRecords) -> list[Divergence]:
    """``events().rows()``, the rows users read, against the columns the comparison reads: every key of every row
    (each field and the slot as ints, ``name`` the event id's, ``kind`` the kind's name, ``duration_ns``); one
    divergence, at the first row and key that differ. Only up to ``ROWS_CHECKED`` events: rows are Python dicts,
    built for tests and small traces (the columns carry every event, whatever the size)."""
    if len(records) > ROWS_CHECKED:
        return []
    c = records.columns
    for i, row in enumerate(records.rows()):
        want = {**{f: int(c[f][i]) for f in (*TRACE_FIELDS, "slot")}, "name": event_name(c["event_id"][i]),
                "kind": KIND_NAMES[int(c["kind"][i])], "duration_ns": float(c["duration_ns"][i])}
        wrong = (next((k for k in want if not _same(row.get(k), want[k])), None)
                 or next((k for k in row if k not in want), None))
        if wrong is not None:
            return [Divergence(check, rank, f"events().rows()[{i}]", wrong, row.get(wrong, "(missing)"),
                               want.get(wrong, "(no such key)"))]
    return []


def _same(x: object, y: object) -> bool:
    """``x == y``, and a NaN the same as a NaN (the ``duration_ns`` of a range never ended or an instant)."""
    return x == y or (isinstance(x, float) and isinstance(y, float) and np.isnan(x) and np.isnan(y))


def _memory(check: str, rank: int, got: dict, want: dict) -> list[Divergence]:
    for name, values in want.items():
        actual = got.get(name)
        if actual is None:
            return [Divergence(check, rank, f"buffer {name}", "buffer", None, "allocated by setup")]
        flat_a, flat_w = _flatten(actual), _flatten(values)
        if len(flat_a) != len(flat_w):
            return [Divergence(check, rank, f"buffer {name}", "elements", len(flat_a), len(flat_w))]
        if flat_a == flat_w:
            continue
        for i, (a, w) in enumerate(zip(flat_a, flat_w, strict=True)):
            if a != w:
                return [Divergence(check, rank, f"buffer {name}[{i}]", "value", a, w)]
    return []


def _flatten(x) -> list:
    """Elements of a nested list (``tensor.tolist()`` or a model's) in row-major order; a scalar is one element.
    A level is nested when its first item is a list (both sides come from regular shapes)."""
    if not isinstance(x, (list, tuple)):
        return [x]
    if x and isinstance(x[0], (list, tuple)):
        return [v for item in x for v in _flatten(item)]
    return list(x)


def _host_counters(check: str, rank: int, a: ApiObservation, top: int, attempted: int, dropped: int,
                   claimed: int | None, chunk: int, max_events: int) -> list[Divergence]:
    """Every host view of the counters (``a``: one API's observation) against the model: ``attempted`` and
    ``dropped`` as ``events()`` reports them and as ``tracing.attempted`` and ``tracing.dropped`` do; the claimed
    slots as ``tracing.claimed`` and ``tracing.trace_counter`` report them, against the model's ``claimed`` where
    it has one, else against each other and what the slots imply: a whole number of chunks, above every kept
    slot (``top``, -1 when none is kept), and at least ``max_events`` when a record was dropped (a record is
    dropped only when every slot is claimed); and nothing written past the end (``_guard``)."""
    host = a.host
    views = [("events().attempted", a.records.attempted, attempted), ("tracing.attempted", host.attempted, attempted),
             ("events().dropped", a.records.dropped, dropped), ("tracing.dropped", host.dropped, dropped)]
    if claimed is not None:
        views += [("tracing.claimed", host.claimed, claimed),
                  ("tracing.trace_counter", host.trace_counter, claimed)]
    out = [Divergence(check, rank, "whole launch", f, actual, want) for f, actual, want in views if actual != want]
    out += _guard(check, rank, host.guard_changes, max_events)
    if claimed is not None:
        return out
    got = host.claimed
    if host.trace_counter != got:
        out.append(Divergence(check, rank, "whole launch", "tracing.trace_counter", host.trace_counter,
                              f"{got} (tracing.claimed)"))
    elif got % chunk:
        out.append(Divergence(check, rank, "whole launch", "tracing.claimed", got, f"a multiple of the chunk {chunk}"))
    elif got <= top:
        out.append(Divergence(check, rank, "whole launch", "tracing.claimed", got, f"> {top} (the highest kept slot)"))
    elif dropped and got < max_events:
        out.append(Divergence(check, rank, "whole launch", "tracing.claimed", got,
                              f">= {max_events} (max_events: {dropped} records dropped)"))
    return out


def _guard(check: str, rank: int, changes: tuple[GuardWord, ...], max_events: int) -> list[Divergence]:
    """One divergence per word of the guard slot past ``max_events`` that a kernel changed (``tracing.guard_changes()``:
    no correct kernel writes there), naming the word, its fields, what it held and what the host wrote."""
    where = f"guard slot past max_events={max_events}"
    return [Divergence(check, rank, where, f"word {c.word} ({', '.join(word_fields(c.word))})", c.found,
                       f"{c.expected} (written at enable/reset; no kernel writes past the end)") for c in changes]


def _host_reports(check: str, rank: int, obs: RankObservation, api: str, want: EventColumns, prefix_only: bool,
                  expected_dropped: int, addresses: AddressMap, codes: Codes, recorded: EventColumns
                  ) -> list[Divergence]:
    """What the host's exported trace file holds: its counts and events (``recorded``: the records' own
    ``EventColumns``, which the trace's are where it holds the same rows)."""
    kept = len(obs.apis[api].records)
    out = []
    exported = obs.apis[api].exported
    if exported.dropped != expected_dropped:
        out.append(Divergence(check, rank, "exported trace", "dropped", exported.dropped, expected_dropped))
    if exported.events != kept or len(exported) != kept:
        out.append(Divergence(check, rank, "exported trace", "events", (exported.events, len(exported)),
                              (kept, kept)))
    got = exported_columns(exported, addresses, codes, (obs.apis[api].records, recorded))
    return out + _compare_programs(check, rank, got, want, prefix_only=prefix_only, where_prefix="exported trace, ")


def compare(model: Model, observations: list[RankObservation], apis: tuple[str, ...], heap_bytes: int,
            chunk: int, max_events: int) -> list[Divergence]:
    """Every divergence of one example (at most one per check, rank and kind of evidence); ``chunk`` and
    ``max_events``: what the ranks enabled tracing with (``ExampleSettings``)."""
    out: list[Divergence] = []
    codes = Codes()  # one table of names, kinds and buffers for every side of the example
    for obs in observations:
        r = obs.rank
        want = model_columns(model.events.get(r, []), codes)
        seen: dict[str, EventColumns] = {}
        for api in apis:
            check = vs_model(api)
            a = obs.apis[api]
            addresses = AddressMap(obs.heap_bases, a.layout, heap_bytes)
            got = seen[api] = records_columns(a.records, addresses, codes)
            records = a.records
            overflow = model.max_events is not None and model.max_events < model.attempted(r)
            if overflow and len(records) > model.max_events:
                out.append(Divergence(check, r, "whole launch", "kept events", len(records),
                                      f"<= {model.max_events}"))
            if model.kept is not None and len(records) != model.kept[r]:
                out.append(Divergence(check, r, "whole launch", "kept events", len(records), model.kept[r]))
            # v2: under overflow, how many are kept depends on which programs claimed first (and on holes); every
            # record is kept or dropped, never both, so the drops are what the model attempted less what was kept
            dropped = model.attempted(r) - len(records) if overflow else 0
            claimed = None if model.claimed is None else model.claimed[r]
            top = int(records["slot"].max()) if len(records) else -1
            out += _host_counters(check, r, a, top, model.attempted(r), dropped, claimed, chunk, max_events)
            out += _compare_programs(check, r, got, want, prefix_only=overflow)
            out += _op_indices(check, r, records, max_events, chunk)
            out += _containment(check, r, records, model.events.get(r, []))
            out += _physical(api, r, records, obs)
            out += _rows_view(check, r, records)
            out += _memory(check, r, a.memory, model.memory.get(r, {}))
            out += _host_reports(check, r, obs, api, want, overflow, dropped, addresses, codes, got)
        if len(apis) == 2:
            x, y = apis
            check = between(x, y)
            if model.max_events is None or model.max_events >= model.attempted(r):
                out += _compare_programs(check, r, seen[x], seen[y])
            mx, my = obs.apis[x].memory, obs.apis[y].memory
            out += _memory(check, r, mx, my)
    return out
