"""Binary Perfetto trace (``.pftrace``) of a timeline: TracePacket/TrackEvent protobuf, encoded with numpy.

Layout, all on one packet sequence (``trusted_packet_sequence_id`` 1):

- a first packet that clears the sequence's incremental state (``SEQ_INCREMENTAL_STATE_CLEARED``) and
  holds the interned event names and argument names (``interned_data``) and the sequence's defaults
  (``trace_packet_defaults``: timestamps on clock ``CLOCK_DELTA``); every event packet then sets
  ``SEQ_NEEDS_INCREMENTAL_STATE``;
- a clock snapshot: ``CLOCK_DELTA`` is a sequence-scoped *incremental* clock (``is_incremental``),
  equal to the trace clock (BOOTTIME) at 0; so every packet's ``timestamp`` is the ns since the
  previous packet's time, a varint of a byte or two instead of five;
- track descriptors: one process per rank and API (uuid = pid), one thread per timeline track
  (uuids right after the processes', tid as in the JSON), and a track "iris trace" whose instant
  "trace info" (at 0) carries the export's metadata (clock alignment included) as debug annotations;
- one packet per slice begin, slice end and instant, in the viewer order of ``lanes.point_order``:
  ``TYPE_SLICE_BEGIN``/``TYPE_INSTANT`` carry the interned name, the event fields as debug annotations
  with interned names (``address`` as a pointer) and the arrows (``flow_ids`` on the issuing slice,
  ``terminating_flow_ids`` on the incoming one); ``TYPE_SLICE_END`` carries only the type and track.

Event packets are encoded in chunks of rows through ``protowire.Rows``; with ``compress`` each chunk
is deflated into a ``compressed_packets`` packet (a zlib stream, as Perfetto's own tracing service
writes them; ``deflate`` picks the compressor); the header and the chunks are encoded on a thread pool and
deflated on another (``chunks``).
"""

from __future__ import annotations

from typing import IO

import numpy as np

from iris.tracing import chunks, deflate
from iris.tracing import protowire as pw
from iris.tracing.records import KIND_INSTANT, KIND_UNFINISHED
from iris.tracing.timeline import POINTER_ARGS, UNFINISHED_ARG, Timeline

SEQUENCE = 1
CLOCK_DELTA = 64  # the first sequence-scoped clock id: an incremental clock in ns
CLOCK_BOOTTIME = 6  # the trace clock of a Perfetto trace
# Packets encoded (and compressed) together. One thread is fastest at 32768 (the byte matrices stay in cache:
# 1M events took 0.53 s against 0.63 s at 16384 and 0.58 s at 65536); 65536 takes fresh pages on every chunk
# (70K page faults for 1M events on one 16-CPU host). Encoding peaks at about 1 KB per packet, per thread.
CHUNK = 1 << 15
# The metadata's time_unit (upstream iris's key): what the packets' times are.
TIME_UNIT = "ns: packet timestamps in nanoseconds (deltas on CLOCK_DELTA), from the process's clock origin"

# Field numbers (perfetto/trace/trace_packet.proto, track_event/*.proto).
TRACE_PACKET = 1
P_TIMESTAMP, P_SEQUENCE_ID, P_TRACK_EVENT, P_INTERNED, P_FLAGS, P_COMPRESSED, P_DESCRIPTOR = 8, 10, 11, 12, 13, 50, 60
P_CLOCK_SNAPSHOT, P_DEFAULTS = 6, 59
SNAPSHOT_CLOCKS, CLOCK_ID, CLOCK_TIMESTAMP, CLOCK_INCREMENTAL = 1, 1, 2, 3
DEFAULTS_CLOCK_ID = 58
SEQ_CLEARED, SEQ_NEEDS_STATE = 1, 2
E_TYPE, E_NAME_IID, E_TRACK, E_ANNOTATION, E_FLOW, E_TERMINATING_FLOW, E_NAME = 9, 10, 11, 4, 47, 48, 23
TYPE_BEGIN, TYPE_END, TYPE_INSTANT = 1, 2, 3
A_NAME_IID, A_BOOL, A_INT, A_DOUBLE, A_STRING, A_POINTER, A_NAME, A_DICT, A_ARRAY = 1, 2, 4, 5, 6, 7, 10, 11, 12
I_EVENT_NAMES, I_ANNOTATION_NAMES = 2, 3
D_UUID, D_NAME, D_PROCESS, D_THREAD = 1, 2, 3, 4
PROCESS_PID, PROCESS_NAME = 1, 6
THREAD_PID, THREAD_TID, THREAD_NAME = 1, 2, 5


