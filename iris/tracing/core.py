"""Host ``Tracing``: enable device tracing for a rank, read its events back, export them.

The trace buffers are plain device allocations owned by this object (not on the symmetric
heap); the context tensor's tracing block points at them while tracing is enabled.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import torch

from iris import layout
from iris.checks import is_int
from iris.tracing import hw
from iris.tracing.events import TRACE_FIELDS
from iris.tracing.records import TraceRecords
from iris.world import synchronize


def backend_of(device: torch.device) -> str:
    """Clock backend of kernels on ``device``: "cuda", "hip" or "interpreter"."""
    if device.type == "cpu":
        return "interpreter"
    return "hip" if torch.version.hip else "cuda"


class Tracing:
    """Trace buffers of one rank. ``owner`` supplies ``rank``, ``device`` and ``_write_tracing_block``."""

    def __init__(self, owner) -> None:
        self._owner = owner
        self._records: torch.Tensor | None = None
        self._counter: torch.Tensor | None = None
        self.enabled = False

    @property
    def backend(self) -> str:
        return backend_of(self._owner.device)

    @property
    def ticks_per_second(self) -> float:
        return hw.TICKS_PER_SECOND[self.backend]

    @property
    def max_events(self) -> int:
        return 0 if self._records is None else self._records.shape[1]

    def enable(self, max_events: int = 1_000_000) -> None:
        """Allocate buffers for ``max_events`` events (zeroed) and switch tracing on in the context."""
        if not is_int(max_events) or max_events <= 0:
            raise ValueError(f"max_events={max_events!r}; expected a positive int (events per rank to keep)")
        device = self._owner.device
        if self._records is None or self._records.shape[1] != max_events:
            records = torch.zeros((len(TRACE_FIELDS), max_events), dtype=torch.int64, device=device)
            counter = torch.zeros(1, dtype=torch.int64, device=device)
            self._records, self._counter = records, counter
        else:
            self._clear()
        self.enabled = True
        self._publish()

    def disable(self) -> None:
        """Switch tracing off at run time (kernels compiled with tracing record nothing); keeps the events."""
        self.enabled = False
        self._publish()

    def reset(self) -> None:
        """Forget every recorded event and the attempt counter; tracing stays as it was."""
        self._require_buffers("reset")
        self._clear()

    def _clear(self) -> None:
        self._sync()
        self._records.zero_()
        self._counter.zero_()

    def _publish(self) -> None:
        block = None
        if self.enabled:
            block = layout.TracingBlock(1, self.max_events, self._counter.data_ptr(), self._records.data_ptr())
        self._owner._write_tracing_block(block)

    def _require_buffers(self, what: str) -> None:
        if self._records is None:
            raise RuntimeError(f"tracing.{what} used before tracing.enable(max_events); enable tracing first")

    def _sync(self) -> None:
        synchronize(self._owner.device)

    def release(self) -> None:
        """Free the trace buffers (the owner closes; the context must not point at them any more)."""
        self.enabled = False
        self._records = self._counter = None

    @property
    def attempted(self) -> int:
        """Events kernels tried to record since enable/reset (recorded + dropped)."""
        self._require_buffers("attempted")
        self._sync()
        return int(self._counter.cpu()[0])

    @property
    def dropped(self) -> int:
        """Events not recorded because the buffers were full."""
        self._require_buffers("dropped")
        return max(0, self.attempted - self.max_events)

    # Read-only views under upstream iris's attribute names (for code written against it).

    @property
    def trace_counter(self) -> torch.Tensor | None:
        """Upstream-compatible view of the attempt counter: shape (1,), on the rank's device; None before enable.

        It holds ``attempted``: every event kernels tried to record since enable/reset, kept or dropped. It
        is the live buffer (no copy; the device is synchronized first): read it, never write it (``reset()``
        clears it). Unlike upstream iris, its dtype is int64 (upstream: int32).
        """
        if self._counter is None:
            return None
        self._sync()
        return self._counter

    @property
    def trace_buffers(self) -> Mapping[str, torch.Tensor]:
        """Upstream-compatible view of the records: field name -> ``max_events`` slots; empty before enable.

        One entry per ``TRACE_FIELDS`` name; slot i is the event that drew op_index i, and only the first
        ``min(attempted, max_events)`` slots hold events. The tensors are rows of the live buffer (no copy; the
        device is synchronized first): read them, never write them. The mapping itself cannot be changed.
        Unlike upstream iris: every field is int64 (upstream: int32 for most); ``payload`` is an extra field;
        ``duration_cycles`` is a duration, not an end timestamp: end - start ticks of a finished range,
        ``DURATION_OPEN`` (-1) for a range never ended, ``DURATION_INSTANT`` (-2) for an instant (upstream
        stores the end timestamp there, 0 for an instant). ``events()`` decodes the same data.
        """
        if self._records is None:
            return MappingProxyType({})
        self._sync()
        return MappingProxyType({field: self._records[row] for row, field in enumerate(TRACE_FIELDS)})

    def events(self) -> TraceRecords:
        """This rank's events, decoded (one bulk device-to-host copy per buffer)."""
        self._require_buffers("events")
        attempted = self.attempted
        n = min(attempted, self.max_events)
        rows = self._records[:, :n].cpu().numpy()
        return TraceRecords.from_buffer(rows, attempted, self.max_events, rank=self._owner.rank,
                                        backend=self.backend, ticks_per_second=self.ticks_per_second)

    @property
    def api(self) -> str:
        """The device API of the owner ("triton" or "gluon"): exports name processes "<api> rank <r>"."""
        return getattr(self._owner, "api", "triton")

    def export(self, path, merge: bool = False, *, format: str | None = None, flows: bool = True) -> str:
        """Write a Perfetto trace; returns the path written.

        ``format``: "json" (Chrome/Perfetto JSON) or "pftrace" (binary Perfetto); by default the suffix of
        ``path`` decides (``*.json``, ``*.pftrace``). ``merge=False``: this rank's events. ``merge=True``:
        collective; rank 0 writes every rank's events in one file, ranks aligned on a clock reference taken
        at a barrier, with arrows from each remote op to its target rank's "incoming" track (``flows=False``:
        no arrows).
        """
        from iris.tracing.export import export_ranks

        self._require_buffers("export")
        return export_ranks(self._owner, self.events(), path, merge, api=self.api, format=format, flows=flows)
