"""Rank-side jobs for the host-level world tests (``test_host_world.py``); each returns plain data to check.

Every suite runs on each rank of a cpu world (``tests.worlds.run_world`` or ``iris.launch``),
creates its own ``iris.iris`` and closes it before returning.
"""

from __future__ import annotations

import gc
import os
import sys
import time

import torch
import torch.distributed as dist

import iris
from iris.world import is_interpreter

HEAP_SIZE = 1 << 20
TRACE_N = 100  # elements the traced kernel stores (masked blocks of TRACE_BLOCK)
TRACE_BLOCK = 32

# (name, how to allocate, alignment asked for); run in this order on one heap, odd sizes in between so
# every alignment has to pad.
HELPER_CASES = (
    ("zeros", lambda s: s.zeros(5, 3), 256),
    ("zeros_tuple", lambda s: s.zeros((4, 4), dtype=torch.int64, alignment=1024), 1024),
    ("ones", lambda s: s.ones(7, dtype=torch.int32, alignment=64), 64),
    ("full", lambda s: s.full((2, 3), 2.5, dtype=torch.float64, alignment=512), 512),
    ("full_int", lambda s: s.full(3, -7, dtype=torch.int16, alignment=32), 32),
    ("empty", lambda s: s.empty(10, dtype=torch.int8, alignment=4096), 4096),
    ("arange", lambda s: s.arange(10), 256),
    ("arange_step", lambda s: s.arange(3, 20, 4, dtype=torch.int32, alignment=128), 128),
    ("zeros_like", lambda s: s.zeros_like(torch.ones(2, 5, dtype=torch.float16), alignment=2048), 2048),
    # values the dtype holds exactly: inf in a float dtype, 1 as a bool, an end past uint8 with every value in it
    ("full_inf", lambda s: s.full((2,), float("-inf"), dtype=torch.bfloat16), 256),
    ("full_bool", lambda s: s.full(3, 1, dtype=torch.bool), 256),
    ("full_tensor", lambda s: s.full((2,), torch.tensor(-3), dtype=torch.int8), 256),
    ("arange_float", lambda s: s.arange(0.0, 1.0, 0.25, dtype=torch.float16), 256),
    ("arange_uint8", lambda s: s.arange(256, dtype=torch.uint8), 256),
    ("arange_down", lambda s: s.arange(10, 0, -3, dtype=torch.int8), 256),
)


def _tensor_facts(t: torch.Tensor, with_values: bool) -> dict:
    return {
        "data_ptr": t.data_ptr(),
        "shape": list(t.shape),
        "dtype": str(t.dtype),
        "device": str(t.device),
        "values": t.tolist() if with_values else None,
    }


def allocation_job(heap_size: int) -> dict:
    """Every allocation helper once, then a request larger than what is left, then one that exactly fits."""
    shmem = iris.iris(heap_size)
    heap = shmem.heap
    rank = shmem.get_rank()
    out: dict = {"rank": rank, "base": heap.bases[rank], "size": heap.size, "helpers": {}}
    for name, make, _ in HELPER_CASES:
        shmem.empty(3, dtype=torch.int8, alignment=1)  # leaves the next offset unaligned
        out["helpers"][name] = _tensor_facts(make(shmem), with_values=name != "empty")

    # Larger than what is left: refused, nothing changes.
    used, free = heap.used, heap.free
    request = free + 1
    out["oom"] = {"used_before": used, "free_before": free, "request": request}
    try:
        shmem.empty(request, dtype=torch.int8, alignment=1)
        out["oom"]["error"] = None
    except Exception as e:
        out["oom"]["error"] = (type(e).__name__, str(e), isinstance(e, MemoryError))
    out["oom"]["used_after"] = heap.used
    # What is left can still be allocated, to the last byte.
    last = shmem.ones(free, dtype=torch.int8, alignment=1)
    out["oom"]["rest"] = {"used": heap.used, "end": last.data_ptr() + last.numel() - heap.bases[rank],
                          "sum": int(last.sum())}

    # An alignment below the element size (int8 then float32 with alignment=1).
    heap.reset()
    shmem.zeros(1, dtype=torch.int8, alignment=1)
    used = heap.used
    try:
        t = shmem.zeros(2, dtype=torch.float32, alignment=1)
        out["small_alignment"] = {"error": None, "offset": t.data_ptr() - heap.bases[rank], "used_before": used,
                                  "used_after": heap.used}
    except Exception as e:
        out["small_alignment"] = {"error": f"{type(e).__name__}: {e}", "used_before": used, "used_after": heap.used}
    # A dtype that is not a torch dtype, through each helper: refused before anything is allocated.
    used = heap.used
    out["bad_dtype"] = {"used_before": used, "errors": {}}
    calls = (("empty", lambda: shmem.empty(4, dtype="nope")), ("zeros", lambda: shmem.zeros(4, dtype=3)),
             ("ones", lambda: shmem.ones(4, dtype=None)), ("full", lambda: shmem.full((4,), 1, dtype="nope")),
             ("arange", lambda: shmem.arange(4, dtype="int64")))
    for helper, call in calls:
        try:
            call()
            out["bad_dtype"]["errors"][helper] = None
        except Exception as e:
            out["bad_dtype"]["errors"][helper] = f"{type(e).__name__}: {e}"
    out["bad_dtype"]["used_after"] = heap.used
    shmem.barrier()
    shmem.close()
    return out


