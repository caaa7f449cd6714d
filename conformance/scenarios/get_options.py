"""Each rank gets a masked block from rank (r + offset) % R via ctx.get with `other`, every cache modifier, a hint.

Model, per rank r reading from s = (r + offset) % R, program p over lanes L(p) = {j in block p: j < n, bits_r[j]},
rounds k = 0 .. ROUNDS-1 (modifiers and hint of round k: see _options.py):
    event  get range per round, in round order: pid p, target s, address = src[min L(p)] on r (the local
           from_ptr), size |L(p)| x bytes, payload = payload + k
    memory rank r: dst[k][j] = src_s[j] for j in L, UNTOUCHED elsewhere (`other` fills masked-off lanes of the
           load, which are not stored)
           src_q[j] = j + 1 + 512 q on every rank q (unchanged)
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit.helpers import cast, cdiv, source_values
from conformance.kit.scenario import Scenario
from conformance.scenarios import _options
from conformance.scenarios._options import ROUNDS, hint, load_modifier, store_modifier
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "stride", "source", "other", "payload"])
def triton_kernel(ctx_t, src, dst, bits, n, stride, source, other, payload, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    for k in tl.static_range(ROUNDS):
        h = ctx.tracing.record_event_start(TraceEvent().get, source, src + offs, pid, 0, mask=mask, payload=payload + k)
        ctx.get(src + offs, dst + k * stride + offs, source, mask=mask, other=other,
                load_cache_modifier=load_modifier(k), store_cache_modifier=store_modifier(k), hint=hint(k, BLOCK))
        ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "stride", "source", "other", "payload"])
def gluon_kernel(ctx_t, src, dst, bits, n, stride, source, other, payload, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    for k in gl.static_range(ROUNDS):
        h = ctx.tracing.record_event_start(TraceEvent().get, source, src + offs, pid, 0, mask=mask, payload=payload + k)
        ctx.get(src + offs, dst + k * stride + offs, source, mask=mask, other=other,
                load_cache_modifier=load_modifier(k), store_cache_modifier=store_modifier(k), hint=hint(k, BLOCK))
        ctx.tracing.record_event_end(h)


def params(world_size):
    return _options.params(world_size)


def setup(rank, p):
    _options.setup(rank, p)


def launch(kernel, rank, p):
    source = (rank.rank + p["offset"]) % rank.world_size
    b = rank.buffers
    kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, b["src"], b["dst"], b["bits"], p["n"], b["dst"].stride(0), source,
                                         p["other"], p["payload"], **rank.world_constexprs, BLOCK=p["BLOCK"],
                                         num_warps=4)


def model(p, world_size):
    length, dtype = len(p["bits"][0]), p["dtype"]
    events, memory = {}, {}
    for r in range(world_size):
        s = (r + p["offset"]) % world_size
        events[r] = _options.round_events(p, r, "get", target=s, buffer="src", heap_rank=r, row_offset=False)
        memory[r] = {"src": cast(source_values(r, length), dtype), "dst": _options.dst_rows(p, writer=r, source=s)}
    return Model(events, memory)


SCENARIO = Scenario(
    name="get_options",
    description=__doc__.splitlines()[0],
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
