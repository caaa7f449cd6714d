"""conformance.check.compare on hand-built observations: op_index must be the slot each event was kept in, and the
slots must fill chunks of one program each, from a chunk's start; memory is compared element by element; what the
host reports (every view of its counters, the exported file) must agree with the model and with each other."""

from __future__ import annotations

import dataclasses

import pytest

from conformance.check import compare as compare_module
from conformance.check.model import Addr, Event, Model, inside
from conformance.check.observation import HostCounters, RankObservation
from iris.tracing.guard import GUARD_RECORD, GuardWord
from tests.cpu_unit.observations import api_observation, rank_observation

pytestmark = pytest.mark.cpu_unit

HEAP = 1 << 20
BASE = 1 << 30
CHUNK, MAX_EVENTS = 2, 16  # what the ranks enabled tracing with, unless a test says otherwise


def compare(model: Model, observations: list[RankObservation], apis: tuple[str, ...], heap_bytes: int,
            chunk: int = CHUNK, max_events: int = MAX_EVENTS):
    return compare_module.compare(model, observations, apis, heap_bytes, chunk, max_events)


def _row(pid: int, op_index: int, timestamp: int, slot: int | None = None) -> dict:
    return {"name": "store", "kind": "instant", "pid": pid, "pid_m": pid, "pid_n": 0, "cur_rank": 0,
            "target_rank": 0, "address": BASE + 4 * pid, "payload_size": 4, "payload": 7, "op_index": op_index,
            "slot": 2 * pid if slot is None else slot, "timestamp": timestamp, "duration_cycles": -2, "cu_id": 0,
            "xcc_id": 0}


def _observation(op_indices: list[int], slots: list[int] | None = None, claimed: int | None = None,
                 **row_changes) -> RankObservation:
    """Program p's one event in slot ``slots[p]`` (default 2 p: every other slot a hole) with op_index
    ``op_indices[p]``; ``claimed`` slots (default 2 per program); ``row_changes`` set fields of the first row."""
    slots = [2 * pid for pid in range(len(op_indices))] if slots is None else slots
    rows = [_row(pid, k, 100 + pid, slot) for pid, (k, slot) in enumerate(zip(op_indices, slots, strict=True))]
    rows[0].update(row_changes)
    claimed = 2 * len(rows) if claimed is None else claimed
    api = api_observation(rows, host=HostCounters(len(rows), 0, claimed, claimed))
    return rank_observation({"triton": api})


def _model(programs: int) -> Model:
    events = [Event("store", "instant", pid, pid, 0, 0, 0, Addr(0, "buf", pid), 4, 7) for pid in range(programs)]
    return Model({0: events})


def test_op_index_equal_to_the_slot_passes():
    assert compare(_model(3), [_observation([0, 2, 4])], ("triton",), HEAP) == []


def test_op_index_shifted_from_the_slot_is_a_divergence():
    (d,) = compare(_model(3), [_observation([1, 3, 5])], ("triton",), HEAP)
    assert (d.check, d.rank, d.where, d.field, d.actual, d.expected) == (
        "triton vs model", 0, "slot 0 (pid 0)", "op_index", 1, 0)


def test_op_index_duplicated_is_a_divergence():
    (d,) = compare(_model(3), [_observation([0, 2, 2])], ("triton",), HEAP)
    assert (d.where, d.field, d.actual, d.expected) == ("slot 4 (pid 2)", "op_index", 2, 4)


def test_a_slot_at_or_past_the_capacity_is_a_divergence():
    (d,) = compare(_model(3), [_observation([0, 2, 4])], ("triton",), HEAP, max_events=4)
    assert (d.where, d.field, d.actual, d.expected) == ("slot 4 (pid 2)", "slot", 4, "in [0, 4)")


