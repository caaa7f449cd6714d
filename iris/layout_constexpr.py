"""The context layout and trace-record rows as ``tl.constexpr``, for Triton and Gluon kernels.

Derived from ``iris.layout`` and ``iris.tracing.events`` (the definitions); nothing is defined here.
Kernels import this module (``from iris import layout_constexpr as L``) because Triton lets a
kernel read module attributes but not plain-int globals.
"""

import hashlib
from pathlib import Path

import triton.language as tl

from iris import layout as _layout
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

# Word of each trace field in a record: FIELD_EVENT_ID, FIELD_PID, ..., FIELD_PAYLOAD.
for _name, _row in _events.FIELD_INDEX.items():
    globals()[f"FIELD_{_name.upper()}"] = tl.constexpr(_row)
NUM_FIELDS = tl.constexpr(len(_events.TRACE_FIELDS))

DURATION_OPEN = _events.DURATION_OPEN
DURATION_INSTANT = _events.DURATION_INSTANT
EMPTY_EVENT = _events.EMPTY_EVENT

# Triton's compile cache key covers jit functions and globals read by name, but not builtins
# (hw.py, _builtins.py, layouts.py, op_options.py) nor module attributes (this module's values). Kernels read this
# key by name (DeviceTracing.initialize, GluonDeviceTracing.initialize), so editing any of these sources
# recompiles them.
_KEYED_SOURCES = ("_builtins.py", "layout.py", "layout_constexpr.py", "op_options.py", "tracing/hw.py",
                  "tracing/events.py", "tracing/record_constexpr.py", "experimental/layouts.py")
SOURCE_KEY = tl.constexpr(
    hashlib.sha256(b"".join((Path(__file__).parent / f).read_bytes() for f in _KEYED_SOURCES)).hexdigest()
)
