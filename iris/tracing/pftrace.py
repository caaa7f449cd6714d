"""Binary Perfetto trace (``.pftrace``) of a timeline: TracePacket/TrackEvent protobuf, encoded with numpy.

Layout, all on one packet sequence (``trusted_packet_sequence_id`` 1):

- a first packet with the interned event names and argument names (``interned_data``; it sets
  ``SEQ_INCREMENTAL_STATE_CLEARED``, every later event packet ``SEQ_NEEDS_INCREMENTAL_STATE``);
- track descriptors: one process per rank and API, one thread per timeline track, and a track
  "iris trace" whose instant "trace info" carries the export's metadata (clock alignment included) as
  debug annotations;
- one packet per slice begin, slice end and instant, in the viewer order of ``lanes.point_order``:
  ``TYPE_SLICE_BEGIN``/``TYPE_INSTANT`` carry the interned name, the event fields as debug annotations
  (``address`` as a pointer) and the arrows (``flow_ids`` on the issuing slice,
  ``terminating_flow_ids`` on the incoming one); ``TYPE_SLICE_END`` carries only the track.

Event packets are encoded in chunks of rows through ``protowire.Rows``; with ``compress`` each chunk
is deflated into a ``compressed_packets`` packet (zlib, as Perfetto's own tracing service writes it);
chunks are encoded on a thread pool (``chunks``).
"""

from __future__ import annotations

import zlib
from typing import IO

import numpy as np

from iris.tracing import chunks
from iris.tracing import protowire as pw
from iris.tracing.records import KIND_INSTANT, KIND_UNFINISHED
from iris.tracing.timeline import POINTER_ARGS, UNFINISHED_ARG, Timeline

SEQUENCE = 1
METADATA_TRACK_UUID = (1 << 16) - 1
CHUNK = 1 << 16  # packets encoded (and compressed) together
COMPRESSION_LEVEL = 1

# Field numbers (perfetto/trace/trace_packet.proto, track_event/*.proto).
TRACE_PACKET = 1
P_TIMESTAMP, P_SEQUENCE_ID, P_TRACK_EVENT, P_INTERNED, P_FLAGS, P_COMPRESSED, P_DESCRIPTOR = 8, 10, 11, 12, 13, 50, 60
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


def _header(tl: Timeline, metadata: dict) -> bytes:
    interned = b"".join(pw.field_bytes(I_EVENT_NAMES, pw.field_varint(1, i + 1) + pw.field_string(2, n))
                        for i, n in enumerate(tl.names))
    interned += b"".join(pw.field_bytes(I_ANNOTATION_NAMES, pw.field_varint(1, i + 1) + pw.field_string(2, n))
                         for i, n in enumerate(arg_names(tl)))
    out = [_packet(pw.field_bytes(P_INTERNED, interned) + pw.field_varint(P_FLAGS, SEQ_CLEARED | SEQ_NEEDS_STATE))]
    for p, name in enumerate(tl.process_names):
        process = pw.field_varint(PROCESS_PID, tl.pid(p)) + pw.field_string(PROCESS_NAME, name)
        out.append(_packet(pw.field_bytes(P_DESCRIPTOR, pw.field_varint(D_UUID, tl.pid(p))
                                          + pw.field_bytes(D_PROCESS, process))))
    for t, name in enumerate(tl.track_names):
        thread = (pw.field_varint(THREAD_PID, tl.pid(int(tl.track_process[t]))) + pw.field_varint(THREAD_TID, tl.tid(t))
                  + pw.field_string(THREAD_NAME, name))
        out.append(_packet(pw.field_bytes(P_DESCRIPTOR, pw.field_varint(D_UUID, tl.tid(t))
                                          + pw.field_bytes(D_THREAD, thread))))
    out.append(_packet(pw.field_bytes(P_DESCRIPTOR, pw.field_varint(D_UUID, METADATA_TRACK_UUID)
                                      + pw.field_string(D_NAME, "iris trace"))))
    info = (pw.field_varint(E_TYPE, TYPE_INSTANT) + pw.field_varint(E_TRACK, METADATA_TRACK_UUID)
            + pw.field_string(E_NAME, "trace info")
            + b"".join(pw.field_bytes(E_ANNOTATION, _annotation(k, v)) for k, v in metadata.items()))
    out.append(_packet(pw.field_varint(P_TIMESTAMP, 0) + pw.field_bytes(P_TRACK_EVENT, info)
                       + pw.field_varint(P_FLAGS, SEQ_NEEDS_STATE)))
    return b"".join(out)


