"""Kernels written the way upstream iris users write them (import paths and keyword forms of its public API).

Imported only inside rank processes: the first import below is the ``iris.gluon`` alias, which must install
the Gluon interpreter shim (under ``TRITON_INTERPRET=1``) before the ``@gluon.jit`` kernels here are decorated.
The Gluon kernels receive ``iris.gluon.IrisDeviceCtx`` as their first argument, as upstream's do.

Each program of ``*_all_ops`` works on one block of ``BLOCK`` int32 elements (``mask = offs < n``), reading
from and writing to ``peer``; ``ATOMIC_OPS`` lists the row of ``atom``/``old`` each atomic uses:

    load  -> loaded[j]  = src@peer[j], or ``other`` on masked-off lanes (a full-block store keeps them)
    store -> stored@peer[j] = src[j]                  get  -> got[j] = src@peer[j]
    put   -> putted@peer[j] = src[j]                  copy -> copied[j] = src@peer[j] (from peer to this rank)
    atomic_<op>(atom[row]@peer, vals) -> old[row] (cas compares with cmps, which hold atom's initial values)
    traced: a `get` range around the get (address src + offs), a `put` instant (address putted + offs, payload 7)
"""

import iris.gluon  # noqa: F401, I001  (first: the alias installs the shim before any @gluon.jit below runs)
from iris.host.tracing.events import TraceEvent

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from iris import DeviceContext
from iris.experimental.layouts import blocked_1d, warp_size

ATOMIC_OPS = ("atomic_add", "atomic_sub", "atomic_cas", "atomic_xchg", "atomic_xor", "atomic_and", "atomic_or",
              "atomic_min", "atomic_max")
OTHER = -5  # the `other` the kernels pass (written as a literal there, as users do)


