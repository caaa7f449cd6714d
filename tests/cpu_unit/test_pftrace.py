"""Binary Perfetto export, read back with the ``perfetto`` package's generated protobuf classes.

The reader is independent of the writer: packets are parsed by ``perfetto_trace_pb2`` (compressed
chunks inflated with zlib, timestamps read through the sequence's clocks, as Perfetto's trace processor
does), slices are rebuilt the way a viewer does (per track, an end closes the slice opened last), and the
result is compared with the hand-written expectation of ``trace_cases`` field by field, and with the JSON
export of random traces. Skipped where the ``perfetto`` package is missing.
"""

from __future__ import annotations

import json
import zlib
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iris.tracing import deflate, export, pftrace
from iris.tracing.timeline import TID_BASE, RankTrace
from tests.cpu_unit import trace_cases as tc
from tests.cpu_unit.checks import check, check_raises, check_that
from tests.trace_readers import PerfettoTrace, perfetto_pb2

pytestmark = pytest.mark.cpu_unit

perfetto_pb2()  # skips this module where the perfetto package is missing


def _write(path, per_rank=None, **kw) -> PerfettoTrace:
    export.write_trace(path, per_rank or tc.traces(), **kw)
    return PerfettoTrace(path.read_bytes())


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("backend,ticks_per_second", [("cuda", 1e9), ("hip", 1e8)])
def test_slices_tracks_and_arrows(tmp_path, backend, ticks_per_second, compress):
    d = _write(tmp_path / "t.pftrace", tc.traces(ticks_per_second, backend), compress=compress)
    tc.check_slices(check, d.slices, tc.expected_slices(ticks_per_second), f"{backend}, compress={compress}")
    check_that("event timestamps", d.event_ts, d.event_ts == sorted(d.event_ts), "non-decreasing")


def test_address_is_a_pointer_and_other_fields_ints(tmp_path):
    d = _write(tmp_path / "t.pftrace", compress=False)
    for p in d.packets:
        for a in p.track_event.debug_annotations if p.track_event.track_uuid != d.info_uuid else []:
            name = d.arg_names[a.name_iid]
            want = "pointer_value" if name == "address" else "bool_value" if name == "unfinished" else "int_value"
            check("value field", a.WhichOneof("value"), want, name)


def test_without_arrows(tmp_path):
    d = _write(tmp_path / "t.pftrace", flows=False)
    tc.check_slices(check, d.slices, tc.expected_slices(flows=False))


def test_processes_threads_and_names(tmp_path):
    d = _write(tmp_path / "t.pftrace", tc.traces(api="gluon"))
    check("processes", d.processes, {1: "gluon rank 0", 2: "gluon rank 1"})
    threads = sorted((p, n) for p, n, tid in d.tracks.values() if tid is not None)
    check("threads", threads, [("gluon rank 0", "incoming"), ("gluon rank 0", "program 0"),
                               ("gluon rank 0", "program 1"), ("gluon rank 0", "program 2"),
                               ("gluon rank 1", "incoming"), ("gluon rank 1", "incoming #2"),
                               ("gluon rank 1", "program 3"), ("gluon rank 1", "program 5"),
                               ("gluon rank 1", "program 5 #2")])
    tids = [tid for _, _, tid in d.tracks.values() if tid is not None]
    check("distinct tids", len(set(tids)), len(tids))
    check("tids (as in the JSON)", sorted(tids), [TID_BASE + t for t in range(9)])
    check("track uuids (short: right after the pids)", sorted(d.tracks), list(range(3, 3 + 9 + 1)))
    check("event names interned once", len(set(d.event_names.values())), len(d.event_names))


def test_metadata_instant(tmp_path):
    clock = {"method": "barrier then read", "error_bound_ns": 4321, "reads_host_ns": {"triton rank 0": [0, 7]}}
    d = _write(tmp_path / "t.pftrace", clock=clock)
    check("metadata track", d.tracks[d.info_uuid], (None, "iris trace", None))
    name, ts, info = d.info
    check("metadata event", (name, ts), ("trace info", 0))
    check("clock_alignment", info["clock_alignment"], clock)
    check("events", info["events"], {"triton rank 0": 4, "triton rank 1": 5})
    check("processes", info["processes"], ["triton rank 0", "triton rank 1"])
    check("ticks_per_second", info["ticks_per_second"], 1e9)
    check("flows", info["flows"], 4)
    # upstream iris's keys of a merged file; its "fields" describe JSON events, so the binary trace has none
    upstream = {k: info.get(k) for k in ("schema_version", "total_events", "max_events", "world_size", "time_unit")}
    check("upstream's keys", upstream, {"schema_version": "1.2", "total_events": 9, "max_events": 16,
                                        "world_size": 2, "time_unit": pftrace.TIME_UNIT})
    check("fields", "fields" in info, False)


