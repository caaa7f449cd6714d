"""The context layout and the trace-record words as ``tl.constexpr``, for Triton and Gluon kernels.

Derived from ``iris.context_layout`` and ``iris.tracing.events`` (the definitions); nothing is defined here.
Kernels import this module (``from iris import context_layout_constexpr as L``) because Triton lets a
kernel read module attributes but not plain-int globals.
"""

import hashlib
from pathlib import Path

import triton.language as tl

from iris import context_layout as _layout
from iris.tracing import events as _events

CUR_RANK = tl.constexpr(_layout.CUR_RANK)
NUM_RANKS = tl.constexpr(_layout.NUM_RANKS)
TRACE_ENABLED = tl.constexpr(_layout.TRACE_ENABLED)
TRACE_MAX_EVENTS = tl.constexpr(_layout.TRACE_MAX_EVENTS)
TRACE_CHUNK = tl.constexpr(_layout.TRACE_CHUNK)
TRACE_COUNTERS_PTR = tl.constexpr(_layout.TRACE_COUNTERS_PTR)
TRACE_RECORDS_PTR = tl.constexpr(_layout.TRACE_RECORDS_PTR)
TRACE_CURSORS_PTR = tl.constexpr(_layout.TRACE_CURSORS_PTR)
HEAP_BASES = tl.constexpr(_layout.HEAP_BASES)
COUNTER_CLAIMED = tl.constexpr(_layout.COUNTER_CLAIMED)
COUNTER_DROPPED = tl.constexpr(_layout.COUNTER_DROPPED)
RECORD_WORDS = tl.constexpr(_layout.RECORD_WORDS)
CURSOR_WORDS = tl.constexpr(_layout.CURSOR_WORDS)


def _whole(name: str) -> int:
    """The record word holding 64-bit field ``name``."""
    f = _events.FIELD_BY_NAME[name]
    if f.word is None or f.bits != 64:
        raise ValueError(f"trace field {name} is not a whole record word ({f}); the kernels write it as one")
    return f.word


def _halves(low: str, high: str) -> int:
    """The record word holding 32-bit field ``low`` in its low half and ``high`` in its high half."""
    lo, hi = _events.FIELD_BY_NAME[low], _events.FIELD_BY_NAME[high]
    if lo.word is None or (lo.bits, lo.shift, hi.bits, hi.shift, hi.word) != (32, 0, 32, 32, lo.word):
        raise ValueError(f"trace fields {low} and {high} are not the low and high halves of one record word "
                         f"({lo}, {hi}); the kernels write them as one")
    return lo.word


# The record words the kernels write (iris.tracing.events.FIELDS places every field; these names fix the pairs).
WORD_TIMESTAMP = tl.constexpr(_whole("timestamp"))
WORD_DURATION = tl.constexpr(_whole("duration_cycles"))
WORD_ADDRESS = tl.constexpr(_whole("address"))
WORD_PAYLOAD = tl.constexpr(_whole("payload"))
WORD_EVENT = tl.constexpr(_halves("event_id", "target_rank"))
WORD_PIDS = tl.constexpr(_halves("pid_m", "pid_n"))
WORD_SIZE = tl.constexpr(_halves("payload_size", "xcc_id"))  # xcc_id: the same for every record of a program
WORD_PROGRAM = tl.constexpr(_halves("pid", "cu_id"))  # the same for every record of a program
LOW_BITS = tl.constexpr(0xFFFFFFFF)  # the low half of a word (a 32-bit field, or a cursor's next slot)

DURATION_OPEN = _events.DURATION_OPEN
DURATION_INSTANT = _events.DURATION_INSTANT
EMPTY_EVENT = _events.EMPTY_EVENT

# Triton's compile cache key covers jit functions and globals read by name, but not builtins
# (hw.py, _builtins.py, layouts.py, op_options.py) nor module attributes (this module's values). Kernels read this
# key by name (DeviceTracing.initialize, GluonDeviceTracing.initialize), so editing any of these sources
# recompiles them.
_KEYED_SOURCES = ("_builtins.py", "context_layout.py", "context_layout_constexpr.py", "op_options.py",
                  "tracing/hw.py", "tracing/events.py", "tracing/record_constexpr.py", "experimental/layouts.py")
SOURCE_KEY = tl.constexpr(
    hashlib.sha256(b"".join((Path(__file__).parent / f).read_bytes() for f in _KEYED_SOURCES)).hexdigest()
)
