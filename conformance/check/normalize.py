"""Observed events normalized to the model's terms: a raw address to ``Addr(heap_rank, buffer, index)``, a decoded
record or an exported row to an ``Event``, and an API's records or exported trace to ``EventColumns`` in program
order (by pid, then ``op_index``, ties in slot order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from conformance.check.columns import (
    ADDRESS_ADDR,
    ADDRESS_NONE,
    ADDRESS_RAW,
    Codes,
    EventColumns,
    address_columns,
    int_column,
    program_order,
)
from conformance.check.exported import INT_COLUMNS
from conformance.check.model import Addr, Event
from iris.tracing.events import event_name
from iris.tracing.records import KIND_NAMES, TraceRecords

if TYPE_CHECKING:
    from conformance.check.exported import ExportedColumns, ExportedTrace

_INT64 = (-(1 << 63), (1 << 63) - 1)
# The int columns of an event (``Event``'s fields but the name, kind and address), read from a record or a row.
INT_FIELDS = ("pid", "pid_m", "pid_n", "cur_rank", "target_rank", "payload_size", "payload")
KINDS = tuple(KIND_NAMES[k] for k in range(len(KIND_NAMES)))  # kind names by KIND_* code


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

    def columns(self, addresses: np.ndarray, codes: Codes) -> dict[str, np.ndarray]:
        """What ``__call__`` gives for each address, as the four ``ADDRESS_COLUMNS`` (``columns.address_columns``);
        int64 arithmetic where every base and buffer bound fits it, else one address at a time."""
        bounds = [v for b in self.heap_bases for v in (b, b + self.heap_bytes)]
        bounds += [v for start, elem, numel in self.layout.values() for v in (start, elem, start + elem * numel)]
        if addresses.dtype != np.int64 or not all(_INT64[0] <= v <= _INT64[1] for v in bounds):
            return address_columns([self(a) for a in addresses.tolist()], codes)
        n = len(addresses)
        tag = np.full(n, ADDRESS_RAW, dtype=np.int64)
        heap = np.zeros(n, dtype=np.int64)
        buffer = np.zeros(n, dtype=np.int64)
        index = addresses.copy()
        null = addresses == 0
        tag[null], index[null] = ADDRESS_NONE, 0
        buffers = [(codes.code(name), start, elem, numel) for name, (start, elem, numel) in self.layout.items()]
        pending = np.flatnonzero(~null)  # the rows no heap and buffer has taken yet
        for heap_rank, base in enumerate(self.heap_bases):
            if not len(pending):
                break
            address = addresses[pending]
            inside = (address >= base) & (address < base + self.heap_bytes)
            if not inside.any():
                continue
            rows, offset = pending[inside], address[inside] - base
            free = np.ones(len(rows), dtype=bool)
            for code, start, elem, numel in buffers:
                if elem == 0:  # an empty range: no offset is inside it
                    continue
                within = np.flatnonzero(free & (offset >= start) & (offset < start + elem * numel))
                step = offset[within] - start
                on = step % elem == 0
                within, step = within[on], step[on]
                at = rows[within]
                tag[at], heap[at], buffer[at], index[at] = ADDRESS_ADDR, heap_rank, code, step // elem
                free[within] = False
            pending = np.concatenate((pending[~inside], rows[free]))
        return {"address_tag": tag, "address_heap": heap, "address_buffer": buffer, "address_index": index}


def to_event(row: dict, addresses: AddressMap) -> Event:
    """The logical ``Event`` of one decoded trace row."""
    return Event(
        name=row["name"], kind=row["kind"], pid=row["pid"], pid_m=row["pid_m"], pid_n=row["pid_n"],
        cur_rank=row["cur_rank"], target_rank=row["target_rank"], address=addresses(row["address"]),
        payload_size=row["payload_size"], payload=row["payload"],
    )  # fmt: skip


def _name_codes(event_ids: np.ndarray, codes: Codes) -> np.ndarray:
    """The code of each event id's name (``event_name``)."""
    if not len(event_ids):
        return np.zeros(0, dtype=np.int64)
    low, high = int(event_ids.min()), int(event_ids.max())
    if high - low < 1 << 16:  # a lookup table over the ids' range
        shifted = event_ids - low
        present = np.flatnonzero(np.bincount(shifted))
        table = np.zeros(high - low + 1, dtype=np.int64)
        table[present] = codes.table([event_name(i + low) for i in present.tolist()])
        return table[shifted]
    ids, inverse = np.unique(event_ids, return_inverse=True)
    return codes.table([event_name(i) for i in ids.tolist()])[inverse]


def record_row(records: TraceRecords, i: int) -> dict:
    """Record ``i`` as the row ``records.rows()`` holds for it (the fields an ``Event`` takes)."""
    c = records.columns
    return {"name": event_name(c["event_id"][i]), "kind": KIND_NAMES[int(c["kind"][i])],
            "address": int(c["address"][i]), **{f: int(c[f][i]) for f in INT_FIELDS}}


def records_columns(records: TraceRecords, addresses: AddressMap, codes: Codes) -> EventColumns:
    """An API's decoded records on one rank as ``EventColumns``."""
    c = records.columns
    columns = {"name": _name_codes(c["event_id"], codes), "kind": codes.table(KINDS)[c["kind"]],
               **{f: c[f] for f in INT_FIELDS}, **addresses.columns(c["address"], codes)}
    return EventColumns.ordered(columns, program_order(c["pid"], c["op_index"]),
                                lambda i: to_event(record_row(records, i), addresses))


def exported_columns(trace: ExportedTrace, addresses: AddressMap, codes: Codes,
                     recorded: tuple[TraceRecords, EventColumns] | None = None) -> EventColumns:
    """The events of an API's exported trace on one rank as ``EventColumns`` (from its columns, or from its rows
    where it holds rows); ``recorded``: the API's records on that rank and their ``EventColumns``, given back where
    the trace holds the very same rows (a correct export)."""
    if trace.columns is not None:
        held = trace.columns
        columns = {"name": codes.table(held.names)[held.values["name"]],
                   "kind": codes.table(KINDS)[held.values["kind"]], **{f: held.values[f] for f in INT_COLUMNS}}
        if recorded is not None and _same_rows(held, columns["name"], recorded[0], codes):
            return recorded[1]

        def event(i: int) -> Event:
            return to_event(held.row(i), addresses)
    else:
        rows = trace.rows
        columns = {f: codes.of([r[f] for r in rows]) for f in ("name", "kind")}
        columns |= {f: int_column([r[f] for r in rows]) for f in INT_COLUMNS}

        def event(i: int) -> Event:
            return to_event(rows[i], addresses)
    op_index = columns.pop("op_index")
    columns |= addresses.columns(columns.pop("address"), codes)
    return EventColumns.ordered(columns, program_order(columns["pid"], op_index), event)


def _same_rows(held: ExportedColumns, names: np.ndarray, records: TraceRecords, codes: Codes) -> bool:
    """Whether ``held`` holds, row for row, the fields of ``records`` that an ``Event`` and its order take (then
    both give the same ``EventColumns``); ``names``: the codes of ``held``'s names."""
    return (len(held) == len(records) and np.array_equal(held.values["kind"], records["kind"])
            and all(np.array_equal(held.values[f], records[f]) for f in INT_COLUMNS)
            and np.array_equal(names, _name_codes(records["event_id"], codes)))
