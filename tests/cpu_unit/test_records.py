"""TraceRecords.from_buffer on synthetic [len(TRACE_FIELDS), capacity] int64 arrays: kinds, durations, drops, rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iris.tracing.events import DURATION_INSTANT, DURATION_OPEN, EVENT_IDS, FIELD_INDEX, TRACE_FIELDS
from iris.tracing.records import KIND_INSTANT, KIND_RANGE, KIND_UNFINISHED, TraceRecords
from tests.cpu_unit.checks import check, check_array

pytestmark = pytest.mark.cpu_unit

OPEN, INSTANT = DURATION_OPEN.value, DURATION_INSTANT.value
# (event, duration_cycles) of the slots in order: ranges, an instant, an unfinished range.
SLOTS = [("store", 250), ("put", 0), ("user", INSTANT), ("get", OPEN), ("atomic_add", 1_000_003), ("load", INSTANT)]
KINDS = [KIND_RANGE, KIND_RANGE, KIND_INSTANT, KIND_UNFINISHED, KIND_RANGE, KIND_INSTANT]


def _value(field: str, slot: int) -> int:
    """A distinct value per (field, slot), so a shifted row or column shows."""
    return 1_000_000 * (FIELD_INDEX[field] + 1) + slot


def _buffer(capacity: int, slots=SLOTS) -> np.ndarray:
    """Records as a kernel leaves them: the first len(slots) slots written, the rest zero."""
    rows = np.zeros((len(TRACE_FIELDS), capacity), dtype=np.int64)
    for s, (event, dur) in enumerate(slots[:capacity]):
        for f in TRACE_FIELDS:
            rows[FIELD_INDEX[f], s] = _value(f, s)
        rows[FIELD_INDEX["event_id"], s] = EVENT_IDS[event]
        rows[FIELD_INDEX["duration_cycles"], s] = dur
        rows[FIELD_INDEX["op_index"], s] = s
    return rows


def _decode(rows, attempted, capacity, ticks_per_second=1e9, backend="cuda", rank=3) -> TraceRecords:
    return TraceRecords.from_buffer(rows, attempted, capacity, rank=rank, backend=backend,
                                    ticks_per_second=ticks_per_second)


def test_kinds_follow_the_duration_sentinel():
    rec = _decode(_buffer(8), len(SLOTS), 8)
    check_array("kind", rec["kind"], np.array(KINDS, dtype=np.int8))
    check_array("unfinished", rec.unfinished, np.array([3]))
    check("names()", rec.names(), [e for e, _ in SLOTS])


@pytest.mark.parametrize("backend,ticks_per_second,ns_per_tick", [("cuda", 1e9, 1.0), ("hip", 1e8, 10.0)])
def test_duration_ns(backend, ticks_per_second, ns_per_tick):
    rec = _decode(_buffer(8), len(SLOTS), 8, ticks_per_second, backend)
    expected = [d * ns_per_tick if k == KIND_RANGE else math.nan for (_, d), k in zip(SLOTS, KINDS, strict=True)]
    check_array("duration_ns", rec["duration_ns"], np.array(expected), f"{backend}, {ticks_per_second:g} ticks/s")
    check("ticks_per_second", rec.ticks_per_second, ticks_per_second)
    check("backend", rec.backend, backend)


@pytest.mark.parametrize("attempted,capacity,rows,dropped", [
    (0, 8, 0, 0),
    (6, 8, 6, 0),
    (6, 6, 6, 0),
    (6, 4, 4, 2),
    (1_000_000, 4, 4, 999_996),
])  # fmt: skip
def test_rows_and_dropped(attempted, capacity, rows, dropped):
    where = f"attempted={attempted}, capacity={capacity}"
    rec = _decode(_buffer(capacity), attempted, capacity)
    check("len(records)", len(rec), rows, where)
    check("dropped", rec.dropped, dropped, where)
    check("attempted", rec.attempted, attempted, where)
    check("capacity", rec.capacity, capacity, where)
    for name in (*TRACE_FIELDS, "kind", "duration_ns"):
        check(f"len(columns[{name!r}])", len(rec[name]), rows, where)


def test_columns_field_by_field():
    rec = _decode(_buffer(8), len(SLOTS), 8)
    for field in TRACE_FIELDS:
        expected = [_value(field, s) for s in range(len(SLOTS))]
        if field == "event_id":
            expected = [EVENT_IDS[e] for e, _ in SLOTS]
        elif field == "duration_cycles":
            expected = [d for _, d in SLOTS]
        elif field == "op_index":
            expected = list(range(len(SLOTS)))
        check_array(field, rec[field], np.array(expected, dtype=np.int64))
        check(f"{field}.dtype", rec[field].dtype, np.dtype(np.int64))


def test_rows_dicts_field_by_field():
    rec = _decode(_buffer(8), len(SLOTS), 8, ticks_per_second=1e8)
    rows = rec.rows()
    check("len(rows())", len(rows), len(SLOTS))
    kind_names = {KIND_RANGE: "range", KIND_INSTANT: "instant", KIND_UNFINISHED: "unfinished"}
    for s, row in enumerate(rows):
        event, dur = SLOTS[s]
        check(f"rows()[{s}] keys", sorted(row), sorted([*TRACE_FIELDS, "name", "kind", "duration_ns"]))
        for field in TRACE_FIELDS:
            check(f"rows()[{s}][{field!r}]", row[field], int(rec[field][s]))
            check(f"type(rows()[{s}][{field!r}])", type(row[field]), int)
        check(f"rows()[{s}]['name']", row["name"], event)
        check(f"rows()[{s}]['kind']", row["kind"], kind_names[KINDS[s]])
        check(f"rows()[{s}]['duration_ns']", row["duration_ns"], dur * 10.0 if KINDS[s] == KIND_RANGE else math.nan)


def test_unfinished_slots():
    slots = [("store", OPEN), ("store", 5), ("put", OPEN), ("user", INSTANT), ("copy", OPEN)]
    rec = _decode(_buffer(5, slots), 5, 5)
    check_array("unfinished", rec.unfinished, np.array([0, 2, 4]))
    rec = _decode(_buffer(5, slots), 2, 5)  # only the first two slots were recorded
    check_array("unfinished (2 recorded)", rec.unfinished, np.array([0]))


def test_unknown_event_id_decodes_to_a_readable_name():
    rows = _buffer(2)
    rows[FIELD_INDEX["event_id"], 1] = 999
    check("names()", _decode(rows, 2, 2).names(), ["store", "unknown(999)"])


def test_decoded_columns_do_not_alias_the_buffer():
    rows = _buffer(8)
    rec = _decode(rows, len(SLOTS), 8)
    rows[:] = 0  # the host reuses the buffer (reset) after decoding
    check("event_id[0] after the buffer was cleared", int(rec["event_id"][0]), EVENT_IDS["store"])
