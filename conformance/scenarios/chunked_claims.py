"""Chunked slot claims (record semantics v2): many programs with run-time event counts (0 included: a program that
initializes tracing and records nothing), two launches without a reset, the second on its own stream on a GPU
(so two kernels record at once), every slot accounted for.

Model, per rank r with target t = (r + offset) % R; launch A: programs p < PA; launch B: programs PA <= p < PA + PB
(its programs below PA return before initializing tracing, so every recording program has its own pid); program p
records counts[p] instants, i < counts[p]: name user, pid p, pid_m p, pid_n i, target t, address buf[p], size 4,
payload base + 1000 p + i
    claimed  every program of A and B initializes tracing: chunk x max(1, ceil(counts[p] / chunk)) slots each
    memory   buf unchanged (trace calls only)
"""

import torch
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

RUN_TIME = ["lo", "target", "base"]


@triton.jit(do_not_specialize=RUN_TIME)
def triton_kernel(ctx_t, buf, counts, lo, target, base):
    pid = tl.program_id(0)
    if pid >= lo:
        ctx = DeviceContext.initialize(ctx_t, tracing=True)
        n = tl.load(counts + pid)
        i = n * 0
        while i < n:
            ctx.tracing.record_event(TraceEvent().user, target, buf + pid, pid, i, payload=base + 1000 * pid + i)
            i += 1


@gluon.jit(do_not_specialize=RUN_TIME)
def gluon_kernel(ctx_t, buf, counts, lo, target, base):
    pid = gl.program_id(0)
    if pid >= lo:
        ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
        n = gl.load(counts + pid)
        i = n * 0
        while i < n:
            ctx.tracing.record_event(TraceEvent().user, target, buf + pid, pid, i, payload=base + 1000 * pid + i)
            i += 1


MAX_PROGRAMS = 32
MAX_COUNT = 12


@st.composite
def params(draw, world_size):
    a = draw(S.grid_size(MAX_PROGRAMS // 2), label="programs_a")
    b = draw(S.grid_size(MAX_PROGRAMS // 2), label="programs_b")
    # the simplest counts: 0 (a program that records nothing) and then a few
    counts = draw(S.event_counts(a + b, st.sampled_from([3, 0, 1, 2, *range(4, MAX_COUNT + 1)]), MAX_COUNT)
                  .map(lambda c: [0, *c[1:]]), label="counts")
    return {"programs_a": a, "programs_b": b, "counts": counts, "offset": draw(S.rank_offset(world_size),
                                                                                label="offset"),
            "base": draw(S.payload(), label="base")}


def setup(rank, p):
    rank.buffer("buf", len(p["counts"]), "int32")
    rank.buffer("counts", len(p["counts"]), "int32", fill=p["counts"])


def launch(kernel, rank, p):
    b = rank.buffers
    target = (rank.rank + p["offset"]) % rank.world_size
    a, total = p["programs_a"], p["programs_a"] + p["programs_b"]
    kernel[(a,)](rank.ctx, b["buf"], b["counts"], 0, target, p["base"], **rank.world_constexprs)
    if rank.shmem.device.type == "cuda" and torch.cuda.is_available():  # a second stream: both record at once
        side = torch.cuda.Stream(rank.shmem.device)
        side.wait_stream(torch.cuda.current_stream(rank.shmem.device))  # the buffers are ready on both
        with torch.cuda.stream(side):
            kernel[(total,)](rank.ctx, b["buf"], b["counts"], a, target, p["base"], **rank.world_constexprs)
        torch.cuda.current_stream(rank.shmem.device).wait_stream(side)
    else:
        kernel[(total,)](rank.ctx, b["buf"], b["counts"], a, target, p["base"], **rank.world_constexprs)


def model(p, world_size, settings: ExampleSettings):
    chunk = settings.chunk  # the trace chunk of the example (the harness's, not a param)
    events, claimed, memory = {}, {}, {}
    for r in range(world_size):
        t = (r + p["offset"]) % world_size
        events[r] = [block_event("user", "instant", pid=pid, pid_n=i, rank=r, target=t, buffer="buf", heap_rank=r,
                                 lanes=[pid], dtype="int32", payload=p["base"] + 1000 * pid + i)
                     for pid, n in enumerate(p["counts"]) for i in range(n)]
        claimed[r] = sum(claimed_slots(n, chunk) for n in p["counts"])
        memory[r] = {"buf": [0] * len(p["counts"])}
    return Model(events, memory, claimed=claimed)


SCENARIO = Scenario(
    name="chunked_claims",
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