def _at_slots(slots: list[int], chunk: int) -> RankObservation:
    """The observation of ``_observation`` with program p's event found in ``slots[p]``, in chunks of ``chunk``."""
    return _observation(slots, slots, claimed=chunk * (max(slots) // chunk + 1))


def test_programs_in_chunks_of_their_own_pass():
    assert compare(_model(3), [_at_slots([0, 4, 8], 4)], ("triton",), HEAP, chunk=4) == []


def test_a_chunk_holding_two_programs_records_is_a_divergence():
    (d,) = compare(_model(3), [_at_slots([0, 1, 8], 4)], ("triton",), HEAP, chunk=4)
    assert (d.where, d.field, d.actual, d.expected) == ("slot 1 (pid 1)", "chunk owner", 1, "pid 0 (chunk 4)")


def test_a_program_whose_first_record_is_inside_a_chunk_is_a_divergence():
    (d,) = compare(_model(3), [_at_slots([0, 4, 9], 4)], ("triton",), HEAP, chunk=4)
    assert (d.where, d.field, d.actual, d.expected) == ("slot 9 (pid 2)", "first slot", 9,
                                                        "a multiple of the chunk 4")


def _with_memory(memory: dict) -> RankObservation:
    obs = _observation([0])
    obs.apis["triton"].memory = memory
    return obs


def _memory_model(memory: dict) -> Model:
    model = _model(1)
    return Model(model.events, {0: memory})


@pytest.mark.parametrize("buffer", [7, [1, 2, 3], [[1, 2], [3, 4]], [[[1], [2]], [[3], [4]]], []])
def test_equal_memory_of_any_shape_passes(buffer):
    assert compare(_memory_model({"out": buffer}), [_with_memory({"out": buffer})], ("triton",), HEAP) == []


@pytest.mark.parametrize(("got", "where", "actual", "expected"), [
    ([[1, 2], [3, 5]], "buffer out[3]", "5", 4),
    ([[9, 2], [3, 5]], "buffer out[0]", "9", 1),
    ([[1.0, 2.0], [3.0, float("nan")]], "buffer out[3]", "nan", 4),
])
def test_the_first_differing_element_is_named_by_its_row_major_index(got, where, actual, expected):
    (d,) = compare(_memory_model({"out": [[1, 2], [3, 4]]}), [_with_memory({"out": got})], ("triton",), HEAP)
    assert (d.check, d.where, d.field, str(d.actual), d.expected) == ("triton vs model", where, "value", actual,
                                                                       expected)


def test_a_buffer_of_another_size_or_missing_is_a_divergence():
    (d,) = compare(_memory_model({"out": [[1, 2], [3, 4]]}), [_with_memory({"out": [1, 2, 3]})], ("triton",), HEAP)
    assert (d.where, d.field, d.actual, d.expected) == ("buffer out", "elements", 3, 4)
    (d,) = compare(_memory_model({"out": [1]}), [_with_memory({})], ("triton",), HEAP)
    assert (d.where, d.field, d.actual) == ("buffer out", "buffer", None)


def test_a_dropped_count_the_model_does_not_expect_is_a_divergence_in_both_views_of_events():
    """``events()`` counts a dropped record as attempted too (attempted = kept + dropped)."""
    obs = _observation([0, 2])
    obs.apis["triton"].records.dropped = 1
    got = compare(_model(2), [obs], ("triton",), HEAP)
    assert [(d.check, d.where, d.field, d.actual, d.expected) for d in got] == [
        ("triton vs model", "whole launch", "events().attempted", 3, 2),
        ("triton vs model", "whole launch", "events().dropped", 1, 0)]


# Each host view of the counters set off on its own (3 programs in slots 0, 2, 4, chunk 2: 6 slots claimed).
@pytest.mark.parametrize(("key", "value", "field", "expected"), [
    ("attempted", 2, "tracing.attempted", 3),
    ("dropped", 1, "tracing.dropped", 0),
    ("trace_counter", 8, "tracing.trace_counter", "6 (tracing.claimed)"),
])  # fmt: skip
def test_a_host_counter_view_off_on_its_own_is_a_divergence(key, value, field, expected):
    obs = _observation([0, 2, 4])
    api = obs.apis["triton"]
    api.host = dataclasses.replace(api.host, **{key: value})
    (d,) = compare(_model(3), [obs], ("triton",), HEAP)
    assert (d.check, d.rank, d.where, d.field, d.actual, d.expected) == (
        "triton vs model", 0, "whole launch", field, value, expected)


@pytest.mark.parametrize(("claimed", "expected"), [
    (5, "a multiple of the chunk 2"),
    (4, "> 4 (the highest kept slot)"),
])  # fmt: skip
def test_claimed_slots_the_kept_slots_rule_out_are_a_divergence(claimed, expected):
    obs = _observation([0, 2, 4], claimed=claimed)
    (d,) = compare(_model(3), [obs], ("triton",), HEAP)
    assert (d.where, d.field, d.actual, d.expected) == ("whole launch", "tracing.claimed", claimed, expected)


def test_claimed_slots_the_model_does_not_expect_are_a_divergence_in_both_views():
    obs = _observation([0, 2, 4])
    model = _model(3)
    assert compare(Model(model.events, claimed={0: 6}), [obs], ("triton",), HEAP) == []
    got = compare(Model(model.events, claimed={0: 8}), [obs], ("triton",), HEAP)
    assert [(d.where, d.field, d.actual, d.expected) for d in got] == [
        ("whole launch", "tracing.claimed", 6, 8), ("whole launch", "tracing.trace_counter", 6, 8)]


@pytest.mark.parametrize("claimed", [3, 2])
def test_a_drop_needs_every_slot_claimed(claimed):
    """4 one-event programs, chunk 1, a 3-slot buffer: programs 0 and 1 kept theirs in slots 0 and 1 and two records
    were dropped. A record is dropped only when every slot is claimed (a chunk ends at max_events at the latest),
    so 3 claimed slots are consistent and 2 would mean a drop with a slot left."""
    obs = _at_slots([0, 1], 1)
    api = obs.apis["triton"]
    api.records.dropped, api.exported.dropped = 2, 2
    api.host = HostCounters(attempted=4, dropped=2, claimed=claimed, trace_counter=claimed)
    got = compare(Model(_model(4).events, max_events=3), [obs], ("triton",), HEAP, chunk=1, max_events=3)
    expected = [] if claimed == 3 else [("whole launch", "tracing.claimed", 2, ">= 3 (max_events: 2 records dropped)")]
    assert [(d.where, d.field, d.actual, d.expected) for d in got] == expected


@pytest.mark.parametrize("api", ["triton", "gluon"])
def test_each_word_written_past_max_events_is_a_divergence(api):
    """Words a kernel wrote into the guard slot past the end (a dropped range's end: its duration; a record of a
    full buffer written instead of dropped: the event word and the rest), one divergence each, in word order,
    naming the word's fields, what it held and what the host wrote there."""
    obs = _at_slots([0, 1], 1)
    a = obs.apis.pop("triton")
    obs.apis[api] = a
    a.records.dropped, a.exported.dropped = 1, 1
    changes = (GuardWord(1, 250, GUARD_RECORD[1]), GuardWord(4, 17, GUARD_RECORD[4]))
    a.host = HostCounters(attempted=3, dropped=1, claimed=3, trace_counter=3, guard_changes=changes)
    got = compare(Model(_model(3).events, max_events=2), [obs], (api,), HEAP, chunk=1, max_events=2)
    wrote = "(written at enable/reset; no kernel writes past the end)"
    assert [(d.check, d.rank, d.where, d.field, d.actual, d.expected) for d in got] == [
        (f"{api} vs model", 0, "guard slot past max_events=2", "word 1 (duration_cycles)", 250,
         f"{GUARD_RECORD[1]} {wrote}"),
        (f"{api} vs model", 0, "guard slot past max_events=2", "word 4 (event_id, target_rank)", 17,
         f"{GUARD_RECORD[4]} {wrote}")]


def test_the_exported_files_drop_count_is_checked():
    obs = _observation([0, 2])
    obs.apis["triton"].exported.dropped = 2
    (d,) = compare(_model(2), [obs], ("triton",), HEAP)
    assert (d.where, d.field, d.actual, d.expected) == ("exported trace", "dropped", 2, 0)


def test_an_exported_event_that_differs_from_the_model_names_the_file():
    obs = _observation([0, 2, 4])
    obs.apis["triton"].exported.rows[1]["payload"] = 8
    (d,) = compare(_model(3), [obs], ("triton",), HEAP)
    assert (d.check, d.where, d.field, d.actual, d.expected) == (
        "triton vs model", "exported trace, pid 1 event 0", "payload", 8, 7)


def test_an_exported_kind_that_differs_is_a_divergence():
    obs = _observation([0, 2])
    obs.apis["triton"].exported.rows[0]["kind"] = "unfinished"
    (d,) = compare(_model(2), [obs], ("triton",), HEAP)
    assert (d.where, d.field, d.actual, d.expected) == ("exported trace, pid 0 event 0", "kind", "unfinished",
                                                        "instant")


def test_an_exported_file_missing_an_event_is_a_divergence():
    obs = _observation([0, 2])
    file = obs.apis["triton"].exported
    file.rows, file.events = file.rows[:1], 1
    first, second = compare(_model(2), [obs], ("triton",), HEAP)
    assert (first.where, first.field, first.actual, first.expected) == ("exported trace", "events", (1, 1), (2, 2))
    assert (second.where, second.field, second.actual, second.expected) == (
        "exported trace, pid 1", "events in program", 0, 1)


def test_every_physical_field_has_its_validity_check():
    from conformance.check.compare import PHYSICAL_CHECKS
    from iris.tracing.events import PHYSICAL_FIELDS

    assert sorted(PHYSICAL_CHECKS) == sorted(PHYSICAL_FIELDS)


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("timestamp", 600, "within launch window [50, 500]"),
    ("cu_id", 1, "in [0, 1)"),
    ("xcc_id", -1, "in [0, 1)"),
])  # fmt: skip
def test_a_physical_field_out_of_range_is_a_divergence(field, value, expected):
    obs = _observation([0], **{field: value})
    (d,) = compare(_model(1), [obs], ("triton",), HEAP)
    assert (d.check, d.field, d.actual, d.expected) == ("triton vs model", field, value, expected)