# Calls that fail, by name; each must leave the heap's used bytes as they were. ``shmem.full((1000,), "a")`` would
# take 4000 bytes before its fill failed, and 300 as int8 another 1000 after the alignment padding.
FAILING_CALLS = {
    "full 'a' as float32": lambda s: s.full((1000,), "a"),
    "full 300 as int8": lambda s: s.full((1000,), 300, dtype=torch.int8),
    "full nan as int32": lambda s: s.full((10,), float("nan"), dtype=torch.int32),
    "full 2**70 as int64": lambda s: s.full((10,), 2**70, dtype=torch.int64),
    "full a 1-d tensor": lambda s: s.full((10,), torch.ones(2)),
    "full -1 as uint8": lambda s: s.full((4,), -1, dtype=torch.uint8),
    "full 1.5 as int8": lambda s: s.full((4,), 1.5, dtype=torch.int8),
    "full 1e6 as float16, 1 element": lambda s: s.full((1,), 1e6, dtype=torch.float16),
    "full 1e6 as float16, 4 elements": lambda s: s.full((4,), 1e6, dtype=torch.float16),
    "full 1e-50 as float32": lambda s: s.full((4,), 1e-50, dtype=torch.float32),
    "full 16777217 as float32": lambda s: s.full((4,), 16777217, dtype=torch.float32),
    "full 2 as bool": lambda s: s.full((4,), 2, dtype=torch.bool),
    "full 0.5 as bool": lambda s: s.full((4,), 0.5, dtype=torch.bool),
    "full inf as int64": lambda s: s.full((4,), float("inf"), dtype=torch.int64),
    "full a 5000-digit integer": lambda s: s.full((4,), 10**4999, dtype=torch.int64),
    "full a 0-d tensor of 1.5 as int32": lambda s: s.full((4,), torch.tensor(1.5), dtype=torch.int32),
    "arange step 1.5 as int64": lambda s: s.arange(0, 5, 1.5),
    "arange 250 to 260 as uint8": lambda s: s.arange(250, 260, dtype=torch.uint8),
    "arange -3 to 0 as uint8": lambda s: s.arange(-3, 0, dtype=torch.uint8),
    "arange to 70000 by 10000 as float16": lambda s: s.arange(0, 70000, 10000, dtype=torch.float16),
    "arange to 1e6 by 1e5 as float16": lambda s: s.arange(0, 1e6, 1e5, dtype=torch.float16),
    # the first and last values (1, 4096) are exact, 2053 is not: found while writing, the allocation given back
    "arange 1 to 4098 by 3 as float16": lambda s: s.arange(1, 4098, 3, dtype=torch.float16),
    "arange step 0": lambda s: s.arange(0, 5, 0),
    "arange away from end": lambda s: s.arange(5, 0, 1),
    "arange to inf": lambda s: s.arange(0, float("inf"), dtype=torch.float32),
    "arange as bool": lambda s: s.arange(2, dtype=torch.bool),
    "arange step '1'": lambda s: s.arange(0, 4, "1"),
    "zeros_like [1, 2]": lambda s: s.zeros_like([1, 2]),
    "zeros_like None": lambda s: s.zeros_like(None),
}
ALLOCATORS = {  # every allocation helper, with a dtype and an alignment
    "empty": lambda s, dtype, a: s.empty(10, dtype=dtype, alignment=a),
    "zeros": lambda s, dtype, a: s.zeros(10, dtype=dtype, alignment=a),
    "ones": lambda s, dtype, a: s.ones(10, dtype=dtype, alignment=a),
    "full": lambda s, dtype, a: s.full((10,), 1, dtype=dtype, alignment=a),
    "zeros_like": lambda s, dtype, a: s.zeros_like(torch.ones(10, dtype=dtype), alignment=a),
    "arange": lambda s, dtype, a: s.arange(10, dtype=dtype, alignment=a),
}
BAD_ALIGNMENTS = (0, 3, -256, 1.5, True, "256", None)
ALIGNMENT_DTYPES = (torch.float32, torch.int8)


