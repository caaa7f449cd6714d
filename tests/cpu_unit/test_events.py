"""Trace event ids and record fields: one table, names and ids one to one, constexpr views derived from it."""

from __future__ import annotations

import pytest
import triton.language as tl

from iris import layout_constexpr
from iris.tracing import events
from iris.tracing.events import EVENT_IDS, EVENT_NAMES, FIELD_INDEX, TRACE_FIELDS, TraceEvent
from tests.cpu_unit.checks import check, check_that

pytestmark = pytest.mark.cpu_unit


def test_every_id_has_exactly_one_name_and_vice_versa():
    table = events._EVENTS
    names = [n for n, _ in table]
    ids = [i for _, i in table]
    check("duplicate names", sorted({n for n in names if names.count(n) > 1}), [])
    check("duplicate ids", sorted({i for i in ids if ids.count(i) > 1}), [])
    check("len(EVENT_IDS)", len(EVENT_IDS), len(table))
    check("len(EVENT_NAMES)", len(EVENT_NAMES), len(table))
    for name, event_id in table:
        check(f"EVENT_IDS[{name!r}]", EVENT_IDS[name], event_id)
        check(f"EVENT_NAMES[{event_id}]", EVENT_NAMES[event_id], name)
        check(f"event_name({event_id})", events.event_name(event_id), name)


def test_ids_are_unique_non_negative_ints():
    ids = list(EVENT_IDS.values())
    check("number of distinct ids", len(set(ids)), len(ids))
    for name, event_id in EVENT_IDS.items():
        check_that(f"EVENT_IDS[{name!r}]", event_id, type(event_id) is int and event_id >= 0, "an int >= 0")


def test_unknown_id_has_a_readable_name():
    unknown = max(EVENT_IDS.values()) + 1
    check(f"event_name({unknown})", events.event_name(unknown), f"unknown({unknown})")


@pytest.mark.parametrize("name", list(EVENT_IDS))
def test_trace_event_attribute(name):
    value = getattr(TraceEvent(), name)
    check_that(f"type(TraceEvent().{name})", type(value).__name__, isinstance(value, tl.constexpr), "constexpr")
    check(f"TraceEvent().{name}.value", value.value, EVENT_IDS[name])


def test_trace_event_has_no_other_attributes():
    extra = sorted(set(vars(TraceEvent())) - set(EVENT_IDS))
    check("TraceEvent() attributes not in EVENT_IDS", extra, [])


def test_field_index_follows_trace_fields():
    check("list(FIELD_INDEX)", list(FIELD_INDEX), list(TRACE_FIELDS))
    check("list(FIELD_INDEX.values())", list(FIELD_INDEX.values()), list(range(len(TRACE_FIELDS))))
    check("number of distinct fields", len(set(TRACE_FIELDS)), len(TRACE_FIELDS))


# The record words the kernels write, and the fields each holds (low half first): what layout_constexpr fixes.
KERNEL_WORDS = {
    "WORD_TIMESTAMP": ("timestamp",), "WORD_DURATION": ("duration_cycles",), "WORD_ADDRESS": ("address",),
    "WORD_PAYLOAD": ("payload",), "WORD_EVENT": ("event_id", "target_rank"), "WORD_PIDS": ("pid_m", "pid_n"),
    "WORD_SIZE": ("payload_size", "xcc_id"), "WORD_PROGRAM": ("pid", "cu_id"),
}  # fmt: skip


@pytest.mark.parametrize("attr", sorted(KERNEL_WORDS))
def test_layout_constexpr_words_are_the_field_tables(attr):
    value = getattr(layout_constexpr, attr, None)
    check_that(f"layout_constexpr.{attr}", value, isinstance(value, tl.constexpr), "a tl.constexpr")
    fields = [events.FIELD_BY_NAME[n] for n in KERNEL_WORDS[attr]]
    check(f"{attr}: the words of {KERNEL_WORDS[attr]}", {f.word for f in fields}, {value.value})
    check(f"{attr}: (bits, shift) of {KERNEL_WORDS[attr]}", [(f.bits, f.shift) for f in fields],
          [(64, 0)] if len(fields) == 1 else [(32, 0), (32, 32)])


def test_the_kernels_write_every_stored_field_and_nothing_else():
    written = sorted(n for names in KERNEL_WORDS.values() for n in names)
    stored = sorted(f.name for f in events.FIELDS if f.word is not None)
    check("fields the kernels write", written, stored)
    words = sorted(a for a in vars(layout_constexpr) if a.startswith("WORD_"))
    check("layout_constexpr WORD_* names", words, sorted(KERNEL_WORDS))


def test_duration_sentinels_are_distinct_negatives():
    open_, instant = events.DURATION_OPEN.value, events.DURATION_INSTANT.value
    check_that("DURATION_OPEN", open_, open_ < 0, "negative (a real duration is >= 0)")
    check_that("DURATION_INSTANT", instant, instant < 0 and instant != open_, f"negative and != {open_}")
