"""Trace event ids and record fields: one table, names and ids one to one, upstream iris's ids, the old ids read
with a warning, constexpr views derived from it."""

from __future__ import annotations

import warnings

import pytest
import triton.language as tl

from iris import context_layout_constexpr as layout_constexpr
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


# Upstream iris's event table (iris/tracing/events.py there: EVENT_NAMES, in its ranges of 1024 ids), written out.
UPSTREAM = {
    0: "load", 1: "store", 2: "get", 3: "put", 4: "copy", 5: "atomic_add", 6: "atomic_sub", 7: "atomic_cas",
    8: "atomic_xchg", 9: "atomic_xor", 10: "atomic_and", 11: "atomic_or", 12: "atomic_min", 13: "atomic_max",
    1024: "fetch", 2048: "compute", 2049: "reduce", 3072: "wait", 3073: "barrier",
}  # fmt: skip
OLD = {14: "barrier", 15: "wait", 16: "compute", 17: "user"}


def test_the_ids_are_upstreams_and_user_opens_the_next_range():
    check("EVENT_NAMES less user", {i: n for i, n in EVENT_NAMES.items() if n != "user"}, UPSTREAM)
    check("EVENT_IDS['user']", EVENT_IDS["user"], 4096)
    check_that("user's range", EVENT_IDS["user"] // 1024, EVENT_IDS["user"] // 1024 > max(UPSTREAM) // 1024,
               "past every range upstream uses")
    check("ids in table order", [i for _, i in events._EVENTS], sorted(EVENT_IDS.values()))


def test_every_id_fits_the_records_32_bit_half():
    for name, event_id in EVENT_IDS.items():
        check_that(f"EVENT_IDS[{name!r}]", event_id, 0 <= event_id < 2**31, "in [0, 2**31): a signed 32-bit half")


def test_unknown_id_has_a_readable_name():
    for unknown in (18, 1025, 4097, max(EVENT_IDS.values()) + 1):
        check(f"event_name({unknown})", events.event_name(unknown), f"unknown({unknown})")
    check("EVENT_NAMES.get(18)", EVENT_NAMES.get(18), None)
    check("EVENT_NAMES.get(18, 'x')", EVENT_NAMES.get(18, "x"), "x")
    with pytest.raises(KeyError):
        EVENT_NAMES[18]


@pytest.fixture
def fresh_warning(monkeypatch):
    """The old ids' warning not yet given in this process (it is given once)."""
    monkeypatch.setattr(events, "_old_ids_warned", False)


def _deprecations(read) -> tuple[object, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = read()
    return value, [w for w in caught if issubclass(w.category, DeprecationWarning)]


WARNING = ("trace event ids 14 (barrier), 15 (wait), 16 (compute), 17 (user) are deprecated: they decode to those "
           "names until release 0.2.0, which reads them as unknown; kernels record TraceEvent()'s ids (barrier 3073, "
           "wait 3072, compute 2048, user 4096)")


@pytest.mark.parametrize("read", ["EVENT_NAMES[id]", "EVENT_NAMES.get(id)", "event_name(id)"])
@pytest.mark.parametrize(("old", "name"), OLD.items())
def test_an_old_id_reads_its_new_name_and_warns_once(fresh_warning, read, old, name):
    reader = {"EVENT_NAMES[id]": lambda i: EVENT_NAMES[i], "EVENT_NAMES.get(id)": EVENT_NAMES.get,
              "event_name(id)": events.event_name}[read]
    value, caught = _deprecations(lambda: reader(old))
    check(read.replace("id", str(old)), value, name)
    check("warnings", [str(w.message) for w in caught], [WARNING])
    check("warning points at the caller", caught[0].filename, __file__)
    again, caught = _deprecations(lambda: [reader(i) for i in OLD])
    check("the old ids read again", again, list(OLD.values()))
    check("warnings the second time", caught, [])


def test_old_ids_are_not_keys():
    check("old ids among EVENT_NAMES' keys", sorted(set(OLD) & set(EVENT_NAMES)), [])
    check("14 in EVENT_NAMES", 14 in EVENT_NAMES, False)
    check("OLD_EVENT_IDS", events.OLD_EVENT_IDS, OLD)
    check("OLD_IDS_WARNING", events.OLD_IDS_WARNING, WARNING)


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
