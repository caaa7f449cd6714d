"""Chrome/Perfetto JSON of a timeline, written as fixed-width rows of bytes built column by column.

Every event of one shape (a range, an instant, a flow end, ...) is one template row: constant text
between columns of numbers and names, each column right-aligned to its widest value with spaces (JSON
allows whitespace around any value). N events of a shape are an [N, row width] byte matrix filled with
a few numpy operations per column, so formatting costs no Python step per event (a column of a few hundred
rows or fewer is formatted by Python instead: the operations' fixed cost is the larger there).

``ts``/``dur`` are µs with 3 decimals (exact ns). Ranges are ``X`` events, instants ``i`` events, an
unfinished range an ``X`` event named "<op> (unfinished)" with ``"unfinished": true`` that ends with the
trace window. Arrows are flow events: ``s`` at the start of the issuing slice, ``f`` (``"bp": "e"``,
bound to the enclosing slice) at the start of the target's incoming slice, one id per arrow.
"""

from __future__ import annotations

import json
from typing import IO

import numpy as np

from iris.tracing import chunks
from iris.tracing.events import FIELD_BY_NAME
from iris.tracing.records import KIND_INSTANT, KIND_RANGE, KIND_UNFINISHED
from iris.tracing.timeline import EVENT_ARGS, UNFINISHED_ARG, UNFINISHED_SUFFIX, Timeline

CHUNK = 1 << 16  # rows formatted at a time: the byte matrix stays small
FEW_ROWS = 256  # a column of at most this many rows is formatted by Python (``int_column``), faster there

# The metadata keys upstream iris's JSON writes about its events, for this file's events.
TIME_UNIT = "us: ts and dur in microseconds (3 decimals: whole ns), ts from the process's clock origin"
EVENT_KEYS = {
    "name": f"the event (EVENT_NAMES); '<name>{UNFINISHED_SUFFIX}' a range never ended, '<name> from rank R' the "
            "copy of a remote op on its target's incoming track; 'remote op' an arrow",
    "cat": "always 'iris'",
    "ph": "'X' a range, 'i' an instant, 's' and 'f' the start and end of an arrow (flow, with 'id'; 'bp': 'e')",
    "ts": "the start, in microseconds from the process's clock origin (metadata.clock_origin_ticks; plus "
          "metadata.time_shift_ns where an event starts before it)",
    "dur": "the length in microseconds (ranges only)",
    "s": "an instant's scope: 't', its track",
    "pid": "the process: one per rank and API, 1 + its index in metadata.processes",
    "tid": "the track; its thread_name event names it: 'program P' (the record's pid; 'program P #2', ... where "
           "ranges overlap without nesting) or 'incoming'",
    "args": {**{a: FIELD_BY_NAME[a].meaning for a in EVENT_ARGS},
             "from_rank": "on an incoming slice: the rank that issued the remote op",
             "from_program": "on an incoming slice: the issuing program's pid (its other args are the op's)",
             UNFINISHED_ARG: "true on a range never ended (it ends where the trace does)"},
}

_LUT4 = np.array([list(b"%04d" % i) for i in range(10_000)], dtype=np.uint8).view("<u4").ravel()
_LEAD4 = np.array([4 - len(str(i)) if i else 4 for i in range(10_000)], dtype=np.int64)
_SPACE = ord(" ")


_KEEP = np.array([(0xFFFFFFFF << (8 * k)) & 0xFFFFFFFF for k in range(5)], dtype="<u4")  # keep bytes k.. of a word
_BLANK = np.array([0x20202020 & ~int(m) & 0xFFFFFFFF for m in _KEEP], dtype="<u4")  # spaces in bytes ..k


def int_column(values: np.ndarray) -> np.ndarray:
    """Decimal text of an int64 column, right-aligned with spaces: uint8 [n, widest]."""
    v = np.asarray(values, dtype=np.int64)
    return _few_ints(v) if len(v) <= FEW_ROWS else _many_ints(v)


