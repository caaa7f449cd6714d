"""A large example built on the host alone: a scenario's model and both APIs' observations, no kernel run.

What ``conformance.check.compare`` gets after a GPU run at scale: ``ranks`` ranks of ``programs`` programs each,
every program recording its share of ``events`` (ranges, a few instants and unfinished ranges, masked calls with
no address) over named heap buffers of every rank, in chunks of ``chunk`` slots that the programs claim in an
interleaved order (a program's last chunk ends in holes). ``capacity`` below 100 gives every rank slots for that
percentage of the events the smallest rank records (100: a slot for every chunk its programs claim), so the last
claims find the buffer full and their programs keep only a prefix of their events (overflow). The observations
agree with the model: ``compare`` finds no divergence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from conformance.check.exported import INT_COLUMNS, ExportedColumns, ExportedTrace
from conformance.check.model import Addr, Event, Model
from conformance.check.observation import ApiObservation, HostCounters, RankObservation
from iris.tracing.events import DURATION_INSTANT, DURATION_OPEN, EVENT_IDS, FIELD_INDEX, TRACE_FIELDS, event_name
from iris.tracing.records import TraceRecords

APIS = ("triton", "gluon")
BACKEND = "cuda"
HEAP_BYTES = 1 << 30
CU_LIMIT = 132  # SMs of one H200
TICKS_PER_SECOND = 1e9
# The buffers every rank allocates per API, each API's at its own offsets: name -> element bytes.
BUFFERS = {"src": 4, "dst": 8, "flags": 4}
NAMES = ("load", "store", "get", "put", "atomic_add", "compute", "wait", "user")
KINDS = ("range", "instant", "unfinished")


@dataclass
class Example:
    """What ``compare`` takes for one example, and the settings the ranks enabled tracing with."""

    model: Model
    observations: list[RankObservation]
    heap_bytes: int
    chunk: int
    max_events: int


def heap_bases(ranks: int) -> list[int]:
    """Where every rank's heap is mapped (the same on every rank here)."""
    return [(1 << 40) + r * 2 * HEAP_BYTES for r in range(ranks)]


def layouts(elements: int) -> dict[str, dict[str, tuple[int, int, int]]]:
    """Each API's buffer layout: ``{buffer: (heap offset, element bytes, elements)}``, one API's after the other's."""
    out, offset = {}, 0
    for api in APIS:
        out[api] = {}
        for name, elem in BUFFERS.items():
            out[api][name] = (offset, elem, elements)
            offset += elem * elements
    return out


def per_program(events: int, ranks: int, programs: int) -> np.ndarray:
    """Events of every program of every rank (``[ranks, programs]``): ``events`` shared out, the first ones one more."""
    share, extra = divmod(events, ranks * programs)
    return (share + (np.arange(ranks * programs) < extra)).reshape(ranks, programs)


