"""Observed events to logical ``Event``s: addresses to (heap rank, buffer, index), keys to program order.

Events are keyed by ``(cur_rank, pid, k)`` where ``k`` is the event's position within its program
(programs claim slots in program order, so sorting a program's events by ``op_index`` gives it).
"""

from __future__ import annotations

from conformance.model import Addr, Event


class AddressMap:
    """Maps a raw address seen on one rank to ``Addr`` using that rank's heap bases and buffer layout."""

    def __init__(self, heap_bases: list[int], layout: dict[str, tuple[int, int, int]], heap_bytes: int) -> None:
        self.heap_bases = heap_bases
        self.layout = layout
        self.heap_bytes = heap_bytes

    def __call__(self, address: int) -> Addr | int | None:
        """``Addr`` for an address inside a named buffer, ``None`` for 0, the raw int otherwise."""
        if address == 0:
            return None
        for heap_rank, base in enumerate(self.heap_bases):
            offset = address - base
            if 0 <= offset < self.heap_bytes:
                for name, (start, elem, numel) in self.layout.items():
                    if start <= offset < start + elem * numel and (offset - start) % elem == 0:
                        return Addr(heap_rank, name, (offset - start) // elem)
        return address


def to_event(row: dict, addresses: AddressMap) -> Event:
    """The logical ``Event`` of one decoded trace row."""
    return Event(
        name=row["name"], kind=row["kind"], pid=row["pid"], pid_m=row["pid_m"], pid_n=row["pid_n"],
        cur_rank=row["cur_rank"], target_rank=row["target_rank"], address=addresses(row["address"]),
        payload_size=row["payload_size"], payload=row["payload"],
    )  # fmt: skip


def by_program(events: list[Event], order: list[int]) -> dict[int, list[Event]]:
    """``{pid: events in program order}`` given each event's ``op_index`` in ``order``."""
    programs: dict[int, list[tuple[int, Event]]] = {}
    for op_index, ev in zip(order, events, strict=True):
        programs.setdefault(ev.pid, []).append((op_index, ev))
    return {pid: [ev for _, ev in sorted(evs, key=lambda x: x[0])] for pid, evs in sorted(programs.items())}


def expected_by_program(events: list[Event]) -> dict[int, list[Event]]:
    """A model's events grouped per program, keeping their listed order."""
    programs: dict[int, list[Event]] = {}
    for ev in events:
        programs.setdefault(ev.pid, []).append(ev)
    return dict(sorted(programs.items()))
