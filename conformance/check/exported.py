"""What ``tracing.export`` wrote, read back as trace rows: the host side of a record, checked like the slots.

A rank exports each API's events with the user's call (``shmem.tracing.export(path)``, Chrome/Perfetto JSON) and
reads the file back here, with ``json`` only (no code shared with the writer): one row per slice or instant, with
the fields a model compares, plus the file's event and drop counts. The rows are kept as columns (a million events
cross to the host as a few arrays, not a million dicts).

    kind      ``i`` -> instant; ``X`` with ``args.unfinished`` -> unfinished (its name ends " (unfinished)"); ``X``
              -> range
    pid       from the track name "program <pid>" (a lane of the same program: "program <pid> #<k>")
    cur_rank  from the process name "<api> rank <r>"
    the rest  from the slice's arguments (``target_rank``, ``address``, ``payload_size``, ``payload``,
              ``op_index``, ``pid_m``, ``pid_n``)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from conformance.check.columns import int_column
from iris.tracing.events import EXPORT_ARGS, PHYSICAL_FIELDS
from iris.tracing.records import KIND_INSTANT, KIND_NAMES, KIND_RANGE, KIND_UNFINISHED

ARGS = tuple(a for a in EXPORT_ARGS if a not in PHYSICAL_FIELDS)  # the arguments the checks compare
UNFINISHED = " (unfinished)"
_TRACK = re.compile(r"program (\d+)( #\d+)?$")
_PROCESS = re.compile(r"(\w+) rank (\d+)$")


@dataclass
class ExportedColumns:
    """An export's events as columns, sorted by ``op_index``: ``values["name"]`` indexes ``names``,
    ``values["kind"]`` holds ``KIND_*`` (``iris.tracing.records``), every other column (``pid``, ``cur_rank``,
    ``ARGS``) the values (int64, or object where one is not an int64: ``columns.int_column``)."""

    names: tuple[str, ...]
    values: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.values["pid"])

    def row(self, i: int) -> dict:
        """Event ``i`` as a dict of plain values (what ``ExportedTrace.rows`` holds)."""
        v = self.values
        return {"name": self.names[v["name"][i]], "kind": KIND_NAMES[int(v["kind"][i])],
                **{f: _plain(v[f][i]) for f in INT_COLUMNS}}


INT_COLUMNS = ("pid", "cur_rank", *ARGS)  # the columns of ExportedColumns.values holding values


def _plain(value):
    return int(value) if isinstance(value, np.integer) else value


class ExportedTrace:
    """A one-rank export read back: its events (sorted by ``op_index``) and the file's own event and drop counts.

    The events are held as ``columns`` (what :func:`read` gives) or as ``rows``, a dict per event (what a test
    builds). ``rows`` made from the columns on first use are from then on what the trace holds (an edit to them
    counts), and ``columns`` is None.
    """

    def __init__(self, rows: list[dict] | None = None, events: int = 0, dropped: int = 0, *,
                 columns: ExportedColumns | None = None) -> None:
        if (rows is None) == (columns is None):
            raise ValueError("ExportedTrace: expected its events as rows or as columns (exactly one)")
        self._rows, self.columns, self.events, self.dropped = rows, columns, events, dropped

    @property
    def rows(self) -> list[dict]:
        """A dict per event: ``name``, ``kind``, ``pid``, ``cur_rank`` and every argument of ``ARGS``."""
        if self._rows is None:
            self._rows = [self.columns.row(i) for i in range(len(self.columns))]
            self.columns = None
        return self._rows

    @rows.setter
    def rows(self, rows: list[dict]) -> None:
        self._rows, self.columns = rows, None

    def __len__(self) -> int:
        return len(self._rows) if self._rows is not None else len(self.columns)

    def __repr__(self) -> str:
        return f"ExportedTrace({len(self)} rows, events={self.events}, dropped={self.dropped})"


def read(path: str) -> ExportedTrace:
    """The :class:`ExportedTrace` of a one-rank JSON export (``tracing.export(path)``), as columns."""
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    if len(processes) != 1:
        raise ValueError(f"{path}: expected the processes of one rank and API, found {sorted(processes.values())}")
    (process,) = processes.values()
    rank = int(_PROCESS.match(process).group(2))
    slices = [e for e in events if e["ph"] == "X" or e["ph"] == "i"]  # a pass per field below, not per event
    arguments = [e["args"] for e in slices]
    phases = [e["ph"] for e in slices]
    unfinished = [ph == "X" and bool(a.get("unfinished")) for ph, a in zip(phases, arguments, strict=True)]
    names: dict[str, int] = {}
    name = [names.setdefault(n[: -len(UNFINISHED)] if u and n.endswith(UNFINISHED) else n, len(names))
            for n, u in zip([e["name"] for e in slices], unfinished, strict=True)]
    kind = [KIND_INSTANT if ph == "i" else KIND_UNFINISHED if u else KIND_RANGE
            for ph, u in zip(phases, unfinished, strict=True)]
    programs: dict[tuple, int] = {}  # the pid of each track holding an event
    for track in {(e["pid"], e["tid"]) for e in slices}:
        programs[track] = int(_TRACK.match(tracks[track]).group(1))
    values = {"name": np.array(name, dtype=np.int64), "kind": np.array(kind, dtype=np.int8),
              "pid": int_column([programs[(e["pid"], e["tid"])] for e in slices]),
              "cur_rank": np.full(len(slices), rank, dtype=np.int64),
              **{k: int_column(list(map(int, map(itemgetter(k), arguments)))) for k in ARGS}}
    order = np.argsort(values["op_index"], kind="stable")
    columns = ExportedColumns(tuple(names), {k: v[order] for k, v in values.items()})
    meta = trace["metadata"]
    return ExportedTrace(events=int(meta["events"][process]), dropped=int(meta["dropped"][process]), columns=columns)
