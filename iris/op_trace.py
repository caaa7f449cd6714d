"""What each device op records when its context is initialized with ``trace_ops=True``: defined once.

Auto-tracing: ``DeviceContext.initialize(ctx_t, tracing=True, trace_ops=True)`` (and the same keyword on the Gluon
``IrisDeviceCtx.initialize``) makes every op of ``iris.op_contract.OPS`` record its own events through
``ctx.tracing``; compiled without it (the default) the ops hold no tracing code at all. ``OP_EVENTS`` gives, per
op, the events it records in program order. Every one is a range named after the op (its ``TraceEvent`` id, the
ids 0-13 that agree with upstream iris) with:

    target_rank  = the op's ``peer`` parameter (the rank whose heap the op reaches)
    address      = the lowest active address of the op's ``address`` block (0 if no lane is active)
    payload_size = active elements of that block x element bytes (the op's ``mask``; atomic_cas has none: every
                   element)
    pid          = the linear program id; pid_m, pid_n = program ids on grid axes 0 and 1; payload = 0

A range that ``ends_on_value`` reads its end timestamp from a clock read that takes the op's returned (or loaded)
value as an input, so no compiler can move it above the op: the range covers the op's round trip. A store cannot
be observed to complete without a fence, so a range that does not end on a value ends once the store is issued.
``copy`` records two ranges: the read from ``from_rank`` (ending on the data), then the write to ``to_rank``.
tests/cpu_unit/test_parity.py checks both device contexts' ops against this table; docs/api.md's op table shows it.
"""

from __future__ import annotations

from typing import NamedTuple

SWITCH = "trace_ops"  # the initialize keyword, the same in both APIs


class OpEvent(NamedTuple):
    """One event an auto-traced op records: its peer and address parameters, and whether it ends on a value."""

    peer: str
    address: str
    ends_on_value: bool


_ATOMIC = (OpEvent("to_rank", "pointer", True),)

OP_EVENTS: dict[str, tuple[OpEvent, ...]] = {
    "load": (OpEvent("from_rank", "pointer", True),),
    "store": (OpEvent("to_rank", "pointer", False),),
    "get": (OpEvent("from_rank", "from_ptr", True),),
    "put": (OpEvent("to_rank", "to_ptr", False),),
    "copy": (OpEvent("from_rank", "src_ptr", True), OpEvent("to_rank", "dst_ptr", False)),
    **{f"atomic_{op}": _ATOMIC for op in ("add", "sub", "cas", "xchg", "xor", "and", "or", "min", "max")},
}


def describe(op: str) -> str:
    """One op table cell: the events ``op`` records when auto-traced."""
    parts = []
    for e in OP_EVENTS[op]:
        end = "ends on the value" if e.ends_on_value else "ends when issued"
        parts.append(f"range to `{e.peer}` at `{e.address}`, {end}")
    return "; then ".join(parts)