def _few_ints(v: np.ndarray) -> np.ndarray:
    """``int_column`` by Python's formatting: for few rows, cheaper than the digit tables' fixed cost."""
    text = [b"%d" % x for x in v.tolist()]
    width = max(map(len, text), default=1)
    return np.frombuffer(b"".join(t.rjust(width) for t in text), dtype=np.uint8).reshape(len(v), width)


def _many_ints(v: np.ndarray) -> np.ndarray:
    """``int_column`` four digits at a time through lookup tables: a few numpy operations whatever the rows."""
    neg = v < 0
    a = np.where(neg, -(v + 1), v).astype(np.uint64) + neg.astype(np.uint64)  # |v|, also for the minimum
    chunks = max(1, -(-(len(str(int(a.max(initial=0)))) + int(neg.any())) // 4))
    parts = []
    for _ in range(chunks):  # 4 decimal digits at a time, least significant first
        q = a // np.uint64(10_000)
        parts.append((a - q * np.uint64(10_000)).astype(np.intp))
        a = q
    parts.reverse()
    lead = np.zeros(len(v), dtype=np.int64)  # blank positions from the left
    higher_zero = np.ones(len(v), dtype=bool)
    for c, part in enumerate(parts):
        last = c == chunks - 1
        zero = (part == 0) & (not last)
        lead += np.where(higher_zero, np.where(zero, 4, _LEAD4[part] - ((part == 0) & last)), 0)
        higher_zero &= zero
    words = np.empty((len(v), chunks), dtype="<u4")
    for c, part in enumerate(parts):
        k = np.clip(lead - 4 * c, 0, 4)
        words[:, c] = (_LUT4[part] & _KEEP[k]) | _BLANK[k]
    text = words.view(np.uint8).reshape(len(v), 4 * chunks)
    if neg.any():
        rows = np.nonzero(neg)[0]
        text[rows, lead[rows] - 1] = ord("-")
    width = int((4 * chunks - lead + neg).max(initial=1))
    return text[:, 4 * chunks - width:]


def us_column(ns: np.ndarray) -> np.ndarray:
    """µs with exactly 3 decimals of a non-negative ns column."""
    ns = np.asarray(ns, dtype=np.int64)
    whole = int_column(ns // 1000)
    frac = _LUT4[(ns % 1000).astype(np.intp)].view(np.uint8).reshape(len(ns), 4)[:, 1:]
    return np.concatenate([whole, np.full((len(ns), 1), ord("."), np.uint8), frac], axis=1)


def text_column(table: list[str], index: np.ndarray) -> np.ndarray:
    """JSON strings of ``table[index]``, padded on the right with spaces."""
    quoted = [json.dumps(t).encode() for t in table]
    width = max((len(q) for q in quoted), default=2)
    block = np.full((max(len(table), 1), width), _SPACE, dtype=np.uint8)
    for i, q in enumerate(quoted):
        block[i, :len(q)] = np.frombuffer(q, dtype=np.uint8)
    return block[index]


class _Row:
    """A template row: constant text and column producers, applied to a chunk of event indices."""

    def __init__(self) -> None:
        self.parts: list = []

    def text(self, s: str) -> _Row:
        self.parts.append(np.frombuffer(s.encode(), dtype=np.uint8))
        return self

    def col(self, fn) -> _Row:
        self.parts.append(fn)
        return self

    def encode(self, idx: np.ndarray) -> bytes:
        blocks = [np.broadcast_to(p, (len(idx), len(p))) if isinstance(p, np.ndarray) else p(idx)
                  for p in self.parts]
        return np.concatenate(blocks, axis=1).tobytes()


def _event_rows(tl: Timeline, sel: np.ndarray, set_index: int, kind: int) -> tuple[_Row, int]:
    """The row of slices ``sel`` (all of one kind and one argument set)."""
    sset = tl.sets[set_index]
    pid = np.asarray([tl.pid(p) for p in range(len(tl.process_names))], dtype=np.int64)[tl.track_process]
    row = _Row().text(',\n{"name": ').col(lambda i: text_column(tl.names, tl.name[sel[i]]))
    row.text(', "cat": "iris", "ph": "' + ("i" if kind == KIND_INSTANT else "X") + '", "pid": ')
    row.col(lambda i: int_column(pid[tl.track[sel[i]]])).text(', "tid": ')
    row.col(lambda i: int_column(tl.tid(tl.track[sel[i]]))).text(', "ts": ')
    row.col(lambda i: us_column(tl.start[sel[i]]))
    if kind == KIND_INSTANT:
        row.text(', "s": "t"')
    else:
        row.text(', "dur": ').col(lambda i: us_column(tl.end[sel[i]] - tl.start[sel[i]]))
    for k, a in enumerate(sset.arg_names):
        row.text((', "args": {' if k == 0 else ", ") + f'"{a}": ')
        row.col(lambda i, k=k: int_column(sset.args[k][sel[i] - sset.lo]))
    row.text(f', "{UNFINISHED_ARG}": true}}}}' if kind == KIND_UNFINISHED else "}}")
    return row, len(sel)


def _flow_rows(tl: Timeline, sel: np.ndarray, ids: np.ndarray, phase: str) -> tuple[_Row, int]:
    pid = np.asarray([tl.pid(p) for p in range(len(tl.process_names))], dtype=np.int64)[tl.track_process]
    row = _Row().text(',\n{"name": "remote op", "cat": "iris", "ph": "' + phase + '"')
    row.text(', "bp": "e", "id": ' if phase == "f" else ', "id": ').col(lambda i: int_column(ids[sel[i]]))
    row.text(', "pid": ').col(lambda i: int_column(pid[tl.track[sel[i]]]))
    row.text(', "tid": ').col(lambda i: int_column(tl.tid(tl.track[sel[i]])))
    row.text(', "ts": ').col(lambda i: us_column(tl.start[sel[i]])).text("}")
    return row, len(sel)


def _metadata_events(tl: Timeline) -> list[dict]:
    out = []
    for p, name in enumerate(tl.process_names):
        out.append({"name": "process_name", "ph": "M", "pid": tl.pid(p), "args": {"name": name}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": tl.pid(p), "args": {"sort_index": p}})
    for t, name in enumerate(tl.track_names):
        pid, tid = tl.pid(int(tl.track_process[t])), tl.tid(t)
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
        out.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": t}})
    return out


def write(f: IO[bytes], tl: Timeline, metadata: dict) -> None:
    """The JSON trace of ``tl`` to the binary file ``f``; ``metadata`` goes to the top-level ``metadata``."""
    f.write(b'{"displayTimeUnit": "ns", "metadata": ')
    f.write(json.dumps(metadata).encode())
    f.write(b', "traceEvents": [\n')
    f.write(",\n".join(json.dumps(e) for e in _metadata_events(tl)).encode())
    rows = []
    for s, sset in enumerate(tl.sets):
        kinds = tl.kind[sset.lo:sset.hi]
        for kind in (KIND_RANGE, KIND_UNFINISHED, KIND_INSTANT):
            sel = sset.lo + np.nonzero(kinds == kind)[0]
            if len(sel):
                rows.append(_event_rows(tl, sel, s, kind))
    if tl.flows:
        rows.append(_flow_rows(tl, np.nonzero(tl.flow_out)[0], tl.flow_out, "s"))
        rows.append(_flow_rows(tl, np.nonzero(tl.flow_in)[0], tl.flow_in, "f"))
    work = [(row, np.arange(lo, min(n, lo + CHUNK))) for row, n in rows for lo in range(0, n, CHUNK)]
    chunks.write_in_order(f, lambda item: item[0].encode(item[1]), work, parallel=sum(n for _, n in rows) > CHUNK)
    f.write(b"\n]}\n")
