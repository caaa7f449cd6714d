"""Decoded trace records of one rank: columns of numpy arrays, one row per recorded event.

Built from one bulk copy of the records buffer (slot-major: a record per slot, holes skipped); every derived
column is vectorized. ``decode_words`` and ``encode_records`` are the record format's host side (where each field
lives: ``iris.tracing.events.FIELDS``), one the inverse of the other.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np
import torch

from iris import context_layout
from iris.tracing.events import (
    DURATION_INSTANT,
    DURATION_OPEN,
    EMPTY_EVENT,
    EVENT_IDS,
    FIELD_BY_NAME,
    FIELD_INDEX,
    FIELDS,
    OLD_EVENT_IDS,
    TRACE_FIELDS,
    TraceField,
    event_name,
    warn_old_ids,
)

KIND_RANGE, KIND_INSTANT, KIND_UNFINISHED = 0, 1, 2
KIND_NAMES = {KIND_RANGE: "range", KIND_INSTANT: "instant", KIND_UNFINISHED: "unfinished"}
HOST_FIELDS = {"cur_rank": "the rank whose buffers hold the record", "op_index": "the slot"}  # stored nowhere


_LOW_HALF = 0 if sys.byteorder == "little" else 1  # which int32 of an int64 holds its bits 0-31


def _field(words: np.ndarray, f: TraceField) -> np.ndarray:
    """Field ``f`` of field-major int64 ``words`` (``[RECORD_WORDS, n]``): a view of row ``f.word`` for a 64-bit
    field, else a strided int32 view of its half (sign-extended when widened: one pass, no shifts)."""
    if f.bits == 64:
        return words[f.word]
    halves = np.ascontiguousarray(words[f.word]).view(np.int32)
    low = _LOW_HALF if f.shift == 0 else 1 - _LOW_HALF
    return halves[low::2]


def int32_column(name: str) -> int:
    """The column of 32-bit field ``name`` in a records buffer viewed as int32 (two per word, low half first)."""
    f = FIELD_BY_NAME[name]
    if f.word is None or f.bits != 32:
        raise ValueError(f"trace field {name} is not a 32-bit half of a record word")
    return 2 * f.word + f.shift // 32


def event_ids(words: np.ndarray) -> np.ndarray:
    """The ``event_id`` of each record of field-major ``words`` (``[RECORD_WORDS, n]``): ``EMPTY_EVENT`` at a hole."""
    return _field(words, FIELD_BY_NAME["event_id"])


_OLD_LOW = min(OLD_EVENT_IDS)
# The new id of each old one, indexed by old id - _OLD_LOW (the old ids are consecutive).
_NEW_OF_OLD = np.array([EVENT_IDS[OLD_EVENT_IDS[_OLD_LOW + k]] for k in range(len(OLD_EVENT_IDS))], dtype=np.int64)


def renumber_old_ids(ids: np.ndarray) -> np.ndarray:
    """int64 event ids with every old id (``OLD_EVENT_IDS``) replaced by the new id of its name, warning once
    (``warn_old_ids``); ``ids`` itself, not a copy, where there is none."""
    offset = ids.astype(np.int64, copy=False) - _OLD_LOW
    old = offset.view(np.uint64) < len(_NEW_OF_OLD)
    if not old.any():
        return ids
    warn_old_ids()
    out = ids.copy()
    out[old] = _NEW_OF_OLD[offset[old]]
    return out


def decode_words(words: np.ndarray, rank: int, slots: np.ndarray) -> np.ndarray:
    """Field-major records (int64 ``[RECORD_WORDS, n]``, column i = the record in slot ``slots[i]`` of ``rank``'s
    buffers) as int64 ``[len(TRACE_FIELDS), n]`` fields, row f = ``TRACE_FIELDS[f]``."""
    n = words.shape[1]
    out = np.empty((len(FIELDS), n), dtype=np.int64)
    for i, f in enumerate(FIELDS):
        if f.name == "cur_rank":
            out[i] = rank
        elif f.name == "op_index":
            out[i] = slots
        else:
            out[i] = _field(words, f)  # an int32 half widens to int64 with its sign
    return out


def unpack_slots(slots: torch.Tensor, rank: int) -> torch.Tensor:
    """``decode_words`` done where the records are, for a GPU to run before the copy back: int64 ``[n,
    RECORD_WORDS]`` slots (a slice of the records buffer, slot s = row s) as int64 ``[len(TRACE_FIELDS), n]`` fields,
    row f = ``TRACE_FIELDS[f]``, on the slots' device. The host then only copies rows (14 words a record come back
    instead of 8, but no host pass splits a word: faster on a GPU host, ``docs/figures.md``, "Host: decoding and
    export")."""
    n = slots.shape[0]
    halves = slots.view(torch.int32)  # device words are little-endian: the low half first (int32_column)
    out = torch.empty((len(FIELDS), n), dtype=torch.int64, device=slots.device)
    for i, f in enumerate(FIELDS):
        if f.name == "cur_rank":
            out[i].fill_(rank)
        elif f.name == "op_index":
            torch.arange(n, out=out[i])
        elif f.bits == 64:
            out[i].copy_(slots[:, f.word])
        else:
            out[i].copy_(halves[:, int32_column(f.name)])  # an int32 half widens to int64 with its sign
    return out


