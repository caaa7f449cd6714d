"""Chrome/Perfetto JSON export of a hand-written two-rank trace, format choice, and refusals to write."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iris.tracing import chrome_json, chunks, export, lanes
from iris.tracing.timeline import RankTrace
from tests.cpu_unit import trace_cases as tc
from tests.cpu_unit.checks import check, check_raises, check_that
from tests.trace_readers import read_json

pytestmark = pytest.mark.cpu_unit


def _write(path, ticks_per_second=1e9, backend="cuda", **kw) -> dict:
    written = export.write_trace(path, tc.traces(ticks_per_second, backend), **kw)
    check("returned path", written, str(path))
    with open(path) as f:
        return json.load(f)


@pytest.mark.parametrize("backend,ticks_per_second", [("cuda", 1e9), ("hip", 1e8)])
@pytest.mark.parametrize("cpus", [1, 8])
def test_slices_tracks_and_arrows(tmp_path, monkeypatch, backend, ticks_per_second, cpus):
    """On a machine of 1 CPU and of 8 (the timeline's jobs in turn, or on a second thread beside the viewer
    order; numpy's sorts, or torch's)."""
    monkeypatch.setattr(chunks, "workers", lambda: cpus)
    monkeypatch.setattr(lanes.torch, "get_num_threads", lambda: cpus)
    trace = _write(tmp_path / "trace.json", ticks_per_second, backend)
    tc.check_slices(check, read_json(trace), tc.expected_slices(ticks_per_second), backend)


def test_without_arrows_there_are_no_flows_and_no_incoming_tracks(tmp_path):
    trace = _write(tmp_path / "trace.json", flows=False)
    tc.check_slices(check, read_json(trace), tc.expected_slices(flows=False))
    check("flow events", [e for e in trace["traceEvents"] if e["ph"] in ("s", "f")], [])
    check("metadata.flows", trace["metadata"]["flows"], 0)


def test_one_rank_has_no_arrows(tmp_path):
    export.write_trace(tmp_path / "t.json", tc.traces()[:1])
    trace = json.loads((tmp_path / "t.json").read_text())
    check("flow events", [e for e in trace["traceEvents"] if e["ph"] in ("s", "f")], [])
    tracks = sorted(e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name")
    check("tracks", tracks, ["program 0", "program 1", "program 2"])


def test_processes_and_tracks_are_named_sorted_and_unique(tmp_path):
    export.write_trace(tmp_path / "trace.json", tc.traces(api="gluon"))
    trace = json.loads((tmp_path / "trace.json").read_text())
    events = trace["traceEvents"]
    names = [(e["pid"], e["args"]["name"]) for e in events if e["name"] == "process_name"]
    check("process names", names, [(1, "gluon rank 0"), (2, "gluon rank 1")])
    order = [(e["pid"], e["args"]["sort_index"]) for e in events if e["name"] == "process_sort_index"]
    check("process sort index", order, [(1, 0), (2, 1)])
    tracks = [(e["pid"], e["args"]["name"]) for e in events if e["name"] == "thread_name"]
    check("tracks in order", tracks, [(1, "incoming"), (1, "program 0"), (1, "program 1"), (1, "program 2"),
                                      (2, "incoming"), (2, "incoming #2"), (2, "program 3"), (2, "program 5"),
                                      (2, "program 5 #2")])
    tids = [e["tid"] for e in events if e["name"] == "thread_name"]
    check("distinct tids", len(set(tids)), len(tids))
    check_that("tids clear of pids", min(tids), min(tids) > 2, "> every pid")


def test_file_metadata(tmp_path):
    per_rank = [RankTrace(tc.records(0, 1e8, "hip", attempted=10, max_events=4), tc.ORIGINS[0]),
                RankTrace(tc.records(1, 1e8, "hip"), tc.ORIGINS[1])]
    clock = {"method": "test", "error_bound_ns": 1234}
    export.write_trace(tmp_path / "t.json", per_rank, clock=clock)
    trace = json.loads((tmp_path / "t.json").read_text())
    meta = trace["metadata"]
    check("metadata.backend", meta["backend"], "hip")
    check("metadata.ticks_per_second", meta["ticks_per_second"], 1e8)
    check("metadata.processes", meta["processes"], ["triton rank 0", "triton rank 1"])
    check("metadata.events", meta["events"], {"triton rank 0": 4, "triton rank 1": 5})
    check("metadata.dropped", meta["dropped"], {"triton rank 0": 6, "triton rank 1": 0})
    check("metadata.clock_origin_ticks", meta["clock_origin_ticks"],
          {"triton rank 0": tc.ORIGINS[0], "triton rank 1": tc.ORIGINS[1]})
    check("metadata.clock_alignment", meta["clock_alignment"], clock)
    check("metadata.flows", meta["flows"], 4)
    check("displayTimeUnit", trace["displayTimeUnit"], "ns")


# Upstream iris's metadata keys (its per-rank and its merged file) and this project's, in the order written.
UPSTREAM_ONE = ["schema_version", "num_events", "rank", "world_size", "time_unit", "fields"]
UPSTREAM_MERGED = ["schema_version", "total_events", "max_events", "world_size", "time_unit", "fields"]
OURS = ["backend", "ticks_per_second", "processes", "events", "dropped", "clock_origin_ticks", "flows",
        "clock_alignment"]


def test_a_merged_file_has_upstreams_merged_keys_beside_ours(tmp_path):
    export.write_trace(tmp_path / "t.json", tc.traces(), world_size=4)
    meta = json.loads((tmp_path / "t.json").read_text())["metadata"]
    check("metadata keys", list(meta), UPSTREAM_MERGED + OURS)
    check("metadata.schema_version", meta["schema_version"], "1.2")
    check("metadata.total_events", meta["total_events"], 4 + 5)
    check("metadata.max_events", meta["max_events"], 16)
    check("metadata.world_size", meta["world_size"], 4)
    check("metadata.time_unit", meta["time_unit"], chrome_json.TIME_UNIT)
    check("metadata.fields", meta["fields"], chrome_json.EVENT_KEYS)


def test_a_one_rank_file_has_upstreams_per_rank_keys(tmp_path):
    export.write_trace(tmp_path / "t.json", [RankTrace(tc.records(1), tc.ORIGINS[1])])
    meta = json.loads((tmp_path / "t.json").read_text())["metadata"]
    check("metadata keys", list(meta), UPSTREAM_ONE + OURS)
    check("metadata.num_events", meta["num_events"], 5)
    check("metadata.rank", meta["rank"], 1)
    check("metadata.world_size (default: the ranks in the file)", meta["world_size"], 1)


def test_max_events_is_left_out_where_the_ranks_differ(tmp_path):
    per_rank = [RankTrace(tc.records(0, max_events=8), tc.ORIGINS[0]), RankTrace(tc.records(1), tc.ORIGINS[1])]
    export.write_trace(tmp_path / "t.json", per_rank)
    meta = json.loads((tmp_path / "t.json").read_text())["metadata"]
    check("metadata keys", list(meta), [k for k in UPSTREAM_MERGED if k != "max_events"] + OURS)
    check("metadata.world_size (default: the ranks in the file)", meta["world_size"], 2)


def test_fields_describe_every_key_and_argument_the_events_carry(tmp_path):
    trace = _write(tmp_path / "t.json")
    keys = {k for e in trace["traceEvents"] if e["ph"] in ("X", "i", "s", "f") for k in e}
    args = {a for e in trace["traceEvents"] if e["ph"] in ("X", "i") for a in e["args"]}
    fields = trace["metadata"]["fields"]
    check("event keys without a description", sorted(keys - set(fields) - {"id", "bp"}), [])
    check("described keys no event has", sorted(set(fields) - keys), [])
    check("arguments without a description", sorted(args - set(fields["args"])), [])
    check("described arguments", sorted(fields["args"]), sorted(args | {"unfinished"}))


@pytest.mark.parametrize("world_size", [0, -1, 2.0, "2", True])
def test_a_bad_world_size_is_refused_before_anything_is_written(tmp_path, world_size):
    check_raises(ValueError, lambda: export.write_trace(tmp_path / "t.json", tc.traces(), world_size=world_size),
                 [f"write_trace: world_size={world_size!r}; expected an int >= 1 (or None)"])
    check("files written", sorted(p.name for p in tmp_path.iterdir()), [])


def test_event_before_its_origin_moves_every_time_up(tmp_path):
    per_rank = [RankTrace(tc.records(0), tc.ORIGINS[0] + 1500)]  # the store starts 500 ticks before the origin
    export.write_trace(tmp_path / "t.json", per_rank)
    trace = json.loads((tmp_path / "t.json").read_text())
    starts = sorted(round(e["ts"] * 1000) for e in trace["traceEvents"] if e["ph"] in ("X", "i"))
    check("starts (ns)", starts, [0, 1000, 2000, 3000])
    check("metadata.time_shift_ns", trace["metadata"]["time_shift_ns"], 500)


def test_garbage_program_ids_still_export(tmp_path):
    """A decoder bug can leave any program id: the trace still shows it (the conformance report relies on it)."""
    rec = tc.records(0)
    rec.columns["pid"][:] = [-3, 2**40, -3, 5]
    export.write_trace(tmp_path / "t.json", [RankTrace(rec, tc.ORIGINS[0])])
    slices = read_json(json.loads((tmp_path / "t.json").read_text()))
    check("tracks", sorted({s.track for s in slices}), ["program -3", "program 1099511627776", "program 5"])


@pytest.mark.parametrize("values", [[0, 7, -7, 10_000, -10_000, 2**63 - 1, -(2**63)], [5], [], [0, 0, 0],
                                    [9999, 10**15, -(10**15)]])
@pytest.mark.parametrize("column", [chrome_json._few_ints, chrome_json._many_ints], ids=["few", "many"])
def test_int_column_is_the_decimal_text(values, column):
    text = column(np.array(values, dtype=np.int64))
    got = [row.tobytes().decode() for row in text]
    width = max((len(str(v)) for v in values), default=1)
    check("text", got, [str(v).rjust(width) for v in values])


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40), st.integers(1, 3))
@settings(max_examples=60, deadline=None)
def test_few_and_many_rows_format_alike(values, copies):
    """The Python path (``int_column`` of at most ``FEW_ROWS`` rows) and the table path write the same bytes."""
    v = np.array(values * copies, dtype=np.int64)
    few, many = chrome_json._few_ints(v), chrome_json._many_ints(v)
    assert (few.shape, few.tobytes()) == (many.shape, many.tobytes())


def test_us_column_has_three_exact_decimals():
    ns = np.array([0, 1, 999, 1000, 123_456_789, 10**18 + 7])
    got = [row.tobytes().decode().strip() for row in chrome_json.us_column(ns)]
    check("text", got, ["0.000", "0.001", "0.999", "1.000", "123456.789", "1000000000000000.007"])


@pytest.mark.parametrize("name,fmt", [("t.json", "json"), ("t.JSON", "json"), ("t.pftrace", "pftrace"),
                                      ("t.perfetto-trace", "pftrace"), ("t.PFTRACE", "pftrace"), ("trace", "json"),
                                      ("t.txt", "json")])
def test_format_follows_the_suffix(name, fmt):
    check("format", export.trace_format(name), fmt, name)


def test_format_argument_overrides_the_suffix(tmp_path):
    export.write_trace(tmp_path / "t.json", tc.traces(), format="pftrace")
    check("first byte (a protobuf packet, not JSON)", (tmp_path / "t.json").read_bytes()[:1], b"\x0a")


def test_unknown_format_is_refused(tmp_path):
    check_raises(ValueError, lambda: export.write_trace(tmp_path / "t.json", tc.traces(), format="proto"),
                 mentions=["'proto'", "'json'", "'pftrace'"])
    check("files", os.listdir(tmp_path), [])


def test_duplicate_rank_is_refused(tmp_path):
    per_rank = tc.traces()[:1] * 2
    check_raises(ValueError, lambda: export.write_trace(tmp_path / "t.json", per_rank),
                 mentions=["triton rank 0", "more than once"])


def test_relative_path_is_written_in_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write("trace.json")
    check("files", sorted(os.listdir(tmp_path)), ["trace.json"])


def _check_refused(tmp_path, target, error, mentions):
    __tracebackhide__ = True
    before = sorted(os.listdir(tmp_path))
    check_raises(error, lambda: export.write_trace(target, tc.traces()), mentions=mentions, where=str(target))
    check("files after the refused export", sorted(os.listdir(tmp_path)), before, str(target))


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_missing_folder_is_refused(tmp_path, suffix):
    target = tmp_path / "missing" / f"trace{suffix}"
    _check_refused(tmp_path, target, FileNotFoundError, [str(target), str(target.parent)])
    check("missing folder exists afterwards", target.parent.exists(), False)


def test_directory_target_is_refused(tmp_path):
    target = tmp_path / "a_folder.json"
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


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_failed_write_leaves_no_temp_file_and_keeps_the_old_trace(tmp_path, monkeypatch, suffix):
    target = tmp_path / f"trace{suffix}"
    target.write_text("old")

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export.os, "replace", fail)
    check_raises(OSError, lambda: export.write_trace(target, tc.traces()), mentions=["No space left"])
    check("files", sorted(os.listdir(tmp_path)), [target.name])
    check("old trace", target.read_text(), "old")


@pytest.mark.parametrize(("path", "rank", "expected"), [
    ("trace.json", 0, "trace_rank0.json"), ("out/t.pftrace", 3, "out/t_rank3.pftrace"), ("trace", 1, "trace_rank1"),
    ("a.b/t.perfetto-trace", 12, "a.b/t_rank12.perfetto-trace"),
])  # fmt: skip
def test_rank_path_puts_the_rank_before_the_suffix(path, rank, expected):
    check("rank_path", str(export.rank_path(path, rank)), expected, f"{path!r}, rank {rank}")


def test_a_file_in_place_of_the_folder_is_refused(tmp_path):
    (tmp_path / "a_file").write_text("x")
    target = tmp_path / "a_file" / "trace.json"
    _check_refused(tmp_path, target, NotADirectoryError,
                   [f"cannot write trace to '{target}': '{tmp_path / 'a_file'}' is not a folder"])


def test_a_fifo_is_refused_not_replaced(tmp_path):
    target = tmp_path / "fifo.json"
    os.mkfifo(target)
    _check_refused(tmp_path, target, FileExistsError, [f"trace export path '{target}' is a FIFO"])
    check("still a FIFO", stat.S_ISFIFO(target.stat().st_mode), True)


def test_a_folder_that_takes_no_new_file_is_refused_before_the_trace_is_built(tmp_path, monkeypatch):
    """The folder passes the access check but creating a file there fails (a read-only mount, ``/proc``): the error
    names the path given and the reason, not a temporary file, and comes before the timeline is built."""
    target = tmp_path / "trace.json"

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    def build(*args, **kwargs):
        pytest.fail("timeline.build was called before the path was refused")

    monkeypatch.setattr(export.tempfile, "mkstemp", read_only)
    monkeypatch.setattr(export.timeline, "build", build)
    e = check_raises(OSError, lambda: export.write_trace(target, tc.traces()))
    check("error message", str(e), f"cannot write trace to '{target}': folder '{tmp_path}' does not accept new files "
                                   "(Read-only file system)")
    check("files", os.listdir(tmp_path), [])
