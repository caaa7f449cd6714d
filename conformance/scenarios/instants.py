"""Only instants, per program: scalar and block pointers, with and without masks, payloads read from user data.

Model, per rank r with t = (r + offset) % R, program p of P, tag = tags_r[p], block B(p) = [p BLOCK, (p+1) BLOCK),
L(p) = {j in B(p): j < n, bits_r[j]}; all on buf of rank r, in program order:
    user    instant: pid p, pid_n 0, target t, address buf[p], size 1 x bytes, payload tag
    wait    instant: pid p, pid_n 1, target t, address buf[p BLOCK], size BLOCK x bytes (no mask), payload tag + 1
    load    instant: pid p, pid_n 2, target t, address buf[min L(p)], size |L(p)| x bytes, payload tag + 2
    barrier instant: pid p, pid_n 3, target t, scalar buf[P BLOCK - 1 - p] masked by (tag even):
                     address that element and size 1 x bytes if tag is even, else none and 0; payload tag // 2
    memory: buf stays 0 on every rank
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.helpers import block_event, cast, cdiv, program_lanes, setup_masked
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "target"])
def triton_kernel(ctx_t, buf, bits, tags, n, target, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tag = tl.load(tags + pid)
    ctx.tracing.record_event(TraceEvent().user, target, buf + pid, pid, 0, payload=tag)
    ctx.tracing.record_event(TraceEvent().wait, target, buf + offs, pid, 1, payload=tag + 1)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    ctx.tracing.record_event(TraceEvent().load, target, buf + offs, pid, 2, mask=mask, payload=tag + 2)
    last = tl.num_programs(0) * BLOCK - 1 - pid
    ctx.tracing.record_event(TraceEvent().barrier, target, buf + last, pid, 3, mask=tag % 2 == 0, payload=tag // 2)


@gluon.jit(do_not_specialize=["n", "target"])
def gluon_kernel(ctx_t, buf, bits, tags, n, target, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    tag = gl.load(tags + pid)
    ctx.tracing.record_event(TraceEvent().user, target, buf + pid, pid, 0, payload=tag)
    ctx.tracing.record_event(TraceEvent().wait, target, buf + offs, pid, 1, payload=tag + 1)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    ctx.tracing.record_event(TraceEvent().load, target, buf + offs, pid, 2, mask=mask, payload=tag + 2)
    last = gl.num_programs(0) * BLOCK - 1 - pid
    ctx.tracing.record_event(TraceEvent().barrier, target, buf + last, pid, 3, mask=tag % 2 == 0, payload=tag // 2)


def _tags(world_size, p):
    programs = cdiv(p["n"], p["BLOCK"])
    return S.per_rank(world_size, lambda r: S.payloads(programs))


def params(world_size):  # no TRACE_OPS: the kernels call no op
    return S.masked_block(world_size, tags=lambda p: _tags(world_size, p), payload=False, trace_ops=False)


def setup(rank, p):
    setup_masked(rank, p, "buf")
    rank.buffer("tags", len(p["tags"][0]), "int32", fill=p["tags"][rank.rank])


def launch(kernel, rank, p):
    target = (rank.rank + p["offset"]) % rank.world_size
    b = rank.buffers
    kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, b["buf"], b["bits"], b["tags"], p["n"], target,
                                        **rank.world_constexprs, BLOCK=p["BLOCK"])


def model(p, world_size):
    block, length, dtype = p["BLOCK"], len(p["bits"][0]), p["dtype"]
    events, memory = {}, {}
    for r in range(world_size):
        t = (r + p["offset"]) % world_size
        events[r] = [
            block_event(name, "instant", pid=pid, pid_n=pid_n, rank=r, target=t, buffer="buf", heap_rank=r,
                        lanes=lanes, dtype=dtype, payload=payload)
            for pid, tag in enumerate(p["tags"][r])
            for name, pid_n, lanes, payload in (
                ("user", 0, [pid], tag),
                ("wait", 1, list(range(pid * block, (pid + 1) * block)), tag + 1),
                ("load", 2, program_lanes(p, r, pid), tag + 2),
                ("barrier", 3, [length - 1 - pid] if tag % 2 == 0 else [], tag // 2),
            )
        ]
        memory[r] = {"buf": cast([0] * length, dtype)}
    return Model(events, memory)


SCENARIO = Scenario(
    name="instants",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
