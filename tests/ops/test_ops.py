"""Every DeviceContext / IrisDeviceCtx op on 1, 2 and 4 ranks, checked element by element."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from tests.ops import suites
from tests.worlds import WORLD_SIZES, backends, run_world

APIS = ("triton", "gluon")
_REDUCE = {
    "atomic_add": lambda a, v: a + v,
    "atomic_sub": lambda a, v: a - v,
    "atomic_xor": lambda a, v: a ^ v,
    "atomic_and": lambda a, v: a & v,
    "atomic_or": lambda a, v: a | v,
    "atomic_min": np.minimum,
    "atomic_max": np.maximum,
}


def _check(name: str, actual, expected) -> None:
    __tracebackhide__ = True
    actual, expected = np.asarray(actual), np.asarray(expected)
    bad = np.nonzero(actual != expected)[0]
    if len(bad):
        j = bad[0]
        pytest.fail(f"{name}[{j}]={actual[j]}, but should be {expected[j]} ({len(bad)} elements differ)")


@functools.cache
def _i() -> np.ndarray:
    return np.arange(suites.CAP, dtype=np.int64)


def _results(api, backend, world_size):
    return run_world(suites.ops_suite, backend, world_size, api)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("op", suites.DATA_OPS)
def test_data_op(op, backend, world_size, api):
    """Rank q ends with rank (q-1)'s source values on the first N elements and -7 on the tail."""
    res = _results(api, backend, world_size)
    i = _i()
    for q in range(world_size):
        source = (q + 1) % world_size if op in ("load", "get") else (q - 1) % world_size
        expected = np.where(i < suites.N, source * 1000 + i, -7)
        _check(f"{op} rank {q} of {world_size}: dst", res[q][op]["dst"], expected)


def _int32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.int64).astype(np.int32)


def _values(rank: int) -> np.ndarray:
    return suites.atomic_values(rank, torch.from_numpy(_i())).numpy()


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("op", suites.ATOMIC_OPS)
def test_atomic(op, backend, world_size, api):
    """Every rank applies ``op`` to every rank: final values are exact, old values are consistent."""
    res = _results(api, backend, world_size)
    i = _i()
    init = suites.atomic_init(op, torch.from_numpy(i)).numpy()
    active = i < suites.N
    for q in range(world_size):
        dst = np.asarray(res[q][op]["dst"])
        # olds[r] = what rank r's op on rank q returned
        olds = np.stack([np.asarray(res[r][op]["ret"][q]) for r in range(world_size)])
        if op in _REDUCE:
            final = init.copy()
            for r in range(world_size):
                final = _REDUCE[op](final, _values(r))
            _check(f"{op} on rank {q} of {world_size}: dst", dst, np.where(active, _int32(final), init))
            if op == "atomic_add":  # old values are distinct partial sums ending below the final value
                for j in np.nonzero(active)[0][:8]:
                    seen = sorted(olds[:, j])
                    assert seen[0] == init[j], f"atomic_add rank {q} element {j}: first old={seen[0]}, init={init[j]}"
        elif op == "atomic_xchg":
            for j in range(suites.CAP):
                if not active[j]:
                    assert dst[j] == init[j], f"xchg rank {q} tail [{j}]={dst[j]}, but should be {init[j]}"
                    continue
                got = sorted([int(dst[j]), *olds[:, j].tolist()])
                want = sorted([int(init[j]), *[int(_values(r)[j]) for r in range(world_size)]])
                assert got == want, f"xchg rank {q} element {j}: final+olds={got}, but should be {want}"
        else:  # atomic_cas: all compare against init, so exactly one rank wins each element
            for j in range(suites.CAP):
                if not active[j]:
                    assert dst[j] == init[j], f"cas rank {q} tail [{j}]={dst[j]}, but should be {init[j]}"
                    continue
                winners = [r for r in range(world_size) if olds[r, j] == init[j]]
                assert len(winners) == 1, f"cas rank {q} element {j}: winners={winners}, but should be one rank"
                expected = int(_values(winners[0])[j])
                assert dst[j] == expected, f"cas rank {q} element {j}: dst={dst[j]}, but should be {expected}"
