"""The timeline: which process, track, name and time every exported slice, instant and arrow gets.

One model, built with numpy from the decoded records of one or more ranks, written by both exporters
(``chrome_json`` and ``pftrace``), so the two formats always show the same thing:

- one process per rank and API ("triton rank 0"), pid = 1 + its position in the file;
- per program a track "program P"; a program whose ranges do not nest is spread over lanes
  "program P #2", ... (see ``lanes``); every track has a tid unique in the file;
- ranges become slices, instants zero-length instants, a range never ended becomes a slice named
  "<op> (unfinished)" that ends where the trace window ends (the latest time of any event);
- in a file with several processes, every remote op (target rank != issuing rank, target in the file)
  gets an arrow (flow) from its slice to a slice "<op> from rank R" of the same span on the target's
  track "incoming" (lanes "incoming #2", ... where such slices overlap);
- times are integer ns from each process's origin tick (the clock reference of a merged export).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from iris.tracing import chunks, lanes
from iris.tracing.events import EXPORT_ARGS, event_name
from iris.tracing.records import KIND_INSTANT, KIND_UNFINISHED, TraceRecords

EVENT_ARGS = EXPORT_ARGS  # every field an event's slice carries as an argument (``events.FIELDS``)
INCOMING_ARGS = ("from_rank", "from_program", "op_index", "address", "payload_size")
POINTER_ARGS = frozenset({"address"})  # shown as hex pointers where the format can
UNFINISHED_ARG = "unfinished"
UNFINISHED_SUFFIX = " (unfinished)"
TID_BASE = 1 << 16  # track tids start here, clear of the process pids
_PROGRAM, _INCOMING = 1, 0  # track classes, incoming first within a process


@dataclass
class RankTrace:
    """One rank's records for an export: times are measured from ``origin_ticks`` (raw clock ticks)."""

    records: TraceRecords
    origin_ticks: int
    api: str = "triton"

    @property
    def name(self) -> str:
        return f"{self.api} rank {self.records.rank}"


@dataclass
class SliceSet:
    """Slices ``[lo, hi)`` of the timeline's columns that share argument names (events, or incoming)."""

    lo: int
    hi: int
    arg_names: tuple[str, ...]
    args: list[np.ndarray]  # one int64 column of length hi - lo per argument


@dataclass
class Timeline:
    """Columns over every slice (events first, then incoming), plus the process and track tables."""

    process_names: list[str]
    track_process: np.ndarray  # int64 per track: process index
    track_names: list[str]
    names: list[str]  # slice names; ``name`` columns index this
    track: np.ndarray  # per slice
    name: np.ndarray
    kind: np.ndarray  # KIND_RANGE / KIND_INSTANT / KIND_UNFINISHED
    start: np.ndarray  # ns
    end: np.ndarray  # ns (== start for instants)
    flow_out: np.ndarray  # flow id leaving this slice, 0 for none
    flow_in: np.ndarray  # flow id arriving at this slice, 0 for none
    sets: list[SliceSet]
    window_end: int
    point_slice: np.ndarray  # begins and ends in viewer order (see lanes.point_order)
    point_is_end: np.ndarray
    metadata: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.start)

    def pid(self, process: int) -> int:
        return 1 + process

    def tid(self, track: int) -> int:
        return TID_BASE + track

    @property
    def flows(self) -> int:
        return int(np.count_nonzero(self.flow_out))


def ticks_to_ns(ticks: np.ndarray, ticks_per_second: float) -> np.ndarray:
    """Integer ns of ``ticks`` (exact when a tick is a whole number of ns)."""
    ns_per_tick = 1e9 / ticks_per_second
    if ns_per_tick == 1:
        return ticks.astype(np.int64, copy=False)
    if ns_per_tick == int(ns_per_tick):
        return ticks.astype(np.int64, copy=False) * int(ns_per_tick)
    return np.rint(ticks * ns_per_tick).astype(np.int64)


class _InTurn:
    """An executor that runs each job when it is submitted, on the calling thread."""

    def __enter__(self) -> _InTurn:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as e:  # re-raised by result(), as a pool's future does
            future.set_exception(e)
        return future


def _then(first: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """``first`` then ``rest`` (``first`` itself, no copy, when ``rest`` is empty)."""
    return np.concatenate([first, rest]) if len(rest) else first


def _check_traces(traces: list[RankTrace]) -> None:
    if not traces:
        raise ValueError("no ranks to export; give at least one RankTrace")
    names = [t.name for t in traces]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"ranks {dupes} appear more than once in one export; each (api, rank) may appear once")


