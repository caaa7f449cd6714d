"""The events an auto-traced op must record, for a scenario's model: ``iris.op_trace`` read in Python.

A scenario whose kernel initializes its context with ``trace_ops=True`` calls ``op_events`` once per op call, in
program order, where its model lists that program's events: each call gives the op's peers and the blocks its
pointer parameters address, and gets the op's ranges as ``iris.op_trace.OP_EVENTS`` defines them.
"""

from __future__ import annotations

from conformance.check.model import Addr, Event
from conformance.kit.helpers import ELEMENT_BYTES
from iris.op_trace import OP_EVENTS


def op_events(op: str, *, rank: int, pid: int, peers: dict[str, int], blocks: dict[str, tuple[int, str, list[int]]],
              dtype: str, pid_m: int | None = None, pid_n: int = 0) -> list[Event]:
    """The ranges ``op`` records in program ``pid`` of ``rank``: ``peers`` maps the op's rank parameters
    (``from_rank``/``to_rank``) to ranks, ``blocks`` its pointer parameters to (heap rank, buffer, active lanes);
    ``pid_m``/``pid_n`` are the program ids on grid axes 0 and 1 (default: ``pid``, 0)."""
    events = []
    for e in OP_EVENTS[op]:
        heap_rank, buffer, lanes = blocks[e.address]
        events.append(Event(name=op, kind="range", pid=pid, pid_m=pid if pid_m is None else pid_m, pid_n=pid_n,
                            cur_rank=rank, target_rank=peers[e.peer],
                            address=Addr(heap_rank, buffer, min(lanes)) if lanes else None,
                            payload_size=len(lanes) * ELEMENT_BYTES[dtype], payload=0))
    return events
