"""Rank-side suites for the op and tracing tests; ``api`` picks the Triton or Gluon kernels.

Each suite runs on every rank of a world (``tests.worlds.run_world``) and returns plain lists,
which the tests compare with expected values computed on the host.
"""

from __future__ import annotations

import importlib

import torch
import triton

import iris

N = 100  # elements touched; buffers hold CAP so the untouched tail is checked too
CAP = 128
BLOCK = 32
DATA_OPS = ("load", "store", "get", "put", "copy")
ATOMIC_OPS = (
    "atomic_add", "atomic_sub", "atomic_cas", "atomic_xchg", "atomic_xor",
    "atomic_and", "atomic_or", "atomic_min", "atomic_max",
)  # fmt: skip
NUM_WARPS = 4


def kernels(api: str):
    """The kernel module of ``api`` ("triton" or "gluon")."""
    return importlib.import_module(f"tests.ops.{api}_kernels")


def world_constexprs(api: str, rank: int, world: int) -> dict[str, int]:
    """The ``rank``/``world`` constexprs of ``api``'s kernels as launch keywords: Triton takes them, Gluon
    does not (it reads both from the context, so one compile serves every rank)."""
    return {"rank": rank, "world": world} if api == "triton" else {}


def host(api: str, heap_size: int = 1 << 22):
    """The host object of ``api``: ``iris.iris`` or ``iris_gluon.iris``."""
    if api == "gluon":
        from iris.experimental import iris_gluon

        return iris_gluon.iris(heap_size)
    return iris.iris(heap_size)


def atomic_init(op: str, i: torch.Tensor) -> torch.Tensor:
    """Initial destination values of ``op`` (shared with the tests' expectations)."""
    if op == "atomic_and":
        return torch.full_like(i, -1)
    if op == "atomic_min":
        return 1_000_000 + i
    return 1000 + i


def atomic_values(rank: int, i: torch.Tensor) -> torch.Tensor:
    """Values rank ``rank`` applies (bit patterns vary by rank and element)."""
    return (rank * 7 + i * 3 + 1) ^ (1 << ((rank + i) % 20))


def ops_suite(api: str) -> dict:
    """Every op once; data ops target the next rank, each atomic is applied by every rank to every rank."""
    k = kernels(api)
    shmem = host(api)
    r, w = shmem.get_rank(), shmem.get_num_ranks()
    ctx = shmem.get_device_context()
    wc = world_constexprs(api, r, w)
    i = torch.arange(CAP, dtype=torch.int32, device=shmem.device)
    grid = (triton.cdiv(N, BLOCK),)
    out = {}
    for op in DATA_OPS:
        src = shmem.full((CAP,), 0, dtype=torch.int32).copy_(r * 1000 + i)
        dst = shmem.full((CAP,), -7, dtype=torch.int32)
        ret = shmem.zeros(CAP, dtype=torch.int32)
        shmem.barrier()
        k.op_kernel[grid](ctx, src, dst, ret, N, (r + 1) % w, (r + 2) % w, **wc, OP=op, BLOCK=BLOCK,
                          num_warps=NUM_WARPS)
        shmem.barrier()
        out[op] = {"dst": dst.cpu().tolist()}
    for op in ATOMIC_OPS:
        src = shmem.zeros(CAP, dtype=torch.int32).copy_(atomic_values(r, i))
        dst = shmem.zeros(CAP, dtype=torch.int32).copy_(atomic_init(op, i))
        ret = shmem.zeros(w, CAP, dtype=torch.int32).copy_(atomic_init(op, i).expand(w, CAP))
        shmem.barrier()
        for t in range(w):
            k.op_kernel[grid](ctx, src, dst, ret[t], N, t, t, **wc, OP=op, BLOCK=BLOCK, num_warps=NUM_WARPS)
        shmem.barrier()
        out[op] = {"dst": dst.cpu().tolist(), "ret": ret.cpu().tolist()}
    shmem.close()
    return out
