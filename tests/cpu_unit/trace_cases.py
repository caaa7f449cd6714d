"""A two-rank trace written by hand and the slices, tracks and arrows an export of it must show.

Shared by the JSON and the binary Perfetto tests: each decodes its file into ``Slice`` values with its
own reader and compares them with ``expected_slices``, written out below (not derived from the code).

Rank 0: program 0 stores to rank 1, then starts a get from rank 1 that never ends; program 1 records an
instant; program 2 puts to rank 1 (zero length). Rank 1: program 5 runs an atomic_add on rank 0 and a
copy that overlaps it without nesting (so program 5 needs two lanes); program 3 nests a wait in a compute
and records a load instant. Remote ops: rank 0's store, get and put, rank 1's atomic_add.
"""

from __future__ import annotations

import numpy as np

from iris.tracing.events import DURATION_INSTANT, DURATION_OPEN, EVENT_IDS, FIELD_INDEX, TRACE_FIELDS
from iris.tracing.records import TraceRecords
from iris.tracing.timeline import EVENT_ARGS, RankTrace
from tests.trace_readers import Slice

OPEN, INSTANT = DURATION_OPEN.value, DURATION_INSTANT.value
ORIGINS = {0: 10_000_000, 1: 77_000_000}
# Per rank, per slot: (event, program, ticks after the origin, duration_cycles, target_rank).
EVENTS = {
    0: [("store", 0, 1000, 250, 1), ("user", 1, 2000, INSTANT, 0), ("get", 0, 3000, OPEN, 1), ("put", 2, 4000, 0, 1)],
    1: [("atomic_add", 5, 500, 1_000_000, 0), ("load", 3, 1500, INSTANT, 1), ("copy", 5, 600_000, 800_000, 1),
        ("compute", 3, 100, 5000, 1), ("wait", 3, 200, 1000, 1)],
}
WINDOW_END = 1_400_000  # ticks: the copy's end is the latest time of any event


def records(rank: int, ticks_per_second: float = 1e9, backend: str = "cuda", attempted: int | None = None,
            max_events: int = 16) -> TraceRecords:
    """``rank``'s records: every field a distinct value per (field, rank, slot) unless the table sets it."""
    events = EVENTS[rank]
    rows = np.zeros((len(TRACE_FIELDS), max_events), dtype=np.int64)
    for s, (name, pid, dt, dur, target) in enumerate(events):
        for f in TRACE_FIELDS:
            rows[FIELD_INDEX[f], s] = 1000 * (FIELD_INDEX[f] + 1) + 10 * rank + s
        values = {"event_id": EVENT_IDS[name], "pid": pid, "cur_rank": rank, "timestamp": ORIGINS[rank] + dt,
                  "duration_cycles": dur, "op_index": s, "address": 0x7F00_0000_0000 + 64 * s + rank,
                  "target_rank": target}
        for f, v in values.items():
            rows[FIELD_INDEX[f], s] = v
    attempted = len(events) if attempted is None else attempted
    written = min(len(events), max_events, attempted)
    dropped = attempted - written
    return TraceRecords.from_fields(rows[:, :written], dropped, max_events, rank=rank, backend=backend,
                                    ticks_per_second=ticks_per_second)


def traces(ticks_per_second: float = 1e9, backend: str = "cuda", api: str = "triton") -> list[RankTrace]:
    return [RankTrace(records(r, ticks_per_second, backend), ORIGINS[r], api) for r in (0, 1)]


def _event_args(rank: int, slot: int, unfinished: bool) -> dict:
    rec = records(rank)
    args = {a: int(rec[a][slot]) for a in EVENT_ARGS}
    if unfinished:
        args["unfinished"] = True
    return args


def expected_slices(ticks_per_second: float = 1e9, api: str = "triton", flows: bool = True) -> list[Slice]:
    """What the export of ``traces(ticks_per_second)`` must show (arrows labelled "r<rank>s<slot>")."""
    ns = int(1e9 / ticks_per_second)
    p0, p1 = f"{api} rank 0", f"{api} rank 1"
    # (process, track, name, rank, slot, start, end or None, remote)
    table = [
        (p0, "program 0", "store", 0, 0, 1000, 1250, True),
        (p0, "program 1", "user", 0, 1, 2000, None, False),
        (p0, "program 0", "get (unfinished)", 0, 2, 3000, WINDOW_END, True),
        (p0, "program 2", "put", 0, 3, 4000, 4000, True),
        (p1, "program 5", "atomic_add", 1, 0, 500, 1_000_500, True),
        (p1, "program 3", "load", 1, 1, 1500, None, False),
        (p1, "program 5 #2", "copy", 1, 2, 600_000, WINDOW_END, False),
        (p1, "program 3", "compute", 1, 3, 100, 5100, False),
        (p1, "program 3", "wait", 1, 4, 200, 1200, False),
    ]
    out = []
    for process, track, name, rank, slot, start, end, remote in table:
        unfinished = name.endswith("(unfinished)")
        out.append(Slice(process, track, name, start * ns, None if end is None else (end - start) * ns,
                         _event_args(rank, slot, unfinished), flow_out=f"r{rank}s{slot}" if remote and flows else None))
    if not flows:
        return out
    # Incoming copies on the target: the get's copy holds lane 0 to the end, so the put's takes lane 2.
    incoming = [(p1, "incoming", "store from rank 0", 0, 0, 1000, 1250),
                (p1, "incoming", "get from rank 0 (unfinished)", 0, 2, 3000, WINDOW_END),
                (p1, "incoming #2", "put from rank 0", 0, 3, 4000, 4000),
                (p0, "incoming", "atomic_add from rank 1", 1, 0, 500, 1_000_500)]
    for process, track, name, rank, slot, start, end in incoming:
        rec = records(rank)
        args = {"from_rank": rank, "from_program": EVENTS[rank][slot][1], "op_index": slot,
                "address": int(rec["address"][slot]), "payload_size": int(rec["payload_size"][slot])}
        if name.endswith("(unfinished)"):
            args["unfinished"] = True
        out.append(Slice(process, track, name, start * ns, (end - start) * ns, args, flow_in=f"r{rank}s{slot}"))
    return out


def check_slices(check, actual: list[Slice], expected: list[Slice], where: str = "") -> None:
    """Every expected slice is there, field by field, nothing else is, and the arrows pair up as expected."""
    __tracebackhide__ = True
    by_key = {s.key: s for s in actual}
    check("number of slices", len(actual), len(expected), where)
    check("distinct slices", len(by_key), len(actual), where)
    labels: dict = {}
    for e in expected:
        w = f"{where} {e.key}"
        check("slice present", e.key in by_key, True, w)
        a = by_key[e.key]
        check("dur_ns", a.dur_ns, e.dur_ns, w)
        check("args", a.args, e.args, w)
        for side in ("flow_out", "flow_in"):
            got, want = getattr(a, side), getattr(e, side)
            check(f"{side} present", got is not None, want is not None, w)
            if want is not None:
                check(f"{side} arrow", labels.setdefault(got, want), want, w)
    check("arrow ids", len(labels), len({e.flow_out for e in expected if e.flow_out}), where)
