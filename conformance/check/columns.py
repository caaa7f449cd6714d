"""Events as columns: the logical fields of many events as numpy arrays, compared all at once.

``conformance.check.compare`` turns each side of a comparison (a model's events, an API's decoded records, its
exported trace) into :class:`EventColumns`: one array per column of ``COLUMNS`` (the logical fields of
``model.LOGICAL_FIELDS``; strings as codes of one :class:`Codes` table per comparison, the address as four
columns), the events in program order (by pid; within a program by ``op_index``, or as a model lists them), and
each event itself on demand (``event(i)``) for a divergence's report. A column holds int64 where every value is an
int, else the values themselves (object dtype), so equality is Python's either way: two sides' columns are equal
exactly where their ``Event``s are.
"""

from __future__ import annotations

import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, is_, itemgetter

import numpy as np

from conformance.check.model import LOGICAL_FIELDS, Addr, Event

# An address as four columns: what it is (``ADDRESS_*``), then the Addr's heap rank, buffer (a code) and index, or
# (a raw address) 0, 0 and the address itself; None is 0, 0, 0.
ADDRESS_NONE, ADDRESS_ADDR, ADDRESS_RAW = 0, 1, 2
ADDRESS_COLUMNS = ("address_tag", "address_heap", "address_buffer", "address_index")
COLUMNS: tuple[str, ...] = tuple(c for f in LOGICAL_FIELDS for c in (ADDRESS_COLUMNS if f == "address" else (f,)))


def int_column(values: Iterable) -> np.ndarray:
    """``values`` as int64 when every one is an int that fits (bools and numpy ints included), else as they are
    (object dtype: a float, a string, a huge int compare as Python compares them)."""
    values = values if isinstance(values, list) else list(values)
    try:
        return np.frombuffer(array.array("q", values), dtype=np.int64)
    except (TypeError, OverflowError):
        column = np.empty(len(values), dtype=object)
        column[:] = values
        return column


class Codes:
    """One comparison's codes of strings (names, kinds, buffers): equal values, equal codes."""

    def __init__(self) -> None:
        self._codes: dict = {}

    def code(self, value) -> int:
        return self._codes.setdefault(value, len(self._codes))

    def of(self, values: Sequence) -> np.ndarray:
        """The code of every value."""
        for value in set(values):
            self.code(value)
        return np.fromiter(map(self._codes.__getitem__, values), dtype=np.int64, count=len(values))

    def table(self, values: Sequence) -> np.ndarray:
        """The codes of ``values`` as an array indexed like them (a lookup table)."""
        return np.array([self.code(v) for v in values], dtype=np.int64)


def address_columns(addresses: list, codes: Codes) -> dict[str, np.ndarray]:
    """The four ``ADDRESS_COLUMNS`` of addresses given as values: ``Addr`` (or a 3-tuple, which equals one), ``None``
    or a raw address no buffer holds (an int; any other value is compared as it is)."""
    n = len(addresses)
    kinds = set(map(type, addresses))
    tag = np.zeros(n, dtype=np.int64)
    if kinds <= {type(None), Addr}:
        present = np.fromiter(map(is_, addresses, repeat(None)), dtype=bool, count=n)
        np.logical_not(present, out=present)
        addrs = [a for a in addresses if a is not None]
        tag[present] = ADDRESS_ADDR
        raw: list = []
    else:
        tags = [_address_tag(a) for a in addresses]
        tag[:] = tags
        present = tag == ADDRESS_ADDR
        addrs = [a for a, t in zip(addresses, tags, strict=True) if t == ADDRESS_ADDR]
        raw = [a for a, t in zip(addresses, tags, strict=True) if t == ADDRESS_RAW]
    index = _placed(int_column(list(map(itemgetter(2), addrs))), present)
    return {"address_tag": tag, "address_heap": _placed(int_column(list(map(itemgetter(0), addrs))), present),
            "address_buffer": _placed(codes.of(list(map(itemgetter(1), addrs))), present),
            "address_index": _with(index, tag == ADDRESS_RAW, int_column(raw)) if raw else index}


def _address_tag(address) -> int:
    """What ``address`` is; anything but ``None`` and a 3-tuple (an ``Addr`` or equal to one) is compared as itself,
    as a raw address."""
    if address is None:
        return ADDRESS_NONE
    return ADDRESS_ADDR if isinstance(address, tuple) and len(address) == 3 else ADDRESS_RAW


def _placed(values: np.ndarray, where: np.ndarray) -> np.ndarray:
    """A column as long as ``where`` holding ``values`` where it is true, 0 elsewhere."""
    return _with(np.zeros(len(where), dtype=values.dtype), where, values)


def _with(column: np.ndarray, where: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``column`` with ``values`` at ``where``, widened to object dtype if their dtypes differ."""
    if values.dtype != column.dtype:
        column = column.astype(object)
    column[where] = values
    return column


@dataclass
class EventColumns:
    """Events as columns (``COLUMNS``), in program order: ``pids`` (sorted) with the first row and the count of each
    program's events; ``event(i)`` is the ``Event`` of row i."""

    columns: dict[str, np.ndarray]
    pids: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    event: Callable[[int], Event]

    @classmethod
    def ordered(cls, columns: dict[str, np.ndarray], order: np.ndarray | None,
                event: Callable[[int], Event]) -> EventColumns:
        """The columns of events given in any order, taken in program order ``order`` (None: as given);
        ``event(j)``: the event given j-th."""
        if order is not None:
            columns = {c: v[order] for c, v in columns.items()}
            event = _reordered(event, order)
        pid = columns["pid"]
        n = len(pid)
        starts = np.flatnonzero(np.concatenate(([True], pid[1:] != pid[:-1]))) if n else np.zeros(0, np.int64)
        counts = np.diff(np.append(starts, n))
        return cls(columns, pid[starts], starts, counts, event)


def _reordered(event: Callable[[int], Event], order: np.ndarray) -> Callable[[int], Event]:
    return lambda i: event(int(order[i]))


def program_order(pid: np.ndarray, op_index: np.ndarray | None = None) -> np.ndarray | None:
    """The permutation that sorts events by pid and, within a program, by ``op_index`` (None: keeping their order),
    ties in their order; None where they are in that order already."""
    if op_index is not None and len(op_index) > 1 and not bool(np.all(op_index[1:] > op_index[:-1])):
        by_index = np.argsort(op_index, kind="stable")
        return by_index[np.argsort(pid[by_index], kind="stable")]
    if len(pid) < 2 or bool(np.all(pid[1:] >= pid[:-1])):
        return None
    return np.argsort(pid, kind="stable")


def model_columns(events: list[Event], codes: Codes) -> EventColumns:
    """A model's events of one rank as columns, each program's in the order listed."""
    columns = {}
    for f in LOGICAL_FIELDS:
        values = list(map(attrgetter(f), events))
        if f == "address":
            columns.update(address_columns(values, codes))
        else:
            columns[f] = codes.of(values) if f in ("name", "kind") else int_column(values)
    return EventColumns.ordered(columns, program_order(columns["pid"]), events.__getitem__)
