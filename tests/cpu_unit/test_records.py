"""TraceRecords.from_slots on synthetic slot-major [slots, RECORD_WORDS] int64 buffers as a kernel leaves them
(holes where no record was written): kinds, durations, holes, drops, rows, slots; the record format's two host
sides, ``encode_records`` and ``decode_words``, against each other and against the field table word by word; and
the GPU's read-back path (``unpack_slots``, ``TraceRecords.from_unpacked``; run on CPU tensors here) against them."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from iris import context_layout
from iris.tracing import events
from iris.tracing.events import (
    DURATION_INSTANT,
    DURATION_OPEN,
    EMPTY_EVENT,
    EVENT_IDS,
    FIELD_INDEX,
    FIELDS,
    TRACE_FIELDS,
)
from iris.tracing.records import (
    HOST_FIELDS,
    KIND_INSTANT,
    KIND_RANGE,
    KIND_UNFINISHED,
    TraceRecords,
    decode_words,
    encode_records,
    int32_column,
    renumber_old_ids,
    unpack_slots,
)
from tests.cpu_unit.checks import check, check_array, check_that

pytestmark = pytest.mark.cpu_unit

OPEN, INSTANT = DURATION_OPEN.value, DURATION_INSTANT.value
# (event, duration_cycles) of the slots in order: ranges, an instant, an unfinished range.
SLOTS = [("store", 250), ("put", 0), ("user", INSTANT), ("get", OPEN), ("atomic_add", 1_000_003), ("load", INSTANT)]
KINDS = [KIND_RANGE, KIND_RANGE, KIND_INSTANT, KIND_UNFINISHED, KIND_RANGE, KIND_INSTANT]


def _value(field: str, slot: int) -> int:
    """A distinct value per (field, slot), so a shifted row or column shows."""
    return 1_000_000 * (FIELD_INDEX[field] + 1) + slot


def _buffer(max_events: int, slots=SLOTS, holes=()) -> np.ndarray:
    """Slots as kernels leave them: one record per slot in order, skipping the ``holes`` (EMPTY_EVENT, the rest of
    their words garbage), every slot past the records a hole too."""
    buf = np.full((max_events, context_layout.RECORD_WORDS), 0x5A5A, dtype=np.int64)
    buf.view(np.int32)[:, int32_column("event_id")] = EMPTY_EVENT.value
    where = [s for s in range(max_events) if s not in holes]
    for (event, dur), s in zip(slots, where, strict=False):
        fields = np.array([[_value(f, s)] for f in TRACE_FIELDS], dtype=np.int64)
        fields[FIELD_INDEX["event_id"]] = EVENT_IDS[event]
        fields[FIELD_INDEX["duration_cycles"]] = dur
        buf[s] = encode_records(fields)[0]
    return buf


def _decode(buf, dropped=0, max_events=None, ticks_per_second=1e9, backend="cuda", rank=3) -> TraceRecords:
    return TraceRecords.from_slots(buf, dropped, len(buf) if max_events is None else max_events, rank=rank,
                                   backend=backend, ticks_per_second=ticks_per_second)


def test_kinds_follow_the_duration_sentinel():
    rec = _decode(_buffer(8))
    check_array("kind", rec["kind"], np.array(KINDS, dtype=np.int8))
    check_array("unfinished", rec.unfinished, np.array([3]))
    check("names()", rec.names(), [e for e, _ in SLOTS])


@pytest.mark.parametrize("backend,ticks_per_second,ns_per_tick", [("cuda", 1e9, 1.0), ("hip", 1e8, 10.0)])
def test_duration_ns(backend, ticks_per_second, ns_per_tick):
    rec = _decode(_buffer(8), ticks_per_second=ticks_per_second, backend=backend)
    expected = [d * ns_per_tick if k == KIND_RANGE else math.nan for (_, d), k in zip(SLOTS, KINDS, strict=True)]
    check_array("duration_ns", rec["duration_ns"], np.array(expected), f"{backend}, {ticks_per_second:g} ticks/s")
    check("ticks_per_second", rec.ticks_per_second, ticks_per_second)
    check("backend", rec.backend, backend)


@pytest.mark.parametrize("holes", [(), (0,), (1, 2), (0, 3, 5, 7), tuple(range(1, 12, 2))])
def test_holes_are_skipped_and_every_event_keeps_its_slot(holes):
    buf = _buffer(16, holes=holes)
    rec = _decode(buf)
    slots = [s for s in range(16) if s not in holes][: len(SLOTS)]
    where = f"holes {holes}"
    check("len(records)", len(rec), len(SLOTS), where)
    check_array("slot", rec["slot"], np.array(slots), where)
    check_array("op_index", rec["op_index"], np.array(slots), where)
    check("names()", rec.names(), [e for e, _ in SLOTS], where)
    check_array("payload", rec["payload"], np.array([_value("payload", s) for s in slots]), where)


@pytest.mark.parametrize("max_events,written,dropped", [(8, 0, 0), (8, 6, 0), (6, 6, 0), (4, 4, 2), (4, 4, 999_996)])
def test_rows_dropped_and_attempted(max_events, written, dropped):
    where = f"max_events={max_events}, {written} written, dropped={dropped}"
    rec = _decode(_buffer(max_events, SLOTS[:written]), dropped)
    check("len(records)", len(rec), written, where)
    check("dropped", rec.dropped, dropped, where)
    check("attempted", rec.attempted, written + dropped, where)
    check("max_events", rec.max_events, max_events, where)
    for name in (*TRACE_FIELDS, "slot", "kind", "duration_ns"):
        check(f"len(columns[{name!r}])", len(rec[name]), written, where)


def test_columns_field_by_field():
    rec = _decode(_buffer(8))
    for field in TRACE_FIELDS:
        expected = [_value(field, s) for s in range(len(SLOTS))]
        if field == "event_id":
            expected = [EVENT_IDS[e] for e, _ in SLOTS]
        elif field == "duration_cycles":
            expected = [d for _, d in SLOTS]
        elif field == "op_index":
            expected = list(range(len(SLOTS)))
        elif field == "cur_rank":
            expected = [3] * len(SLOTS)  # the rank _decode gives: the rank whose buffers these are
        check_array(field, rec[field], np.array(expected, dtype=np.int64))
        check(f"{field}.dtype", rec[field].dtype, np.dtype(np.int64))


def test_rows_dicts_field_by_field():
    rec = _decode(_buffer(8), ticks_per_second=1e8)
    rows = rec.rows()
    check("len(rows())", len(rows), len(SLOTS))
    kind_names = {KIND_RANGE: "range", KIND_INSTANT: "instant", KIND_UNFINISHED: "unfinished"}
    for s, row in enumerate(rows):
        event, dur = SLOTS[s]
        check(f"rows()[{s}] keys", sorted(row), sorted([*TRACE_FIELDS, "slot", "name", "kind", "duration_ns"]))
        for field in (*TRACE_FIELDS, "slot"):
            check(f"rows()[{s}][{field!r}]", row[field], int(rec[field][s]))
            check(f"type(rows()[{s}][{field!r}])", type(row[field]), int)
        check(f"rows()[{s}]['name']", row["name"], event)
        check(f"rows()[{s}]['kind']", row["kind"], kind_names[KINDS[s]])
        check(f"rows()[{s}]['duration_ns']", row["duration_ns"], dur * 10.0 if KINDS[s] == KIND_RANGE else math.nan)


def test_unfinished_slots():
    slots = [("store", OPEN), ("store", 5), ("put", OPEN), ("user", INSTANT), ("copy", OPEN)]
    rec = _decode(_buffer(5, slots))
    check_array("unfinished", rec.unfinished, np.array([0, 2, 4]))
    rec = _decode(_buffer(5, slots, holes=(0, 1, 2)))  # only two records fit after three holes
    check_array("unfinished (after holes)", rec.unfinished, np.array([0]))


def test_unknown_event_id_decodes_to_a_readable_name():
    buf = _buffer(2)
    buf.view(np.int32)[1, int32_column("event_id")] = 999
    check("names()", _decode(buf).names(), ["store", "unknown(999)"])


# Records as a kernel built before the ids moved to upstream's leaves them: ids 14-17, beside ids that stay.
OLD_SLOTS = [(14, "barrier"), (13, "atomic_max"), (15, "wait"), (16, "compute"), (17, "user"), (16, "compute")]


def _old_buffer() -> np.ndarray:
    buf = _buffer(len(OLD_SLOTS) + 2, SLOTS[:1] * len(OLD_SLOTS))
    buf.view(np.int32)[: len(OLD_SLOTS), int32_column("event_id")] = [old for old, _ in OLD_SLOTS]
    return buf


def _decoded_warnings(decode) -> tuple[TraceRecords, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = decode()
    return rec, [w for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("path", ["from_slots", "from_unpacked"])
def test_old_ids_decode_to_the_new_ids_and_names_with_one_warning(monkeypatch, path):
    monkeypatch.setattr(events, "_old_ids_warned", False)
    buf = _old_buffer()
    kw = {"rank": 3, "backend": "cuda", "ticks_per_second": 1e9}
    decode = {"from_slots": lambda: _decode(buf),
              "from_unpacked": lambda: TraceRecords.from_unpacked(unpack_slots(torch.from_numpy(buf), 3).numpy(), 0,
                                                                  len(buf), **kw)}[path]
    rec, caught = _decoded_warnings(decode)
    check_array("event_id", rec["event_id"], np.array([EVENT_IDS[n] for _, n in OLD_SLOTS]), path)
    check("names()", rec.names(), [n for _, n in OLD_SLOTS], path)
    check("warnings", [str(w.message) for w in caught], [events.OLD_IDS_WARNING], path)
    check("warning points at the caller", caught[0].filename, __file__, path)
    check("raw ids left in the buffer", buf.view(np.int32)[: len(OLD_SLOTS), int32_column("event_id")].tolist(),
          [old for old, _ in OLD_SLOTS], path)
    _, caught = _decoded_warnings(decode)
    check("warnings at the second decode", caught, [], path)


def test_renumbering_leaves_every_other_id_and_copies_nothing_without_old_ids(monkeypatch):
    monkeypatch.setattr(events, "_old_ids_warned", False)
    others = np.array([-1, 0, 13, 18, 1024, 2048, 2049, 3072, 3073, 4096, -(2**31), 2**31 - 1], dtype=np.int64)
    check_that("renumber_old_ids(ids without old ones) is ids", renumber_old_ids(others) is others,
               renumber_old_ids(others) is others, "the same array, not a copy")
    with pytest.warns(DeprecationWarning, match="trace event ids 14 "):
        renumbered = renumber_old_ids(np.array([14, 15, 16, 17, 13, 18]))
    check_array("renumbered", renumbered, np.array([3073, 3072, 2048, 4096, 13, 18]))


def test_decoded_columns_do_not_alias_the_buffer():
    buf = _buffer(8)
    rec = _decode(buf)
    buf[:] = 0  # the host reuses the buffer (reset) after decoding
    check("event_id[0] after the buffer was cleared", int(rec["event_id"][0]), EVENT_IDS["store"])


def test_from_fields_takes_field_major_columns_and_slots_default_to_op_index():
    fields = decode_words(_buffer(8)[: len(SLOTS)].T, 1, np.arange(len(SLOTS)))
    rec = TraceRecords.from_fields(fields, 2, 8, rank=1, backend="cuda", ticks_per_second=1e9)
    check_array("slot", rec["slot"], np.arange(len(SLOTS)))
    check("attempted", rec.attempted, len(SLOTS) + 2)


# ---- the record format: field table, encoder, decoder ---------------------------------------------------------


def test_every_stored_field_has_its_own_bits_and_the_record_is_64_bytes():
    used: dict[tuple[int, int], str] = {}
    for f in FIELDS:
        if f.name in HOST_FIELDS:
            check(f"{f.name}.word", f.word, None)
            continue
        check(f"{f.name}: bits/shift", (f.bits, f.shift) in {(64, 0), (32, 0), (32, 32)}, True)
        check(f"{f.name}.word", 0 <= f.word < context_layout.RECORD_WORDS, True)
        for bit in range(f.shift, f.shift + f.bits, 32):
            check(f"{f.name}: word {f.word} bit {bit} also holds", used.get((f.word, bit)), None)
            used[(f.word, bit)] = f.name
    check("record bits in use", len(used), 2 * context_layout.RECORD_WORDS)
    check("record bytes", context_layout.RECORD_WORDS * 8, 64)


# Values at the edges of each field's bits: 32-bit fields at their int32 bounds, 64-bit ones at int64's.
_EDGES = {32: [-(2**31), -2, -1, 0, 1, 2**31 - 1], 64: [-(2**63), -(2**31) - 1, -1, 0, 2**32, 2**63 - 1]}


def test_encode_then_decode_gives_every_field_back_at_its_bounds():
    n = 6
    fields = np.zeros((len(FIELDS), n), dtype=np.int64)
    for i, f in enumerate(FIELDS):
        if f.name not in HOST_FIELDS:
            fields[i] = np.roll(_EDGES[f.bits], i)  # rolled: neighbours in a word differ
    words = encode_records(fields)
    check("encoded shape", words.shape, (n, context_layout.RECORD_WORDS))
    decoded = decode_words(np.ascontiguousarray(words.T), 5, np.array([7, 8, 9, 10, 11, 12]))
    for i, f in enumerate(FIELDS):
        want = fields[i]
        if f.name == "cur_rank":
            want = np.full(n, 5)
        elif f.name == "op_index":
            want = np.arange(7, 13)
        check_array(f.name, decoded[i], want)


def test_each_field_lands_in_its_word_and_half():
    for i, f in enumerate(FIELDS):
        if f.name in HOST_FIELDS:
            continue
        fields = np.zeros((len(FIELDS), 1), dtype=np.int64)
        fields[i] = -1  # every bit of the field set
        words = encode_records(fields)[0]
        want = [0] * context_layout.RECORD_WORDS
        want[f.word] = -1 if f.bits == 64 else (0xFFFFFFFF << f.shift) - (1 << 64 if f.shift else 0)
        check(f"{f.name}: words", words.tolist(), want)


def test_unpack_slots_gives_what_decode_words_gives_at_every_bound():
    n = 6
    fields = np.zeros((len(FIELDS), n), dtype=np.int64)
    for i, f in enumerate(FIELDS):
        if f.name not in HOST_FIELDS:
            fields[i] = np.roll(_EDGES[f.bits], i)
    words = encode_records(fields)
    unpacked = unpack_slots(torch.from_numpy(words), 5)
    check("dtype", unpacked.dtype, torch.int64)
    decoded = decode_words(np.ascontiguousarray(words.T), 5, np.arange(n))
    for i, f in enumerate(FIELDS):
        check_array(f.name, unpacked[i].numpy(), decoded[i])


@pytest.mark.parametrize("holes", [(), (0, 3), (1, 2, 7)])
def test_from_unpacked_equals_from_written_column_by_column(holes):
    buf = _buffer(9, holes=holes)
    kw = {"rank": 2, "backend": "cuda", "ticks_per_second": 1e9}
    want = TraceRecords.from_written(np.ascontiguousarray(buf.T), 4, 9, **kw)
    # a slice of a longer buffer, as Tracing.events passes the claimed slots
    got = TraceRecords.from_unpacked(unpack_slots(torch.from_numpy(np.vstack([buf, buf]))[:9], 2).numpy(), 4, 9,
                                     **kw)
    check("events", len(got), len(want))
    check("columns", sorted(got.columns), sorted(want.columns))
    for name, column in want.columns.items():
        check_array(name, got.columns[name], column)
    check("dropped", got.dropped, 4)