def _packet(body: bytes) -> bytes:
    return pw.field_bytes(TRACE_PACKET, body + pw.field_varint(P_SEQUENCE_ID, SEQUENCE))


def _annotation(name: str, value) -> bytes:
    """A debug annotation named ``name``: bool, int, float, str, or nested dicts/lists of those."""
    return pw.field_string(A_NAME, name) + _annotation_value(value)


def _annotation_value(value) -> bytes:
    if isinstance(value, bool):
        return pw.field_varint(A_BOOL, int(value))
    if isinstance(value, int):
        return pw.field_varint(A_INT, value)
    if isinstance(value, float):
        return pw.key(A_DOUBLE, pw.FIXED64) + np.float64(value).tobytes()
    if isinstance(value, str):
        return pw.field_string(A_STRING, value)
    if isinstance(value, dict):
        return b"".join(pw.field_bytes(A_DICT, _annotation(str(k), v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return b"".join(pw.field_bytes(A_ARRAY, _annotation_value(v)) for v in value)
    if value is None:
        return pw.field_string(A_STRING, "none")
    raise TypeError(f"metadata value {value!r} ({type(value).__name__}); expected bool, int, float, str, dict, list")


def arg_names(tl: Timeline) -> list[str]:
    """Interned argument names in iid order (iid = position + 1)."""
    names = [a for s in tl.sets for a in s.arg_names] + [UNFINISHED_ARG]
    return list(dict.fromkeys(names))


def track_uuid(tl: Timeline, track: np.ndarray | int):
    """The uuid of timeline track(s) ``track``: right after the process uuids (= pids), so ids stay short."""
    return 1 + len(tl.process_names) + track


def metadata_track_uuid(tl: Timeline) -> int:
    """The uuid of the track "iris trace", after every other track's."""
    return int(track_uuid(tl, len(tl.track_names)))


def _header(tl: Timeline, metadata: dict) -> bytes:
    interned = b"".join(pw.field_bytes(I_EVENT_NAMES, pw.field_varint(1, i + 1) + pw.field_string(2, n))
                        for i, n in enumerate(tl.names))
    interned += b"".join(pw.field_bytes(I_ANNOTATION_NAMES, pw.field_varint(1, i + 1) + pw.field_string(2, n))
                         for i, n in enumerate(arg_names(tl)))
    defaults = pw.field_varint(DEFAULTS_CLOCK_ID, CLOCK_DELTA)
    out = [_packet(pw.field_varint(P_FLAGS, SEQ_CLEARED | SEQ_NEEDS_STATE) + pw.field_bytes(P_DEFAULTS, defaults)
                   + pw.field_bytes(P_INTERNED, interned))]
    trace_clock = pw.field_varint(CLOCK_ID, CLOCK_BOOTTIME) + pw.field_varint(CLOCK_TIMESTAMP, 0)
    delta_clock = (pw.field_varint(CLOCK_ID, CLOCK_DELTA) + pw.field_varint(CLOCK_TIMESTAMP, 0)
                   + pw.field_varint(CLOCK_INCREMENTAL, 1))
    clocks = pw.field_bytes(SNAPSHOT_CLOCKS, trace_clock) + pw.field_bytes(SNAPSHOT_CLOCKS, delta_clock)
    out.append(_packet(pw.field_bytes(P_CLOCK_SNAPSHOT, clocks)))
    for p, name in enumerate(tl.process_names):
        process = pw.field_varint(PROCESS_PID, tl.pid(p)) + pw.field_string(PROCESS_NAME, name)
        out.append(_packet(pw.field_bytes(P_DESCRIPTOR, pw.field_varint(D_UUID, tl.pid(p))
                                          + pw.field_bytes(D_PROCESS, process))))
    for t, name in enumerate(tl.track_names):
        thread = (pw.field_varint(THREAD_PID, tl.pid(int(tl.track_process[t]))) + pw.field_varint(THREAD_TID, tl.tid(t))
                  + pw.field_string(THREAD_NAME, name))
        out.append(_packet(pw.field_bytes(P_DESCRIPTOR, pw.field_varint(D_UUID, track_uuid(tl, t))
                                          + pw.field_bytes(D_THREAD, thread))))
    info_uuid = metadata_track_uuid(tl)
    out.append(_packet(pw.field_bytes(P_DESCRIPTOR, pw.field_varint(D_UUID, info_uuid)
                                      + pw.field_string(D_NAME, "iris trace"))))
    info = (pw.field_varint(E_TYPE, TYPE_INSTANT) + pw.field_varint(E_TRACK, info_uuid)
            + pw.field_string(E_NAME, "trace info")
            + b"".join(pw.field_bytes(E_ANNOTATION, _annotation(k, v)) for k, v in metadata.items()))
    out.append(_packet(pw.field_varint(P_TIMESTAMP, 0) + pw.field_bytes(P_TRACK_EVENT, info)
                       + pw.field_varint(P_FLAGS, SEQ_NEEDS_STATE)))
    return b"".join(out)


class _Annotations:
    """Per-slice debug annotations as slots: per argument set, each slot's head (name key, name iid, value
    key) and column of values; the last slot is "unfinished", on unfinished slices only."""

    def __init__(self, tl: Timeline) -> None:
        iid = {n: i + 1 for i, n in enumerate(arg_names(tl))}
        self.tl = tl
        self.width = max(len(s.arg_names) for s in tl.sets) + 1
        name_key = pw.key(A_NAME_IID, pw.VARINT)[0]
        bool_key, int_key, ptr_key = (pw.key(f, pw.VARINT)[0] for f in (A_BOOL, A_INT, A_POINTER))
        self.heads = [np.array([[name_key, iid[a], ptr_key if a in POINTER_ARGS else int_key] for a in s.arg_names],
                               dtype=np.uint8).reshape(-1, 3) for s in tl.sets]
        self.unfinished_head = np.array([name_key, iid[UNFINISHED_ARG], bool_key], dtype=np.uint8)

    def add(self, event: pw.Rows, s: np.ndarray, begin: np.ndarray) -> None:
        """The annotations of slices ``s`` (one row each) to ``event``, on the rows where ``begin``."""
        members = []  # (set index, set, its rows, its rows that get annotations)
        for k, sset in enumerate(self.tl.sets):
            rows = (s >= sset.lo) & (s < sset.hi)
            if rows.any():
                members.append((k, sset, rows, begin & rows))
        heads, values, present = [], [], []
        clipped = {}  # per set in this chunk: its rows of ``s``, clipped into its columns
        for slot in range(self.width - 1):
            have = [m for m in members if slot < len(m[1].arg_names)]
            if not have:
                continue
            if len(have) == 1:  # one argument set in this chunk (always, in a trace without arrows)
                k, sset, _, p = have[0]
                if k not in clipped:
                    clipped[k] = np.clip(s - sset.lo, 0, sset.hi - sset.lo - 1)
                head = self.heads[k][slot]
                v = sset.args[slot][clipped[k]]
            else:
                head = np.zeros((len(s), 3), dtype=np.uint8)
                v = np.zeros(len(s), dtype=np.int64)
                p = np.zeros(len(s), dtype=bool)
                for k, sset, rows, _ in have:
                    head[rows] = self.heads[k][slot]
                    v[rows] = sset.args[slot][s[rows] - sset.lo]
                    p |= rows
                p &= begin
            heads.append(head)
            values.append(v)
            present.append(p)
        unfinished = begin & (self.tl.kind[s] == KIND_UNFINISHED)
        if unfinished.any():
            heads.append(self.unfinished_head)
            values.append(np.ones(len(s), dtype=np.int64))
            present.append(unfinished)
        if heads:
            event.add_short_messages(E_ANNOTATION, heads, values, present)


def _event_packets(tl: Timeline, annotations: _Annotations, lo: int, hi: int,
                   scratch: pw.Scratch | None = None) -> np.ndarray:
    """Packets of the points ``[lo, hi)`` of the viewer order, as bytes (uint8)."""
    s, is_end = tl.point_slice[lo:hi], tl.point_is_end[lo:hi]
    n, begin = hi - lo, ~is_end
    event = pw.Rows(n)
    event.add_varint(E_TYPE, np.where(is_end, TYPE_END, np.where(tl.kind[s] == KIND_INSTANT, TYPE_INSTANT, TYPE_BEGIN)))
    event.add_varint(E_TRACK, track_uuid(tl, tl.track[s]))
    event.add_varint(E_NAME_IID, tl.name[s] + 1, begin)
    annotations.add(event, s, begin)
    flow_out, flow_in = tl.flow_out[s], tl.flow_in[s]
    event.add_fixed64(E_FLOW, flow_out, begin & (flow_out > 0))
    event.add_fixed64(E_TERMINATING_FLOW, flow_in, begin & (flow_in > 0))
    # Timestamps on the incremental clock: each the time since the previous packet's (0 before the first).
    first = lo - 1 if lo else lo
    s_time = tl.point_slice[first:hi]
    time = np.where(tl.point_is_end[first:hi], tl.end[s_time], tl.start[s_time])
    delta = np.diff(time) if lo else np.diff(time, prepend=0)
    packet = pw.Rows(n)
    packet.add_varint(P_TIMESTAMP, delta)
    packet.add_bytes(pw.field_varint(P_SEQUENCE_ID, SEQUENCE) + pw.field_varint(P_FLAGS, SEQ_NEEDS_STATE))
    packet.add_message(P_TRACK_EVENT, event)
    trace = pw.Rows(n)
    trace.add_message(TRACE_PACKET, packet)
    return trace.encode(scratch)


def compressed_packets(data) -> bytes:
    """``data`` (packets) deflated into one ``compressed_packets`` packet."""
    return pw.field_bytes(TRACE_PACKET, pw.field_bytes(P_COMPRESSED, deflate.compress(data)))


class Encoder:
    """The event packets of a timeline, chunk by chunk: ``starts`` holds each chunk's first point, and
    ``packets(lo)`` is the chunk's packets (uncompressed bytes, uint8), independent of the other chunks."""

    def __init__(self, tl: Timeline) -> None:
        self.tl = tl
        self.annotations = _Annotations(tl)
        self.chunk = CHUNK
        self.starts = range(0, len(tl.point_slice), self.chunk)
        self.scratch = pw.Scratch()  # each encoding thread's matrices, reused chunk after chunk

    def packets(self, lo: int) -> np.ndarray:
        hi = min(lo + self.chunk, len(self.tl.point_slice))
        return _event_packets(self.tl, self.annotations, lo, hi, self.scratch)


def write(f: IO[bytes], tl: Timeline, metadata: dict, compress: bool = True) -> None:
    """The binary trace of ``tl`` to the binary file ``f``; ``compress`` deflates the packets in chunks."""
    encoder = Encoder(tl)

    def encode(lo: int | None):  # None: the header, encoded on the pool too, alongside the first chunks
        return _header(tl, metadata) if lo is None else encoder.packets(lo)

    chunks.write_in_order(f, encode, [None, *encoder.starts], compressed_packets if compress else None)
