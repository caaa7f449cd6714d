"""Each rank copies a masked block from rank (r + a) % R to (r + b) % R via ctx.copy with `other`, modifiers, hint.

Model, per rank r with f = (r + a) % R and t = (r + b) % R, program p over lanes
L(p) = {j in block p: j < n, bits_r[j]}, rounds k = 0 .. ROUNDS-1 (modifiers and hint of round k: see _options.py):
    event  copy range per round, in round order: pid p, target t, address = src[min L(p)] on f (the translated,
           remote source pointer), size |L(p)| x bytes, payload = payload + k; then, with TRACE_OPS (drawn), the
           copy's own two, payload 0: its read (target f, lanes L(p) of src on r) and its write (target t, lanes
           L(p) of row k of dst on r)
    memory rank q, written by w = (q - b) % R from f' = (w + a) % R: dst[k][j] = src_f'[j] for j in L of w,
           UNTOUCHED elsewhere (`other` fills masked-off lanes of the load, which are not stored)
           src_q[j] = j + 1 + 512 q on every rank q (unchanged)
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit.helpers import cast, launch_blocks, peer, source_values
from conformance.kit.scenario import Scenario, first_sentence
from conformance.scenarios import _options
from conformance.scenarios._options import ROUNDS, hint, load_modifier, store_modifier
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "stride", "source", "target", "other", "payload"])
def triton_kernel(ctx_t, src, dst, bits, n, stride, source, target, other, payload,
                  TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    for k in tl.static_range(ROUNDS):
        h = ctx.tracing.record_event_start(TraceEvent().copy, target, ctx._translate(src + offs, source), pid, 0,
                                           mask=mask, payload=payload + k)
        ctx.copy(src + offs, dst + k * stride + offs, source, target, mask=mask, other=other,
                 load_cache_modifier=load_modifier(k), store_cache_modifier=store_modifier(k), hint=hint(k, BLOCK))
        ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "stride", "source", "target", "other", "payload"])
def gluon_kernel(ctx_t, src, dst, bits, n, stride, source, target, other, payload,
                 TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    for k in gl.static_range(ROUNDS):
        h = ctx.tracing.record_event_start(TraceEvent().copy, target, ctx._translate(src + offs, source), pid, 0,
                                           mask=mask, payload=payload + k)
        ctx.copy(src + offs, dst + k * stride + offs, source, target, mask=mask, other=other,
                 load_cache_modifier=load_modifier(k), store_cache_modifier=store_modifier(k), hint=hint(k, BLOCK))
        ctx.tracing.record_event_end(h)


def params(world_size):
    return _options.params(world_size, offsets=("source_offset", "target_offset"))


def setup(rank, p):
    _options.setup(rank, p)


def launch(kernel, rank, p):
    b = rank.buffers
    launch_blocks(kernel, rank, p, b["src"], b["dst"], b["bits"], p["n"], b["dst"].stride(0),
                  peer(rank, p, "source_offset"), peer(rank, p, "target_offset"), p["other"], p["payload"])


def model(p, world_size):
    length, dtype = len(p["bits"][0]), p["dtype"]
    events, memory = {}, {}
    for r in range(world_size):
        source = (r + p["source_offset"]) % world_size
        target = (r + p["target_offset"]) % world_size
        events[r] = _options.round_events(p, r, "copy", target=target, buffer="src", heap_rank=source,
                                          row_offset=False, peers={"from_rank": source},
                                          pointers={"src_ptr": (r, "src"), "dst_ptr": (r, "dst")})
        w = (r - p["target_offset"]) % world_size
        memory[r] = {"src": cast(source_values(r, length), dtype),
                     "dst": _options.dst_rows(p, writer=w, source=(w + p["source_offset"]) % world_size)}
    return Model(events, memory)


SCENARIO = Scenario(
    name="copy_options",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
