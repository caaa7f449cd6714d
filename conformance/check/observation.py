"""What one example observes on one rank: the record a rank process sends back to the host.

``rank_side.run_example`` builds a :class:`RankObservation` per rank (pickled across the process boundary);
``conformance.check.compare``, ``conformance.report.output``, ``example`` and the mutation probe read it by
attribute. Per API it holds an :class:`ApiObservation`: the decoded trace records as ``events()`` returned them,
every host view of the counters, the exported trace read back, the buffers' final memory and what the launch
compiled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.check.exported import ExportedTrace
from iris.tracing.guard import GuardWord
from iris.tracing.records import TraceRecords


@dataclass(frozen=True)
class HostCounters:
    """The counters as the host ``Tracing`` reports them itself (``tracing.attempted``, ``.dropped``,
    ``.claimed`` and the upstream-compatible ``.trace_counter``), and each word a kernel wrote past the end."""

    attempted: int
    dropped: int
    claimed: int
    trace_counter: int
    guard_changes: tuple[GuardWord, ...] = ()  # the guard slot's changed words (``tracing.guard_changes()``)


@dataclass
class ApiObservation:
    """One API's launch on one rank.

    ``records`` is what ``shmem.tracing.events()`` returned (its ``attempted`` and ``dropped`` are ``events()``'s
    view of the counters); ``host`` the host's own view; ``exported`` the events ``tracing.export`` wrote, read
    back. ``layout``: ``{buffer: (heap offset, element bytes, elements)}``; ``window``: the device clock before
    and after the launch; ``memory``: each buffer's final contents (``tensor.tolist()``), read after every rank's
    kernels finished. ``compiles``: kernel variants compiled in this process by the launch; ``jit_compiled`` and
    ``jit_loaded``: kernels Triton compiled or loaded from its disk cache; ``variants``: the hashes of the compiled
    variants launched (none under the interpreter).
    """

    records: TraceRecords
    host: HostCounters
    exported: ExportedTrace
    layout: dict[str, tuple[int, int, int]]
    window: tuple[int, int]
    compiles: int = 0
    jit_compiled: int = 0
    jit_loaded: int = 0
    variants: list[str] = field(default_factory=list)
    memory: dict[str, list] = field(default_factory=dict)


@dataclass
class RankObservation:
    """One rank's side of one example: the rank, its heap and device facts, each API's observation, and the
    seconds it spent by phase (``rank_side.PhaseClock``)."""

    rank: int
    heap_bases: list[int]
    cu_limit: int  # CU/SM ids of this device are below it
    backend: str  # what the host's tracing reports: picks the XCC id limit
    ticks_per_second: float
    apis: dict[str, ApiObservation] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
