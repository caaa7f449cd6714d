"""Decoded trace records of one rank: columns of numpy arrays, one row per recorded event.

Built from one bulk copy of the records buffer; every derived column is vectorized.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from iris.tracing.events import DURATION_INSTANT, DURATION_OPEN, TRACE_FIELDS, event_name

KIND_RANGE, KIND_INSTANT, KIND_UNFINISHED = 0, 1, 2
KIND_NAMES = {KIND_RANGE: "range", KIND_INSTANT: "instant", KIND_UNFINISHED: "unfinished"}


@dataclass
class TraceRecords:
    """Events of one rank in slot order (= ``op_index`` order).

    ``columns`` holds every field of ``TRACE_FIELDS`` plus ``kind`` (KIND_*) and ``duration_ns``
    (float, NaN where the event is not a finished range).
    """

    rank: int
    backend: str
    ticks_per_second: float
    attempted: int
    capacity: int
    columns: dict[str, np.ndarray] = field(repr=False)

    @classmethod
    def from_buffer(
        cls, rows: np.ndarray, attempted: int, capacity: int, *, rank: int, backend: str, ticks_per_second: float
    ):
        """Decode the first ``min(attempted, capacity)`` slots of a ``[fields, >= that]`` int64 array."""
        n = min(attempted, capacity)
        cols = {name: rows[i, :n].copy() for i, name in enumerate(TRACE_FIELDS)}
        dur = cols["duration_cycles"]
        kind = np.full(n, KIND_RANGE, dtype=np.int8)
        kind[dur == DURATION_INSTANT.value] = KIND_INSTANT
        kind[dur == DURATION_OPEN.value] = KIND_UNFINISHED
        cols["kind"] = kind
        cols["duration_ns"] = np.where(kind == KIND_RANGE, dur * (1e9 / ticks_per_second), np.nan)
        return cls(rank, backend, ticks_per_second, attempted, capacity, cols)

    def __len__(self) -> int:
        return len(self.columns["event_id"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    @property
    def dropped(self) -> int:
        """Events attempted past capacity (never written)."""
        return max(0, self.attempted - self.capacity)

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
            row = {f: int(self.columns[f][i]) for f in TRACE_FIELDS}
            row["name"] = names[i]
            row["kind"] = KIND_NAMES[int(self.columns["kind"][i])]
            row["duration_ns"] = float(self.columns["duration_ns"][i])
            out.append(row)
        return out
