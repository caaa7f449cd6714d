"""Small helpers for scenario modules: grids, dtype sizes, expected events of block operations."""

from __future__ import annotations

from conformance.model import Addr, Event

ELEMENT_BYTES = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2, "bfloat16": 2, "float32": 4,
                 "float64": 8}


def cdiv(a: int, b: int) -> int:
    """Ceiling division."""
    return -(-a // b)


def active_lanes(start: int, block: int, n: int, bits: list[int] | None = None) -> list[int]:
    """Element indices ``start .. start+block`` that are below ``n`` and (if given) have their bit set."""
    return [j for j in range(start, start + block) if j < n and (bits is None or bits[j])]


def block_event(name: str, kind: str, *, pid: int, rank: int, target: int, buffer: str, heap_rank: int,
                lanes: list[int], dtype: str, payload: int = 0, pid_m: int | None = None, pid_n: int = 0) -> Event:
    """Expected event of a block op over ``lanes`` of ``buffer``: address = lowest lane, size = lanes x bytes."""
    address = Addr(heap_rank, buffer, min(lanes)) if lanes else None
    return Event(name=name, kind=kind, pid=pid, pid_m=pid if pid_m is None else pid_m, pid_n=pid_n, cur_rank=rank,
                 target_rank=target, address=address, payload_size=len(lanes) * ELEMENT_BYTES[dtype],
                 payload=payload)


def cast(values: list, dtype: str) -> list:
    """Python values as the device stores them for ``dtype`` (ints wrap, floats stay floats)."""
    if dtype.startswith("float") or dtype == "bfloat16":
        return [float(v) for v in values]
    bits = ELEMENT_BYTES[dtype] * 8
    return [((int(v) + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1)) for v in values]
