"""Each rank copies a masked block from rank (r + a) % R to rank (r + b) % R through ctx.copy, in a `copy` range.

Model, per rank r with f = (r + a) % R and t = (r + b) % R, program p over lanes
L(p) = {j in block p: j < n, bits_r[j]}:
    event  copy range: pid p, target t, address = src[min L(p)] on f (the translated, remote source pointer),
           size |L(p)| x bytes, payload = f (the source rank)
    memory rank q: dst[j] = src_f'[j] for j in L of w = (q - b) % R, f' = (w + a) % R; 0 elsewhere
           src_q[j] = j + 1 + 512 q on every rank q (unchanged)
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance import strategies as S
from conformance.helpers import active_lanes, block_event, cast, cdiv
from conformance.model import Model
from conformance.scenario import Scenario
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "source", "target"])
def triton_kernel(ctx_t, src, dst, bits, n, source, target, rank: tl.constexpr, world: tl.constexpr,
                  BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, rank, world, tracing=True)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().copy, target, ctx._translate(src + offs, source), pid, 0,
                                       mask=mask, payload=source)
    ctx.copy(src + offs, dst + offs, source, target, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "source", "target"])
def gluon_kernel(ctx_t, src, dst, bits, n, source, target, rank: gl.constexpr, world: gl.constexpr,
                 BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().copy, target, ctx._translate(src + offs, source), pid, 0,
                                       mask=mask, payload=source)
    ctx.copy(src + offs, dst + offs, source, target, mask=mask)
    ctx.tracing.record_event_end(h)


@st.composite
def params(draw, world_size):
    n = draw(S.element_count(), label="n")
    block = draw(S.block_size(), label="BLOCK")
    length = cdiv(n, block) * block
    return {
        "n": n,
        "BLOCK": block,
        "dtype": draw(S.dtype_name(), label="dtype"),
        "source_offset": draw(S.rank_offset(world_size), label="source_offset"),
        "target_offset": draw(S.rank_offset(world_size), label="target_offset"),
        "bits": draw(S.per_rank(world_size, lambda r: S.mask_bits(length)), label="bits"),
    }


def _src(q, length):
    return [j + 1 + 512 * q for j in range(length)]


def setup(rank, p):
    length = len(p["bits"][0])
    rank.buffer("src", length, p["dtype"], fill=_src(rank.rank, length))
    rank.buffer("dst", length, p["dtype"])
    rank.buffer("bits", length, "int8", fill=p["bits"][rank.rank])


def launch(kernel, rank, p):
    source = (rank.rank + p["source_offset"]) % rank.world_size
    target = (rank.rank + p["target_offset"]) % rank.world_size
    b = rank.buffers
    kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, b["src"], b["dst"], b["bits"], p["n"], source, target,
                                         rank.rank, rank.world_size, BLOCK=p["BLOCK"], num_warps=4)


def model(p, world_size):
    n, block, length = p["n"], p["BLOCK"], len(p["bits"][0])
    events, memory = {}, {}
    for r in range(world_size):
        source = (r + p["source_offset"]) % world_size
        target = (r + p["target_offset"]) % world_size
        events[r] = [
            block_event("copy", "range", pid=pid, rank=r, target=target, buffer="src", heap_rank=source,
                        lanes=active_lanes(pid * block, block, n, p["bits"][r]), dtype=p["dtype"], payload=source)
            for pid in range(cdiv(n, block))
        ]
        w = (r - p["target_offset"]) % world_size
        written = set(active_lanes(0, length, n, p["bits"][w]))
        src_f = _src((w + p["source_offset"]) % world_size, length)
        dst = [src_f[j] if j in written else 0 for j in range(length)]
        memory[r] = {"src": cast(_src(r, length), p["dtype"]), "dst": cast(dst, p["dtype"])}
    return Model(events, memory)


SCENARIO = Scenario(
    name="copy",
    description=__doc__.splitlines()[0],
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
