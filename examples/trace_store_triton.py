"""Trace a remote store with the Triton API and export a Perfetto trace (the README's usage, Triton form).

    python -m examples.trace_store_triton --ranks 2            # GPU if visible, else CPU interpreter
    python -m examples.trace_store_triton --ranks 2 --cpu      # force CPU worlds
    python -m examples.trace_store_triton --ranks 2 --auto     # auto-traced: the store records itself
    python -m examples.trace_store_triton --ranks 2 --out t.pftrace  # the merged trace to t.pftrace (binary) instead

Each rank stores a block into the next rank's buffer inside a traced range; rank 0 writes the
merged trace of every rank to ``triton_trace.json`` (open it in ui.perfetto.dev). ``my_kernel_auto`` is the same
kernel auto-traced: ``trace_ops=True`` in ``initialize`` and no brackets; its store records the same range
(``triton_trace_auto.json``).
"""

import triton
import triton.language as tl

import iris
from iris import DeviceContext, TraceEvent

TRACE = "triton_trace.json"  # the merged trace, in the current folder (--out names another)
AUTO_TRACE = "triton_trace_auto.json"  # with --auto


@triton.jit
def my_kernel(context_tensor, ptr, n, target_rank, rank: tl.constexpr, world_size: tl.constexpr,
              BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(context_tensor, rank, world_size, tracing=True)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    data = offs.to(tl.float32)
    h = ctx.tracing.record_event_start(event_id=TraceEvent().store, target_rank=target_rank, address=ptr + offs,
                                       pid_m=tl.program_id(0), pid_n=0, mask=mask)
    ctx.store(ptr + offs, data, target_rank, mask=mask)
    ctx.tracing.record_event_end(h)


@triton.jit
def my_kernel_auto(context_tensor, ptr, n, target_rank, rank: tl.constexpr, world_size: tl.constexpr,
                   BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(context_tensor, rank, world_size, tracing=True, trace_ops=True)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ctx.store(ptr + offs, offs.to(tl.float32), target_rank, mask=mask)


def main(out: str | None = None, n: int = 1000, auto: bool = False) -> dict:
    import torch

    out = out or (AUTO_TRACE if auto else TRACE)
    kernel = my_kernel_auto if auto else my_kernel
    shmem = iris.iris(2**26)
    shmem.tracing.enable(max_events=1_000_000)
    rank, world = shmem.get_rank(), shmem.get_num_ranks()
    buf = shmem.zeros(n)
    shmem.barrier()
    kernel[(triton.cdiv(n, 256),)](shmem.get_device_context(), buf, n, (rank + 1) % world, rank, world, BLOCK=256)
    shmem.barrier()
    events = shmem.tracing.events()
    shmem.tracing.export(out, merge=True)
    result = {"rank": rank, "events": len(events),
              "received_ok": bool((buf.cpu() == torch.arange(n, dtype=torch.float32)).all())}
    shmem.barrier()
    shmem.close()
    return result


if __name__ == "__main__":
    from examples.run import run_example

    run_example(main)