def _failed_call(shmem, call) -> dict:
    """``call(shmem)``'s error and the heap's used bytes before and after it."""
    before = shmem.heap.used
    return {"error": _error(lambda: call(shmem)), "used_before": before, "used_after": shmem.heap.used}


def _failed_allocations(shmem) -> dict:
    heap = shmem.heap
    shmem.empty(3, dtype=torch.int8, alignment=1)  # the heap does not start empty or aligned
    out: dict = {"type": type(shmem).__name__, "used_at_start": heap.used}
    out["calls"] = {name: _failed_call(shmem, call) for name, call in FAILING_CALLS.items()}
    out["alignments"] = {
        f"{helper} {str(dtype)[6:]} alignment={a!r}": _failed_call(shmem, lambda s, h=helper, d=dtype, a=a:
                                                                   ALLOCATORS[h](s, d, a))
        for helper in ALLOCATORS for dtype in ALIGNMENT_DTYPES for a in BAD_ALIGNMENTS}
    out["next_offset"] = shmem.zeros(4).data_ptr() - heap.bases[shmem.get_rank()]
    # A fill that fails after the allocation (the up-front check switched off): the allocation is given back.
    module = sys.modules["iris.iris"]
    check, module._fill_value = module._fill_value, lambda *args: None
    try:
        out["fill_fails_late"] = _failed_call(shmem, lambda s: s.full((1000,), 300, dtype=torch.int8))
    finally:
        module._fill_value = check
    before = heap.used
    try:
        with heap.given_back_on_error():
            heap.allocate(100)
            raise KeyError("the block failed")
    except KeyError:
        pass
    with heap.given_back_on_error():
        kept = heap.allocate(100, alignment=1)
    out["given_back_on_error"] = {"before": before, "kept_offset": kept, "after": heap.used}
    return out


def failed_allocation_job(heap_size: int) -> dict:
    """Allocation calls that fail, on the Triton and the Gluon host object: each one's error and the heap's used
    bytes before and after; then where the next allocation lands, a fill that fails after allocating (its check
    bypassed), and ``given_back_on_error`` itself."""
    import iris.experimental.iris_gluon as iris_gluon

    out: dict = {}
    for api, make in (("triton", iris.iris), ("gluon", iris_gluon.iris)):
        shmem = make(heap_size)
        out[api] = _failed_allocations(shmem)
        shmem.barrier()
        shmem.close()
    return out


