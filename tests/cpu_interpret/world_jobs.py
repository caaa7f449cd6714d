"""Rank-side jobs for test_world_heap.py; module-level so spawned ranks can import them."""

from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist

from iris.heap import SymmetricHeap
from iris.world import current_world, is_interpreter


def pattern(rank: int, size: int) -> bytes:
    """The byte pattern rank ``rank`` writes over its whole heap (distinct for every rank)."""
    return bytes((i * (rank + 1) + 17 * rank) % 256 for i in range(size))


def _error(call) -> str | None:
    try:
        call()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _segments(pids: list[int]) -> list[str]:
    """iris heap segments in /dev/shm created by the processes of this world."""
    prefixes = tuple(f"iris-heap-{pid}-" for pid in pids)
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith(prefixes))


def heap_scenario(size: int, cycles: int) -> dict:
    """Everything one rank can check about a world and its heap; returns observations, asserts nothing."""
    w = current_world()
    out: dict = {
        "rank": w.rank,
        "world_size": w.world_size,
        "device": str(w.device),
        "env": {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TRITON_INTERPRET")},
        "interpreter": is_interpreter(),
    }
    heap = SymmetricHeap(size, w)
    out["bases"] = list(heap.bases)
    out["buffer_ptr"] = heap.buffer.data_ptr()
    out["buffer_len"] = heap.buffer.numel()
    out["initially_zero"] = bool((heap.buffer == 0).all())

    # Byte patterns: write our heap, then read every heap through peer_tensor.
    heap.buffer.copy_(torch.frombuffer(bytearray(pattern(w.rank, size)), dtype=torch.uint8))
    dist.barrier()
    out["peer_bytes"] = [bytes(heap.peer_tensor(r, 0, size, torch.uint8).tolist()) for r in range(w.world_size)]
    dist.barrier()

    # Typed objects at the same offset on every rank.
    off = heap.allocate(40, alignment=64)
    heap.tensor(off, (2, 5), torch.float32).copy_(torch.arange(10, dtype=torch.float32).view(2, 5) + 100 * w.rank)
    dist.barrier()
    out["typed_offset"] = off
    out["peer_typed"] = [heap.peer_tensor(r, off, (2, 5), torch.float32).tolist() for r in range(w.world_size)]
    dist.barrier()

    # Allocation sequence and alignment.
    heap.reset()
    out["offsets"] = [
        heap.allocate(1),
        heap.allocate(10, alignment=64),
        heap.allocate(3),
        heap.allocate(0, alignment=1),
        heap.allocate(5, alignment=8),
    ]
    out["used_after_offsets"] = heap.used

    # Out of space: nothing changes.
    heap.reset()
    heap.allocate(size - 100, alignment=1)
    used_before = heap.used
    try:
        heap.allocate(200, alignment=1)
        out["oom"] = None
    except MemoryError as e:
        out["oom"] = (type(e).__name__, str(e))
    out["oom_used"] = (used_before, heap.used)
    try:
        heap.allocate(90, alignment=256)  # 100 bytes free, but the padding does not fit
        out["oom_padding"] = None
    except MemoryError as e:
        out["oom_padding"] = str(e)
    out["after_oom_alloc"] = heap.allocate(100, alignment=1)  # the space is still there

    # Argument validation (all local, no collectives).
    heap.reset()
    out["errors"] = {
        "size=0": _error(lambda: SymmetricHeap(0, w)),
        "size=-1": _error(lambda: SymmetricHeap(-1, w)),
        "size=1.5": _error(lambda: SymmetricHeap(1.5, w)),
        "size='4096'": _error(lambda: SymmetricHeap("4096", w)),
        "size=True": _error(lambda: SymmetricHeap(True, w)),
        "nbytes=-1": _error(lambda: heap.allocate(-1)),
        "nbytes=2.0": _error(lambda: heap.allocate(2.0)),
        "alignment=3": _error(lambda: heap.allocate(8, alignment=3)),
        "alignment=0": _error(lambda: heap.allocate(8, alignment=0)),
        "tensor past end": _error(lambda: heap.tensor(size - 4, (2,), torch.float32)),
        "tensor misaligned": _error(lambda: heap.tensor(2, (2,), torch.float32)),
        "peer rank": _error(lambda: heap.peer_tensor(w.world_size, 0, (1,), torch.uint8)),
    }
    out["used_after_errors"] = heap.used

    # close(): idempotent, views handed out stay valid, the heap refuses further use.
    view = heap.tensor(0, (4,), torch.int32)
    view.fill_(7)
    heap.close()
    heap.close()
    out["view_after_close"] = view.tolist()
    out["closed_allocate"] = _error(lambda: heap.allocate(1))
    del view

    # Leaks: create/close cycles leave /dev/shm and the fd table as they were.
    pids: list = [None] * w.world_size
    dist.all_gather_object(pids, os.getpid())
    SymmetricHeap(size, w).close()  # warm-up: lazily created resources
    dist.barrier()
    fds_before, segs_before = _open_fds(), _segments(pids)
    shm_total_before = len(os.listdir("/dev/shm"))
    dist.barrier()  # nobody starts a cycle while another rank is still counting
    start = time.perf_counter()
    for i in range(cycles):
        h = SymmetricHeap(size, w)
        h.tensor(h.allocate(8), (8,), torch.uint8).fill_(i)
        dist.barrier()
        h.peer_tensor((w.rank + 1) % w.world_size, 0, (8,), torch.uint8).sum()
        dist.barrier()
        h.close()
    out["cycle_s"] = (time.perf_counter() - start) / max(cycles, 1)
    dist.barrier()
    out["fds"] = (fds_before, _open_fds())
    out["segments"] = (segs_before, _segments(pids))
    out["shm_total"] = (shm_total_before, len(os.listdir("/dev/shm")))
    return out


def fail_on_rank(bad_rank: int, how: str) -> int:
    """Rank ``bad_rank`` raises, hangs or exits abruptly (``how``); the others return their rank."""
    rank = dist.get_rank()
    if rank == bad_rank:
        if how in ("raise", "raise_barrier"):
            raise ValueError(f"boom from rank {rank}")
        if how == "hang":
            time.sleep(1000)
        if how == "exit":
            os._exit(3)
    elif how == "raise_barrier":
        dist.barrier()  # never completes normally: the bad rank raises instead
    return rank


def echo(*args, **kwargs) -> tuple:
    """Return the arguments and a few environment values."""
    return args, kwargs, os.environ.get("TRITON_INTERPRET"), os.environ.get("IRIS_TEST_VAR")


def run_time_trip_counts(n: int) -> dict:
    """``for i in range(n)`` with a run-time ``n`` in a Triton and a Gluon kernel (interpreter fixes)."""
    from tests.cpu_interpret import _loop_kernels as k

    out = {}
    for api, kernel in (("triton", k.triton_sum_to), ("gluon", k.gluon_sum_to)):
        t = torch.zeros(1, dtype=torch.int64)
        kernel[(1,)](t, n)
        out[api] = int(t[0])
    return out


def same_type_ops(block: int) -> dict:
    """Binary ops on two tensors of one type in a Triton kernel: the kernel's results and Triton's rules applied by
    torch (fp16 and bf16 division and modulo in fp32, fp16 addition in fp16, int8 addition wrapping in int8)."""
    from tests.cpu_interpret import _loop_kernels as k

    gen = torch.Generator().manual_seed(5)
    h1, h2 = (torch.rand(block, generator=gen).add(0.5).half() for _ in range(2))
    b1, b2 = (torch.rand(block, generator=gen).mul(8).add(0.5).bfloat16() for _ in range(2))
    i1, i2 = (torch.randint(-128, 128, (block,), generator=gen, dtype=torch.int8) for _ in range(2))
    got = {name: torch.zeros(block, dtype=dtype) for name, dtype in
           (("div", torch.float32), ("add", torch.float32), ("mod", torch.float32), ("int", torch.int32))}
    k.triton_same_type_ops[(1,)](h1, h2, b1, b2, i1, i2, got["div"], got["add"], got["mod"], got["int"], BLOCK=block)
    want = {"div": h1.float() / h2.float(), "add": (h1 + h2).float(), "mod": torch.fmod(b1.float(), b2.float()),
            "int": (i1 + i2).int()}
    return {name: (got[name].tolist(), want[name].tolist()) for name in got}
