"""The comparison as it was before it went column-wise: ``conformance.check.compare`` one event at a time, kept as
the reference the column-wise one must match divergence for divergence (``tests/cpu_unit/test_compare_columns.py``).

Every observed event becomes an ``Event`` (addresses normalized one by one), events are grouped per program in
Python dicts and compared pairwise; the records and the exported trace are read as a dict per row. Slow (about a
minute for a million events) but plain. Not used by the suite. What did not change (the memory checks, the
counter and guard slot checks given the highest kept slot, the one-address map and the row-to-event step) is imported
from the modules that hold it now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.check.compare import _host_counters, _memory  # unchanged: not per event
from conformance.check.divergence import Divergence, between, vs_model
from conformance.check.model import Event, Model
from conformance.check.normalize import AddressMap, to_event  # one address (and one row) at a time, as before
from iris.tracing.events import PHYSICAL_FIELDS
from iris.tracing.hw import XCC_ID_LIMIT

if TYPE_CHECKING:
    from conformance.check.observation import RankObservation

# ---------------------------------------------------------------------------------------------- normalization


def by_program(events: list[Event], order: list[int]) -> dict[int, list[Event]]:
    """``{pid: events in program order}`` given each event's ``op_index`` in ``order``."""
    programs: dict[int, list[tuple[int, Event]]] = {}
    for op_index, ev in zip(order, events, strict=True):
        programs.setdefault(ev.pid, []).append((op_index, ev))
    return {pid: [ev for _, ev in sorted(evs, key=lambda x: x[0])] for pid, evs in sorted(programs.items())}


def expected_by_program(events: list[Event]) -> dict[int, list[Event]]:
    """A model's events grouped per program, keeping their listed order."""
    programs: dict[int, list[Event]] = {}
    for ev in events:
        programs.setdefault(ev.pid, []).append(ev)
    return dict(sorted(programs.items()))


# ------------------------------------------------------------------------------------------------ comparison


def observed_events(rank_obs: RankObservation, api: str, heap_bytes: int, source: str = "rows"
                    ) -> tuple[dict[int, list[Event]], list[dict]]:
    """``({pid: events in program order}, raw rows)`` of one API on one rank: the decoded slots
    (``source="rows"``: its records, a dict per event) or the events of its exported trace file (``"exported"``)."""
    a = rank_obs.apis[api]
    amap = AddressMap(rank_obs.heap_bases, a.layout, heap_bytes)
    rows = a.records.rows() if source == "rows" else a.exported.rows
    events = [to_event(r, amap) for r in rows]
    return by_program(events, [r["op_index"] for r in rows]), rows


def _compare_programs(check, rank, got, want, prefix_only=False, where_prefix="") -> list[Divergence]:
    """First divergence between two ``{pid: [Event]}`` maps (``prefix_only``: ``got`` may be a prefix)."""
    for pid in sorted(set(got) | set(want)):
        g, w = got.get(pid, []), want.get(pid, [])
        for k in range(max(len(g), len(w))):
            left = g[k] if k < len(g) else None
            right = w[k] if k < len(w) else None
            if left is None and prefix_only:
                break
            where = f"{where_prefix}pid {pid} event {k}"
            if left is None or right is None:
                count = (len(g), len(w))
                return [Divergence(check, rank, f"{where_prefix}pid {pid}", "events in program", count[0], count[1],
                                   left, right)]
            fields = left.diff(right)
            if fields:
                f = fields[0]
                return [Divergence(check, rank, where, f, getattr(left, f), getattr(right, f), left, right)]
    return []


def _valid_timestamp(r: dict, obs: RankObservation, t0: int, t1: int) -> str | None:
    return None if t0 <= r["timestamp"] <= t1 else f"within launch window [{t0}, {t1}]"


def _valid_duration(r: dict, obs: RankObservation, t0: int, t1: int) -> str | None:
    bound = t1 - r["timestamp"]
    return None if r["kind"] != "range" or 0 <= r["duration_cycles"] <= bound else f"in [0, {bound}]"


def _valid_cu_id(r: dict, obs: RankObservation, t0: int, t1: int) -> str | None:
    return None if 0 <= r["cu_id"] < obs.cu_limit else f"in [0, {obs.cu_limit})"


def _valid_xcc_id(r: dict, obs: RankObservation, t0: int, t1: int) -> str | None:
    limit = XCC_ID_LIMIT[obs.backend]
    return None if 0 <= r["xcc_id"] < limit else f"in [0, {limit})"


# The validity check of every physical field of ``events.FIELDS`` (tests/cpu_unit/test_compare.py: one each).
PHYSICAL_CHECKS = {"timestamp": _valid_timestamp, "duration_cycles": _valid_duration, "cu_id": _valid_cu_id,
                   "xcc_id": _valid_xcc_id}


