"""What a scenario must produce, in plain Python: logical events per rank and final memory per rank.

The same ``Event`` type holds expected events (from a scenario's model) and observed ones (after
``conformance.check.compare`` normalizes them), so comparing is field by field equality. Addresses are
``Addr(heap_rank, buffer, index)``: the element ``index`` of the named heap buffer on ``heap_rank``;
``None`` where no lane was active (the device records 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple

from iris.tracing.events import LOGICAL_FIELDS as TRACE_LOGICAL

# What must equal the model's: the event's name (its event_id) and kind (the sign of its duration_cycles), then every
# other logical field of ``events.FIELDS``, in storage order.
LOGICAL_FIELDS = ("name", "kind", *(f for f in TRACE_LOGICAL if f != "event_id"))


class Addr(NamedTuple):
    """Element ``index`` of heap buffer ``buffer`` on rank ``heap_rank``."""

    heap_rank: int
    buffer: str
    index: int

    def __str__(self) -> str:
        return f"{self.buffer}[{self.index}]@rank{self.heap_rank}"


@dataclass(frozen=True)
class Event:
    """The logical content of one trace event (physical fields are checked for validity, not equality)."""

    name: str
    kind: str  # "range" | "instant" | "unfinished"
    pid: int
    pid_m: int
    pid_n: int
    cur_rank: int
    target_rank: int
    address: Addr | None
    payload_size: int
    payload: int = 0
    # A model's range that lies within another range of its program: that one's position in the program's events
    # (an op's own range inside the manual range around the call). Not a field of the record: the comparison checks
    # it on the timestamps (``compare._containment``), and observed events leave it None.
    within: int | None = field(default=None, compare=False)

    def diff(self, other: Event) -> list[str]:
        """Names of the logical fields that differ."""
        return [f for f in LOGICAL_FIELDS if getattr(self, f) != getattr(other, f)]


def inside(events: list[Event], outer: int) -> list[Event]:
    """``events`` (ranges of one program) marked as lying within the range at position ``outer`` of its events."""
    return [replace(e, within=outer) for e in events]


@dataclass
class Model:
    """Expected outcome of one example.

    ``events[r]``: rank r's events in program order per pid (any pid order). ``memory[r][buffer]``:
    rank r's final buffer contents (buffers not listed are not checked). With ``max_events`` set below
    the number of events, at most ``max_events`` of the expected events are kept, each program's kept
    events a prefix of its own expected sequence (overflow keeps whichever slots were claimed first,
    a chunk at a time, holes included), every other one is dropped (``dropped`` counts it), and
    ``attempted`` must still count them all; ``kept[r]``, where set, is how many exactly (one program: its
    chunks are consecutive, so none is a hole). ``claimed[r]``, where set, is the slots the rank's programs claim
    (``Tracing.claimed``): every program that initializes tracing claims a chunk, and one more each time it uses
    one up while the buffer has room.
    """

    events: dict[int, list[Event]]
    memory: dict[int, dict[str, list]] = field(default_factory=dict)
    max_events: int | None = None
    kept: dict[int, int] | None = None  # under overflow, events rank r must keep, where the slots are deterministic
    claimed: dict[int, int] | None = None  # slots rank r's programs must claim (chunks, holes included), if known

    def __post_init__(self) -> None:
        """Refuse a nesting (``Event.within``) that names no earlier event of its program."""
        for rank, events in self.events.items():
            if all(e.within is None for e in events):
                continue
            position: dict[int, int] = {}
            for e in events:
                k = position[e.pid] = position.get(e.pid, -1) + 1
                if e.within is not None and not (isinstance(e.within, int) and 0 <= e.within < k):
                    raise ValueError(f"the model's event {k} of rank {rank} pid {e.pid} lies within event "
                                     f"{e.within!r}: expected the position of an earlier event of its program, "
                                     f"0 to {k - 1}")

    def attempted(self, rank: int) -> int:
        return len(self.events.get(rank, []))