def test_a_range_longer_than_its_window_is_a_divergence():
    obs = _observation([0], kind="range", duration_cycles=450)  # starts at 100, the window ends at 500
    model = Model({0: [Event("store", "range", 0, 0, 0, 0, 0, Addr(0, "buf", 0), 4, 7)]})
    (d,) = compare(model, [obs], ("triton",), HEAP)
    assert (d.field, d.actual, d.expected) == ("duration_cycles", 450, "in [0, 400]")


@pytest.mark.parametrize(("change", "field", "actual", "expected"), [
    (lambda rows: rows[1].update(name=rows[0]["name"]), "name", "load", "store"),  # a name one row off
    (lambda rows: rows[1].update(kind="range"), "kind", "range", "instant"),
    (lambda rows: rows[1].update(payload=8), "payload", 8, 7),
    (lambda rows: rows[1].pop("slot"), "slot", "(missing)", 2),
    (lambda rows: rows[1].update(extra=1), "extra", 1, "(no such key)"),
])
def test_rows_that_disagree_with_the_columns_are_a_divergence(monkeypatch, change, field, actual, expected):
    """``events().rows()``, what users read, is checked against the columns the comparison reads: the first row and
    key that differ."""
    obs = _observation([0, 2], name="load")  # the first event a load, the second a store (op_index = slot)
    records = obs.apis["triton"].records
    model = Model({0: [Event("load", "instant", 0, 0, 0, 0, 0, Addr(0, "buf", 0), 4, 7),
                       Event("store", "instant", 1, 1, 0, 0, 0, Addr(0, "buf", 1), 4, 7)]})
    assert compare(model, [obs], ("triton",), HEAP) == []
    rows = records.rows()
    change(rows)
    monkeypatch.setattr(type(records), "rows", lambda self: rows)
    got = compare(model, [obs], ("triton",), HEAP)
    assert [(d.check, d.where, d.field, d.actual, d.expected) for d in got] == [
        ("triton vs model", "events().rows()[1]", field, actual, expected)]