def _physical(api: str, rank: int, rows: list[dict], obs: RankObservation) -> list[Divergence]:
    t0, t1 = obs.apis[api].window
    check = vs_model(api)
    for r in rows:
        for name in PHYSICAL_FIELDS:
            expected = PHYSICAL_CHECKS[name](r, obs, t0, t1)
            if expected is not None:
                return [Divergence(check, rank, f"pid {r['pid']} op_index {r['op_index']}", name, r[name], expected)]
    return []


def _op_indices(check: str, rank: int, rows: list[dict], max_events: int, chunk: int) -> list[Divergence]:
    """Every event's op_index is the slot it was found in (so unique per rank), below the max_events; and the
    slots fill whole chunks, each chunk one program's: a program id's lowest slot starts a chunk (a program's
    first record takes the first slot of the chunk it claimed at initialize), and no chunk holds the records of
    two program ids (programs that share a cursor, or a chunk handed out twice, break one or the other)."""
    owner: dict[int, int] = {}
    lowest: dict[int, int] = {}
    for r in rows:
        where = f"slot {r['slot']} (pid {r['pid']})"
        if r["op_index"] != r["slot"]:
            return [Divergence(check, rank, where, "op_index", r["op_index"], r["slot"])]
        if not 0 <= r["slot"] < max_events:
            return [Divergence(check, rank, where, "slot", r["slot"], f"in [0, {max_events})")]
        first = owner.setdefault(r["slot"] // chunk, r["pid"])
        if first != r["pid"]:
            return [Divergence(check, rank, where, "chunk owner", r["pid"], f"pid {first} (chunk {chunk})")]
        lowest[r["pid"]] = min(lowest.get(r["pid"], r["slot"]), r["slot"])
    for pid, slot in sorted(lowest.items()):
        if slot % chunk:
            return [Divergence(check, rank, f"slot {slot} (pid {pid})", "first slot", slot,
                               f"a multiple of the chunk {chunk}")]
    return []


def _host_reports(check: str, rank: int, obs: RankObservation, api: str, want, prefix_only: bool,
                  expected_dropped: int, heap_bytes: int) -> list[Divergence]:
    """What the host's exported trace file holds: its counts and events."""
    kept = len(obs.apis[api].records)
    out = []
    exported = obs.apis[api].exported
    if exported.dropped != expected_dropped:
        out.append(Divergence(check, rank, "exported trace", "dropped", exported.dropped, expected_dropped))
    if exported.events != kept or len(exported.rows) != kept:
        out.append(Divergence(check, rank, "exported trace", "events", (exported.events, len(exported.rows)),
                              (kept, kept)))
    got, _ = observed_events(obs, api, heap_bytes, source="exported")
    return out + _compare_programs(check, rank, got, want, prefix_only=prefix_only, where_prefix="exported trace, ")


def compare(model: Model, observations: list[RankObservation], apis: tuple[str, ...], heap_bytes: int,
            chunk: int, max_events: int) -> list[Divergence]:
    """Every divergence of one example (at most one per check, rank and kind of evidence); ``chunk`` and
    ``max_events``: what the ranks enabled tracing with (``ExampleSettings``)."""
    out: list[Divergence] = []
    seen: dict[str, list[dict[int, list[Event]]]] = {api: [] for api in apis}
    for obs in observations:
        r = obs.rank
        want = expected_by_program(model.events.get(r, []))
        for api in apis:
            check = vs_model(api)
            got, rows = observed_events(obs, api, heap_bytes)
            seen[api].append(got)
            a = obs.apis[api]
            overflow = model.max_events is not None and model.max_events < model.attempted(r)
            if overflow and len(rows) > model.max_events:
                out.append(Divergence(check, r, "whole launch", "kept events", len(rows), f"<= {model.max_events}"))
            if model.kept is not None and len(rows) != model.kept[r]:
                out.append(Divergence(check, r, "whole launch", "kept events", len(rows), model.kept[r]))
            # v2: under overflow, how many are kept depends on which programs claimed first (and on holes); every
            # record is kept or dropped, never both, so the drops are what the model attempted less what was kept
            dropped = model.attempted(r) - len(rows) if overflow else 0
            claimed = None if model.claimed is None else model.claimed[r]
            top = max((row["slot"] for row in rows), default=-1)
            out += _host_counters(check, r, a, top, model.attempted(r), dropped, claimed, chunk, max_events)
            out += _compare_programs(check, r, got, want, prefix_only=overflow)
            out += _op_indices(check, r, rows, max_events, chunk)
            out += _physical(api, r, rows, obs)
            out += _memory(check, r, a.memory, model.memory.get(r, {}))
            out += _host_reports(check, r, obs, api, want, overflow, dropped, heap_bytes)
        if len(apis) == 2:
            x, y = apis
            check = between(x, y)
            gx, gy = seen[x][-1], seen[y][-1]
            if model.max_events is None or model.max_events >= model.attempted(r):
                out += _compare_programs(check, r, gx, gy)
            mx, my = obs.apis[x].memory, obs.apis[y].memory
            out += _memory(check, r, mx, my)
    return out
