"""conformance.compare on hand-built observations: op_index must be the slot each event was kept in."""

from __future__ import annotations

import pytest

from conformance.compare import compare
from conformance.model import Addr, Event, Model

pytestmark = pytest.mark.cpu_unit

HEAP = 1 << 20
BASE = 1 << 30


def _row(pid: int, op_index: int, timestamp: int) -> dict:
    return {"name": "store", "kind": "instant", "pid": pid, "pid_m": pid, "pid_n": 0, "cur_rank": 0,
            "target_rank": 0, "address": BASE + 4 * pid, "payload_size": 4, "payload": 7, "op_index": op_index,
            "timestamp": timestamp, "duration_cycles": -2, "cu_id": 0, "xcc_id": 0}


def _observation(op_indices: list[int]) -> dict:
    rows = [_row(pid, k, 100 + pid) for pid, k in enumerate(op_indices)]
    api = {"rows": rows, "attempted": len(rows), "capacity": 16, "layout": {"buf": (0, 4, 8)}, "memory": {},
           "window": (50, 500)}
    return {"rank": 0, "heap_bases": [BASE], "cu_limit": 1, "backend": "interpreter", "apis": {"triton": api}}


def _model(programs: int) -> Model:
    events = [Event("store", "instant", pid, pid, 0, 0, 0, Addr(0, "buf", pid), 4, 7) for pid in range(programs)]
    return Model({0: events})


def test_op_index_equal_to_the_slot_passes():
    assert compare(_model(3), [_observation([0, 1, 2])], ("triton",), HEAP) == []


def test_op_index_shifted_from_the_slot_is_a_divergence():
    (d,) = compare(_model(3), [_observation([1, 2, 3])], ("triton",), HEAP)
    assert (d.check, d.rank, d.where, d.field, d.actual, d.expected) == (
        "triton vs model", 0, "slot 0 (pid 0)", "op_index", 1, 0)


def test_op_index_duplicated_is_a_divergence():
    (d,) = compare(_model(3), [_observation([0, 1, 1])], ("triton",), HEAP)
    assert (d.where, d.field, d.actual, d.expected) == ("slot 2 (pid 2)", "op_index", 1, 2)
