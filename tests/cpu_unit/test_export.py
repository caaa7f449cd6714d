"""Chrome/Perfetto JSON export of synthetic records of two ranks, and refusals to write where it cannot."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

from iris.tracing import export
from iris.tracing.events import DURATION_INSTANT, DURATION_OPEN, EVENT_IDS, FIELD_INDEX, TRACE_FIELDS
from iris.tracing.records import TraceRecords
from tests.cpu_unit.checks import check, check_raises

pytestmark = pytest.mark.cpu_unit

OPEN, INSTANT = DURATION_OPEN.value, DURATION_INSTANT.value
ARGS = ("target_rank", "address", "payload_size", "payload", "op_index", "pid_m", "pid_n", "cu_id", "xcc_id")
# Per rank: (event, pid, ticks after the origin, duration_cycles); origins differ per rank.
EVENTS = {
    0: [("store", 0, 1000, 250), ("user", 1, 2000, INSTANT), ("get", 0, 3000, OPEN), ("put", 2, 4000, 0)],
    1: [("atomic_add", 5, 500, 1_000_000), ("load", 3, 1500, INSTANT)],
}
ORIGINS = {0: 10_000_000, 1: 77_000_000}


def _records(rank: int, ticks_per_second: float = 1e9, backend: str = "cuda", attempted: int | None = None,
             capacity: int = 16) -> TraceRecords:
    events = EVENTS[rank]
    rows = np.zeros((len(TRACE_FIELDS), capacity), dtype=np.int64)
    for s, (name, pid, dt, dur) in enumerate(events):
        for f in TRACE_FIELDS:
            rows[FIELD_INDEX[f], s] = 1000 * (FIELD_INDEX[f] + 1) + 10 * rank + s
        values = {"event_id": EVENT_IDS[name], "pid": pid, "cur_rank": rank, "timestamp": ORIGINS[rank] + dt,
                  "duration_cycles": dur, "op_index": s, "address": 0x7F00_0000_0000 + 64 * s}
        for f, v in values.items():
            rows[FIELD_INDEX[f], s] = v
    attempted = len(events) if attempted is None else attempted
    return TraceRecords.from_buffer(rows, attempted, capacity, rank=rank, backend=backend,
                                    ticks_per_second=ticks_per_second)


def _write(path, ticks_per_second=1e9, backend="cuda", attempted=(None, None), capacity=16) -> dict:
    per_rank = [(_records(r, ticks_per_second, backend, attempted[r], capacity), ORIGINS[r]) for r in (0, 1)]
    written = export.write_chrome_trace(path, per_rank)
    check("returned path", written, str(path))
    with open(path) as f:
        return json.load(f)


def _by_rank(trace: dict, ph: set[str]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {0: [], 1: []}
    for e in trace["traceEvents"]:
        if e["ph"] in ph:
            out[e["pid"]].append(e)
    return out


@pytest.mark.parametrize("backend,ticks_per_second", [("cuda", 1e9), ("hip", 1e8)])
def test_events_field_by_field(tmp_path, backend, ticks_per_second):
    trace = _write(tmp_path / "trace.json", ticks_per_second, backend)
    us_per_tick = 1e6 / ticks_per_second
    events = _by_rank(trace, {"X", "i"})
    for rank in (0, 1):
        rec = _records(rank, ticks_per_second, backend)
        check(f"rank {rank}: number of events", len(events[rank]), len(EVENTS[rank]))
        for s, (e, (name, pid, dt, dur)) in enumerate(zip(events[rank], EVENTS[rank], strict=True)):
            where = f"rank {rank} slot {s} ({name})"
            check("name", e["name"], name, where)
            check("pid", e["pid"], rank, where)
            check("tid", e["tid"], pid, where)
            check("ts", e["ts"], round(dt * us_per_tick, 3), where)
            for a in ARGS:
                check(f"args.{a}", e["args"][a], int(rec[a][s]), where)
            if dur >= 0:
                check("ph", e["ph"], "X", where)
                check("dur", e["dur"], round(dur * us_per_tick, 3), where)
                check("args.unfinished", e["args"].get("unfinished"), None, where)
            else:
                check("ph", e["ph"], "i", where)
                check("s", e.get("s"), "t", where)
                check("dur", e.get("dur"), None, where)
                check("args.unfinished", e["args"].get("unfinished"), True if dur == OPEN else None, where)


def test_process_metadata_per_rank(tmp_path):
    trace = _write(tmp_path / "trace.json")
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    check("process_name by pid", names, {0: "rank 0", 1: "rank 1"})
    phases = sorted({e["ph"] for e in trace["traceEvents"]})
    check("phases in the file", phases, ["M", "X", "i"])
    order = {e["pid"]: e["args"]["sort_index"] for e in trace["traceEvents"] if e["name"] == "process_sort_index"}
    check("process_sort_index by pid", order, {0: 0, 1: 1})


def test_file_metadata(tmp_path):
    trace = _write(tmp_path / "trace.json", 1e8, "hip", attempted=(10, None), capacity=4)
    meta = trace["metadata"]
    check("metadata.backend", meta["backend"], "hip")
    check("metadata.ticks_per_second", meta["ticks_per_second"], 1e8)
    check("metadata.ranks", meta["ranks"], [0, 1])
    check("metadata.events", meta["events"], {"0": 4, "1": 2})
    check("metadata.dropped", meta["dropped"], {"0": 6, "1": 0})
    check("metadata.clock_origin_ticks", meta["clock_origin_ticks"], {"0": ORIGINS[0], "1": ORIGINS[1]})
    check("displayTimeUnit", trace["displayTimeUnit"], "ns")


def test_relative_path_is_written_in_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write("trace.json")
    check("files", sorted(os.listdir(tmp_path)), ["trace.json"])


def _check_refused(tmp_path, target, error, mentions):
    __tracebackhide__ = True
    before = sorted(os.listdir(tmp_path))
    per_rank = [(_records(r), ORIGINS[r]) for r in (0, 1)]
    check_raises(error, lambda: export.write_chrome_trace(target, per_rank), mentions=mentions, where=str(target))
    check("files after the refused export", sorted(os.listdir(tmp_path)), before, str(target))


def test_missing_folder_is_refused(tmp_path):
    target = tmp_path / "missing" / "trace.json"
    _check_refused(tmp_path, target, FileNotFoundError, [str(target), str(target.parent)])
    check("missing folder exists afterwards", target.parent.exists(), False)


def test_directory_target_is_refused(tmp_path):
    target = tmp_path / "a_folder"
    target.mkdir()
    _check_refused(tmp_path, target, IsADirectoryError, [str(target)])
    check("files in the target folder", os.listdir(target), [])


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores folder permissions")
def test_read_only_folder_is_refused(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        _check_refused(folder, folder / "trace.json", PermissionError, [str(folder / "trace.json")])
    finally:
        folder.chmod(stat.S_IRWXU)


def test_failed_write_leaves_no_temp_file_and_keeps_the_old_trace(tmp_path, monkeypatch):
    target = tmp_path / "trace.json"
    target.write_text("old")

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export.os, "replace", fail)
    per_rank = [(_records(r), ORIGINS[r]) for r in (0, 1)]
    check_raises(OSError, lambda: export.write_chrome_trace(target, per_rank), mentions=["No space left"])
    check("files", sorted(os.listdir(tmp_path)), ["trace.json"])
    check("old trace", target.read_text(), "old")
