"""Independent readers of exported traces: JSON through ``json``, binary Perfetto through the ``perfetto``
package's generated protobuf classes (compressed chunks inflated with zlib, timestamps through the
sequence's default and incremental clocks, as Perfetto's trace processor does). Both rebuild the
slices a viewer shows (``Slice``): processes and tracks by name, times in ns, arguments, and arrows by
id (a binary trace's slices are paired per track: an end closes the slice opened last).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import pytest

from iris.tracing import pftrace
from tests.cpu_unit.checks import check, check_that


@dataclass
class Slice:
    """One slice or instant as a viewer shows it. ``flow_out``/``flow_in``: arrow labels (or file ids)."""

    process: str
    track: str
    name: str
    start_ns: int
    dur_ns: int | None  # None: an instant
    args: dict = field(default_factory=dict)
    flow_out: object = None
    flow_in: object = None

    @property
    def key(self) -> tuple:
        return (self.process, self.track, self.name, self.start_ns)


def perfetto_pb2():
    """The ``perfetto_trace_pb2`` module, or skip the test with the reason."""
    return pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2",
                               reason="the perfetto package (pip install perfetto protobuf, in the test extra) "
                                      "reads binary traces back")


def read_json(trace: dict) -> list[Slice]:
    """The file's slices as a viewer sees them: processes and tracks by name, times in ns, arrows by id."""
    events = trace["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    slices = {}
    for e in events:
        if e["ph"] not in ("X", "i"):
            continue
        where = f"{e['name']} at {e['ts']}"
        check("cat", e["cat"], "iris", where)
        if e["ph"] == "i":
            check("s", e["s"], "t", where)
        s = Slice(procs[e["pid"]], tracks[(e["pid"], e["tid"])], e["name"], round(e["ts"] * 1000),
                     round(e["dur"] * 1000) if e["ph"] == "X" else None, e["args"])
        slices[(e["pid"], e["tid"], s.start_ns)] = s
    for e in events:  # arrows bind to the slice that starts where they stand
        if e["ph"] in ("s", "f"):
            where = f"flow {e['id']} ({e['ph']})"
            check("flow name", (e["name"], e["cat"]), ("remote op", "iris"), where)
            check("bp", e.get("bp"), "e" if e["ph"] == "f" else None, where)
            s = slices[(e["pid"], e["tid"], round(e["ts"] * 1000))]
            setattr(s, "flow_out" if e["ph"] == "s" else "flow_in", e["id"])
    return list(slices.values())


def packets(data: bytes) -> list:
    """Every TracePacket of a file, compressed chunks inflated in place."""
    out = []
    for p in perfetto_pb2().Trace.FromString(data).packet:
        if p.HasField("compressed_packets"):
            out.extend(perfetto_pb2().Trace.FromString(zlib.decompress(p.compressed_packets)).packet)
        else:
            out.append(p)
    return out


def _annotation(a, names: dict) -> tuple[str, object]:
    name = names[a.name_iid] if a.HasField("name_iid") else a.name
    which = a.WhichOneof("value")
    if which is not None:
        return name, getattr(a, which)
    if len(a.dict_entries):
        return name, dict(_annotation(e, names) for e in a.dict_entries)
    return name, [_annotation(e, names)[1] for e in a.array_values]


class _Clocks:
    """Packet timestamps to trace time (ns), as Perfetto's trace processor reads them: a packet's clock is its
    ``timestamp_clock_id``, else its sequence's ``trace_packet_defaults``, else the trace clock itself; a
    clock snapshot ties each clock to the trace clock (BOOTTIME); an incremental clock's timestamp is the
    time since the previous one on that clock (the first after a snapshot: since the snapshot's reading)."""

    BOOTTIME = 6

    def __init__(self) -> None:
        self.default: int | None = None
        self.snapshot: dict[int, int] = {}
        self.incremental: set[int] = set()
        self.last: dict[int, int] = {}

    def read_snapshot(self, snapshot) -> None:
        for c in snapshot.clocks:
            check("clock unit", c.unit_multiplier_ns in (0, 1), True, f"clock {c.clock_id}")
            self.snapshot[c.clock_id] = c.timestamp
            self.last[c.clock_id] = c.timestamp
            if c.is_incremental:
                self.incremental.add(c.clock_id)
        check("snapshot has the trace clock", self.BOOTTIME in self.snapshot, True)

    def trace_time(self, packet) -> int:
        clock = packet.timestamp_clock_id if packet.HasField("timestamp_clock_id") else self.default
        if clock is None or clock == self.BOOTTIME:
            return packet.timestamp
        check("clock in a snapshot", clock in self.snapshot, True, f"clock {clock}")
        value = packet.timestamp
        if clock in self.incremental:
            value = self.last[clock] = self.last[clock] + packet.timestamp
        return value - self.snapshot[clock] + self.snapshot[self.BOOTTIME]


class PerfettoTrace:
    """Slices, tracks and metadata of a binary trace, rebuilt from its packets (``event_ts``: trace times)."""

    def __init__(self, data: bytes) -> None:
        te = perfetto_pb2().TrackEvent
        self.packets = packets(data)
        first = self.packets[0]
        check("first packet: sequence_flags", first.sequence_flags, 3)
        self.event_names = {e.iid: e.name for e in first.interned_data.event_names}
        self.arg_names = {e.iid: e.name for e in first.interned_data.debug_annotation_names}
        self.processes, self.tracks, self.info, self.info_uuid = {}, {}, None, None
        clocks = _Clocks()
        if first.HasField("trace_packet_defaults") and first.trace_packet_defaults.HasField("timestamp_clock_id"):
            clocks.default = first.trace_packet_defaults.timestamp_clock_id
        open_slices: dict[int, list] = {}
        self.slices: list[Slice] = []
        self.event_ts: list[int] = []
        for i, p in enumerate(self.packets):
            where = f"packet {i}"
            check("trusted_packet_sequence_id", p.trusted_packet_sequence_id, pftrace.SEQUENCE, where)
            if p.HasField("clock_snapshot"):
                clocks.read_snapshot(p.clock_snapshot)
                continue
            if p.HasField("track_descriptor"):
                d = p.track_descriptor
                check("distinct track uuid", d.uuid in self.tracks or d.uuid in self.processes, False, where)
                if d.HasField("process"):
                    check("process uuid", d.uuid, d.process.pid, where)
                    self.processes[d.process.pid] = d.process.process_name
                elif d.HasField("thread"):
                    self.tracks[d.uuid] = (self.processes[d.thread.pid], d.thread.thread_name, d.thread.tid)
                else:
                    self.tracks[d.uuid] = (None, d.name, None)
                    self.info_uuid = d.uuid
                continue
            if not p.HasField("track_event"):
                continue
            e = p.track_event
            check("sequence_flags", p.sequence_flags, 2, where)
            ts = clocks.trace_time(p)
            if e.track_uuid == self.info_uuid:
                self.info = (e.name, ts, dict(_annotation(a, {}) for a in e.debug_annotations))
                continue
            self.event_ts.append(ts)
            process, track, _ = self.tracks[e.track_uuid]
            if e.type == te.TYPE_SLICE_END:
                check("end packet fields", sorted(f.name for f, _ in e.ListFields()), ["track_uuid", "type"], where)
                s = open_slices[e.track_uuid].pop()
                s.dur_ns = ts - s.start_ns
                continue
            check_that("type", e.type, e.type in (te.TYPE_SLICE_BEGIN, te.TYPE_INSTANT), "begin or instant", where)
            check("flow ids", len(e.flow_ids) <= 1 and len(e.terminating_flow_ids) <= 1, True, where)
            s = Slice(process, track, self.event_names[e.name_iid], ts, None,
                         dict(_annotation(a, self.arg_names) for a in e.debug_annotations),
                         flow_out=e.flow_ids[0] if e.flow_ids else None,
                         flow_in=e.terminating_flow_ids[0] if e.terminating_flow_ids else None)
            self.slices.append(s)
            if e.type == te.TYPE_SLICE_BEGIN:
                open_slices.setdefault(e.track_uuid, []).append(s)
        check("slices left open", sum(len(v) for v in open_slices.values()), 0)
