"""The examples run on 2-rank worlds (CPU interpreter and GPU) and do what their docstrings say."""

import json
import struct

import pytest

from examples import (
    all_gather_gluon,
    all_gather_triton,
    fused_gather_compute_gluon,
    fused_gather_compute_triton,
    message_passing_gluon,
    message_passing_triton,
    timeline_png,
    trace_store_gluon,
    trace_store_triton,
)
from iris.ranks import launch
from tests.trace_readers import PerfettoTrace, perfetto_pb2, read_json
from tests.worlds import ENV, TIMEOUT_S, backends, run_world

STORE = [trace_store_triton.main, trace_store_gluon.main]
MESSAGES = [message_passing_triton.main, message_passing_gluon.main]


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("auto", [False, True], ids=["bracketed", "auto-traced"])
@pytest.mark.parametrize("main", STORE, ids=["triton", "gluon"])
def test_trace_store_example(main, auto, backend, tmp_path):
    """The bracketed store and the auto-traced one (trace_ops=True, no brackets) export the same slices."""
    out = tmp_path / "trace.json"
    results = run_world(main, backend, 2, str(out), 1000, auto)
    for q, r in enumerate(results):
        assert r == {"rank": q, "events": 4, "received_ok": True}, f"rank {q}: result={r}"
    trace = json.loads(out.read_text())
    api = "triton" if main is trace_store_triton.main else "gluon"
    slices = [s for s in read_json(trace) if s.track.startswith("program")]
    got = sorted((s.process, s.track) for s in slices)
    assert got == [(f"{api} rank {r}", f"program {p}") for r in range(2) for p in range(4)], got
    assert {s.name for s in slices} == {"store"}, {s.name for s in slices}
    assert {s.args["target_rank"] for s in slices if s.process == f"{api} rank 0"} == {1}


def _message_slices(path) -> list:
    if path.suffix == ".json":
        return read_json(json.loads(path.read_text()))
    return PerfettoTrace(path.read_bytes()).slices


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("auto", [False, True], ids=["bracketed", "auto-traced"])
@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
@pytest.mark.parametrize("main", MESSAGES, ids=["triton", "gluon"])
def test_message_passing_example(main, suffix, auto, backend, tmp_path):
    """Each rank's put and flag release point at the next rank's incoming track, at their own times; the auto-traced
    variant (every op records itself, no brackets) draws the same arrows."""
    if suffix == ".pftrace":
        perfetto_pb2()
    out = tmp_path / f"trace{suffix}"
    results = run_world(main, backend, 2, str(out), 100, auto)
    events = ["put", "atomic_xchg"] if auto else ["put", "atomic_xchg", "wait", "load"]
    for q, r in enumerate(results):
        assert r == {"rank": q, "events": events, "received_ok": True}, f"rank {q}: result={r}"
    api = "triton" if main is message_passing_triton.main else "gluon"
    slices = _message_slices(out)
    by_flow = {}
    for s in slices:
        for side in ("flow_out", "flow_in"):
            if getattr(s, side) is not None:
                by_flow.setdefault(getattr(s, side), {})[side] = s
    arrows = sorted((v["flow_out"].process, v["flow_out"].track, v["flow_out"].name, v["flow_in"].process,
                     v["flow_in"].track, v["flow_in"].name) for v in by_flow.values())
    expected = sorted((f"{api} rank {r}", "program 0", op, f"{api} rank {1 - r}", "incoming",
                       f"{op} from rank {r}") for r in (0, 1) for op in ("put", "atomic_xchg"))
    assert arrows == expected, f"arrows={arrows}, but should be {expected}"
    for v in by_flow.values():
        src, dst = v["flow_out"], v["flow_in"]
        assert (dst.start_ns, dst.dur_ns) == (src.start_ns, src.dur_ns), f"{dst} should span {src}"
    names = sorted(s.name for s in slices if s.track == "program 0")
    assert names == sorted(events * 2), names


GATHER = [all_gather_triton.main, all_gather_gluon.main]
FUSED = [fused_gather_compute_triton.main, fused_gather_compute_gluon.main]
M, N, RANKS = 40, 24, 2  # tiles of 16 x 16: 3 x 2, the last row of tiles 8 high and the last column 8 wide
TILE_BYTES = [4 * rows * cols for rows in (16, 16, 8) for cols in (16, 8)]  # by tile id, row-major


def _peers(rank: int) -> list[int]:
    """Every rank, in the examples' order: rank + 1, rank + 2, ..., the own rank last."""
    return [(rank + 1 + i) % RANKS for i in range(RANKS)]


