"""Rank-side tracing jobs (one world runs every case); ``api`` picks Triton or Gluon kernels."""

from __future__ import annotations

import torch
import triton

from iris.tracing.export import device_clock
from iris.tracing.hw import XCC_ID_LIMIT, cu_id_limit
from tests.ops.op_jobs import NUM_WARPS, host, kernels, world_constexprs

BLOCK = 32
N = 100
MAX_EVENTS = 64
MASK_SEED = 1234
LAYOUT_TILE = (16, 32)  # BM, BN of trace_layouts_kernel
LAYOUT_FLAGS = (1, 0)  # its scalar masks: on, off
# trace_layouts_kernel's instants by payload (Gluon layouts in brackets; tile = [BM, BN] of blocked_2d).
LAYOUT_CASES = {
    1: "row buf + j, j < BN [SliceLayout(0)], lane mask bits[j]",
    2: "column buf + i BN, i < BM [SliceLayout(1)], lane mask bits[BN + i]",
    3: "tile [BlockedLayout 2-D], no mask",
    4: "tile, scalar mask on",
    5: "tile, scalar mask off",
    6: "tile, row mask bits[BN + i] broadcast over the columns",
    7: "scalar pointer buf + 3, scalar mask on",
    8: "scalar pointer buf + 3, scalar mask off",
    9: "scalar pointer buf + 3, no mask",
}


def mask_bits(case: str, rank: int, numel: int) -> torch.Tensor:
    """The int8 mask of a mask case: all, none, or random bits seeded by rank."""
    if case == "all":
        return torch.ones(numel, dtype=torch.int8)
    if case == "none":
        return torch.zeros(numel, dtype=torch.int8)
    g = torch.Generator().manual_seed(MASK_SEED + rank)
    return (torch.rand(numel, generator=g) < 0.5).to(torch.int8)


def tracing_job(api: str) -> dict:
    """Run every tracing case on this rank; returns events and the facts needed to check them."""
    k = kernels(api)
    shmem = host(api)
    r, w = shmem.get_rank(), shmem.get_num_ranks()
    ctx = shmem.get_device_context()
    wc = world_constexprs(api, r, w)
    dev = shmem.device
    out = {"rank": r, "heap_base": shmem.heap.bases[r], "cu_limit": cu_id_limit(shmem.tracing.backend, dev),
           "xcc_limit": XCC_ID_LIMIT[shmem.tracing.backend]}

    def run(name, launch, max_events=MAX_EVENTS, chunk=1, **facts):
        shmem.tracing.enable(max_events, chunk)  # chunk 1: slots are dense where every program records
        shmem.barrier()
        t0 = device_clock(dev)
        launch()
        shmem.barrier()
        t1 = device_clock(dev)
        ev = shmem.tracing.events()
        out[name] = {"rows": ev.rows(), "attempted": ev.attempted, "dropped": ev.dropped, "t0": t0, "t1": t1,
                     "tps": ev.ticks_per_second, "claimed": shmem.tracing.claimed, "chunk": chunk, **facts}

    buf = shmem.zeros(128, dtype=torch.int32)
    target = (r + 1) % w
    for use_mask, n in ((True, N), (False, 128)):
        name = "1d_masked" if use_mask else "1d_full"
        run(name, lambda n=n, use_mask=use_mask: k.trace_1d_kernel[(triton.cdiv(n, BLOCK),)](
            ctx, buf, n, target, 5, **wc, BLOCK=BLOCK, USE_MASK=use_mask, TRACING=True, num_warps=NUM_WARPS),
            buf=buf.data_ptr(), n=n, target=target)

    for case in ("all", "none", "random"):
        bits = shmem.zeros(128, dtype=torch.int8).copy_(mask_bits(case, r, 128))
        run(f"mask_{case}", lambda bits=bits: k.trace_mask_kernel[(4,)](ctx, buf, bits, **wc, BLOCK=BLOCK,
                                                                        num_warps=NUM_WARPS),
            buf=buf.data_ptr(), bits=bits.cpu().tolist())

    mat = shmem.zeros(64, 64, dtype=torch.int64)
    grid_2d = (triton.cdiv(50, 16), triton.cdiv(40, 32))
    run("2d", lambda: k.trace_2d_kernel[grid_2d](ctx, mat, 50, 40, 64, **wc, BM=16, BN=32, num_warps=NUM_WARPS),
        buf=mat.data_ptr(), M=50, N=40, BM=16, BN=32, stride=64)
    out["2d"]["data"] = mat.cpu().tolist()

    bm, bn = LAYOUT_TILE
    tile = shmem.zeros(bm * bn, dtype=torch.int32)
    tile_bits = shmem.zeros(bn + bm, dtype=torch.int8).copy_(mask_bits("random", r, bn + bm))
    flags = shmem.zeros(2, dtype=torch.int32).copy_(torch.tensor(LAYOUT_FLAGS, dtype=torch.int32))
    run("layouts", lambda: k.trace_layouts_kernel[(1,)](ctx, tile, tile_bits, flags, **wc, BM=bm, BN=bn,
                                                        num_warps=NUM_WARPS),
        buf=tile.data_ptr(), bits=tile_bits.cpu().tolist())

    run("loop", lambda: k.trace_loop_kernel[(2,)](ctx, buf, 3, **wc, num_warps=NUM_WARPS), buf=buf.data_ptr())
    run("chunked", lambda: k.trace_loop_kernel[(3,)](ctx, buf, 3, **wc, num_warps=NUM_WARPS), chunk=4,
        buf=buf.data_ptr())
    run("overflow", lambda: k.trace_loop_kernel[(4,)](ctx, buf, 3, **wc, num_warps=NUM_WARPS), max_events=5,
        buf=buf.data_ptr())
    out["overflow"]["raw"] = shmem.tracing._guarded.cpu().tolist()  # [slot][word], the guard slot past the end last
    run("unfinished", lambda: k.trace_unfinished_kernel[(3,)](ctx, buf, **wc, num_warps=NUM_WARPS),
        buf=buf.data_ptr())

    def untouched(launch) -> dict:
        """Counters and every buffer byte after ``launch``, against before (tracing enabled or not)."""
        t = shmem.tracing
        before = [x.clone() for x in (t._counters, t._records, t._cursors)]
        launch()
        shmem.barrier()
        after = (t._counters, t._records, t._cursors)
        return {"counters": t._counters.cpu().tolist(),
                "changed": [n for n, b, a in zip(("counters", "records", "cursors"), before, after, strict=True)
                            if not torch.equal(b, a)]}

    # Compiled on, switched off at run time: nothing recorded, buffers untouched.
    shmem.tracing.enable(MAX_EVENTS)
    shmem.tracing.disable()
    out["runtime_off"] = untouched(lambda: k.trace_1d_kernel[(4,)](
        ctx, buf, N, target, 5, **wc, BLOCK=BLOCK, USE_MASK=True, TRACING=True, num_warps=NUM_WARPS))
    # Compiled off while enabled: nothing recorded either.
    shmem.tracing.enable(MAX_EVENTS)
    out["compiled_off"] = untouched(lambda: k.trace_1d_kernel[(4,)](
        ctx, buf, N, target, 5, **wc, BLOCK=BLOCK, USE_MASK=True, TRACING=False, num_warps=NUM_WARPS))
    out["compiled_off"]["attempted"] = shmem.tracing.attempted

    # Reset between launches: only the second launch remains, numbered from 0.
    shmem.tracing.enable(MAX_EVENTS, 1)
    k.trace_loop_kernel[(2,)](ctx, buf, 2, **wc, num_warps=NUM_WARPS)
    shmem.tracing.reset()
    k.trace_unfinished_kernel[(2,)](ctx, buf, **wc, num_warps=NUM_WARPS)
    shmem.barrier()
    ev = shmem.tracing.events()
    out["reset"] = {"rows": ev.rows(), "attempted": ev.attempted}
    shmem.close()
    return out