def _leak_counts(pids: list[int]) -> dict:
    """Shared-memory files of this world's ranks, heap mappings and open file descriptors of this process;
    on GPUs also the device memory torch holds for tensors and the peer IPC mappings still open."""
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    prefixes = tuple(f"iris-heap-{p}-" for p in pids)
    with open("/proc/self/maps") as f:
        mappings = sum("iris-heap-" in line for line in f)
    counts = {
        "shm_files": sorted(n for n in os.listdir(shm) if n.startswith(prefixes)) if shm else [],
        "heap_mappings": mappings,
        "fds": len(os.listdir("/proc/self/fd")),
    }
    if torch.cuda.is_available() and not is_interpreter():
        from iris.ipc import runtime_for
        from iris.tracing.core import backend_of

        device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.synchronize(device)
        counts["gpu_bytes_allocated"] = torch.cuda.memory_allocated(device)
        counts["ipc_mappings_open"] = runtime_for(backend_of(device)).open_count
    return counts


def lifecycle_job(cycles: int, heap_size: int) -> dict:
    """Create, use and close ``iris.iris`` ``cycles`` times; leak counts before and after, time per cycle."""
    pids: list = [None] * dist.get_world_size()
    dist.all_gather_object(pids, os.getpid())

    def cycle(i: int) -> int:
        shmem = iris.iris(heap_size)
        shmem.tracing.enable(16)
        t = shmem.full((256,), i + shmem.get_rank(), dtype=torch.int32)
        shmem.barrier()
        total = int(t.sum())
        shmem.close()
        return total

    cycle(0)  # one-time costs (device runtime, IPC library, driver files) are paid before counting
    gc.collect()
    before = _leak_counts(pids)
    dist.barrier()  # no rank starts creating before every rank has counted
    t0 = time.monotonic()
    sums = [cycle(i) for i in range(cycles)]
    gc.collect()
    dist.barrier()
    seconds = time.monotonic() - t0
    return {"before": before, "after": _leak_counts(pids), "sums": sums, "seconds_per_cycle": seconds / cycles}


def _error(fn) -> str | None:
    try:
        fn()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def export_job(out_dir: str) -> dict:
    """A tiny traced kernel (one store range per program), then merged, per-rank and refused exports."""
    from tests.ops.triton_kernels import trace_1d_kernel

    shmem = iris.iris(HEAP_SIZE)
    rank, world = shmem.get_rank(), shmem.get_num_ranks()
    buf = shmem.zeros(128, dtype=torch.int32)
    shmem.tracing.enable(64)
    shmem.barrier()
    grid = (-(-TRACE_N // TRACE_BLOCK),)
    trace_1d_kernel[grid](shmem.get_device_context(), buf, TRACE_N, (rank + 1) % world, 5, rank, world,
                          BLOCK=TRACE_BLOCK, USE_MASK=True, TRACING=True)
    shmem.barrier()
    events = shmem.tracing.events()
    out = {"rank": rank, "rows": events.rows()}
    out["merged"] = shmem.tracing.export(os.path.join(out_dir, "merged.json"), merge=True)
    out["merged_binary"] = shmem.tracing.export(os.path.join(out_dir, "merged.pftrace"), merge=True)
    out["no_arrows"] = shmem.tracing.export(os.path.join(out_dir, "no_arrows.json"), merge=True, flows=False)
    out["own"] = shmem.tracing.export(os.path.join(out_dir, "own.json"))  # one path on every rank
    shmem.barrier()
    bad = os.path.join(out_dir, "refused")  # a folder of its own, so "writes nothing" is easy to see
    if rank == 0:
        os.makedirs(os.path.join(bad, "a_folder"))
    shmem.barrier()
    out["refused"] = {
        "missing_folder": _error(lambda: shmem.tracing.export(os.path.join(bad, "missing", "t.json"))),
        "directory": _error(lambda: shmem.tracing.export(os.path.join(bad, "a_folder"))),
        "merge_not_bool": _error(lambda: shmem.tracing.export(os.path.join(bad, "merge.json"), merge="yes")),
        "not_a_name": _error(lambda: shmem.tracing.export(123)),
    }
    shmem.barrier()
    shmem.close()
    return out


def merged_refused_job(path: str) -> str | None:
    """A merged export to ``path`` (unwritable); returns this rank's error. Must be the last collective."""
    shmem = iris.iris(HEAP_SIZE)
    shmem.tracing.enable(8)
    return _error(lambda: shmem.tracing.export(path, merge=True))
