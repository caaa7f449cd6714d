"""The examples run on 2-rank worlds (CPU interpreter and GPU) and do what their docstrings say."""

import json

import pytest

from examples import message_passing_gluon, message_passing_triton, trace_store_gluon, trace_store_triton
from tests.trace_readers import PerfettoTrace, perfetto_pb2, read_json
from tests.worlds import backends, run_world

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
