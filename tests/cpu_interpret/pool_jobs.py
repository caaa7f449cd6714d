"""Job functions for tests/cpu_interpret/test_rank_pool.py and the gpu tier's pool tests (module level, so rank
processes can import them)."""

from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist

from iris.ranks import rank_state


def whoami(tag: str, *, scale: int = 1) -> dict:
    return {
        "tag": tag,
        "rank": dist.get_rank(),
        "world_size": dist.get_world_size(),
        "value": dist.get_rank() * scale,
        "pid": os.getpid(),
        "env": {k: os.environ.get(k) for k in ("TRITON_INTERPRET", "IRIS_FORCE_CPU", "IRIS_DEVICE_OFFSET")},
    }


def count() -> int:
    """Increment a counter kept in this rank's state across jobs."""
    state = rank_state()
    state["count"] = state.get("count", 0) + 1
    return state["count"]


def export_folder() -> str:
    """This rank's conformance export folder (``rank_side.export_folder``, made at the first call); its path."""
    from conformance.harness.rank_side import export_folder

    return export_folder().path


def all_reduce_rank() -> int:
    t = torch.tensor([dist.get_rank() + 1], dtype=torch.int64)
    dist.all_reduce(t)
    return int(t.item())


def raise_on(rank: int) -> int:
    if dist.get_rank() == rank:
        raise ValueError(f"deliberate failure on rank {rank}")
    return dist.get_rank()


def raise_before_all_reduce(rank: int) -> int:
    """``rank`` raises before the collective, so the other ranks wait in it until they are killed."""
    if dist.get_rank() == rank:
        raise ValueError(f"deliberate failure on rank {rank} before all_reduce")
    return all_reduce_rank()


def sleep_on(rank: int, seconds: float) -> int:
    if dist.get_rank() == rank:
        time.sleep(seconds)
    return dist.get_rank()


def exit_on(rank: int, code: int) -> int:
    if dist.get_rank() == rank:
        os._exit(code)
    return dist.get_rank()


def noop() -> None:
    return None


def unpicklable_result():
    return lambda: None


def open_heap() -> int:
    """Open a heap kept in this rank's state (closed by the pool's clean stop); returns the peers it mapped."""
    import iris
    from iris.ipc import runtime_for
    from iris.tracing.core import backend_of

    shmem = rank_state().setdefault("shmem", iris.iris(1 << 20))
    shmem.barrier()
    return runtime_for(backend_of(shmem.device)).open_count if shmem.device.type == "cuda" else 0


def environ_of(*keys: str) -> dict:
    """This rank's values of ``keys`` (None: unset) and the kind of function Triton's own ``cdiv`` became at import
    (``InterpretedFunction`` where Triton was imported under TRITON_INTERPRET=1)."""
    import triton.language as tl

    return {"env": {k: os.environ.get(k) for k in keys}, "cdiv": type(tl.standard.cdiv).__name__}


def read_uninitialized() -> float:
    """A GPU job that reads memory nobody wrote (a fresh ``torch.empty``): compute-sanitizer's initcheck reports it."""
    import torch

    fresh = torch.empty(1 << 12, dtype=torch.float32, device="cuda")
    return float((fresh + 1).sum())