def build(events: int, ranks: int, programs: int, chunk: int, capacity: int = 100, seed: int = 0,
          elements: int = 1 << 16) -> Example:
    """The example of ``events`` model events (see the module's docstring), over buffers of ``elements`` elements
    (one of them, ``dst``, compared as final memory)."""
    rng = np.random.default_rng(seed)
    counts = per_program(events, ranks, programs)
    lay = layouts(elements)
    claims = -(-counts // chunk)  # chunks each program claims when every claim finds room
    fits = int(claims.sum(axis=1).max()) * chunk  # every chunk, holes included
    max_events = fits if capacity >= 100 else max(1, int(counts.sum(axis=1).min()) * capacity // 100)
    bases = heap_bases(ranks)
    model = Model({}, max_events=max_events if capacity < 100 else None)
    observations = []
    for r in range(ranks):
        logical = _logical(r, ranks, counts[r], elements, rng)
        model.events[r] = _model_events(logical)
        memory = {"dst": rng.integers(0, 1 << 20, elements).tolist()}
        model.memory[r] = memory
        obs = RankObservation(rank=r, heap_bases=bases, cu_limit=CU_LIMIT, backend=BACKEND,
                              ticks_per_second=TICKS_PER_SECOND)
        for api in APIS:
            final = {name: np.array(values).tolist() for name, values in memory.items()}  # read back: new lists
            obs.apis[api] = _observed(r, logical, counts[r], chunk, max_events, lay[api], bases, rng, final)
        observations.append(obs)
    return Example(model, observations, HEAP_BYTES, chunk, max_events)


def _logical(rank: int, ranks: int, counts: np.ndarray, elements: int, rng: np.random.Generator
             ) -> dict[str, np.ndarray]:
    """The logical fields of one rank's events, program after program (``buffer``: an index into ``BUFFERS``, -1 for
    a masked call, which records no address)."""
    n = int(counts.sum())
    pid = np.repeat(np.arange(len(counts)), counts)
    buffers = list(BUFFERS)
    buffer = rng.integers(0, len(buffers), n)
    elem = np.array([BUFFERS[b] for b in buffers])[buffer]
    masked = rng.random(n) < 0.05
    active = np.where(masked, 0, rng.integers(1, 129, n))
    draw = rng.random(n)
    return {
        "name": rng.integers(0, len(NAMES), n),
        "kind": np.where(draw < 0.9, 0, np.where(draw < 0.995, 1, 2)),  # index into KINDS
        "pid": pid, "pid_m": pid // 32, "pid_n": pid % 32, "cur_rank": np.full(n, rank),
        "target_rank": rng.integers(0, ranks, n),
        "buffer": np.where(masked, -1, buffer),
        "index": rng.integers(0, elements, n),
        "payload_size": active * elem,
        "payload": rng.integers(0, 1 << 31, n),
    }


def _model_events(lg: dict[str, np.ndarray]) -> list[Event]:
    buffers = list(BUFFERS)
    where = zip(lg["target_rank"].tolist(), lg["buffer"].tolist(), lg["index"].tolist(), strict=True)
    addresses = [None if b < 0 else Addr(t, buffers[b], i) for t, b, i in where]
    return [Event(NAMES[a], KINDS[k], p, pm, pn, cr, tr, ad, ps, pl)
            for a, k, p, pm, pn, cr, tr, ad, ps, pl in zip(
                lg["name"].tolist(), lg["kind"].tolist(), lg["pid"].tolist(), lg["pid_m"].tolist(),
                lg["pid_n"].tolist(), lg["cur_rank"].tolist(), lg["target_rank"].tolist(), addresses,
                lg["payload_size"].tolist(), lg["payload"].tolist(), strict=True)]


def _slots(counts: np.ndarray, chunk: int, max_events: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """The slot of every event (program after program; -1 where it was dropped) and the slots claimed: programs
    claim their chunks in an interleaved order, each its own in order, until the buffer is full (the last chunk ends
    at ``max_events``)."""
    claims = -(-counts // chunk)
    program = np.repeat(np.arange(len(counts)), claims)
    nth = np.arange(len(program)) - np.repeat(np.cumsum(claims) - claims, claims)  # a program's k-th chunk
    order = np.argsort(nth + rng.random(len(program)), kind="stable")  # a program's chunks stay in order
    position = np.empty(len(program), dtype=np.int64)
    position[order] = np.arange(len(program))
    granted = position * chunk < max_events
    k = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)  # event k of its program
    claim = np.repeat(np.cumsum(claims) - claims, counts) + k // chunk
    slot = position[claim] * chunk + k % chunk
    slot[~granted[claim] | (slot >= max_events)] = -1
    return slot, int(granted.sum()) * chunk


def _observed(rank: int, lg: dict[str, np.ndarray], counts: np.ndarray, chunk: int, max_events: int,
              layout: dict[str, tuple[int, int, int]], bases: list[int], rng: np.random.Generator,
              memory: dict[str, list]) -> ApiObservation:
    """One API's observation of the events ``lg`` on ``rank``: the records in slot order, the counters, the exported
    trace and the final memory."""
    slot, claimed = _slots(counts, chunk, max_events, rng)
    kept = np.nonzero(slot >= 0)[0]
    kept = kept[np.argsort(slot[kept])]
    n = len(kept)
    offsets = np.array([layout[b][0] for b in BUFFERS])
    elem = np.array(list(BUFFERS.values()))
    buffer = lg["buffer"][kept]
    address = np.where(buffer < 0, 0, np.array(bases)[lg["target_rank"][kept]] + offsets[buffer]
                       + lg["index"][kept] * elem[buffer])
    # time: each program's events one after another from a start of its own, in a window [t0, t1]
    t0 = 1_000_000_000
    step = rng.integers(50, 500, len(slot))
    kind = lg["kind"]
    duration = np.where(kind == 0, step - rng.integers(10, 40, len(slot)),
                        np.where(kind == 1, DURATION_INSTANT.value, DURATION_OPEN.value))
    first = np.cumsum(counts) - counts
    start = np.cumsum(step) - np.repeat(np.cumsum(step)[first] - step[first], counts)
    start += np.repeat(rng.integers(0, 1000, len(counts)), counts) + t0
    t1 = int((start + np.maximum(duration, 0)).max()) + 10
    fields = np.zeros((len(TRACE_FIELDS), n), dtype=np.int64)
    ids = np.array([EVENT_IDS[name] for name in NAMES])
    values = {"event_id": ids[lg["name"][kept]], "address": address, "timestamp": start[kept],
              "duration_cycles": duration[kept], "op_index": slot[kept], "cu_id": rng.integers(0, CU_LIMIT, n),
              "xcc_id": np.zeros(n, dtype=np.int64)}
    for f in ("pid", "pid_m", "pid_n", "cur_rank", "target_rank", "payload_size", "payload"):
        values[f] = lg[f][kept]
    for f, v in values.items():
        fields[FIELD_INDEX[f]] = v
    dropped = len(slot) - n
    records = TraceRecords.from_fields(fields, dropped, max_events, rank=rank, backend=BACKEND,
                                       ticks_per_second=TICKS_PER_SECOND)
    return ApiObservation(records=records, host=HostCounters(len(slot), dropped, claimed, claimed),
                          exported=exported(records), layout=layout, window=(t0, t1), memory=memory)


def exported(records: TraceRecords) -> ExportedTrace:
    """What ``conformance.check.exported.read`` gives for the file ``tracing.export`` writes of ``records``."""
    ids, name = np.unique(records["event_id"], return_inverse=True)
    values = {"name": name, "kind": records["kind"].copy(), **{f: records[f].copy() for f in INT_COLUMNS}}
    columns = ExportedColumns(tuple(event_name(i) for i in ids.tolist()), values)
    return ExportedTrace(events=len(records), dropped=records.dropped, columns=columns)
