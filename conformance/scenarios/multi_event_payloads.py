"""Per program, ITERS loop iterations each recording an atomic_add range and a put range of one element (payload i).

Model, per rank r writing to t = (r + offset) % R, programs p < P, i < ITERS, k = p ITERS + i:
    events of program p, in program order, for i = 0 .. ITERS-1:
           atomic_add range: pid p, target t, address = cnt[i] on r, size 1 x bytes, payload i
           put range:        pid p, target t, address = dst[k] on r, size 1 x bytes, payload i
    memory rank q, s = (q - offset) % R: cnt[i] = sum over p of (p + 1 + 100 s); dst[k] = src_s[k]
           src_q[k] = k + 1 + 512 q on every rank q (unchanged)
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.helpers import block_event, cast, source_values
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx


@triton.jit(do_not_specialize=["target"])
def triton_kernel(ctx_t, cnt, src, dst, target, ITERS: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)
    pid = tl.program_id(0)
    for i in range(ITERS):
        h = ctx.tracing.record_event_start(TraceEvent().atomic_add, target, cnt + i, pid, 0, payload=i)
        ctx.atomic_add(cnt + i, pid + 1 + 100 * ctx.rank, target)
        ctx.tracing.record_event_end(h)
        k = pid * ITERS + i
        h = ctx.tracing.record_event_start(TraceEvent().put, target, dst + k, pid, 0, payload=i)
        ctx.put(src + k, dst + k, target)
        ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["target"])
def gluon_kernel(ctx_t, cnt, src, dst, target, ITERS: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    pid = gl.program_id(0)
    for i in range(ITERS):
        h = ctx.tracing.record_event_start(TraceEvent().atomic_add, target, cnt + i, pid, 0, payload=i)
        ctx.atomic_add(cnt + i, pid + 1 + 100 * ctx.cur_rank, target)
        ctx.tracing.record_event_end(h)
        k = pid * ITERS + i
        h = ctx.tracing.record_event_start(TraceEvent().put, target, dst + k, pid, 0, payload=i)
        ctx.put(src + k, dst + k, target)
        ctx.tracing.record_event_end(h)


@st.composite
def params(draw, world_size):
    return {
        "programs": draw(S.grid_size(), label="programs"),
        "ITERS": draw(S.loop_count(), label="ITERS"),
        "dtype": draw(S.dtype_name(S.ATOMIC_DTYPES), label="dtype"),
        "offset": draw(S.rank_offset(world_size), label="offset"),
    }


def setup(rank, p):
    length = p["programs"] * p["ITERS"]
    rank.buffer("cnt", p["ITERS"], p["dtype"])
    rank.buffer("src", length, p["dtype"], fill=source_values(rank.rank, length))
    rank.buffer("dst", length, p["dtype"])


def launch(kernel, rank, p):
    target = (rank.rank + p["offset"]) % rank.world_size
    b = rank.buffers
    kernel[(p["programs"],)](rank.ctx, b["cnt"], b["src"], b["dst"], target,
                             **rank.world_constexprs, ITERS=p["ITERS"])


def model(p, world_size):
    programs, iters, dtype = p["programs"], p["ITERS"], p["dtype"]
    length = programs * iters
    events, memory = {}, {}
    for r in range(world_size):
        t = (r + p["offset"]) % world_size
        events[r] = [
            block_event(name, "range", pid=pid, pid_m=pid, rank=r, target=t, buffer=buf, heap_rank=r,
                        lanes=[index], dtype=dtype, payload=i)
            for pid in range(programs) for i in range(iters)
            for name, buf, index in (("atomic_add", "cnt", i), ("put", "dst", pid * iters + i))
        ]
        s = (r - p["offset"]) % world_size
        total = sum(pid + 1 + 100 * s for pid in range(programs))
        memory[r] = {"cnt": cast([total] * iters, dtype), "src": cast(source_values(r, length), dtype),
                     "dst": cast(source_values(s, length), dtype)}
    return Model(events, memory)


SCENARIO = Scenario(
    name="multi_event_payloads",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
