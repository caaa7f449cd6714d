"""The events an auto-traced op must record, for a scenario's model: ``iris.op_trace`` read in Python.

A scenario whose kernels initialize their context with ``trace_ops=TRACE_OPS`` (a drawn param,
``strategies.trace_ops``) expects, with it on, each op's own ranges right after the manual range around the op call
(before an instant recorded after it). ``call_events`` gives them for one call, none when ``TRACE_OPS`` is off;
``helpers.per_program_events``, ``_options.round_events`` and the models that build their own events call it.
``op_events`` is the table: an op's peers and pointer blocks in, its ranges as ``iris.op_trace.OP_EVENTS`` defines
them out.
"""

from __future__ import annotations

from conformance.check.model import Event
from conformance.kit.block_events import block_event
from iris.op_contract import OPS
from iris.op_trace import OP_EVENTS

MASKED = {op.name: "mask=None" in op.params for op in OPS}  # atomic_cas takes no mask: it records every lane


def op_events(op: str, *, rank: int, pid: int, peers: dict[str, int], blocks: dict[str, tuple[int, str, list[int]]],
              dtype: str, pid_m: int | None = None, pid_n: int = 0) -> list[Event]:
    """The ranges ``op`` records in program ``pid`` of ``rank``: ``peers`` maps the op's rank parameters
    (``from_rank``/``to_rank``) to ranks, ``blocks`` its pointer parameters to (heap rank, buffer, active lanes);
    ``pid_m``/``pid_n`` are the program ids on grid axes 0 and 1 (default: ``pid``, 0)."""
    events = []
    for e in OP_EVENTS[op]:
        heap_rank, buffer, lanes = blocks[e.address]
        events.append(block_event(op, "range", pid=pid, rank=rank, target=peers[e.peer], buffer=buffer,
                                  heap_rank=heap_rank, lanes=lanes, dtype=dtype, pid_m=pid_m, pid_n=pid_n))
    return events


def call_events(p: dict, op: str, *, rank: int, pid: int, target: int, buffer: str, heap_rank: int, lanes,
                block=None, peers: dict[str, int] | None = None, pointers: dict[str, tuple[int, str]] | None = None,
                rows: dict[str, int] | None = None, pid_m: int | None = None, pid_n: int = 0) -> list[Event]:
    """``op_events`` of one call of ``op`` in program ``pid`` of ``rank`` if ``p["TRACE_OPS"]``, else none.

    By default the call is the block op its manual event describes: every rank parameter of ``op`` is ``target``,
    every pointer parameter addresses ``lanes`` (the op's mask; ``block``, every lane, for an op without one) of
    ``buffer`` on ``heap_rank``. ``peers`` ({param: rank}) and ``pointers`` ({param: (heap rank, buffer)}) override
    by name (copy: its two ends); ``rows`` ({buffer: first element}) moves a buffer's lanes to a row of it.
    """
    if not p.get("TRACE_OPS"):
        return []
    spec = OP_EVENTS[op]
    peers = {e.peer: target for e in spec} | (peers or {})
    pointers = {e.address: (heap_rank, buffer) for e in spec} | (pointers or {})
    chosen = lanes if MASKED[op] else block
    rows = rows or {}
    blocks = {name: (h, buf, [rows[buf] + j for j in chosen] if buf in rows else chosen)
              for name, (h, buf) in pointers.items()}
    return op_events(op, rank=rank, pid=pid, peers=peers, blocks=blocks, dtype=p["dtype"], pid_m=pid_m, pid_n=pid_n)
