"""More events than max_events: each program records E (range, instant) pairs; the buffers keep only a prefix.

Model, per rank r with target t = (r + offset) % R, program p of P, i = 0 .. E-1 (a run-time loop):
    events  atomic_add range: pid p, pid_n i, target t, lanes {j < n} of block p of buf on r, payload base + i
            user instant:     pid p, pid_n i, target t, address buf[p * BLOCK] on r (scalar), payload i
    max_events < 2 P E: at most max_events events kept, each program's kept events a prefix of its
            own sequence (which programs win the slots, a chunk at a time, is not fixed), the rest dropped;
            attempted = 2 P E; one program (P = 1) keeps exactly max_events (its chunks follow each other)
            and claims chunk x ceil(max_events / chunk) slots (its last chunk ends at max_events: a full
            buffer claims nothing more)
    memory rank q: buf[j] = E for j < n, 0 elsewhere (rank (q - offset) % R adds 1 per iteration)
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.example_settings import ExampleSettings
from conformance.kit.helpers import active_lanes, block_event, cdiv
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "per_program", "target", "payload"])
def triton_kernel(ctx_t, buf, n, per_program, target, payload, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i = per_program * 0
    while i < per_program:
        h = ctx.tracing.record_event_start(TraceEvent().atomic_add, target, buf + offs, pid, i, mask=mask,
                                           payload=payload + i)
        ctx.atomic_add(buf + offs, offs * 0 + 1, target, mask=mask, sem="relaxed", scope="sys")
        ctx.tracing.record_event_end(h)
        ctx.tracing.record_event(TraceEvent().user, target, buf + pid * BLOCK, pid, i, payload=i)
        i += 1


@gluon.jit(do_not_specialize=["n", "per_program", "target", "payload"])
def gluon_kernel(ctx_t, buf, n, per_program, target, payload, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    i = per_program * 0
    while i < per_program:
        h = ctx.tracing.record_event_start(TraceEvent().atomic_add, target, buf + offs, pid, i, mask=mask,
                                           payload=payload + i)
        ctx.atomic_add(buf + offs, offs * 0 + 1, target, mask=mask, sem="relaxed", scope="sys")
        ctx.tracing.record_event_end(h)
        ctx.tracing.record_event(TraceEvent().user, target, buf + pid * BLOCK, pid, i, payload=i)
        i += 1


@st.composite
def params(draw, world_size):
    block = draw(S.block_size(), label="BLOCK")
    programs = draw(S.grid_size(6), label="programs")
    per_program = draw(S.events_per_program(6, programs=2 * programs), label="per_program")  # 2 events an iteration
    return {
        "BLOCK": block,
        "programs": programs,
        "per_program": per_program,
        "n": draw(S.element_count(programs * block, scaled=False), label="n"),
        "max_events": draw(S.trace_max_events(20, attempts=2 * programs * per_program), label="max_events"),
        "offset": draw(S.rank_offset(world_size), label="offset"),
        "payload": draw(S.payload(), label="payload"),
    }


def setup(rank, p):
    rank.buffer("buf", p["programs"] * p["BLOCK"], "int32")


def launch(kernel, rank, p):
    target = (rank.rank + p["offset"]) % rank.world_size
    kernel[(p["programs"],)](rank.ctx, rank.buffers["buf"], p["n"], p["per_program"], target, p["payload"],
                             **rank.world_constexprs, BLOCK=p["BLOCK"])


def model(p, world_size, settings: ExampleSettings):
    block, n = p["BLOCK"], p["n"]
    events, memory = {}, {}
    for r in range(world_size):
        target = (r + p["offset"]) % world_size
        events[r] = []
        for pid in range(p["programs"]):
            for i in range(p["per_program"]):
                events[r] += [
                    block_event("atomic_add", "range", pid=pid, pid_n=i, rank=r, target=target, buffer="buf",
                                heap_rank=r, lanes=active_lanes(pid * block, block, n), dtype="int32",
                                payload=p["payload"] + i),
                    block_event("user", "instant", pid=pid, pid_n=i, rank=r, target=target, buffer="buf",
                                heap_rank=r, lanes=[pid * block], dtype="int32", payload=i),
                ]
        memory[r] = {"buf": [p["per_program"] if j < n else 0 for j in range(p["programs"] * block)]}
    total = 2 * p["programs"] * p["per_program"]
    kept = claimed = None
    if p["programs"] == 1:
        kept = {r: min(total, p["max_events"]) for r in range(world_size)}
        claimed = {r: settings.chunk * cdiv(p["max_events"], settings.chunk) for r in range(world_size)}
    return Model(events, memory, max_events=p["max_events"], kept=kept, claimed=claimed)


def trace_slots(p):
    """The trace buffers of an example hold exactly its drawn ``max_events`` slots (fewer than it records)."""
    return p["max_events"]


SCENARIO = Scenario(
    name="overflow",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
    max_events=20,
    overflow_at=trace_slots,
)