def test_many_events_span_chunks_and_round_trip(tmp_path, monkeypatch):
    """Several compressed chunks; every event's name, times and fields come back."""
    monkeypatch.setattr(pftrace, "CHUNK", 64)
    rng = np.random.default_rng(7)
    rec = tc.records(1)
    n = 500
    rows = np.zeros((len(tc.TRACE_FIELDS), n), dtype=np.int64)
    rows[:] = rng.integers(-(2**62), 2**62, rows.shape)
    rows[tc.FIELD_INDEX["event_id"]] = rng.choice(sorted(tc.EVENT_IDS.values()), n)  # sparse: 0-13, then 1024...
    rows[tc.FIELD_INDEX["pid"]] = np.arange(n)  # one program each: every range fits its track
    rows[tc.FIELD_INDEX["timestamp"]] = rng.integers(0, 10**6, n)
    dur = rng.integers(0, 10**4, n)
    dur[::7] = tc.INSTANT
    rows[tc.FIELD_INDEX["duration_cycles"]] = dur
    rec = type(rec).from_fields(rows[:, :n], 0, n, rank=0, backend="cuda", ticks_per_second=1e9)
    d = _write(tmp_path / "t.pftrace", [RankTrace(rec, 0)])
    check("slices", len(d.slices), n)
    by_program = {int(s.track.split()[1]): s for s in d.slices}
    for i in range(n):
        s, w = by_program[i], f"slot {i}"
        check("name", s.name, rec.names()[i], w)
        check("start_ns", s.start_ns, int(rec["timestamp"][i]), w)
        check("dur_ns", s.dur_ns, None if dur[i] < 0 else int(dur[i]), w)
        for a in tc.EVENT_ARGS:
            check(f"args.{a}", s.args[a], int(rec[a][i]) & ((1 << 64) - 1) if a == "address" else int(rec[a][i]), w)


def test_timestamps_are_deltas_on_an_incremental_clock(tmp_path):
    """The sequence's default clock is an incremental one tied to the trace clock at 0: each event packet's
    timestamp is the time since the previous packet's, so the raw values add up to the trace times."""
    d = _write(tmp_path / "t.pftrace", compress=False)
    first = d.packets[0]
    check("defaults: timestamp_clock_id", first.trace_packet_defaults.timestamp_clock_id, pftrace.CLOCK_DELTA)
    snapshot = d.packets[1].clock_snapshot
    clocks = [(c.clock_id, c.timestamp, c.is_incremental) for c in snapshot.clocks]
    check("clock snapshot", clocks, [(pftrace.CLOCK_BOOTTIME, 0, False), (pftrace.CLOCK_DELTA, 0, True)])
    events = [p for p in d.packets if p.HasField("track_event")]
    check("no packet names its clock", [p for p in events if p.HasField("timestamp_clock_id")], [])
    raw = [p.timestamp for p in events]
    check("trace info at 0", raw[0], 0)
    check("running sum of the raw timestamps", np.cumsum(raw[1:]).tolist(), d.event_ts)
    check_that("deltas", max(raw), max(raw) < max(d.event_ts), "smaller than the latest time")


@pytest.mark.parametrize("compressor", deflate.COMPRESSORS)
def test_each_deflate_backend_writes_zlib_streams(tmp_path, monkeypatch, compressor):
    """ISA-L and the standard library write the same format: the reader inflates either with zlib."""
    if compressor == "isal":
        pytest.importorskip("isal", reason="the isal package (a dependency of iris) is not installed")
    monkeypatch.setattr(deflate, "COMPRESSOR", compressor)
    monkeypatch.setattr(pftrace, "CHUNK", 4)
    d = _write(tmp_path / "t.pftrace")
    tc.check_slices(check, d.slices, tc.expected_slices(), compressor)
    data = b"iris " * 1000
    check("inflated", zlib.decompress(deflate.compress(data, compressor)), data, compressor)


def test_unknown_deflate_backend_is_refused():
    check_raises(ValueError, lambda: deflate.compress(b"x", "lz4"), ["compressor 'lz4'", "'isal'", "'zlib'"])


