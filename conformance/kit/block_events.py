"""The expected event of a block operation over its active lanes, and the element sizes it counts its bytes in.

Shared by ``helpers`` (the events of a scenario's own block operations, which scenarios import from there) and
``auto_ops`` (the ranges an auto-traced op records), neither of which imports the other's way back.
"""

from __future__ import annotations

from conformance.check.model import Addr, Event

ELEMENT_BYTES = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2, "bfloat16": 2, "float32": 4,
                 "float64": 8}


def block_event(name: str, kind: str, *, pid: int, rank: int, target: int, buffer: str, heap_rank: int,
                lanes: list[int], dtype: str, payload: int = 0, pid_m: int | None = None, pid_n: int = 0) -> Event:
    """Expected event of a block op over ``lanes`` of ``buffer``: address = lowest lane, size = lanes x bytes."""
    address = Addr(heap_rank, buffer, min(lanes)) if lanes else None
    return Event(name=name, kind=kind, pid=pid, pid_m=pid if pid_m is None else pid_m, pid_n=pid_n, cur_rank=rank,
                 target_rank=target, address=address, payload_size=len(lanes) * ELEMENT_BYTES[dtype],
                 payload=payload)
