"""Upstream-style code on 1, 2 and 4 ranks: upstream iris's import paths, keyword forms and tracing views.

Written from the public API's documented behaviour: ``iris.gluon.IrisDeviceCtx`` and
``iris.host.tracing.events.TraceEvent`` import; every op takes its keywords by name (``from_rank=``, ``other=``,
``cache_modifier=``, ``load_cache_modifier=``, ``store_cache_modifier=``, ``volatile=``, ``sem=``, ``scope=``,
``hint=``); ``tracing.trace_counter`` and ``tracing.trace_buffers[field]`` read the trace back. The kernels are
in upstream_kernels.py, the rank side in upstream_jobs.py; every value is checked element by element.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iris.tracing.events import DURATION_INSTANT, EMPTY_EVENT, EVENT_IDS, TRACE_FIELDS
from tests.cpu_interpret import upstream_jobs as S
from tests.worlds import WORLD_SIZES, backends, run_world

pytestmark = pytest.mark.shares_setup

APIS = ("triton", "gluon")
ATOMIC_OPS = ("atomic_add", "atomic_sub", "atomic_cas", "atomic_xchg", "atomic_xor", "atomic_and", "atomic_or",
              "atomic_min", "atomic_max")  # the rows of ``atom`` and ``old`` (upstream_kernels.ATOMIC_OPS)
OTHER = -5  # upstream_kernels.OTHER (that module is imported only by rank processes)
PROGRAMS = -(-S.N // S.BLOCK)


def _results(api, backend, world_size):
    return run_world(S.upstream_job, backend, world_size, api)


def _check(name: str, actual, expected) -> None:
    __tracebackhide__ = True
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape}, but should be {expected.shape}"
    bad = np.argwhere(actual != expected)
    if len(bad):
        j = tuple(bad[0])
        pytest.fail(f"{name}{list(j)}={actual[j]}, but should be {expected[j]} ({len(bad)} elements differ)")


def _i() -> np.ndarray:
    return np.arange(S.CAP, dtype=np.int64)


def _from(rank: int, fill: int) -> np.ndarray:
    """Rank ``rank``'s source values on the first N elements, ``fill`` after."""
    i = _i()
    return np.where(i < S.N, rank * 1000 + i, fill)


def with_cases(fn):
    """Parametrize a test over the API, the world size (1, 2, 4) and the backend (cpu; gpu where one is visible)."""
    fn = pytest.mark.parametrize("api", APIS)(fn)
    fn = pytest.mark.parametrize("world_size", WORLD_SIZES)(fn)
    return pytest.mark.parametrize("backend", backends())(fn)


@with_cases
def test_import_aliases(api, world_size, backend):
    """A cpu world's ranks have the interpreter shim installed before the caller's kernels are decorated, whichever
    import path the caller uses; the aliases name the very objects of their homes."""
    interpreted = backend == "cpu"
    for q, res in enumerate(_results(api, backend, world_size)):
        a = res["aliases"]
        assert a["shim_installed"] is interpreted, f"rank {q}: shim installed={a['shim_installed']} when the " \
                                                   f"world started, but should be {interpreted}"
        kernel_type = "InterpretedGluonFunction" if interpreted else "GluonJITFunction"
        assert a["gluon_kernel_type"] == kernel_type, f"rank {q}: @gluon.jit after the alias gave " \
                                                      f"{a['gluon_kernel_type']}, but should be {kernel_type}"
        for name in ("IrisDeviceCtx", "TraceEvent", "Tracing"):
            assert a[name] is True, f"rank {q}: the {name} alias is not the object of its home module"


@with_cases
def test_data_ops_with_keywords(api, world_size, backend):
    """load/store/get/put/copy with other, cache modifiers, volatile and hint by keyword move exactly the active
    lanes; `other` shows only where a load's result is stored unmasked (load), never in memory (get/put/copy)."""
    results = _results(api, backend, world_size)
    for q, res in enumerate(results):
        nxt, prev = (q + 1) % world_size, (q - 1) % world_size
        b = res["buffers"]
        _check(f"rank {q} of {world_size}: loaded", b["loaded"], _from(nxt, OTHER))
        _check(f"rank {q} of {world_size}: stored", b["stored"], _from(prev, S.SENTINEL))
        _check(f"rank {q} of {world_size}: got", b["got"], _from(nxt, S.SENTINEL))
        _check(f"rank {q} of {world_size}: putted", b["putted"], _from(prev, S.SENTINEL))
        _check(f"rank {q} of {world_size}: copied", b["copied"], _from(nxt, S.SENTINEL))


_APPLY = {
    "atomic_add": lambda a, v: a + v,
    "atomic_sub": lambda a, v: a - v,
    "atomic_cas": lambda a, v: v,  # compare values are the initial values: every active lane swaps
    "atomic_xchg": lambda a, v: v,
    "atomic_xor": lambda a, v: a ^ v,
    "atomic_and": lambda a, v: a & v,
    "atomic_or": lambda a, v: a | v,
    "atomic_min": np.minimum,
    "atomic_max": np.maximum,
}


