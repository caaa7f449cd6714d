"""Trace event ids and trace record fields: the one definition.

Event ids are usable inside kernels as ``TraceEvent().put`` (a ``tl.constexpr``); the host
decodes ids to names through ``EVENT_NAMES``. Every id has exactly one name.
The ids are upstream iris's, in its ranges of 1024 ids: 0-1023 the iris ops (data movement, atomics), 1024-2047
user data movement (``fetch``), 2048-3071 user compute (``compute``, ``reduce``), 3072-4095 synchronization
(``wait``, ``barrier``). ``user``, an event the caller gives its meaning (by its payload), is none of those kinds,
and an id inside upstream's ranges is one upstream may give to its next event there: so ``user`` opens the next
range, 4096-5119, this project's own events. Ids 14-17 were barrier, wait, compute and user before (``OLD_EVENT_IDS``:
decoded, with a warning, for one release).
A record is ``RECORD_WORDS`` int64 words (``iris.context_layout``). ``FIELDS`` says, per field, where the device stores
it (a whole word, or the low or high 32 bits of one; or nowhere: the host knows it), what the conformance checks do
with it and how an export carries it; every other list of fields (the export's arguments, the model's logical
fields, the physical checks, the kernels' word constants, the decoder) is derived from it.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass

import triton
import triton.language as tl

from iris._aggregate import aggregate

# (name, id), by id, in the ranges above. Ids are stable: append new events in their range, never renumber (the
# one renumbering: OLD_EVENT_IDS).
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
    ("fetch", 1024),
    ("compute", 2048),
    ("reduce", 2049),
    ("wait", 3072),
    ("barrier", 3073),
    ("user", 4096),
)

EVENT_IDS: dict[str, int] = dict(_EVENTS)

# The ids barrier, wait, compute and user had before they took upstream's (and ``user`` its own range). Records
# holding them still decode, to the new ids and names, with a DeprecationWarning, until OLD_IDS_REMOVED_IN; from
# then on they read ``unknown(<id>)``. (Some upstream versions give 14-17 to wg_fetch, wg_gemm, wg_gemm_wait and
# wg_sdma, events this table does not have: one more reason not to keep them.)
OLD_EVENT_IDS: dict[int, str] = {14: "barrier", 15: "wait", 16: "compute", 17: "user"}
OLD_IDS_REMOVED_IN = "0.2.0"  # the release after this one (0.1.0)
OLD_IDS_WARNING = (
    "trace event ids " + ", ".join(f"{i} ({n})" for i, n in OLD_EVENT_IDS.items())
    + f" are deprecated: they decode to those names until release {OLD_IDS_REMOVED_IN}, which reads them as "
    "unknown; kernels record TraceEvent()'s ids (" + ", ".join(f"{n} {EVENT_IDS[n]}" for n in OLD_EVENT_IDS.values())
    + ")")

_IRIS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_old_ids_warned = False


def _first_caller_outside_iris() -> int:
    """The ``stacklevel`` (for a ``warnings.warn`` in the function calling this) of the first frame whose code is
    not in the iris package: the warning points at the code that asked to decode."""
    frame, level = sys._getframe(1), 1  # the function calling this: stacklevel 1
    while frame is not None and frame.f_code.co_filename.startswith(_IRIS_DIR):
        frame, level = frame.f_back, level + 1
    return level


def warn_old_ids() -> None:
    """The DeprecationWarning of ``OLD_EVENT_IDS``, once per process; a decoder calls it when it meets one."""
    global _old_ids_warned
    if not _old_ids_warned:
        _old_ids_warned = True
        warnings.warn(OLD_IDS_WARNING, DeprecationWarning, stacklevel=_first_caller_outside_iris())


class _EventNames(dict):
    """``{id: name}`` of the table. An old id (``OLD_EVENT_IDS``) is no key, but ``[]`` and ``get`` read its new
    name (warning once), so code that names raw ids, such as upstream's export, still names them."""

    def __missing__(self, event_id):
        if event_id not in OLD_EVENT_IDS:
            raise KeyError(event_id)
        warn_old_ids()
        return OLD_EVENT_IDS[event_id]

    def get(self, event_id, default=None):
        try:
            return self[event_id]
        except KeyError:
            return default


