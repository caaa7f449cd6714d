"""Gather-then-compute in one kernel, its phases marked as ranges around auto-traced ops (Triton API).

    python -m examples.fused_gather_compute_triton --ranks 2 [--cpu] [--out PATH]

Every rank holds an [M, N] input and computes the sum over ranks q of (q + 1) times rank q's input. One program per
tile (BLOCK_M x BLOCK_N, masked at the edges; the grid is the tiles, so ``pid_m`` and ``pid_n`` in the trace are the
tile's row and column, in the phase ranges and the ops' own ranges alike):

- ``fetch``: store the rank's tile into every rank's inbox at this rank's slot, and after each store raise that
  rank's flag for the tile (a release atomic), peers in the order rank + 1, rank + 2, ..., the own rank last;
- ``reduce``: for each rank q in the same order, ``wait`` for q's flag for the tile (an acquire spin on this rank's
  own flag), then ``compute``: load q's tile from the inbox and add it, weighted; finally store the result.

``trace_ops=True`` makes every context op record its own range inside these: ``store`` and ``atomic_xchg`` in
``fetch``, ``load`` in ``compute``, the result's ``store`` in ``reduce``. The spin polls with ``tl.atomic_cas``, no
context op, so it records nothing however many polls it takes. In the merged trace
(``fused_gather_compute_triton.json``; ``.json`` or ``.pftrace`` by the suffix of ``out``) every store and flag
release to another rank has an arrow to that rank's "incoming" track.

A program waits only for the programs of the same tile on the other ranks, and only after it raised all of its own
flags; the grid is a few programs (one per tile), which a GPU holds at once, so no program waits for one that
cannot start. The flags are used once: a second launch would need them reset.
"""

import triton
import triton.language as tl

import iris
from examples import tiles
from iris import DeviceContext, TraceEvent

TRACE = "fused_gather_compute_triton.json"  # the merged trace, in the current folder (--out names another)


@triton.jit
def gather_compute(context_tensor, src, inbox, flags, out, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    ctx = DeviceContext.initialize(context_tensor, tracing=True, trace_ops=True)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    tile = pid_m + pid_n * tl.num_programs(0)  # the trace's program id
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    num_tiles = tl.num_programs(0) * tl.num_programs(1)

    fetch = ctx.tracing.record_event_start(TraceEvent().fetch, ctx.rank, src + offs, pid_m, pid_n, mask=mask)
    data = tl.load(src + offs, mask=mask)
    for i in range(ctx.world_size):
        peer = (ctx.rank + 1 + i) % ctx.world_size
        ctx.store(inbox + ctx.rank * M * N + offs, data, peer, mask=mask)
        tl.debug_barrier()  # every thread's stores happen before the release below
        ctx.atomic_xchg(flags + ctx.rank * num_tiles + tile, 1, peer, sem="release", scope="sys")
    ctx.tracing.record_event_end(fetch)

    reduce = ctx.tracing.record_event_start(TraceEvent().reduce, ctx.rank, out + offs, pid_m, pid_n, mask=mask)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(ctx.world_size):
        q = (ctx.rank + 1 + i) % ctx.world_size
        flag = flags + q * num_tiles + tile
        wait = ctx.tracing.record_event_start(TraceEvent().wait, ctx.rank, flag, pid_m, pid_n, payload=q)
        while tl.atomic_cas(flag, 1, 1, sem="acquire", scope="sys") != 1:
            pass
        ctx.tracing.record_event_end(wait)
        tl.debug_barrier()  # the acquire above happens before every thread's loads below
        compute = ctx.tracing.record_event_start(TraceEvent().compute, ctx.rank, inbox + q * M * N + offs, pid_m,
                                                 pid_n, mask=mask, payload=q)
        acc += (q + 1).to(tl.float32) * ctx.load(inbox + q * M * N + offs, ctx.rank, mask=mask, volatile=True)
        ctx.tracing.record_event_end(compute)
    ctx.store(out + offs, acc, ctx.rank, mask=mask)
    ctx.tracing.record_event_end(reduce)


def main(out: str | None = None, m: int = 40, n: int = 24) -> dict:
    import torch

    out = out or TRACE
    shmem = iris.iris(2**24)
    shmem.tracing.enable(max_events=1 << 16)
    rank, world = shmem.get_rank(), shmem.get_num_ranks()
    block_m, block_n = 16, 16
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    src = shmem.zeros(m, n).copy_(tiles.input_of(rank, m, n))
    inbox = shmem.zeros(world, m, n)
    flags = shmem.zeros(world, grid[0] * grid[1], dtype=torch.int32)
    result = shmem.zeros(m, n)
    shmem.barrier()
    gather_compute[grid](shmem.get_device_context(), src, inbox, flags, result, m, n, BLOCK_M=block_m,
                         BLOCK_N=block_n)
    shmem.barrier()
    names = shmem.tracing.events().names()
    shmem.tracing.export(out, merge=True)
    checked = {"rank": rank, "events": tiles.counts(names),
               "gathered_ok": torch.equal(inbox.cpu(), tiles.stacked(world, m, n)),
               "result_ok": torch.equal(result.cpu(), tiles.weighted_sum(world, m, n)),
               "flags_ok": bool((flags.cpu() == 1).all())}
    shmem.barrier()
    shmem.close()
    return checked


if __name__ == "__main__":
    from examples.run import run_example

    run_example(main)