def _atom_init(row: int) -> np.ndarray:
    return S.atom_init(row, torch.from_numpy(_i())).numpy()


@with_cases
def test_atomics_with_keywords(api, world_size, backend):
    """Each rank applies all nine atomics (sem, scope, hint by keyword) to its next rank's rows: one writer per
    row, so final values and returned old values are exact."""
    results = _results(api, backend, world_size)
    active = _i() < S.N
    for q, res in enumerate(results):
        prev = (q - 1) % world_size
        v = S.atomic_values(prev, torch.from_numpy(_i())).numpy()
        for row, op in enumerate(ATOMIC_OPS):
            init = _atom_init(row)
            expected = np.where(active, _APPLY[op](init, v), init).astype(np.int64).astype(np.int32)
            _check(f"rank {q} of {world_size}: {op} result", res["atom"][row], expected)
            _check(f"rank {q} of {world_size}: {op} old values", res["old"][row], np.where(active, init, S.SENTINEL))


@with_cases
def test_scalar_atomic_cas_with_hint(api, world_size, backend):
    """Every rank claims rank 0's scalar flag with atomic_cas(..., hint=4): exactly one wins, the others see it."""
    results = _results(api, backend, world_size)
    flag = results[0]["flag"][0]
    assert 1 <= flag <= world_size, f"flag on rank 0 = {flag}, but should be a claiming rank + 1"
    seen = [res["won"][0] for res in results]
    expected = [0 if q == flag - 1 else flag for q in range(world_size)]
    assert seen == expected, f"values each rank's atomic_cas returned = {seen}, but should be {expected}"
    for q, res in enumerate(results[1:], start=1):
        assert res["flag"] == [0], f"flag on rank {q} = {res['flag']}, but should be [0] (only rank 0's is claimed)"


@with_cases
def test_trace_counter_and_trace_buffers(api, world_size, backend):
    """Per program, a `get` range and a `put` instant; read through trace_counter / trace_buffers[field]."""
    for q, res in enumerate(_results(api, backend, world_size)):
        where = f"rank {q} of {world_size}"
        events = 2 * PROGRAMS
        claimed = PROGRAMS * max(res["chunk"], 2)  # v2: a chunk per program; both events fit in the first
        assert res["counter"] == {"shape": [1], "dtype": "torch.int64", "value": claimed}, \
            f"{where}: trace_counter={res['counter']}, but should be an int64 tensor of shape [1] holding {claimed} " \
            "(the slots claimed, a chunk per program)"
        assert res["attempted"] == events, f"{where}: attempted={res['attempted']}, but should be {events}"
        assert res["counter_after_reset"] == 0, f"{where}: trace_counter after reset() = {res['counter_after_reset']}"
        assert res["trace_lengths"] == [64], f"{where}: trace_buffers lengths {res['trace_lengths']}, but should be " \
                                             "[64] (max_events)"
        trace = res["trace"]
        assert list(trace) == list(TRACE_FIELDS), f"{where}: trace_buffers keys {list(trace)}"
        slots = [s for s in range(len(trace["event_id"])) if trace["event_id"][s] != EMPTY_EVENT.value]  # not holes
        assert len(slots) == events, f"{where}: {len(slots)} slots hold events, but should be {events}"
        assert [trace["op_index"][s] for s in slots] == slots, f"{where}: op_index {trace['op_index']} (the slots)"
        by_pid = {}
        for s in slots:
            by_pid.setdefault(trace["pid"][s], []).append(s)
        assert sorted(by_pid) == list(range(PROGRAMS)), f"{where}: programs {sorted(by_pid)}"
        for pid, (get_slot, put_slot) in sorted(by_pid.items()):
            active = min(S.BLOCK, S.N - pid * S.BLOCK)
            offset = 4 * pid * S.BLOCK
            expected = {
                get_slot: {"event_id": EVENT_IDS["get"], "address": res["addresses"]["src"] + offset, "payload": 0},
                put_slot: {"event_id": EVENT_IDS["put"], "address": res["addresses"]["putted"] + offset,
                           "payload": 7, "duration_cycles": DURATION_INSTANT.value},
            }
            for slot, fields in expected.items():
                fields |= {"pid": pid, "pid_m": pid, "pid_n": 0, "cur_rank": q, "target_rank": (q + 1) % world_size,
                           "payload_size": 4 * active}
                for field, value in fields.items():
                    assert trace[field][slot] == value, f"{where}, pid {pid}: trace_buffers[{field!r}][{slot}]=" \
                                                        f"{trace[field][slot]}, but should be {value}"
            assert trace["duration_cycles"][get_slot] >= 0, \
                f"{where}, pid {pid}: the get range's duration_cycles={trace['duration_cycles'][get_slot]} (< 0)"
