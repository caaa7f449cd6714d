"""``pytest -n 8`` on an 8-GPU node, simulated: where every xdist worker's ranks land, and the default world sizes.

The device count is monkeypatched (``torch.cuda.device_count``) and each worker is played by setting
``PYTEST_XDIST_WORKER``; the placement goes through the real path: ``Pools`` gives the worker's pool its device
offset, the pool hands it to its ranks as ``IRIS_DEVICE_OFFSET``, and each rank picks ``device_index``.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from conformance.kit.scenario import default_world_sizes
from iris.ranks import Pools
from iris.world import device_index

pytestmark = pytest.mark.cpu_unit

WORKERS = 8


@pytest.fixture
def gpus(monkeypatch):
    """Simulate G visible GPUs: ``gpus(G)``."""

    def simulate(count: int) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
        default_world_sizes.cache_clear()

    yield simulate
    default_world_sizes.cache_clear()


def _placement(monkeypatch, world_size: int) -> dict[int, list[int]]:
    """Worker index -> the GPU of each of its ranks, for a ``world_size``-rank gpu pool of every worker."""
    placed = {}
    for w in range(WORKERS):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{w}")
        with Pools() as pools:
            pool = pools.get(world_size, "gpu")  # made, not started: no process is spawned here
            assert not pool.started, "Pools.get started the ranks"
            monkeypatch.setenv("IRIS_DEVICE_OFFSET", str(pool.device_offset))
            placed[w] = [device_index(r, torch.cuda.device_count()) for r in range(world_size)]
    return placed


@pytest.mark.parametrize("world_size", [1, 2, 4, 8])
def test_8_workers_on_8_gpus_spread_every_world_evenly(monkeypatch, gpus, world_size):
    gpus(8)
    placed = _placement(monkeypatch, world_size)
    for w, devices in placed.items():
        assert len(set(devices)) == world_size, f"worker {w}: ranks share a GPU: {devices}"
    load = Counter(d for devices in placed.values() for d in devices)
    assert sorted(load) == list(range(8)), f"GPUs used: {sorted(load)}, but should be all 8"
    assert set(load.values()) == {world_size}, f"ranks per GPU: {dict(load)}, but should be {world_size} on each"


def test_one_rank_per_worker_gives_each_worker_its_own_gpu(monkeypatch, gpus):
    gpus(8)
    assert _placement(monkeypatch, 1) == {w: [w] for w in range(WORKERS)}


def test_worker_w_rank_r_is_on_gpu_w_r_plus_r_mod_g(monkeypatch, gpus):
    gpus(8)
    assert _placement(monkeypatch, 2) == {w: [(2 * w) % 8, (2 * w + 1) % 8] for w in range(WORKERS)}
    assert _placement(monkeypatch, 8) == {w: list(range(8)) for w in range(WORKERS)}


def test_fewer_gpus_than_ranks_wrap_around(monkeypatch, gpus):
    gpus(2)
    placed = _placement(monkeypatch, 4)
    assert all(devices == [0, 1, 0, 1] for devices in placed.values()), placed


@pytest.mark.parametrize(("count", "sizes"), [(0, (1, 2, 4)), (1, (1, 2, 4)), (4, (1, 2, 4)), (7, (1, 2, 4)),
                                              (8, (1, 2, 4, 8)), (16, (1, 2, 4, 16))])
def test_default_world_sizes_add_the_gpu_count_from_8_gpus_on(gpus, count, sizes):
    gpus(count)
    assert default_world_sizes() == sizes
