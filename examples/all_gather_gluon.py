"""All-gather of 2-D tiles, every op traced by one switch (Gluon API).

    python -m examples.all_gather_gluon --ranks 2 [--cpu] [--out PATH]

Every rank holds an [M, N] input; afterwards every rank's [M, R N] output holds rank q's input in columns
[q N, (q + 1) N). The kernel is persistent: each program loops over tiles of the input (BLOCK_M x BLOCK_N, masked
at the edges) and stores each into every rank's output at this rank's slot, peers in the order rank + 1, rank + 2,
..., the own rank last. ``trace_ops=True`` in ``initialize`` is the only tracing code: each ``ctx.store`` records
its own range (the local ``gl.load`` of the input is no context op, so it records nothing). In the merged trace
(``all_gather_gluon.json``; the format follows the suffix of ``out``: ``.json`` or ``.pftrace``) every store to
another rank has an arrow to that rank's "incoming" track.
"""

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import iris.experimental.iris_gluon as iris_gluon
from examples import tiles
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_2d, warp_size

TRACE = "all_gather_gluon.json"  # the merged trace, in the current folder (--out names another)


@gluon.jit
def all_gather(context_tensor, src, out, M, N, stride_src, stride_out, BLOCK_M: gl.constexpr,
               BLOCK_N: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(context_tensor, tracing=True, trace_ops=True)
    layout: gl.constexpr = blocked_2d(warp_size(), gl.num_warps())
    tiles_n = gl.cdiv(N, BLOCK_N)
    for tile in range(gl.program_id(0), gl.cdiv(M, BLOCK_M) * tiles_n, gl.num_programs(0)):
        rm = (tile // tiles_n) * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, layout))
        rn = (tile % tiles_n) * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout))
        mask = gl.expand_dims(rm < M, 1) & gl.expand_dims(rn < N, 0)
        data = gl.load(src + gl.expand_dims(rm * stride_src, 1) + gl.expand_dims(rn, 0), mask=mask)
        # this rank's columns of the output
        slot = out + gl.expand_dims(rm * stride_out, 1) + ctx.cur_rank * N + gl.expand_dims(rn, 0)
        for i in range(ctx.num_ranks):
            ctx.store(slot, data, (ctx.cur_rank + 1 + i) % ctx.num_ranks, mask=mask)


def main(out: str | None = None, m: int = 40, n: int = 24, programs: int = 2) -> dict:
    import torch

    out = out or TRACE
    shmem = iris_gluon.iris(2**24)
    shmem.tracing.enable(max_events=1 << 16)
    rank, world = shmem.get_rank(), shmem.get_num_ranks()
    src = shmem.zeros(m, n).copy_(tiles.input_of(rank, m, n))
    gathered = shmem.zeros(m, world * n)
    shmem.barrier()
    block_m, block_n = 16, 16
    grid = (min(programs, triton.cdiv(m, block_m) * triton.cdiv(n, block_n)),)
    all_gather[grid](shmem.get_device_context(), src, gathered, m, n, src.stride(0), gathered.stride(0),
                     BLOCK_M=block_m, BLOCK_N=block_n, num_warps=4)
    shmem.barrier()
    names = shmem.tracing.events().names()
    shmem.tracing.export(out, merge=True)
    result = {"rank": rank, "events": tiles.counts(names),
              "gathered_ok": torch.equal(gathered.cpu(), tiles.gathered(world, m, n))}
    shmem.barrier()
    shmem.close()
    return result


if __name__ == "__main__":
    from examples.run import run_example

    run_example(main)
