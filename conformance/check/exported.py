"""What ``tracing.export`` wrote, read back as trace rows: the host side of a record, checked like the slots.

A rank exports each API's events with the user's call (``shmem.tracing.export(path)``, Chrome/Perfetto JSON) and
reads the file back here, with ``json`` only (no code shared with the writer): one row per slice or instant, with
the fields a model compares, plus the file's event and drop counts.

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

from iris.tracing.events import EXPORT_ARGS, PHYSICAL_FIELDS

ARGS = tuple(a for a in EXPORT_ARGS if a not in PHYSICAL_FIELDS)  # the arguments the checks compare
UNFINISHED = " (unfinished)"
_TRACK = re.compile(r"program (\d+)( #\d+)?$")
_PROCESS = re.compile(r"(\w+) rank (\d+)$")


@dataclass
class ExportedTrace:
    """A one-rank export read back: a row per slice or instant (sorted by ``op_index``), and the file's own event
    and drop counts."""

    rows: list[dict]
    events: int
    dropped: int


def read(path: str) -> ExportedTrace:
    """The :class:`ExportedTrace` of a one-rank JSON export (``tracing.export(path)``)."""
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    if len(processes) != 1:
        raise ValueError(f"{path}: expected the processes of one rank and API, found {sorted(processes.values())}")
    (process,) = processes.values()
    rank = int(_PROCESS.match(process).group(2))
    rows = []
    for e in events:
        if e["ph"] not in ("X", "i"):
            continue
        track = _TRACK.match(tracks[(e["pid"], e["tid"])])
        args = e["args"]
        unfinished = e["ph"] == "X" and bool(args.get("unfinished"))
        name = e["name"][: -len(UNFINISHED)] if unfinished and e["name"].endswith(UNFINISHED) else e["name"]
        kind = "instant" if e["ph"] == "i" else "unfinished" if unfinished else "range"
        rows.append({"name": name, "kind": kind, "pid": int(track.group(1)), "cur_rank": rank,
                     **{a: int(args[a]) for a in ARGS}})
    rows.sort(key=lambda r: r["op_index"])
    meta = trace["metadata"]
    return ExportedTrace(rows, int(meta["events"][process]), int(meta["dropped"][process]))
