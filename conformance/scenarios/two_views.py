"""Two tracing views in one program (record semantics v2): every program initializes its device context twice and
records into the two views in turn, so each view's cursor hands out its own chunks while the other one claims.

Model, per rank r with target t = (r + offset) % R; program p < P records counts[p] pairs, i < counts[p]: first into
view A an instant user, then into view B an instant compute; both pid p, pid_m p, pid_n i, target t, address buf[p],
size 4, payload base + 1000 p + 2 i (A) or + 2 i + 1 (B)
    slots    A's initialize claims a chunk, then B's; a view claims its next chunk at its record chunk x k, so a
             program's records lie in slot order by (i // chunk, view, i)
    claimed  chunk x max(1, ceil(counts[p] / chunk)) slots per view and program
    memory   buf unchanged (trace calls only)
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

RUN_TIME = ["target", "base"]


@triton.jit(do_not_specialize=RUN_TIME)
def triton_kernel(ctx_t, buf, counts, target, base):
    pid = tl.program_id(0)
    a = DeviceContext.initialize(ctx_t, tracing=True)
    b = DeviceContext.initialize(ctx_t, tracing=True)
    n = tl.load(counts + pid)
    i = n * 0
    while i < n:
        a.tracing.record_event(TraceEvent().user, target, buf + pid, pid, i, payload=base + 1000 * pid + 2 * i)
        b.tracing.record_event(TraceEvent().compute, target, buf + pid, pid, i, payload=base + 1000 * pid + 2 * i + 1)
        i += 1


@gluon.jit(do_not_specialize=RUN_TIME)
def gluon_kernel(ctx_t, buf, counts, target, base):
    pid = gl.program_id(0)
    a = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    b = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    n = gl.load(counts + pid)
    i = n * 0
    while i < n:
        a.tracing.record_event(TraceEvent().user, target, buf + pid, pid, i, payload=base + 1000 * pid + 2 * i)
        b.tracing.record_event(TraceEvent().compute, target, buf + pid, pid, i, payload=base + 1000 * pid + 2 * i + 1)
        i += 1


MAX_PROGRAMS = 8
MAX_COUNT = 20


@st.composite
def params(draw, world_size):
    programs = draw(S.grid_size(MAX_PROGRAMS), label="programs")
    counts = draw(S.event_counts(programs, st.sampled_from([5, 0, 1, *range(2, MAX_COUNT + 1)]), MAX_COUNT),
                  label="counts")
    return {"counts": counts, "offset": draw(S.rank_offset(world_size), label="offset"),
            "base": draw(S.payload(), label="base")}


def setup(rank, p):
    rank.buffer("buf", len(p["counts"]), "int32")
    rank.buffer("counts", len(p["counts"]), "int32", fill=p["counts"])


def launch(kernel, rank, p):
    b = rank.buffers
    target = (rank.rank + p["offset"]) % rank.world_size
    kernel[(len(p["counts"]),)](rank.ctx, b["buf"], b["counts"], target, p["base"], **rank.world_constexprs)


def model(p, world_size, settings: ExampleSettings):
    chunk = settings.chunk  # the trace chunk of the example (the harness's, not a param)
    events, claimed, memory = {}, {}, {}
    for r in range(world_size):
        t = (r + p["offset"]) % world_size
        events[r] = []
        for pid, n in enumerate(p["counts"]):
            records = sorted((i // chunk, view, i) for i in range(n) for view in (0, 1))
            events[r] += [block_event(("user", "compute")[view], "instant", pid=pid, pid_n=i, rank=r, target=t,
                                      buffer="buf", heap_rank=r, lanes=[pid], dtype="int32",
                                      payload=p["base"] + 1000 * pid + 2 * i + view)
                          for _, view, i in records]
        claimed[r] = sum(2 * claimed_slots(n, chunk) for n in p["counts"])
        memory[r] = {"buf": [0] * len(p["counts"])}
    return Model(events, memory, claimed=claimed)


SCENARIO = Scenario(
    name="two_views",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
    max_events=2 * MAX_PROGRAMS * MAX_COUNT,
    max_programs=2 * MAX_PROGRAMS,
)