def rank_check_job(api: str, rank_offset: int, world_offset: int) -> str:
    """Launch a kernel whose constexpr rank/world disagree with the context; returns the error text."""
    k = kernels(api)
    shmem = host(api)
    r, w = shmem.get_rank(), shmem.get_num_ranks()
    try:
        k.rank_check_kernel[(1,)](shmem.get_device_context(), r + rank_offset, w + world_offset, num_warps=NUM_WARPS)
        shmem.barrier()
        return ""
    except Exception as e:  # the interpreter raises the device assertion as an exception
        return repr(e)
    finally:
        shmem.close()


def rank_forms_job(rank_offset: int, world_offset: int) -> dict:
    """Launch ``rank_forms_kernel`` (Triton) in each form, the run-time rank/world off by the offsets; per form:
    ``ctx.rank``/``ctx.world_size`` as the kernel saw them, ``buf`` afterwards, the events, the compiled variant's
    hash (None under the interpreter) and the error a mismatch raised ("" if none)."""
    k = kernels("triton")
    shmem = host("triton")
    r, w = shmem.get_rank(), shmem.get_num_ranks()
    ctx = shmem.get_device_context()
    out = {}
    for form in ("context", "tensor"):
        seen = shmem.zeros(2, dtype=torch.int64)
        buf = shmem.zeros(w, dtype=torch.int32)
        shmem.tracing.enable(MAX_EVENTS, 1)
        shmem.barrier()
        compiled, error = None, ""
        try:
            compiled = k.rank_forms_kernel[(1,)](ctx, buf, seen, r + rank_offset, w + world_offset, FORM=form,
                                                 num_warps=NUM_WARPS)
        except Exception as e:  # the interpreter raises the device assertion as an exception
            error = repr(e)
        shmem.barrier()
        ev = shmem.tracing.events()
        out[form] = {"seen": seen.cpu().tolist(), "buf": buf.cpu().tolist(), "buf_ptr": buf.data_ptr(),
                     "rows": ev.rows(), "variant": getattr(compiled, "hash", None), "error": error}
    shmem.close()
    return out