def _inner(slices: list) -> list[tuple]:
    """(slice, the innermost slice of its track that holds it, or None) in start order: the nesting a viewer shows."""
    ordered = sorted(slices, key=lambda s: (s.process, s.track, s.start_ns, -s.dur_ns))
    out, open_ = [], []
    for s in ordered:
        while open_ and (open_[-1].process, open_[-1].track) != (s.process, s.track) or \
                open_ and open_[-1].start_ns + open_[-1].dur_ns <= s.start_ns:
            open_.pop()
        if open_:
            assert s.start_ns + s.dur_ns <= open_[-1].start_ns + open_[-1].dur_ns, f"{s} overlaps {open_[-1]}"
        out.append((s, open_[-1] if open_ else None))
        open_.append(s)
    return out


def _is_incoming(track: str) -> bool:
    return track == "incoming" or track.startswith("incoming #")


def _check_tracks(api: str, slices: list, programs: int) -> dict[str, int]:
    """Each rank's tracks are its programs' and its incoming lanes: "incoming", then, where arrivals overlap in time
    (programs running at once on a GPU), "incoming #2" .. "incoming #k", with no overlap on a lane. Returns each
    process's number of incoming lanes."""
    tracks = {}
    for s in slices:
        tracks.setdefault(s.process, set()).add(s.track)
    assert sorted(tracks) == [f"{api} rank {r}" for r in range(RANKS)], sorted(tracks)
    lanes = {}
    for process, names in tracks.items():
        incoming = {t for t in names if _is_incoming(t)}
        assert names - incoming == {f"program {p}" for p in range(programs)}, f"{process}: {names}"
        assert incoming == {"incoming", *(f"incoming #{k}" for k in range(2, len(incoming) + 1))}, incoming
        for lane in incoming:
            spans = sorted((s.start_ns, s.start_ns + s.dur_ns) for s in slices if (s.process, s.track) ==
                           (process, lane))
            overlaps = [(a, b) for a, b in zip(spans, spans[1:], strict=False) if b[0] < a[1]]
            assert not overlaps, f"{process} {lane}: overlapping slices {overlaps}"
        lanes[process] = len(incoming)
    return lanes


def _check_arrows(api: str, slices: list, remote_ops: tuple[str, ...], per_rank: int) -> None:
    """Every op of ``remote_ops`` to another rank, and nothing else, has an arrow to that rank's incoming slice of
    the same span, which names the op, its rank, program and op_index."""
    by_flow = {}
    for s in slices:
        for side in ("flow_out", "flow_in"):
            if getattr(s, side) is not None:
                by_flow.setdefault(getattr(s, side), {})[side] = s
    remote = [s for s in slices if s.track.startswith("program") and s.name in remote_ops
              and s.args["target_rank"] != int(s.process.split()[-1])]
    assert sorted(id(v["flow_out"]) for v in by_flow.values()) == sorted(map(id, remote)), "arrows != remote ops"
    for r in range(RANKS):
        assert sum(s.process == f"{api} rank {r}" for s in remote) == per_rank, f"rank {r}: {remote}"
    for v in by_flow.values():
        src, dst = v["flow_out"], v["flow_in"]
        rank = int(src.process.split()[-1])
        assert _is_incoming(dst.track), f"arrow from {src} ends on {dst.track}"
        got = (dst.process, dst.name, dst.start_ns, dst.dur_ns, dst.args["from_rank"],
               dst.args["from_program"], dst.args["op_index"], dst.args["address"], dst.args["payload_size"])
        assert got == (f"{api} rank {src.args['target_rank']}", f"{src.name} from rank {rank}",
                       src.start_ns, src.dur_ns, rank, int(src.track.split()[-1]), src.args["op_index"],
                       src.args["address"], src.args["payload_size"]), f"arrow from {src}: {got}"


def _gather_events(ranks: int) -> dict:
    return {"store": 6 * ranks}


def _fused_events(ranks: int) -> dict:
    return {"atomic_xchg": 6 * ranks, "compute": 6 * ranks, "fetch": 6, "load": 6 * ranks, "reduce": 6,
            "store": 6 * (ranks + 1), "wait": 6 * ranks}


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("main", GATHER, ids=["triton", "gluon"])
def test_all_gather_example(main, backend, tmp_path):
    """Each of the 2 programs stores its 3 tiles (masked at the edges) to every rank, peers from rank + 1 on, the own
    rank last; every store to the other rank has its arrow."""
    out = tmp_path / "trace.json"
    results = run_world(main, backend, RANKS, str(out), M, N, 2)
    for q, r in enumerate(results):
        assert r == {"rank": q, "events": _gather_events(RANKS), "gathered_ok": True}, f"rank {q}: result={r}"
    api = "triton" if main is all_gather_triton.main else "gluon"
    slices = read_json(json.loads(out.read_text()))
    for r in range(RANKS):
        for p in range(2):
            got = [(s.name, s.args["target_rank"], s.args["payload_size"], parent)
                   for s, parent in _inner([s for s in slices if (s.process, s.track) == (f"{api} rank {r}",
                                                                                    f"program {p}")])]
            expected = [("store", peer, TILE_BYTES[tile], None) for tile in (p, p + 2, p + 4) for peer in _peers(r)]
            assert got == expected, f"rank {r} program {p}: {got}"
    _check_tracks(api, slices, 2)
    _check_arrows(api, slices, ("store",), 6 * (RANKS - 1))


