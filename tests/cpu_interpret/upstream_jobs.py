"""Rank-side job of ``test_upstream_style.py``: upstream-style host and kernel code on one rank of a world.

``upstream_job(api)`` runs on every rank and returns plain data: what the import aliases resolved to, the
buffers after ``*_all_ops`` and ``*_flag_cas`` (tests/cpu_interpret/upstream_kernels.py), and the trace read
back through the upstream-compatible views ``tracing.trace_counter`` and ``tracing.trace_buffers``.
"""

from __future__ import annotations

import torch
import triton

N = 100  # elements the ops touch; buffers hold CAP, so masked-off lanes are checked too
CAP = 128
BLOCK = 32
SENTINEL = -7  # every destination before the launch


def atom_init(row: int, i: torch.Tensor) -> torch.Tensor:
    """Initial values of row ``row`` of ``atom`` (one row per atomic, ``upstream_kernels.ATOMIC_OPS`` order)."""
    if row == 5:  # atomic_and
        return torch.full_like(i, -1)
    if row == 7:  # atomic_min
        return 1_000_000 + i
    return 1000 + i


def atomic_values(rank: int, i: torch.Tensor) -> torch.Tensor:
    """What rank ``rank`` applies to its peer's ``atom`` rows."""
    return (rank + 1) * 37 + i * 5


def upstream_job(api: str) -> dict:
    from iris import interpreter_gluon

    shim_at_start = interpreter_gluon.is_installed()  # a cpu world's rank installs it before any job runs
    import iris.gluon
    import iris.host.tracing
    from iris.experimental import iris_gluon
    from tests.cpu_interpret import upstream_kernels as k

    all_ops, flag_cas = k.KERNELS[api]
    shmem = iris.iris(1 << 22)
    r, w = shmem.get_rank(), shmem.get_num_ranks()
    peer = (r + 1) % w
    shmem.tracing.enable(max_events=64)
    context_tensor = shmem.get_device_context()
    i = torch.arange(CAP, dtype=torch.int32, device=shmem.device)
    src = shmem.zeros(CAP, dtype=torch.int32).copy_(r * 1000 + i)
    outs = {name: shmem.full((CAP,), SENTINEL, dtype=torch.int32)
            for name in ("loaded", "stored", "got", "putted", "copied")}
    atom = shmem.zeros(len(k.ATOMIC_OPS), CAP, dtype=torch.int32)
    for row in range(len(k.ATOMIC_OPS)):
        atom[row].copy_(atom_init(row, i))
    old = shmem.full((len(k.ATOMIC_OPS), CAP), SENTINEL, dtype=torch.int32)
    vals = shmem.zeros(CAP, dtype=torch.int32).copy_(atomic_values(r, i))
    cmps = shmem.zeros(CAP, dtype=torch.int32).copy_(atom_init(2, i))  # atomic_cas hits everywhere it is active
    flag, won = shmem.zeros(1, dtype=torch.int32), shmem.full((1,), SENTINEL, dtype=torch.int32)
    shmem.barrier()

    o = outs
    args = (context_tensor, src, o["loaded"], o["stored"], o["got"], o["putted"], o["copied"], atom, old, vals, cmps,
            N, peer, atom.stride(0))
    grid = (triton.cdiv(N, BLOCK),)
    if api == "triton":
        all_ops[grid](*args, r, w, BLOCK=BLOCK, num_warps=4)
        flag_cas[(1,)](context_tensor, flag, won, r, w)
    else:
        all_ops[grid](iris.gluon.IrisDeviceCtx, *args, BLOCK=BLOCK, num_warps=4)
        flag_cas[(1,)](iris.gluon.IrisDeviceCtx, context_tensor, flag, won, num_warps=4)
    shmem.barrier()

    counter = shmem.tracing.trace_counter
    kept = min(int(counter.item()), shmem.tracing.max_events)
    out = {
        "aliases": {
            "shim_installed": shim_at_start,
            "gluon_kernel_type": type(k.KERNELS["gluon"][0]).__name__,
            "IrisDeviceCtx": iris.gluon.IrisDeviceCtx is iris_gluon.IrisDeviceCtx,
            "TraceEvent": k.TraceEvent is iris.TraceEvent,
            "Tracing": isinstance(shmem.tracing, iris.host.tracing.Tracing),
        },
        "buffers": {name: t.cpu().tolist() for name, t in outs.items()},
        "atom": atom.cpu().tolist(),
        "old": old.cpu().tolist(),
        "flag": flag.cpu().tolist(),
        "won": won.cpu().tolist(),
        "counter": {"shape": list(counter.shape), "dtype": str(counter.dtype), "value": int(counter.item())},
        "chunk": shmem.tracing.chunk,
        "trace": {field: column[:kept].cpu().tolist() for field, column in shmem.tracing.trace_buffers.items()},
        "trace_lengths": sorted({len(column) for column in shmem.tracing.trace_buffers.values()}),
        "attempted": shmem.tracing.attempted,
        "addresses": {"src": src.data_ptr(), "putted": o["putted"].data_ptr()},
    }
    shmem.tracing.reset()
    out["counter_after_reset"] = int(shmem.tracing.trace_counter.item())
    shmem.close()
    return out
