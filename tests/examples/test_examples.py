"""The examples run on 2-rank worlds (CPU interpreter and GPU) and do what their docstrings say."""

import json

import pytest

from examples import message_passing_gluon, message_passing_triton, trace_store_gluon, trace_store_triton
from tests.worlds import backends, run_world

STORE = [trace_store_triton.main, trace_store_gluon.main]
MESSAGES = [message_passing_triton.main, message_passing_gluon.main]


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("main", STORE, ids=["triton", "gluon"])
def test_trace_store_example(main, backend, tmp_path):
    out = tmp_path / "trace.json"
    results = run_world(main, backend, 2, str(out), 1000)
    for q, r in enumerate(results):
        assert r == {"rank": q, "events": 4, "received_ok": True}, f"rank {q}: result={r}"
    trace = json.loads(out.read_text())
    ranges = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert sorted((e["pid"], e["tid"]) for e in ranges) == [(r, p) for r in range(2) for p in range(4)]
    assert {e["name"] for e in ranges} == {"store"}, {e["name"] for e in ranges}
    assert {e["args"]["target_rank"] for e in ranges if e["pid"] == 0} == {1}


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("main", MESSAGES, ids=["triton", "gluon"])
def test_message_passing_example(main, backend, tmp_path):
    out = tmp_path / "trace.json"
    results = run_world(main, backend, 2, str(out), 100)
    for q, r in enumerate(results):
        assert r == {"rank": q, "events": ["put", "wait", "load"], "received_ok": True}, f"rank {q}: result={r}"
    names = [e["name"] for e in json.loads(out.read_text())["traceEvents"] if e.get("ph") in ("X", "i")]
    assert sorted(names) == sorted(["put", "wait", "load"] * 2), names
