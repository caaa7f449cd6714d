"""Trace event ids and trace record fields: the one definition.

Event ids are usable inside kernels as ``TraceEvent().put`` (a ``tl.constexpr``); the host
decodes ids to names through ``EVENT_NAMES``. Every id has exactly one name.
A record is ``RECORD_WORDS`` int64 words (``iris.layout``), word f holding field f in ``TRACE_FIELDS`` order.
"""

from __future__ import annotations

import triton
import triton.language as tl

from iris._aggregate import aggregate

# (name, id). Ids are stable: append new events, never renumber.
_EVENTS: tuple[tuple[str, int], ...] = (
    ("load", 0),
    ("store", 1),
    ("get", 2),
    ("put", 3),
    ("copy", 4),
    ("atomic_add", 5),
    ("atomic_sub", 6),
    ("atomic_cas", 7),
    ("atomic_xchg", 8),
    ("atomic_xor", 9),
    ("atomic_and", 10),
    ("atomic_or", 11),
    ("atomic_min", 12),
    ("atomic_max", 13),
    ("barrier", 14),
    ("wait", 15),
    ("compute", 16),
    ("user", 17),
)

EVENT_IDS: dict[str, int] = dict(_EVENTS)
EVENT_NAMES: dict[int, str] = {i: n for n, i in _EVENTS}

# Trace record fields, in storage order. All are stored as int64.
TRACE_FIELDS: tuple[str, ...] = (
    "event_id",
    "pid",
    "pid_m",
    "pid_n",
    "cur_rank",
    "target_rank",
    "xcc_id",
    "cu_id",
    "timestamp",
    "address",
    "duration_cycles",
    "op_index",
    "payload_size",
    "payload",
)
FIELD_INDEX: dict[str, int] = {n: i for i, n in enumerate(TRACE_FIELDS)}

# event_id of a slot no record was written to (a hole: the host fills the buffers with it at enable and reset).
EMPTY_EVENT = tl.constexpr(-1)

# duration_cycles of an event that is not a finished range.
DURATION_OPEN = tl.constexpr(-1)  # a range that was started and never ended
DURATION_INSTANT = tl.constexpr(-2)  # an instant


def event_name(event_id: int) -> str:
    """The name of ``event_id``; unknown ids read ``unknown(<id>)``."""
    return EVENT_NAMES.get(int(event_id), f"unknown({int(event_id)})")


def _event_class():
    annotations = {name: tl.constexpr for name, _ in _EVENTS}

    def __init__(self):
        for name, value in _EVENTS:
            setattr(self, name, tl.constexpr(value))

    init = triton.constexpr_function(__init__)
    cls = type("TraceEvent", (), {"__annotations__": annotations, "__init__": init, "__module__": __name__})
    cls.__doc__ = "Event ids as constexpr attributes: ``TraceEvent().store`` inside a Triton or Gluon kernel."
    return aggregate(cls)


TraceEvent = _event_class()
