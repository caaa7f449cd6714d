"""Producer/consumer message passing between ranks with flags, traced (Gluon API).

    python -m examples.message_passing_gluon --ranks 2 [--cpu] [--out PATH]

Rank r sends a block to rank (r+1) % R and raises a flag there (release); it then waits for its own
flag (acquire) and checks the block it received from rank (r-1) % R. The trace shows, per rank, a
``put`` range, an ``atomic_xchg`` range (the flag release), a ``wait`` range around the spin and a
``load`` instant on the received data. In the merged trace, arrows lead from the put and the flag
release of rank r to the "incoming" track of rank (r+1) % R (the trace's format follows the suffix of
``out``: ``.json`` or ``.pftrace``). ``exchange_auto`` (``--auto``) is the same exchange auto-traced: ``trace_ops=True``
and no brackets; ``put`` and ``atomic_xchg`` record their own ranges, with the same arrows (the spin and the local
read use no context op, so they record nothing).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import iris.experimental.iris_gluon as iris_gluon
from iris import TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size

TRACE = "message_passing_gluon.json"  # the merged trace, in the current folder (--out names another)
AUTO_TRACE = "message_passing_gluon_auto.json"  # with --auto


@gluon.jit
def exchange(context_tensor, data, inbox, flag, result, n, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(context_tensor, tracing=True)
    dst = (ctx.cur_rank + 1) % ctx.num_ranks
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    offs = gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    h = ctx.tracing.record_event_start(TraceEvent().put, dst, inbox + offs, 0, 0, mask=mask)
    ctx.put(data + offs, inbox + offs, dst, mask=mask)
    ctx.tracing.record_event_end(h)
    h = ctx.tracing.record_event_start(TraceEvent().atomic_xchg, dst, flag, 0, 0)
    ctx.atomic_xchg(flag, 1, dst, sem="release", scope="sys")
    ctx.tracing.record_event_end(h)
    h = ctx.tracing.record_event_start(TraceEvent().wait, ctx.cur_rank, flag, 0, 0)
    while gl.atomic_cas(flag, 1, 1, sem="acquire", scope="sys") != 1:
        pass
    ctx.tracing.record_event_end(h)
    ctx.tracing.record_event(TraceEvent().load, ctx.cur_rank, inbox + offs, 0, 0, mask=mask)
    gl.store(result + offs, gl.load(inbox + offs, mask=mask), mask=mask)


@gluon.jit
def exchange_auto(context_tensor, data, inbox, flag, result, n, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(context_tensor, tracing=True, trace_ops=True)
    dst = (ctx.cur_rank + 1) % ctx.num_ranks
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    offs = gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    ctx.put(data + offs, inbox + offs, dst, mask=mask)
    ctx.atomic_xchg(flag, 1, dst, sem="release", scope="sys")
    while gl.atomic_cas(flag, 1, 1, sem="acquire", scope="sys") != 1:
        pass
    gl.store(result + offs, gl.load(inbox + offs, mask=mask), mask=mask)


def main(out: str | None = None, n: int = 100, auto: bool = False) -> dict:
    import torch

    out = out or (AUTO_TRACE if auto else TRACE)
    kernel = exchange_auto if auto else exchange
    shmem = iris_gluon.iris(2**24)
    shmem.tracing.enable(max_events=1024)
    rank, world = shmem.get_rank(), shmem.get_num_ranks()
    data = shmem.zeros(n, dtype=torch.int32).copy_(torch.arange(n, dtype=torch.int32) + 1000 * rank)
    inbox = shmem.zeros(n, dtype=torch.int32)
    flag = shmem.zeros(1, dtype=torch.int32)
    result = shmem.zeros(n, dtype=torch.int32)
    shmem.barrier()
    kernel[(1,)](shmem.get_device_context(), data, inbox, flag, result, n, BLOCK=128, num_warps=4)
    shmem.barrier()
    names = shmem.tracing.events().names()
    shmem.tracing.export(out, merge=True)
    expected = torch.arange(n, dtype=torch.int32) + 1000 * ((rank - 1) % world)
    ok = bool((result.cpu() == expected).all())
    shmem.barrier()
    shmem.close()
    return {"rank": rank, "events": names, "received_ok": ok}


if __name__ == "__main__":
    from examples.run import run_example

    run_example(main)
