"""Auto-tracing (``initialize(..., tracing=True, trace_ops=True)``): every op records what ``iris.op_trace`` says,
field by field, in both APIs, on 1, 2 and 4 ranks; switched off at run time it records nothing."""

from __future__ import annotations

import pytest

from iris.op_trace import OP_EVENTS
from iris.tracing.events import EVENT_IDS
from tests.ops import auto_jobs as aj
from tests.ops.op_jobs import ATOMIC_OPS, DATA_OPS
from tests.worlds import WORLD_SIZES, backends, run_world

pytestmark = pytest.mark.shares_setup

APIS = ("triton", "gluon")
PROGRAMS = -(-aj.N // aj.BLOCK)


def _world(api, backend, world_size):
    return run_world(aj.auto_trace_job, backend, world_size, api)


def _expected(op: str, res: dict) -> list[dict]:
    """The events ``op_kernel`` must record for ``op`` on this rank, per program in program order (iris.op_trace):
    ``from_rank``/``to_rank`` are ``peer`` (copy: ``peer``, then ``peer2``), pointers ``src``/``dst`` + the block."""
    ranks = {"from_rank": res["peer"], "to_rank": res["peer2"] if op == "copy" else res["peer"]}
    pointers = {"pointer": res["src"] if op == "load" else res["dst"], "from_ptr": res["src"], "to_ptr": res["dst"],
                "src_ptr": res["src"], "dst_ptr": res["dst"]}
    out = []
    for pid in range(PROGRAMS):
        active = aj.BLOCK if op == "atomic_cas" else min(aj.BLOCK, aj.N - pid * aj.BLOCK)
        for e in OP_EVENTS[op]:
            out.append({"name": op, "event_id": EVENT_IDS[op], "kind": "range", "pid": pid, "pid_m": pid, "pid_n": 0,
                        "cur_rank": res["rank"], "target_rank": ranks[e.peer],
                        "address": pointers[e.address] + 4 * aj.BLOCK * pid, "payload_size": 4 * active,
                        "payload": 0})
    return out


@pytest.mark.parametrize("op", DATA_OPS + ATOMIC_OPS)
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("backend", backends())
def test_each_op_records_its_table_events(backend, world_size, api, op):
    for res in _world(api, backend, world_size):
        where = f"{api} {op} rank {res['rank']} of {world_size}"
        got = res["ops"][op]
        rows = sorted(got["rows"], key=lambda row: (row["pid"], row["op_index"]))
        want = _expected(op, res)
        assert got["attempted"] == len(want), f"{where}: attempted={got['attempted']}, but should be {len(want)}"
        assert len(rows) == len(want), f"{where}: {len(rows)} events, but should be {len(want)}"
        for k, (row, exp) in enumerate(zip(rows, want, strict=True)):
            for field, value in exp.items():
                assert row[field] == value, f"{where} event {k}: {field}={row[field]!r}, but should be {value!r}"
            assert got["t0"] <= row["timestamp"] <= got["t1"], f"{where} event {k}: timestamp outside the launch"
            assert 0 <= row["duration_cycles"] <= got["t1"] - row["timestamp"], f"{where} event {k}: duration"
            assert 0 <= row["cu_id"] < res["cu_limit"] and 0 <= row["xcc_id"] < res["xcc_limit"], f"{where} {k}"


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("backend", backends())
def test_auto_tracing_compiled_on_but_switched_off_touches_no_trace_memory(backend, api):
    for res in _world(api, backend, 2):
        assert res["runtime_off_changed"] == [], f"{api} rank {res['rank']}: {res['runtime_off_changed']} changed"