class _Slots:
    """Per-slice debug annotations as K slots: the iid of the argument name, its value and value key."""

    def __init__(self, tl: Timeline) -> None:
        iid = {n: i + 1 for i, n in enumerate(arg_names(tl))}
        self.tl = tl
        self.width = max(len(s.arg_names) for s in tl.sets) + 1  # the last slot: "unfinished"
        self.unfinished_iid = iid[UNFINISHED_ARG]
        self.iids = [np.array([iid[a] for a in s.arg_names] + [0] * (self.width - len(s.arg_names)))
                     for s in tl.sets]
        bool_key, int_key, ptr_key = (pw.key(f, pw.VARINT)[0] for f in (A_BOOL, A_INT, A_POINTER))
        self.value_keys = [np.array([ptr_key if a in POINTER_ARGS else int_key for a in s.arg_names]
                                    + [bool_key] * (self.width - len(s.arg_names)), dtype=np.uint8)
                           for s in tl.sets]

    def gather(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(iid, value, value_key)``, each [len(s), width], for slices ``s``; iid 0 = no annotation."""
        iid = np.zeros((len(s), self.width), dtype=np.int64)
        value = np.zeros((len(s), self.width), dtype=np.int64)
        vkey = np.zeros((len(s), self.width), dtype=np.uint8)
        for k, sset in enumerate(self.tl.sets):
            rows = np.nonzero((s >= sset.lo) & (s < sset.hi))[0]
            n_args = len(sset.arg_names)
            iid[rows] = self.iids[k]
            vkey[rows] = self.value_keys[k]
            at = s[rows] - sset.lo
            for a in range(n_args):
                value[rows, a] = sset.args[a][at]
        unfinished = self.tl.kind[s] == KIND_UNFINISHED
        iid[:, -1] = np.where(unfinished, self.unfinished_iid, 0)
        value[:, -1] = 1
        return iid, value, vkey


def _event_packets(tl: Timeline, slots: _Slots, lo: int, hi: int) -> bytes:
    """Packets of the points ``[lo, hi)`` of the viewer order."""
    s, is_end = tl.point_slice[lo:hi], tl.point_is_end[lo:hi]
    n, begin = hi - lo, ~is_end
    event = pw.Rows(n)
    event.add_varint(E_TYPE, np.where(is_end, TYPE_END, np.where(tl.kind[s] == KIND_INSTANT, TYPE_INSTANT, TYPE_BEGIN)))
    event.add_varint(E_TRACK, tl.tid(tl.track[s]))
    event.add_varint(E_NAME_IID, tl.name[s] + 1, begin)
    flow_out, flow_in = tl.flow_out[s], tl.flow_in[s]
    event.add_fixed64(E_FLOW, flow_out, begin & (flow_out > 0))
    event.add_fixed64(E_TERMINATING_FLOW, flow_in, begin & (flow_in > 0))
    iid, value, vkey = slots.gather(s)
    for k in range(slots.width):
        present = begin & (iid[:, k] > 0)
        if not present.any():
            continue
        ann = pw.Rows(n)
        ann.add_varint(A_NAME_IID, iid[:, k], present)
        ann.add_tagged_varint(vkey[:, k], value[:, k], present)
        event.add_message(E_ANNOTATION, ann, present)
    packet = pw.Rows(n)
    packet.add_varint(P_TIMESTAMP, np.where(is_end, tl.end[s], tl.start[s]))
    packet.add_bytes(pw.field_varint(P_SEQUENCE_ID, SEQUENCE) + pw.field_varint(P_FLAGS, SEQ_NEEDS_STATE))
    packet.add_message(P_TRACK_EVENT, event)
    trace = pw.Rows(n)
    trace.add_message(TRACE_PACKET, packet)
    return trace.tobytes()


def _compressed(data: bytes) -> bytes:
    return pw.field_bytes(TRACE_PACKET, pw.field_bytes(P_COMPRESSED, zlib.compress(data, COMPRESSION_LEVEL)))


def write(f: IO[bytes], tl: Timeline, metadata: dict, compress: bool = True) -> None:
    """The binary trace of ``tl`` to the binary file ``f``; ``compress`` deflates the packets in chunks."""
    slots = _Slots(tl)
    n = len(tl.point_slice)
    header = _header(tl, metadata)
    f.write(_compressed(header) if compress else header)

    def encode(lo: int) -> bytes:
        data = _event_packets(tl, slots, lo, min(lo + CHUNK, n))
        return _compressed(data) if compress else data

    chunks.write_in_order(f, encode, range(0, n, CHUNK))