@triton.jit
def triton_all_ops(context_tensor, src, loaded, stored, got, putted, copied, atom, old, vals, cmps, n, peer, stride,
                   rank: tl.constexpr, world_size: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(context_tensor, rank, world_size, tracing=True)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    data = ctx.load(src + offs, from_rank=peer, mask=mask, other=-5, cache_modifier=".cv", volatile=True, hint=BLOCK)
    tl.store(loaded + offs, data)
    ctx.store(stored + offs, tl.load(src + offs, mask=mask), to_rank=peer, mask=mask, cache_modifier=".wt", hint=BLOCK)
    h = ctx.tracing.record_event_start(event_id=TraceEvent().get, target_rank=peer, address=src + offs, pid_m=pid,
                                       pid_n=0, mask=mask)
    ctx.get(src + offs, got + offs, from_rank=peer, mask=mask, other=-5, load_cache_modifier=".cv",
            store_cache_modifier=".cs", hint=BLOCK)
    ctx.tracing.record_event_end(h)
    ctx.put(src + offs, putted + offs, to_rank=peer, mask=mask, other=-5, load_cache_modifier=".ca",
            store_cache_modifier=".wb", hint=BLOCK)
    ctx.tracing.record_event(event_id=TraceEvent().put, target_rank=peer, address=putted + offs, pid_m=pid, pid_n=0,
                             mask=mask, payload=7)
    ctx.copy(src + offs, copied + offs, from_rank=peer, to_rank=rank, mask=mask, other=-5, load_cache_modifier=".cg",
             store_cache_modifier=".cg", hint=BLOCK)
    v = tl.load(vals + offs, mask=mask)
    tl.store(old + 0 * stride + offs, ctx.atomic_add(atom + 0 * stride + offs, v, to_rank=peer, mask=mask,
                                                     sem="relaxed", scope="sys", hint=BLOCK), mask=mask)
    tl.store(old + 1 * stride + offs, ctx.atomic_sub(atom + 1 * stride + offs, v, to_rank=peer, mask=mask,
                                                     sem="acq_rel", scope="gpu", hint=BLOCK), mask=mask)
    cmp = tl.load(cmps + offs, mask=mask, other=0)
    swapped = ctx.atomic_cas(atom + 2 * stride + offs, cmp, tl.where(mask, v, cmp), to_rank=peer, sem="acquire",
                             scope="sys", hint=BLOCK)  # off lanes compare with 0, held nowhere
    tl.store(old + 2 * stride + offs, swapped, mask=mask)
    tl.store(old + 3 * stride + offs, ctx.atomic_xchg(atom + 3 * stride + offs, v, to_rank=peer, mask=mask,
                                                      sem="release", scope="cta", hint=BLOCK), mask=mask)
    tl.store(old + 4 * stride + offs, ctx.atomic_xor(atom + 4 * stride + offs, v, to_rank=peer, mask=mask,
                                                     hint=BLOCK), mask=mask)
    tl.store(old + 5 * stride + offs, ctx.atomic_and(atom + 5 * stride + offs, v, to_rank=peer, mask=mask,
                                                     hint=BLOCK), mask=mask)
    tl.store(old + 6 * stride + offs, ctx.atomic_or(atom + 6 * stride + offs, v, to_rank=peer, mask=mask,
                                                    hint=BLOCK), mask=mask)
    tl.store(old + 7 * stride + offs, ctx.atomic_min(atom + 7 * stride + offs, v, to_rank=peer, mask=mask,
                                                     hint=BLOCK), mask=mask)
    tl.store(old + 8 * stride + offs, ctx.atomic_max(atom + 8 * stride + offs, v, to_rank=peer, mask=mask,
                                                     hint=BLOCK), mask=mask)


@gluon.jit
def gluon_all_ops(IrisDeviceCtx: gl.constexpr, context_tensor, src, loaded, stored, got, putted, copied, atom, old,
                  vals, cmps, n, peer, stride, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(context_tensor, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    data = ctx.load(src + offs, from_rank=peer, mask=mask, other=-5, cache_modifier=".cv", volatile=True, hint=BLOCK)
    gl.store(loaded + offs, data)
    ctx.store(stored + offs, gl.load(src + offs, mask=mask), to_rank=peer, mask=mask, cache_modifier=".wt", hint=BLOCK)
    h = ctx.tracing.record_event_start(event_id=TraceEvent().get, target_rank=peer, address=src + offs, pid_m=pid,
                                       pid_n=0, mask=mask)
    ctx.get(src + offs, got + offs, from_rank=peer, mask=mask, other=-5, load_cache_modifier=".cv",
            store_cache_modifier=".cs", hint=BLOCK)
    ctx.tracing.record_event_end(h)
    ctx.put(src + offs, putted + offs, to_rank=peer, mask=mask, other=-5, load_cache_modifier=".ca",
            store_cache_modifier=".wb", hint=BLOCK)
    ctx.tracing.record_event(event_id=TraceEvent().put, target_rank=peer, address=putted + offs, pid_m=pid, pid_n=0,
                             mask=mask, payload=7)
    ctx.copy(src + offs, copied + offs, from_rank=peer, to_rank=ctx.cur_rank, mask=mask, other=-5,
             load_cache_modifier=".cg", store_cache_modifier=".cg", hint=BLOCK)
    v = gl.load(vals + offs, mask=mask)
    gl.store(old + 0 * stride + offs, ctx.atomic_add(atom + 0 * stride + offs, v, to_rank=peer, mask=mask,
                                                     sem="relaxed", scope="sys", hint=BLOCK), mask=mask)
    gl.store(old + 1 * stride + offs, ctx.atomic_sub(atom + 1 * stride + offs, v, to_rank=peer, mask=mask,
                                                     sem="acq_rel", scope="gpu", hint=BLOCK), mask=mask)
    cmp = gl.load(cmps + offs, mask=mask, other=0)
    swapped = ctx.atomic_cas(atom + 2 * stride + offs, cmp, gl.where(mask, v, cmp), to_rank=peer, sem="acquire",
                             scope="sys", hint=BLOCK)  # off lanes compare with 0, held nowhere
    gl.store(old + 2 * stride + offs, swapped, mask=mask)
    gl.store(old + 3 * stride + offs, ctx.atomic_xchg(atom + 3 * stride + offs, v, to_rank=peer, mask=mask,
                                                      sem="release", scope="cta", hint=BLOCK), mask=mask)
    gl.store(old + 4 * stride + offs, ctx.atomic_xor(atom + 4 * stride + offs, v, to_rank=peer, mask=mask,
                                                     hint=BLOCK), mask=mask)
    gl.store(old + 5 * stride + offs, ctx.atomic_and(atom + 5 * stride + offs, v, to_rank=peer, mask=mask,
                                                     hint=BLOCK), mask=mask)
    gl.store(old + 6 * stride + offs, ctx.atomic_or(atom + 6 * stride + offs, v, to_rank=peer, mask=mask,
                                                    hint=BLOCK), mask=mask)
    gl.store(old + 7 * stride + offs, ctx.atomic_min(atom + 7 * stride + offs, v, to_rank=peer, mask=mask,
                                                     hint=BLOCK), mask=mask)
    gl.store(old + 8 * stride + offs, ctx.atomic_max(atom + 8 * stride + offs, v, to_rank=peer, mask=mask,
                                                     hint=BLOCK), mask=mask)


@triton.jit
def triton_flag_cas(context_tensor, flag, won, rank: tl.constexpr, world_size: tl.constexpr):
    """Every rank tries to claim rank 0's scalar ``flag`` (0 -> rank + 1); ``won`` gets the value it saw."""
    ctx = DeviceContext.initialize(context_tensor, rank, world_size)
    tl.store(won, ctx.atomic_cas(flag, 0, rank + 1, 0, sem="acq_rel", scope="sys", hint=4))


@gluon.jit
def gluon_flag_cas(IrisDeviceCtx: gl.constexpr, context_tensor, flag, won):
    """Every rank tries to claim rank 0's scalar ``flag`` (0 -> rank + 1); ``won`` gets the value it saw."""
    ctx = IrisDeviceCtx.initialize(context_tensor)
    gl.store(won, ctx.atomic_cas(flag, 0, (ctx.cur_rank + 1).to(gl.int32), 0, sem="acq_rel", scope="sys", hint=4))


KERNELS = {"triton": (triton_all_ops, triton_flag_cas), "gluon": (gluon_all_ops, gluon_flag_cas)}
