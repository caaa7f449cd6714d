"""A counted loop of ranges: every program runs ``for i in range(n)`` over a run-time argument ``n``, one range an
iteration, as the device benchmark's one-program loop does.

Why this loop form: a trip count every thread reads from the kernel's arguments lets the compiler keep the counter in
a warp's shared (uniform) registers and leave the loop when it equals ``n``. If a warp's lanes then ever take two
sides of the chunk-refill branch, both halves advance the one counter and it can step past ``n``: the loop never
ends. That is how 4- and 8-warp traced loops hung in an earlier release (``docs/design.md``, "How the two
implementations keep them").
The other loops of the suite read their trip counts from memory (a per-thread counter) and cannot show it. At the
GPU scale, ``num_warps`` 4 to 16 and hundreds of iterations a program (chunks refilling many times) make a wrong
cursor read a ``hang``.

Model, per rank r with target t = (r + offset) % R; program p < P, iteration i < n:
    events   put range: pid p, pid_m p, pid_n i, target t, address buf[p] (scalar), size 4, payload base + i
    claimed  chunk x max(1, ceil(n / chunk)) slots a program
    memory   buf[p] = n (n - 1) / 2 on every rank (the sum of i, stored after the loop)
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.example_settings import ExampleSettings
from conformance.kit.helpers import block_event, claimed_slots
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx

RUN_TIME = ["n", "target", "base"]


@triton.jit(do_not_specialize=RUN_TIME)
def triton_kernel(ctx_t, buf, n, target, base):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)
    pid = tl.program_id(0)
    acc = pid * 0
    for i in range(n):
        h = ctx.tracing.record_event_start(TraceEvent().put, target, buf + pid, pid, i, payload=base + i)
        acc += i
        ctx.tracing.record_event_end(h)
    tl.store(buf + pid, acc)


@gluon.jit(do_not_specialize=RUN_TIME)
def gluon_kernel(ctx_t, buf, n, target, base):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    pid = gl.program_id(0)
    acc = pid * 0
    for i in range(n):
        h = ctx.tracing.record_event_start(TraceEvent().put, target, buf + pid, pid, i, payload=base + i)
        acc += i
        ctx.tracing.record_event_end(h)
    gl.store(buf + pid, acc)


MAX_PROGRAMS = 4
MAX_COUNT = 12


@st.composite
def params(draw, world_size):
    programs = draw(S.grid_size(MAX_PROGRAMS), label="programs")
    return {"programs": programs, "n": draw(S.events_per_program(MAX_COUNT, programs=programs), label="n"),
            "offset": draw(S.rank_offset(world_size), label="offset"), "base": draw(S.payload(), label="base")}


def setup(rank, p):
    rank.buffer("buf", p["programs"], "int32")


def launch(kernel, rank, p):
    target = (rank.rank + p["offset"]) % rank.world_size
    kernel[(p["programs"],)](rank.ctx, rank.buffers["buf"], p["n"], target, p["base"], **rank.world_constexprs)


def model(p, world_size, settings: ExampleSettings):
    n, programs = p["n"], p["programs"]
    events, claimed, memory = {}, {}, {}
    for r in range(world_size):
        t = (r + p["offset"]) % world_size
        events[r] = [block_event("put", "range", pid=pid, pid_n=i, rank=r, target=t, buffer="buf", heap_rank=r,
                                 lanes=[pid], dtype="int32", payload=p["base"] + i)
                     for pid in range(programs) for i in range(n)]
        claimed[r] = programs * claimed_slots(n, settings.chunk)
        memory[r] = {"buf": [n * (n - 1) // 2] * programs}
    return Model(events, memory, claimed=claimed)


SCENARIO = Scenario(
    name="counted_loop",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
    max_events=MAX_PROGRAMS * MAX_COUNT,
    max_programs=MAX_PROGRAMS,
)
