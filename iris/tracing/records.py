"""Decoded trace records of one rank: columns of numpy arrays, one row per recorded event.

Built from one bulk copy of the records buffer (slot-major: a record per slot, holes skipped); every derived
column is vectorized.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from iris.tracing.events import DURATION_INSTANT, DURATION_OPEN, EMPTY_EVENT, FIELD_INDEX, TRACE_FIELDS, event_name

KIND_RANGE, KIND_INSTANT, KIND_UNFINISHED = 0, 1, 2
KIND_NAMES = {KIND_RANGE: "range", KIND_INSTANT: "instant", KIND_UNFINISHED: "unfinished"}


@dataclass
class TraceRecords:
    """Events of one rank in slot order (= ``op_index`` order); holes (slots never written) are skipped.

    ``columns`` holds every field of ``TRACE_FIELDS`` plus ``slot`` (where in the buffer the event was found),
    ``kind`` (KIND_*) and ``duration_ns`` (float, NaN where the event is not a finished range).
    ``dropped``: records that found no slot below ``max_events``; ``attempted`` = recorded + dropped.
    """

    rank: int
    backend: str
    ticks_per_second: float
    dropped: int
    max_events: int
    columns: dict[str, np.ndarray] = field(repr=False)

    @classmethod
    def from_slots(cls, slots: np.ndarray, dropped: int, max_events: int, *, rank: int, backend: str,
                   ticks_per_second: float):
        """Decode the slots a device wrote: an int64 ``[n, >= len(TRACE_FIELDS)]`` array, one record per row (word
        f = field f), where a row whose event_id is ``EMPTY_EVENT`` is a hole and is skipped."""
        fields = np.ascontiguousarray(slots[:, : len(TRACE_FIELDS)].T)
        return cls.from_written(fields, dropped, max_events, rank=rank, backend=backend,
                                ticks_per_second=ticks_per_second)

    @classmethod
    def from_written(cls, fields: np.ndarray, dropped: int, max_events: int, *, rank: int, backend: str,
                     ticks_per_second: float):
        """The same from the slots field-major (``[len(TRACE_FIELDS), n]``, column s = slot s), holes included:
        what ``Tracing.events`` copies from the device after transposing there."""
        holes = fields[FIELD_INDEX["event_id"]] == EMPTY_EVENT.value
        if holes.any():  # a copy only where there are holes
            index = np.nonzero(~holes)[0]
            fields = fields[:, index]
        else:
            index = np.arange(fields.shape[1])
        return cls.from_fields(fields, dropped, max_events, rank=rank, backend=backend,
                               ticks_per_second=ticks_per_second, slots=index)

    @classmethod
    def from_fields(cls, rows: np.ndarray, dropped: int, max_events: int, *, rank: int, backend: str,
                    ticks_per_second: float, slots: np.ndarray | None = None):
        """Events from an int64 ``[len(TRACE_FIELDS), n]`` array, row f = field f, one column per event;
        ``slots``: the buffer slot of each (default: its op_index)."""
        cols = {name: np.ascontiguousarray(rows[i]) for i, name in enumerate(TRACE_FIELDS)}
        n = rows.shape[1]
        cols["slot"] = cols["op_index"].copy() if slots is None else np.asarray(slots, dtype=np.int64)
        dur = cols["duration_cycles"]
        kind = np.full(n, KIND_RANGE, dtype=np.int8)
        kind[dur == DURATION_INSTANT.value] = KIND_INSTANT
        kind[dur == DURATION_OPEN.value] = KIND_UNFINISHED
        cols["kind"] = kind
        cols["duration_ns"] = np.where(kind == KIND_RANGE, dur * (1e9 / ticks_per_second), np.nan)
        return cls(rank, backend, ticks_per_second, dropped, max_events, cols)

    def __len__(self) -> int:
        return len(self.columns["event_id"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    @property
    def attempted(self) -> int:
        """Records kernels made: recorded + dropped."""
        return len(self) + self.dropped

    @property
    def unfinished(self) -> np.ndarray:
        """Slots of ranges that were started and never ended."""
        return np.nonzero(self.columns["kind"] == KIND_UNFINISHED)[0]

    def names(self) -> list[str]:
        """Event name of every row."""
        return [event_name(i) for i in self.columns["event_id"]]

    def rows(self) -> list[dict]:
        """One dict per event (plain ints; ``name`` and ``kind`` as strings). For tests and small traces."""
        out = []
        names = self.names()
        for i in range(len(self)):
            row = {f: int(self.columns[f][i]) for f in (*TRACE_FIELDS, "slot")}
            row["name"] = names[i]
            row["kind"] = KIND_NAMES[int(self.columns["kind"][i])]
            row["duration_ns"] = float(self.columns["duration_ns"][i])
            out.append(row)
        return out