def test_isal_missing_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(deflate, "_isal", None)
    check_raises(ValueError, lambda: deflate.compress(b"x", "isal"), ["pip install isal", "compressor='zlib'"])


# Per rank, per event: (event id, program, start tick, duration: ticks, or None for an instant, or -1 for open,
# target rank). Small ranges of values, so that slices share instants, nest, overlap and touch.
_EVENT = st.tuples(st.sampled_from(sorted(tc.EVENT_IDS.values())), st.integers(0, 2), st.integers(0, 12),
                   st.one_of(st.none(), st.just(-1), st.integers(0, 6)), st.integers(0, 2))


def _random_traces(ranks: list[list[tuple]]) -> list[RankTrace]:
    out = []
    for rank, events in enumerate(ranks):
        rows = np.zeros((len(tc.TRACE_FIELDS), max(len(events), 1)), dtype=np.int64)
        for slot, (event, pid, start, dur, target) in enumerate(events):
            values = {"event_id": event, "pid": pid, "timestamp": start, "target_rank": target, "op_index": slot,
                      "duration_cycles": tc.INSTANT if dur is None else tc.OPEN if dur == -1 else dur,
                      "address": 0x7F00_0000_0000 + 64 * slot, "payload": 7 * slot + rank, "cur_rank": rank}
            for f, v in values.items():
                rows[tc.FIELD_INDEX[f], slot] = v
        rec = type(tc.records(0)).from_fields(rows[:, :len(events)], 0, max(len(events), 1), rank=rank,
                                              backend="cuda", ticks_per_second=1e9)
        out.append(RankTrace(rec, 0))
    return out


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(_EVENT, max_size=12), min_size=1, max_size=3), st.booleans(), st.sampled_from([3, 1 << 15]))
def test_random_traces_show_the_slices_of_the_json_export(tmp_path_factory, ranks, compress, chunk):
    """The binary file, rebuilt as a viewer does (an end closes the slice opened last on its track), shows
    exactly the slices, spans, arguments and arrows of the JSON export, whose slices carry their spans."""
    folder = tmp_path_factory.mktemp("random")
    traces = _random_traces(ranks)
    export.write_trace(folder / "t.json", traces)
    with mock.patch.object(pftrace, "CHUNK", chunk):  # 3: deltas and argument sets across chunk boundaries
        export.write_trace(folder / "t.pftrace", traces, compress=compress)
    events = json.loads((folder / "t.json").read_text())["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    want = sorted((procs[e["pid"]], tracks[(e["pid"], e["tid"])], e["name"], round(e["ts"] * 1000),
                   round(e["dur"] * 1000) if e["ph"] == "X" else -1, sorted(e["args"].items()))
                  for e in events if e["ph"] in ("X", "i"))
    slices = PerfettoTrace((folder / "t.pftrace").read_bytes()).slices
    got = sorted((s.process, s.track, s.name, s.start_ns, -1 if s.dur_ns is None else s.dur_ns,
                  sorted(s.args.items())) for s in slices)
    check("slices", got, want, f"ranks={ranks}, chunk={chunk}")
    # Each remote op has one arrow, which lands on its copy on the target rank: same op, same span.
    out = {s.flow_out: s for s in slices if s.flow_out is not None}
    into = {s.flow_in: s for s in slices if s.flow_in is not None}
    remote = sum(1 for r, events in enumerate(ranks) for e in events if e[4] != r and e[4] < len(ranks))
    check("arrows", (len(out), len(into)), (remote, remote), f"ranks={ranks}")
    check("arrow ids", sorted(into), sorted(out), f"ranks={ranks}")
    for fid, a in out.items():
        b, where = into[fid], f"arrow {fid}, ranks={ranks}"
        check("arrow lands on", (b.process, b.start_ns, b.dur_ns), (f"triton rank {a.args['target_rank']}",
                                                                     a.start_ns, a.dur_ns), where)
        for arg in ("op_index", "address", "payload_size"):
            check(f"arrow args.{arg}", b.args[arg], a.args[arg], where)


def test_a_rank_without_events_is_a_valid_trace(tmp_path):
    rec = tc.records(0, attempted=0)
    d = _write(tmp_path / "t.pftrace", [RankTrace(rec, 0)])
    check("slices", d.slices, [])
    check("processes", d.processes, {1: "triton rank 0"})
    check("trace info", (d.info[0], d.info[1], d.info[2]["events"]), ("trace info", 0, {"triton rank 0": 0}))
