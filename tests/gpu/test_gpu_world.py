"""gpu tier, host side: heaps over GPU IPC handles opened in each rank's own device context.

On one GPU every rank shares the device; on G >= 2 GPUs the worlds of 2, G and 2G ranks put one or two ranks
on each GPU, where a peer heap opened in the wrong context faults on the first remote access (the op and
tracing jobs in tests/ops run those worlds too; this module checks placement and lifecycle).
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from tests.cpu_interpret import host_jobs as hs
from tests.cpu_unit.checks import check
from tests.worlds import run_world

pytestmark = pytest.mark.gpu

CYCLES = 20


def _gpu_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _lifecycle_worlds() -> list:
    g = max(_gpu_count(), 1)
    return sorted({2, 2 * g})


def placement_job() -> dict:
    """This rank's device, the device torch reports for every mapped peer heap, and a peer round trip."""
    import iris

    shmem = iris.iris(1 << 20)
    rank, world = shmem.get_rank(), shmem.get_num_ranks()
    mine = shmem.full((64,), rank + 1, dtype=torch.int32)
    shmem.barrier()
    seen = [int(shmem.heap.peer_tensor(r, mine.data_ptr() - shmem.heap.bases[rank], 64, torch.int32).sum())
            for r in range(world)]
    shmem.barrier()
    out = {"rank": rank, "device": shmem.device.index, "count": torch.cuda.device_count(), "seen": seen,
           "distinct_bases": len(set(shmem.heap.bases)) == world}
    dist.barrier()
    shmem.close()
    return out


@pytest.mark.parametrize("world_size", [2, 4, 8])
def test_rank_r_uses_gpu_r_mod_count_and_reads_every_peer_heap(world_size):
    for res in run_world(placement_job, "gpu", world_size):
        where = f"rank {res['rank']} of {world_size} on {res['count']} GPU(s)"
        check("device", res["device"], res["rank"] % res["count"], where)
        check("peer heap sums", res["seen"], [64 * (r + 1) for r in range(world_size)], where)
        check("distinct heap bases", res["distinct_bases"], True, where)


@pytest.mark.parametrize("world_size", _lifecycle_worlds())
def test_create_and_close_twenty_times_leaks_nothing_on_gpu(world_size):
    results = run_world(hs.lifecycle_job, "gpu", world_size, CYCLES, 1 << 20)
    for rank, res in enumerate(results):
        where = f"rank {rank} of {world_size} after {CYCLES} create/close cycles"
        for key in ("gpu_bytes_allocated", "ipc_mappings_open", "fds"):
            check(key, res["after"][key], res["before"][key], where)
        check("sums", res["sums"], [256 * (i + rank) for i in range(CYCLES)], where)

