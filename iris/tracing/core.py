"""Host ``Tracing``: enable device tracing for a rank, read its events back, export them.

The trace buffers are plain device allocations owned by this object (not on the symmetric
heap); the context tensor's tracing block points at them while tracing is enabled.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from types import MappingProxyType

import torch

from iris import context_layout
from iris.checks import is_int
from iris.tracing import hw
from iris.tracing.events import EMPTY_EVENT, FIELDS
from iris.tracing.guard import GUARD_RECORD, GuardWord, guard_changes
from iris.tracing.readback import Readback
from iris.tracing.records import HOST_FIELDS, TraceRecords, int32_column, unpack_slots
from iris.world import synchronize


def backend_of(device: torch.device) -> str:
    """Clock backend of kernels on ``device``: "cuda", "hip" or "interpreter"."""
    if device.type == "cpu":
        return "interpreter"
    return "hip" if torch.version.hip else "cuda"


MAX_CHUNK = 1 << 20
MAX_EVENTS = context_layout.SLOT_LIMIT - MAX_CHUNK  # every chunk a program can claim ends below SLOT_LIMIT
DEFAULT_CHUNK = 16  # slots a program claims at a time: one claim (a device-wide atomic) per 16 events


class Tracing:
    """Trace buffers of one rank. ``owner`` supplies ``rank``, ``num_ranks``, ``device`` and ``_write_tracing_block``.

    Record semantics (``docs/design.md``, "Trace records"): every program that initializes tracing claims a chunk of
    ``chunk`` consecutive slots with one relaxed atomic on the claim counter and hands them out in program order;
    it claims the next chunk only when the current one is used up. Unused slots are holes (``EMPTY_EVENT``),
    skipped when decoding; a record that finds no slot below ``max_events`` is dropped and counted.
    """

    def __init__(self, owner) -> None:
        self._owner = owner
        self._records: torch.Tensor | None = None
        self._guarded: torch.Tensor | None = None  # the records and one guard slot past the end
        self._counters: torch.Tensor | None = None
        self._cursors: torch.Tensor | None = None
        self._chunk = DEFAULT_CHUNK
        self._readback = Readback()
        self.enabled = False

    @property
    def backend(self) -> str:
        return backend_of(self._owner.device)

    @property
    def ticks_per_second(self) -> float:
        return hw.TICKS_PER_SECOND[self.backend]

    @property
    def max_events(self) -> int:
        return 0 if self._records is None else self._records.shape[0]

    @property
    def chunk(self) -> int:
        """Slots a program claims at a time (``enable(..., chunk=...)``)."""
        return self._chunk

    def enable(self, max_events: int = 1_000_000, chunk: int = DEFAULT_CHUNK) -> None:
        """Allocate buffers for ``max_events`` events (every slot a hole, the guard slot past them ``GUARD_RECORD``,
        counters zero) and switch tracing on.

        ``chunk``: slots a program claims at a time, a run-time value (kernels need no recompile): one device-wide
        atomic per ``chunk`` events of a program. Every program that initializes tracing takes one chunk, recording
        or not, so size ``max_events`` for (programs x chunk) plus the events; ``chunk=1`` claims per event.
        Buffers that cannot be allocated raise an error naming ``max_events``, the bytes and the device, and change
        nothing (tracing stays disabled, or enabled with the previous buffers).
        """
        if not is_int(max_events) or not 0 < max_events <= MAX_EVENTS:
            raise ValueError(f"max_events={max_events!r}; expected a positive int (events per rank to keep), at most "
                             f"{MAX_EVENTS} (slots are 32-bit)")
        if not is_int(chunk) or not 1 <= chunk <= MAX_CHUNK:
            raise ValueError(f"chunk={chunk!r}; expected an int in [1, {MAX_CHUNK}] (slots a program claims at a time)")
        cells = context_layout.cursor_cells(max_events, chunk)
        if self._records is None or self._records.shape[0] != max_events or self._cursors.shape[0] != cells:
            self._sync()
            # Every buffer is allocated before any is kept: a failure leaves the previous ones (or none) in place.
            self._guarded, self._counters, self._cursors = self._allocate(max_events, cells)
            self._records = self._guarded[:max_events]
        self._chunk = chunk
        self._clear()
        self.enabled = True
        self._publish()

    def _allocate(self, max_events: int, cells: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(records with one guard slot past the end, counters, cursors) for ``max_events`` slots and ``cells``
        cursor cells, or an error naming ``max_events``, the bytes needed and the device (nothing is changed).

        The guard slot is one no correct kernel writes: a record past max_events lands there, not in whatever
        memory follows the buffer, and ``guard_changes`` sees it (``iris.tracing.guard``). The records start zeroed:
        the read-back copies every claimed slot whole, holes included, so no word it reads is left undefined
        (compute-sanitizer's initcheck reports a read of memory never written).
        """
        device = self._owner.device
        shapes = ((max_events + 1, context_layout.RECORD_WORDS), (context_layout.COUNTERS,),
                  (cells, context_layout.CURSOR_WORDS))
        needed = 8 * sum(math.prod(shape) for shape in shapes)  # bytes: int64 words
        try:
            return (torch.zeros(shapes[0], dtype=torch.int64, device=device),
                    torch.empty(shapes[1], dtype=torch.int64, device=device),
                    torch.zeros(shapes[2], dtype=torch.int64, device=device))
        except RuntimeError as e:  # torch.OutOfMemoryError is one too
            error, reason = e, f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
        if self._records is None:
            state = "tracing stays disabled"
        else:
            state = (f"tracing stays {'enabled' if self.enabled else 'disabled'} with the previous buffers "
                     f"(max_events={self.max_events})")
        cls = torch.OutOfMemoryError if isinstance(error, torch.OutOfMemoryError) else RuntimeError
        raise cls(f"tracing.enable: max_events={max_events} needs {needed} bytes ({needed / 2**30:.1f} GiB) of "
                  f"trace buffers on device {device}, which could not be allocated ({reason}); {state}. "
                  f"Use a smaller max_events") from error

    def disable(self) -> None:
        """Switch tracing off at run time (kernels compiled with tracing record nothing); keeps the events."""
        self.enabled = False
        self._publish()

    def reset(self) -> None:
        """Forget every recorded event and both counters (every slot a hole again, the guard slot past them
        ``GUARD_RECORD`` again); tracing stays as it was."""
        self._require_buffers("reset")
        self._clear()

    def _clear(self) -> None:
        self._sync()
        self._event_ids(self._records).fill_(EMPTY_EVENT.value)
        self._guarded[-1].copy_(torch.tensor(GUARD_RECORD, dtype=torch.int64))
        self._counters.zero_()

    def _publish(self) -> None:
        block = None
        if self.enabled:
            block = context_layout.TracingBlock(1, self.max_events, self._chunk, self._counters.data_ptr(),
                                        self._records.data_ptr(), self._cursors.data_ptr())
        self._owner._write_tracing_block(block)

    def _require_buffers(self, what: str) -> None:
        if self._records is None:
            raise RuntimeError(f"tracing.{what} used before tracing.enable(max_events); enable tracing first")

    @property
    def written_past_end(self) -> bool:
        """Whether a kernel wrote any word of the guard slot past ``max_events`` (a correct kernel never does: a
        record that finds the buffer full is dropped, not written, and so is a dropped range's end);
        ``guard_changes()`` says which words."""
        self._require_buffers("written_past_end")
        return bool(self.guard_changes())

    def guard_changes(self) -> tuple[GuardWord, ...]:
        """Each word of the guard slot past ``max_events`` that differs from ``GUARD_RECORD``, what ``enable`` and
        ``reset`` wrote there: ``(word, found, expected)``, in word order; empty when no kernel wrote past the end."""
        self._require_buffers("guard_changes")
        self._sync()
        return guard_changes(self._guarded[-1].tolist())

    @staticmethod
    def _event_ids(records: torch.Tensor) -> torch.Tensor:
        """The event_id column of contiguous ``records`` (a view: 32-bit halves of a word)."""
        return records.view(torch.int32)[:, int32_column("event_id")]

    def _sync(self) -> None:
        synchronize(self._owner.device)

    def release(self) -> None:
        """Free the trace buffers (the owner closes; the context must not point at them any more)."""
        self.enabled = False
        self._records = self._guarded = self._counters = self._cursors = None
        self._readback.release()

    def _read_counters(self) -> tuple[int, int]:
        """(slots claimed, records dropped), from the device."""
        self._sync()
        claimed, dropped = (int(v) for v in self._counters.cpu().tolist())
        return claimed, dropped

    @property
    def claimed(self) -> int:
        """Slots claimed since enable/reset, in whole chunks (may pass ``max_events``; holes included)."""
        self._require_buffers("claimed")
        return self._read_counters()[0]

    @property
    def attempted(self) -> int:
        """Events kernels tried to record since enable/reset (recorded + dropped)."""
        self._require_buffers("attempted")
        claimed, dropped = self._read_counters()
        slots = self._event_ids(self._records[: min(claimed, self.max_events)])
        return int((slots != EMPTY_EVENT.value).sum()) + dropped

    @property
    def dropped(self) -> int:
        """Records that found no slot below ``max_events`` (never written)."""
        self._require_buffers("dropped")
        return self._read_counters()[1]

    # Read-only views under upstream iris's attribute names (for code written against it).

    @property
    def trace_counter(self) -> torch.Tensor | None:
        """Upstream-compatible view of the slot counter: shape (1,), on the rank's device; None before enable.

        Record semantics: it holds the slots claimed since enable/reset, a whole chunk at a time (holes
        included, and it may pass ``max_events``), not the events attempted (upstream: one slot per event, so
        the two were equal; ``attempted`` and ``dropped`` give those now). It is the live buffer (no copy; the
        device is synchronized first): read it, never write it (``reset()`` clears it). Unlike upstream iris, its
        dtype is int64 (upstream: int32).
        """
        if self._counters is None:
            return None
        self._sync()
        return self._counters[context_layout.COUNTER_CLAIMED: context_layout.COUNTER_CLAIMED + 1]

    @property
    def trace_buffers(self) -> Mapping[str, torch.Tensor]:
        """Upstream-compatible view of the records: field name -> ``max_events`` slots; empty before enable.

        One entry per ``TRACE_FIELDS`` name; slot i is the event that drew op_index i. Slots are claimed a chunk at
        a time, so a slot below ``trace_counter`` may be a hole, whose ``event_id`` is ``EMPTY_EVENT`` (-1; its
        other fields are undefined). A field the device stores is a strided column of the live buffer (records are
        slot-major, ``RECORD_WORDS`` words a slot; no copy; the device is synchronized first): int32 for the
        32-bit fields, int64 for timestamp, duration_cycles, address and payload; read them, never write them.
        ``cur_rank`` and ``op_index``, which no record stores, are new int32 tensors (this rank; the slot number).
        The mapping itself cannot be changed. Unlike upstream iris: ``payload`` is an extra field;
        ``duration_cycles`` is a duration, not an end timestamp: end - start ticks of a finished range,
        ``DURATION_OPEN`` (-1) for a range never ended, ``DURATION_INSTANT`` (-2) for an instant (upstream stores the
        end timestamp there, 0 for an instant). ``events()`` decodes the same data, holes skipped.
        """
        if self._records is None:
            return MappingProxyType({})
        self._sync()
        halves = self._records.view(torch.int32)
        derived = {"cur_rank": torch.full((self.max_events,), self._owner.rank, dtype=torch.int32,
                                          device=self._records.device),
                   "op_index": torch.arange(self.max_events, dtype=torch.int32, device=self._records.device)}
        columns = {}
        for f in FIELDS:
            if f.name in HOST_FIELDS:
                columns[f.name] = derived[f.name]
            else:
                columns[f.name] = self._records[:, f.word] if f.bits == 64 else halves[:, int32_column(f.name)]
        return MappingProxyType(columns)

    def events(self) -> TraceRecords:
        """This rank's events, decoded (holes skipped): on a GPU the claimed slots are split into one row per field
        there (``unpack_slots``), on the CPU transposed to one row per record word and split by numpy, which is the
        faster there; then copied to the host in bulk (``readback``)."""
        self._require_buffers("events")
        claimed, dropped = self._read_counters()
        n = min(claimed, self.max_events)
        meta = {"rank": self._owner.rank, "backend": self.backend, "ticks_per_second": self.ticks_per_second}
        if self._records.device.type == "cpu":
            words = self._readback.fields(self._records[:n])
            return TraceRecords.from_written(words, dropped, self.max_events, **meta)
        rows = self._readback.fields(unpack_slots(self._records[:n], self._owner.rank).t())
        return TraceRecords.from_unpacked(rows, dropped, self.max_events, **meta)

    @property
    def api(self) -> str:
        """The device API of the owner ("triton" or "gluon"): exports name processes "<api> rank <r>"."""
        return getattr(self._owner, "api", "triton")

    def export(self, path: str | os.PathLike, merge: bool = False, *, format: str | None = None,
               flows: bool = True) -> str:
        """Write a Perfetto trace; returns the path written.

        ``format``: "json" (Chrome/Perfetto JSON) or "pftrace" (binary Perfetto); by default the suffix of
        ``path`` decides (``*.json``, ``*.pftrace``). ``merge=False``: this rank's events, in this rank's own file,
        ``_rank<r>`` before the suffix (``trace.json`` -> ``trace_rank0.json``, as upstream iris), so ranks that
        export to one path never replace each other's file. ``merge=True``: collective; rank 0 writes every rank's
        events in one file, ``path``, ranks aligned on a clock reference taken at a barrier, with arrows from each
        remote op to its target rank's "incoming" track (``flows=False``: no arrows). A path that cannot be written
        is refused before anything is read or written, and a failed write leaves no file behind.
        """
        from iris.tracing.export import export_ranks

        for name, value in (("merge", merge), ("flows", flows)):
            if not isinstance(value, bool):
                raise ValueError(f"tracing.export: {name}={value!r}; expected a bool (True or False)")
        self._require_buffers("export")
        return export_ranks(self._owner, self.events, path, merge, api=self.api, format=format, flows=flows)