EVENT_NAMES: dict[int, str] = _EventNames((i, n) for n, i in _EVENTS)

LOGICAL, PHYSICAL, SLOT = "logical", "physical", "slot"


@dataclass(frozen=True)
class TraceField:
    """One field of a trace record: where the device stores it, what the conformance checks do with it and how an
    export carries it.

    ``word``: the record word (int64) holding it, or None where the host supplies it (``cur_rank``: the buffer's
    own rank; ``op_index``: the slot). ``bits``: 64 (the whole word) or 32 (``shift`` 0: the low half, 32: the high
    half; read back sign-extended). ``role``: ``logical`` (equal to the model's), ``physical`` (checked for
    validity: in range, ordered), ``slot`` (the slot the record was found in). ``exported``: ``arg`` (an argument of
    the exported slice) or what carries it instead (``name``, ``track``, ``process``, ``time``: the slice's start
    and length).
    """

    name: str
    role: str
    exported: str
    meaning: str
    word: int | None
    bits: int = 64
    shift: int = 0


# The fields in their decoded order: the one table every list below derives from. A record (64 bytes): w0 timestamp,
# w1 duration, w2 address, w3 payload, w4 event_id | target_rank, w5 pid_m | pid_n, w6 payload_size | xcc_id,
# w7 pid | cu_id (low | high 32 bits). w7 and the high half of w6 are the same for every record of a program.
FIELDS: tuple[TraceField, ...] = (
    TraceField("event_id", LOGICAL, "name", "which op or event (EVENT_NAMES)", 4, 32, 0),
    TraceField("pid", LOGICAL, "track", "the linear program id over the whole grid", 7, 32, 0),
    TraceField("pid_m", LOGICAL, "arg", "the caller's pid_m", 5, 32, 0),
    TraceField("pid_n", LOGICAL, "arg", "the caller's pid_n", 5, 32, 32),
    TraceField("cur_rank", LOGICAL, "process", "the rank that recorded it (the rank whose buffers hold it)", None),
    TraceField("target_rank", LOGICAL, "arg", "the rank the op reaches", 4, 32, 32),
    TraceField("xcc_id", PHYSICAL, "arg", "the accelerator complex die (AMD XCC; 0 elsewhere)", 6, 32, 32),
    TraceField("cu_id", PHYSICAL, "arg", "the SM or CU", 7, 32, 32),
    TraceField("timestamp", PHYSICAL, "time", "start ticks of the backend's global clock", 0),
    TraceField("address", LOGICAL, "arg", "the lowest active pointer of the block (0: no lane active)", 2),
    TraceField("duration_cycles", PHYSICAL, "time", "end - start ticks; DURATION_OPEN, DURATION_INSTANT: the kind",
               1),
    TraceField("op_index", SLOT, "arg", "the slot: unique per rank, increasing in program order", None),
    TraceField("payload_size", LOGICAL, "arg", "active elements x element bytes", 6, 32, 0),
    TraceField("payload", LOGICAL, "arg", "the caller's value (0 without one)", 3),
)
TRACE_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS)
LOGICAL_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.role == LOGICAL)
PHYSICAL_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.role == PHYSICAL)
EXPORT_ARGS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.exported == "arg")
FIELD_INDEX: dict[str, int] = {n: i for i, n in enumerate(TRACE_FIELDS)}  # row of each field in decoded records
FIELD_BY_NAME: dict[str, TraceField] = {f.name: f for f in FIELDS}

# event_id of a slot no record was written to (a hole: the host fills the buffers with it at enable and reset).
EMPTY_EVENT = tl.constexpr(-1)

# duration_cycles of an event that is not a finished range.
DURATION_OPEN = tl.constexpr(-1)  # a range that was started and never ended
DURATION_INSTANT = tl.constexpr(-2)  # an instant


def event_name(event_id: int) -> str:
    """The name of ``event_id``; an old id (``OLD_EVENT_IDS``) reads its new name (warning once), an unknown id
    ``unknown(<id>)``."""
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