def _nested(inner_start: int, inner_end: int) -> tuple[Model, RankObservation]:
    """One program's outer range over [100, 150] and an inner range over [inner_start, inner_end] the model nests in
    it (``Event.within``)."""
    rows = [_row(0, 0, 100, slot=0) | {"kind": "range", "duration_cycles": 50},
            _row(0, 1, inner_start, slot=1) | {"kind": "range", "duration_cycles": inner_end - inner_start}]
    api = api_observation(rows, host=HostCounters(2, 0, 2, 2))
    outer = Event("store", "range", 0, 0, 0, 0, 0, Addr(0, "buf", 0), 4, 7)
    return Model({0: [outer, *inside([outer], 0)]}), rank_observation({"triton": api})


@pytest.mark.parametrize(("start", "end"), [(110, 130), (100, 150)])
def test_a_nested_range_within_its_outer_range_passes(start, end):
    model, obs = _nested(start, end)
    assert compare(model, [obs], ("triton",), HEAP) == []


@pytest.mark.parametrize(("start", "end"), [(160, 180), (90, 120), (120, 151)])
def test_a_nested_range_outside_its_outer_range_is_a_divergence(start, end):
    model, obs = _nested(start, end)
    (d,) = compare(model, [obs], ("triton",), HEAP)
    assert (d.check, d.rank, d.where, d.field, d.actual, d.expected) == (
        "triton vs model", 0, "pid 0 event 1", "span", f"[{start}, {end}]", "within event 0's [100, 150]")


@pytest.mark.parametrize("within", [-1, 1, 5, 0.0])
def test_a_model_nesting_a_range_in_no_earlier_event_is_refused(within):
    """``within`` must name an earlier event of the program (a model's mistake, not a divergence): the model is refused
    naming it, before any comparison."""
    model, _ = _nested(110, 130)
    outer, inner = model.events[0]
    with pytest.raises(ValueError) as e:
        Model({0: [outer, dataclasses.replace(inner, within=within)]})
    assert str(e.value) == (f"the model's event 1 of rank 0 pid 0 lies within event {within!r}: expected the position "
                            "of an earlier event of its program, 0 to 0")
