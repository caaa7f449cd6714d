"""Each rank copies a masked block from rank (r + a) % R to rank (r + b) % R through ctx.copy, in a `copy` range.

Model, per rank r with f = (r + a) % R and t = (r + b) % R, program p over lanes
L(p) = {j in block p: j < n, bits_r[j]}:
    event  copy range: pid p, target t, address = src[min L(p)] on f (the translated, remote source pointer),
           size |L(p)| x bytes, payload = f (the source rank); then, with TRACE_OPS (drawn), the copy's own two
           (auto_ops.call_events), payload 0: its read (target f, lanes L(p) of src on r: the pointer it was
           passed) and its write (target t, lanes L(p) of dst on r)
    memory rank q: dst[j] = src_f'[j] for j in L of w = (q - b) % R, f' = (w + a) % R; 0 elsewhere
           src_q[j] = j + 1 + 512 q on every rank q (unchanged)
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.helpers import launch_blocks, peer, per_program_events, setup_masked, transfer_memory
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "source", "target"])
def triton_kernel(ctx_t, src, dst, bits, n, source, target, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().copy, target, ctx._translate(src + offs, source), pid, 0,
                                       mask=mask, payload=source)
    ctx.copy(src + offs, dst + offs, source, target, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "source", "target"])
def gluon_kernel(ctx_t, src, dst, bits, n, source, target, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().copy, target, ctx._translate(src + offs, source), pid, 0,
                                       mask=mask, payload=source)
    ctx.copy(src + offs, dst + offs, source, target, mask=mask)
    ctx.tracing.record_event_end(h)


def params(world_size):
    return S.masked_block(world_size, offsets=("source_offset", "target_offset"), payload=False)


def setup(rank, p):
    setup_masked(rank, p, "dst", source=True)


def launch(kernel, rank, p):
    b = rank.buffers
    launch_blocks(kernel, rank, p, b["src"], b["dst"], b["bits"], p["n"], peer(rank, p, "source_offset"),
                  peer(rank, p, "target_offset"))


def model(p, world_size):
    def source(r):
        return (r + p["source_offset"]) % world_size

    def target(r):
        return (r + p["target_offset"]) % world_size

    events = {r: per_program_events(p, r, "copy", "range", target=target(r), buffer="src", heap_rank=source(r),
                                    payload=source(r), peers={"from_rank": source(r)},
                                    pointers={"src_ptr": (r, "src"), "dst_ptr": (r, "dst")})
              for r in range(world_size)}
    return Model(events, transfer_memory(p, world_size, source, target))


SCENARIO = Scenario(
    name="copy",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
