"""Rank-side job of the auto-tracing tests: every op of ``op_kernel`` with ``TRACE_OPS`` on, then off at run time."""

from __future__ import annotations

import torch
import triton

from iris.tracing.export import device_clock
from iris.tracing.hw import XCC_ID_LIMIT, cu_id_limit
from tests.ops.op_jobs import ATOMIC_OPS, DATA_OPS, NUM_WARPS, host, kernels, world_constexprs

BLOCK = 32
N = 3 * BLOCK - 5  # three programs, the last one with five lanes masked off
LENGTH = 3 * BLOCK  # buffer elements: atomic_cas takes no mask, so every lane of the last block is in bounds
MAX_EVENTS = 64


def peers(rank: int, world: int) -> tuple[int, int]:
    """``peer`` and ``peer2`` of ``op_kernel`` on ``rank``: the next rank and the one after it."""
    return (rank + 1) % world, (rank + 2) % world


def auto_trace_job(api: str) -> dict:
    """Each op once with auto-tracing on (events, buffer addresses, launch window); then tracing switched off at run
    time (nothing recorded, no trace memory touched)."""
    k = kernels(api)
    shmem = host(api)
    r, w = shmem.get_rank(), shmem.get_num_ranks()
    ctx = shmem.get_device_context()
    wc = world_constexprs(api, r, w)
    peer, peer2 = peers(r, w)
    src = shmem.zeros(LENGTH, dtype=torch.int32)
    dst = shmem.zeros(LENGTH, dtype=torch.int32)
    ret = shmem.zeros(LENGTH, dtype=torch.int32)
    out = {"rank": r, "src": src.data_ptr(), "dst": dst.data_ptr(), "peer": peer, "peer2": peer2,
           "cu_limit": cu_id_limit(shmem.tracing.backend, shmem.device),
           "xcc_limit": XCC_ID_LIMIT[shmem.tracing.backend], "ops": {}}

    def launch(op: str, trace_ops: bool) -> None:
        k.op_kernel[(triton.cdiv(N, BLOCK),)](ctx, src, dst, ret, N, peer, peer2, **wc, OP=op, BLOCK=BLOCK,
                                               TRACE_OPS=trace_ops, num_warps=NUM_WARPS)

    for op in DATA_OPS + ATOMIC_OPS:
        shmem.tracing.enable(MAX_EVENTS, 1)
        shmem.barrier()
        t0 = device_clock(shmem.device)
        launch(op, True)
        shmem.barrier()
        t1 = device_clock(shmem.device)
        ev = shmem.tracing.events()
        out["ops"][op] = {"rows": ev.rows(), "attempted": ev.attempted, "t0": t0, "t1": t1}

    # Compiled on, switched off at run time: nothing recorded, trace buffers untouched.
    shmem.tracing.enable(MAX_EVENTS, 1)
    shmem.tracing.disable()
    t = shmem.tracing
    before = [x.clone() for x in (t._counters, t._records, t._cursors)]
    launch("atomic_add", True)
    shmem.barrier()
    out["runtime_off_changed"] = [name for name, b, a in zip(("counters", "records", "cursors"), before,
                                                             (t._counters, t._records, t._cursors), strict=True)
                                  if not torch.equal(b, a)]
    return out
