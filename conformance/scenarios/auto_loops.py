"""Long run-time loops of auto-traced ops: each program stores to (or loads from) its peer's ``buf[pid]`` once per
iteration, its trip count drawn (0 included), every call recording its own range.

The loops that once failed to finish (``docs/design.md``, "How the two implementations keep them") with the records
made by ops instead of brackets: at the GPU scale the trip counts reach thousands (a program's chunk refills many
times), ``num_warps`` 1 to 16, grids of several waves, so the drawn scale covers what
``tests/gpu/test_traced_loops.py``'s store and load loops
check. The op (``OP``: store or load) is a drawn compile-time choice; auto-tracing (``TRACE_OPS``) is drawn as
everywhere: off, the loops record nothing and each program still claims its first chunk.
Model, per rank r, target t = (r + offset) % R, program p, iteration i < counts[p]:
    events   (TRACE_OPS) the op's own range: name OP, pid p, pid_m p, pid_n 0, target t, address buf[p] on r, one
             element's bytes (a scalar pointer)
    claimed  chunk x max(1, ceil(counts[p] / chunk)) per program with TRACE_OPS, chunk without
    memory   store: rank q's buf[p] = base + 1000 p + counts[p] - 1 (its one writer's last value; the writer r of q has
             t = q), or its fill where counts[p] = 0; out[p] = 0. load: buf unchanged (rank q's fill: 1000 q + p);
             rank r's out[p] = counts[p] (1000 t + p), the sum of what its loads returned
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.auto_ops import call_events
from conformance.kit.example_settings import ExampleSettings
from conformance.kit.helpers import cast, claimed_slots
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext
from iris.experimental.iris_gluon import IrisDeviceCtx

RUN_TIME = ["target", "base"]
OPS = ("store", "load")
MAX_PROGRAMS = 8
MAX_COUNT = 12


@triton.jit(do_not_specialize=RUN_TIME)
def triton_kernel(ctx_t, buf, out, counts, target, base, OP: tl.constexpr, TRACE_OPS: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    n = tl.load(counts + pid)
    acc = tl.load(out + pid) * 0
    i = n * 0
    while i < n:
        if OP == "store":
            ctx.store(buf + pid, (base + 1000 * pid + i).to(buf.dtype.element_ty), target)
        else:
            acc += ctx.load(buf + pid, target)
        i += 1
    tl.store(out + pid, acc)


@gluon.jit(do_not_specialize=RUN_TIME)
def gluon_kernel(ctx_t, buf, out, counts, target, base, OP: gl.constexpr, TRACE_OPS: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = gl.program_id(0)
    n = gl.load(counts + pid)
    acc = gl.load(out + pid) * 0
    i = n * 0
    while i < n:
        if OP == "store":
            ctx.store(buf + pid, (base + 1000 * pid + i).to(buf.dtype.element_ty), target)
        else:
            acc += ctx.load(buf + pid, target)
        i += 1
    gl.store(out + pid, acc)


@st.composite
def params(draw, world_size):
    programs = draw(S.grid_size(MAX_PROGRAMS), label="programs")
    # the simplest counts: 0 (a program that records nothing) and then a few, as in chunked_claims
    counts = draw(S.event_counts(programs, st.sampled_from([3, 0, 1, 2, *range(4, MAX_COUNT + 1)]), MAX_COUNT)
                  .map(lambda c: [0, *c[1:]]), label="counts")
    return {"programs": programs, "counts": counts, "OP": draw(st.sampled_from(OPS), label="OP"),
            "dtype": draw(S.dtype_name(("int32", "int64")), label="dtype"),
            "TRACE_OPS": draw(S.trace_ops(), label="TRACE_OPS"),
            "offset": draw(S.rank_offset(world_size), label="offset"), "base": draw(S.payload(), label="base")}


def _fill(rank: int, programs: int) -> list[int]:
    return [1000 * rank + p for p in range(programs)]


def setup(rank, p):
    rank.buffer("buf", p["programs"], p["dtype"], fill=_fill(rank.rank, p["programs"]))
    rank.buffer("out", p["programs"], p["dtype"])
    rank.buffer("counts", p["programs"], "int32", fill=p["counts"])


def launch(kernel, rank, p):
    b = rank.buffers
    target = (rank.rank + p["offset"]) % rank.world_size
    kernel[(p["programs"],)](rank.ctx, b["buf"], b["out"], b["counts"], target, p["base"], **rank.world_constexprs,
                             OP=p["OP"], TRACE_OPS=p["TRACE_OPS"])


def model(p, world_size, settings: ExampleSettings):
    chunk, counts, programs = settings.chunk, p["counts"], p["programs"]
    events, claimed, memory = {}, {}, {}
    for r in range(world_size):
        t = (r + p["offset"]) % world_size
        events[r] = [e for pid, n in enumerate(counts) for _ in range(n)
                     for e in call_events(p, p["OP"], rank=r, pid=pid, target=t, buffer="buf", heap_rank=r,
                                          lanes=[pid])]
        claimed[r] = sum(claimed_slots(n if p["TRACE_OPS"] else 0, chunk) for n in counts)
        buf = _fill(r, programs)
        if p["OP"] == "store":
            buf = [p["base"] + 1000 * pid + n - 1 if n else buf[pid] for pid, n in enumerate(counts)]
            out = [0] * programs
        else:
            out = [n * (1000 * t + pid) for pid, n in enumerate(counts)]
        memory[r] = {"buf": cast(buf, p["dtype"]), "out": cast(out, p["dtype"])}
    return Model(events, memory, claimed=claimed)


SCENARIO = Scenario(
    name="auto_loops",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