def _names(traces: list[RankTrace], event_id: np.ndarray, kind: np.ndarray, src: np.ndarray, proc: np.ndarray,
           rank_of: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The slice names ("<op>", "<op> (unfinished)", "<op> from rank R" (+ the suffix)), one table for every
    slice, and each slice's index into it (events first, then the incoming copies of events ``src``)."""
    ev_ids, ev_dense = lanes.dense_ids(event_id)
    unfinished = (kind == KIND_UNFINISHED).astype(np.int64)
    base = (ev_dense.astype(np.int64) * 2 + unfinished) * (len(traces) + 1)
    keys, name = lanes.dense_ids(_then(base, base[src] + 1 + proc[src]))
    names = []
    for k in keys.tolist():
        ev, source = divmod(k, len(traces) + 1)
        event, unf = divmod(ev, 2)
        text = event_name(ev_ids[event]) + (f" from rank {int(rank_of[source - 1])}" if source else "")
        names.append(text + (UNFINISHED_SUFFIX if unf else ""))
    return names, name


def build(traces: list[RankTrace], flows: bool = True) -> Timeline:
    """The timeline of ``traces`` (one per process, in file order); ``flows=False`` draws no arrows."""
    _check_traces(traces)
    # One rank's columns are used as they are (no copy); several ranks' are put end to end.
    cols = {f: traces[0].records[f] if len(traces) == 1 else np.concatenate([t.records[f] for t in traces])
            for f in ("event_id", "pid", "kind", *EVENT_ARGS)}
    proc = np.repeat(np.arange(len(traces)), [len(t.records) for t in traces])
    start = np.concatenate([ticks_to_ns(t.records["timestamp"] - int(t.origin_ticks), t.records.ticks_per_second)
                            for t in traces])
    dur = np.concatenate([ticks_to_ns(np.maximum(t.records["duration_cycles"], 0), t.records.ticks_per_second)
                          for t in traces])
    kind = cols["kind"]
    shift = min(0, int(start.min(initial=0)))  # an event before its origin moves every time up, to start at 0
    if shift:
        start = start - shift
    end = start + dur  # dur is 0 for instants and unfinished ranges
    window_end = int(end.max(initial=0))
    end[kind == KIND_UNFINISHED] = window_end
    rank_of = np.array([t.records.rank for t in traces], dtype=np.int64)

    # Arrows: to the target's process, where (api, target_rank) is in the file and is not the issuer.
    target_proc = np.full(len(start), -1, dtype=np.int64)
    if flows and len(traces) > 1:
        target = cols["target_rank"]
        for api in sorted({t.api for t in traces}):
            members = np.array([p for p, t in enumerate(traces) if t.api == api])
            in_api = np.isin(proc, members)
            for p in members:
                target_proc[in_api & (target == rank_of[p])] = p
    src = np.nonzero((target_proc >= 0) & (target_proc != proc))[0]
    n_ev, n_in = len(start), len(src)
    flow_ids = np.arange(1, n_in + 1, dtype=np.int64)

    # Slices: the events, then their incoming copies on the target processes.
    s_start, s_end, s_kind = (_then(a, a[src]) for a in (start, end, kind))
    is_range = s_kind != KIND_INSTANT

    # Tracks: (process, class, program, lane); a program whose ranges do not nest, and "incoming", get lanes.
    programs, prog_dense = lanes.dense_ids(cols["pid"])
    per_class = max(len(programs), 1)
    group = _then((proc * 2 + _PROGRAM) * per_class + prog_dense, (target_proc[src] * 2 + _INCOMING) * per_class)
    incoming = np.arange(n_ev + n_in) >= n_ev
    own = is_range & ~incoming  # the ranges that stay on their program's track where they nest
    # Beside the viewer order (numpy and torch work without the GIL): the slice names and, where the slices are
    # in start order already, which groups may not fit one track. With few CPUs a second thread only competes
    # with torch's sort threads (2 CPUs: 245 ms against 204 for 1M events), so the jobs run in turn there.
    with ThreadPoolExecutor(max_workers=2) if chunks.workers() >= 4 else _InTurn() as pool:
        named = pool.submit(_names, traces, cols["event_id"], kind, src, proc, rank_of)
        doubt = pool.submit(lanes.doubtful, group, own, s_start, s_end) if lanes.in_start_order(s_start) else None
        point_slice, point_is_end = lanes.point_order(s_start, s_end, is_range, group)
        doubt = lanes.doubtful(group, own, s_start, s_end, point_slice[~point_is_end]) if doubt is None \
            else doubt.result()
        names, name = named.result()
    fits = lanes.fits_one_track(point_slice, point_is_end, group, own, s_start, s_end, doubt)
    spread = np.isin(group, group[~fits]) | incoming
    lane = lanes.lanes(point_slice, point_is_end, group, is_range, spread)
    n_lanes = int(lane.max(initial=0)) + 1
    keys, track = lanes.dense_ids(group * n_lanes + lane)
    t_group, t_lane = np.divmod(keys, n_lanes)
    t_pc, t_prog = np.divmod(t_group, max(len(programs), 1))
    t_proc, t_class = np.divmod(t_pc, 2)
    track_names = [(f"program {int(programs[p])}" if c == _PROGRAM else "incoming") + (f" #{n + 1}" if n else "")
                   for c, p, n in zip(t_class.tolist(), t_prog.tolist(), t_lane.tolist(), strict=True)]

    ev_args = [cols[a] for a in EVENT_ARGS]
    in_args = [rank_of[proc[src]], cols["pid"][src], cols["op_index"][src], cols["address"][src],
               cols["payload_size"][src]]
    flow_out = np.zeros(n_ev + n_in, dtype=np.int64)
    flow_out[src] = flow_ids
    return Timeline(
        process_names=[t.name for t in traces],
        track_process=t_proc.astype(np.int64, copy=False),
        track_names=track_names,
        names=names,
        track=track.astype(np.int64, copy=False),
        name=name.astype(np.int64, copy=False),
        kind=s_kind,
        start=s_start,
        end=s_end,
        flow_out=flow_out,
        flow_in=_then(np.zeros(n_ev, dtype=np.int64), flow_ids),
        sets=[SliceSet(0, n_ev, EVENT_ARGS, ev_args), SliceSet(n_ev, n_ev + n_in, INCOMING_ARGS, in_args)],
        window_end=window_end,
        point_slice=point_slice,
        point_is_end=point_is_end,
        metadata={"time_shift_ns": -shift} if shift else {},
    )