def _phases(rank: int, tile_bytes: int) -> list[tuple]:
    """A fused program's slices in start order: (name, target rank, payload, payload_size, the name of the range
    holding it)."""
    fetch = [s for peer in _peers(rank) for s in (("store", peer, 0, tile_bytes, "fetch"),
                                                  ("atomic_xchg", peer, 0, 4, "fetch"))]
    reduce = [s for q in _peers(rank) for s in (("wait", rank, q, 4, "reduce"),
                                                ("compute", rank, q, tile_bytes, "reduce"),
                                                ("load", rank, 0, tile_bytes, "compute"))]
    return [("fetch", rank, 0, tile_bytes, None), *fetch, ("reduce", rank, 0, tile_bytes, None), *reduce,
            ("store", rank, 0, tile_bytes, "reduce")]


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
@pytest.mark.parametrize("main", FUSED, ids=["triton", "gluon"])
def test_fused_gather_compute_example(main, suffix, backend, tmp_path):
    """One program a tile: a fetch range holding the stores and flag releases to every rank, then a reduce range
    holding, per rank, a wait and a compute around its load; arrows from every store and release to the other rank.
    The picture of the JSON export has a row per track."""
    if suffix == ".pftrace":
        perfetto_pb2()
    out = tmp_path / f"trace{suffix}"
    results = run_world(main, backend, RANKS, str(out), M, N)
    for q, r in enumerate(results):
        assert r == {"rank": q, "events": _fused_events(RANKS), "gathered_ok": True, "result_ok": True,
                     "flags_ok": True}, f"rank {q}: result={r}"
    api = "triton" if main is fused_gather_compute_triton.main else "gluon"
    slices = _message_slices(out)
    for r in range(RANKS):
        for tile in range(6):  # the grid is (3, 2): program pid_m + 3 pid_n
            mine = [s for s in slices if (s.process, s.track) == (f"{api} rank {r}", f"program {tile}")]
            got = [(s.name, s.args["target_rank"], s.args["payload"], s.args["payload_size"], parent and parent.name)
                   for s, parent in _inner(mine)]
            pid_m, pid_n = tile % 3, tile // 3
            assert got == _phases(r, TILE_BYTES[2 * pid_m + pid_n]), f"rank {r} program {tile}: {got}"
            assert {(s.args["pid_m"], s.args["pid_n"]) for s in mine} == {(pid_m, pid_n)}, f"program {tile}"
    lanes = _check_tracks(api, slices, 6)
    _check_arrows(api, slices, ("store", "atomic_xchg"), 12 * (RANKS - 1))
    if suffix == ".json":
        picture = timeline_png.main([str(out), "--width", "640"])
        trace = timeline_png.parse(json.loads(out.read_text()))
        assert [len(p.tracks) for p in trace.processes.values()] == [6 + lanes[f"{api} rank {r}"] for r in range(RANKS)]
        drawing = timeline_png.layout(trace, 640)
        assert [r.label for r in drawing.rows if r.band] == [f"{api} rank {r}" for r in range(RANKS)]
        assert struct.unpack(">II", picture.read_bytes()[16:24]) == (640, drawing.height)


# The widest world each backend runs the collective examples on: 8 ranks on a GPU; 4 on the CPU interpreter, where
# every rank is a process on the same cores (8 took 4 to 11 s each), and 4 shows what 8 does past 2 ranks: several
# peers, each rank's peers from rank + 1 on wrapping past the last rank, and events and arrows growing with the world.
WIDE = {"cpu": 4, "gpu": 8}


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("main", [*GATHER, *FUSED], ids=["all_gather-triton", "all_gather-gluon",
                                                         "fused-triton", "fused-gluon"])
def test_collective_examples_on_a_wide_world(main, backend, tmp_path):
    """``WIDE`` ranks (8 on one GPU, 4 CPU ranks): every rank's checks pass, its events are counted by name, and every
    op to another rank (6 tiles, R - 1 peers; the fused kernel's store and flag release) has its arrow."""
    ranks = WIDE[backend]
    out = tmp_path / "trace.json"
    results = launch(main, ranks, str(out), M, N, timeout=TIMEOUT_S, env=ENV[backend])
    gather = main in GATHER
    for q, r in enumerate(results):
        checks = {"gathered_ok": True} if gather else {"gathered_ok": True, "result_ok": True, "flags_ok": True}
        assert r == {"rank": q, "events": _gather_events(ranks) if gather else _fused_events(ranks), **checks}, \
            f"rank {q}: result={r}"
    arrows = sum(e["ph"] == "s" for e in json.loads(out.read_text())["traceEvents"])
    assert arrows == ranks * 6 * (ranks - 1) * (1 if gather else 2), arrows