def encode_records(fields: np.ndarray) -> np.ndarray:
    """The records a device writes for int64 ``[len(TRACE_FIELDS), n]`` fields (row f = ``TRACE_FIELDS[f]``): a
    slot-major int64 ``[n, RECORD_WORDS]`` array (``cur_rank`` and ``op_index`` are not stored; words no field uses
    are 0). The inverse of ``decode_words`` for values that fit their bits."""
    out = np.zeros((fields.shape[1], context_layout.RECORD_WORDS), dtype=np.int64)
    for i, f in enumerate(FIELDS):
        if f.word is None:
            continue
        value = fields[i].astype(np.int64)
        if f.bits == 32:
            value = (value & 0xFFFFFFFF) << f.shift
        out[:, f.word] |= value
    return out


@dataclass
class TraceRecords:
    """Events of one rank in slot order (= ``op_index`` order); holes (slots never written) are skipped.

    ``columns`` holds every field of ``TRACE_FIELDS`` plus ``slot`` (where in the buffer the event was found),
    ``kind`` (KIND_*) and ``duration_ns`` (float, NaN where the event is not a finished range). ``event_id`` holds
    the table's ids: an old one (``OLD_EVENT_IDS``) is decoded to its new id (``renumber_old_ids``).
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
        """Decode the slots a device wrote: an int64 ``[n, RECORD_WORDS]`` array, one record per row (slot s = row
        s), where a row whose event_id is ``EMPTY_EVENT`` is a hole and is skipped."""
        return cls.from_written(np.ascontiguousarray(slots.T), dropped, max_events, rank=rank, backend=backend,
                                ticks_per_second=ticks_per_second)

    @classmethod
    def from_written(cls, words: np.ndarray, dropped: int, max_events: int, *, rank: int, backend: str,
                     ticks_per_second: float):
        """The same from the slots field-major (int64 ``[RECORD_WORDS, n]``, column s = slot s), holes included:
        what ``Tracing.events`` copies from the device after transposing there."""
        holes = event_ids(words) == EMPTY_EVENT.value
        if holes.any():  # a copy only where there are holes
            index = np.nonzero(~holes)[0]
            words = words[:, index]
        else:
            index = np.arange(words.shape[1])
        return cls.from_fields(decode_words(words, rank, index), dropped, max_events, rank=rank, backend=backend,
                               ticks_per_second=ticks_per_second, slots=index)

    @classmethod
    def from_unpacked(cls, rows: np.ndarray, dropped: int, max_events: int, *, rank: int, backend: str,
                      ticks_per_second: float):
        """The same from every slot's fields (int64 ``[len(TRACE_FIELDS), n]``, column s = slot s, holes included):
        what ``unpack_slots`` gives, copied to the host."""
        holes = rows[FIELD_INDEX["event_id"]] == EMPTY_EVENT.value
        if holes.any():  # a copy only where there are holes
            rows = rows[:, ~holes]
        return cls.from_fields(rows, dropped, max_events, rank=rank, backend=backend,
                               ticks_per_second=ticks_per_second)

    @classmethod
    def from_fields(cls, rows: np.ndarray, dropped: int, max_events: int, *, rank: int, backend: str,
                    ticks_per_second: float, slots: np.ndarray | None = None):
        """Events from an int64 ``[len(TRACE_FIELDS), n]`` array, row f = field f, one column per event;
        ``slots``: the buffer slot of each (default: its op_index)."""
        cols = {name: np.ascontiguousarray(rows[i]) for i, name in enumerate(TRACE_FIELDS)}
        cols["event_id"] = renumber_old_ids(cols["event_id"])  # records written with ids 14-17
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
