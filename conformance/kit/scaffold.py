"""``python -m conformance new NAME``: write a paired-scenario skeleton that runs and fails helpfully.

Two templates (``--template``): ``store`` (``TEMPLATE``: a masked block op, after ``conformance/scenarios/store.py``)
and ``waiting`` (``WAITING_TEMPLATE``: a kernel whose programs wait on flags their peers' kernels set, after
``conformance/scenarios/fused_gather_compute.py``).
"""

from __future__ import annotations

import keyword
import re
import sys
from pathlib import Path

MAX_NAME_LENGTH = 48  # a scenario name is a module name, part of every case id and trace file name

TEMPLATE = '''"""TODO: one sentence saying what {name} exercises (``python -m conformance list`` shows it).

Start from conformance/scenarios/store.py, a scenario that follows every rule of CONTRIBUTING.md, as this one does:
its params draw TRACE_OPS (auto-tracing on or off), both kernels take it and initialize with trace_ops=TRACE_OPS.

Model (pseudo-code): TODO, e.g.
    per rank r writing to t = (r + offset) % R, program p over lanes L(p) = {{j in block p: j < n, bits_r[j]}}:
    event  store range: pid p, target t, address = dst[min L(p)] on r, size |L(p)| x bytes; after it, with
           TRACE_OPS, the store's own range (the same target and lanes, payload 0)
    memory rank q: dst[j] = ...
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.kit import strategies as S
from conformance.kit.helpers import launch_blocks, peer, setup_masked
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "target"])
def triton_kernel(ctx_t, src, dst, bits, n, target, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    # ctx.rank, ctx.world_size: read at run time; with TRACE_OPS on, every op also records its own range
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().store, target, dst + offs, pid, 0, mask=mask)
    ctx.store(dst + offs, tl.load(src + offs, mask=mask), target, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "target"])
def gluon_kernel(ctx_t, src, dst, bits, n, target, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().store, target, dst + offs, pid, 0, mask=mask)
    ctx.store(dst + offs, gl.load(src + offs, mask=mask), target, mask=mask)
    ctx.tracing.record_event_end(h)


def params(world_size):
    # n, BLOCK, dtype, TRACE_OPS, offset and each rank's lane mask, every draw labelled with its key
    return S.masked_block(world_size, payload=False)


def setup(rank, p):
    setup_masked(rank, p, "dst", source=True)  # src (each rank's own values), dst (zeros), bits (the lane mask)


def launch(kernel, rank, p):
    b = rank.buffers  # launch_blocks passes the world constexprs, TRACE_OPS and BLOCK
    launch_blocks(kernel, rank, p, b["src"], b["dst"], b["bits"], p["n"], peer(rank, p))


def model(p, world_size):
    raise NotImplementedError(
        "conformance/scenarios/{name}.py: model() is not written yet. Return Model(events, memory) "
        "(conformance.check.model): events[r] = the Event list rank r must record "
        "(conformance.kit.helpers.per_program_events builds one block event per program, then the op's own ranges "
        "when p['TRACE_OPS'] is on), memory[r] = {{buffer: final values}} (helpers.transfer_memory). "
        "See conformance/scenarios/store.py."
    )


SCENARIO = Scenario(
    name="{name}",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
'''


WAITING_TEMPLATE = '''\"\"\"TODO: one sentence saying what {name} exercises (``python -m conformance list`` shows it).

A kernel that waits on its peers. Start from conformance/scenarios/fused_gather_compute.py, which follows every rule
of CONTRIBUTING.md for such a kernel, as this one does: at most WAITING_PROGRAMS blocks (waiting_element_count), so
every program of every rank is resident at once on a GPU; a program waits only on programs that raise their flags
before they wait; each spin is bounded by spin_limit (a run-time arg: a lost flag is a
divergence, not a hang); waits_on_peers=True (its ranks' kernels must run at once). TRACE_OPS stays drawn: the wait
polls with plain atomics (tl.atomic_cas / gl.atomic_cas, never traced: how often it polls depends on timing), then
one traced acquire (ctx.atomic_cas) inside the wait range, whose own range the model nests in it (model.inside).

Model (pseudo-code): TODO, e.g.
    per rank r, program p over lanes B(p) = {{j in block p: j < n}}, P programs, step i with peer s = order[r][i]:
    events with TRACE_OPS, per step i with t = order[r][i]: atomic_xchg's own range: target t, ready[r P + p] on r
           per step i: wait range: target s, address ready[s P + p] on r, 4 bytes, payload i; then (TRACE_OPS) the
           acquire's own atomic_cas range inside it: target r, the same flag
           fetch range: target s, address src[min B(p)] on r, |B(p)| x 4 bytes, payload i (-1: the flag never
           came); then (TRACE_OPS) load's own range inside it: the same, payload 0
    memory rank r: out[j] = sum over s of src_s[j] for j < n, 0 elsewhere; ready = [1] * (R P)
\"\"\"

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.kit import strategies as S
from conformance.kit.helpers import cdiv, spin_limit
from conformance.kit.scenario import Scenario, first_sentence
from conformance.scenarios._collectives import setup_order
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "limit"])
def triton_kernel(ctx_t, src, out, ready, order, n, limit, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i = n * 0
    while i < ctx.world_size:  # raise this program's flag on every rank first: src was written before the launch
        ctx.atomic_xchg(ready + ctx.rank * programs + pid, 1, tl.load(order + i), sem="release", scope="sys")
        i += 1
    acc = tl.zeros([BLOCK], dtype=src.dtype.element_ty)
    i = n * 0
    while i < ctx.world_size:
        s = tl.load(order + i)
        flag = ready + s * programs + pid
        h = ctx.tracing.record_event_start(TraceEvent().wait, s, flag, pid, 0, payload=i)
        seen = tl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")  # a poll: a plain atomic, never traced
        spins = limit * 0
        while (seen != 1) & (spins < limit):
            seen = tl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")
            spins += 1
        seen = ctx.atomic_cas(flag, 1, 1, ctx.rank, sem="acquire", scope="sys")  # the acquire: one op, traced
        ctx.tracing.record_event_end(h)
        tl.debug_barrier()  # no thread reads the peer's block before the flag is seen
        h = ctx.tracing.record_event_start(TraceEvent().fetch, s, src + offs, pid, 0, mask=mask,
                                           payload=tl.where(seen == 1, i, -1))
        acc += ctx.load(src + offs, s, mask=mask, other=0, volatile=True)
        ctx.tracing.record_event_end(h)
        i += 1
    tl.store(out + offs, acc, mask=mask)


@gluon.jit(do_not_specialize=["n", "limit"])
def gluon_kernel(ctx_t, src, out, ready, order, n, limit, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    i = n * 0
    while i < ctx.num_ranks:  # raise this program's flag on every rank first: src was written before the launch
        ctx.atomic_xchg(ready + ctx.cur_rank * programs + pid, 1, gl.load(order + i), sem="release", scope="sys")
        i += 1
    acc = gl.zeros([BLOCK], dtype=src.dtype.element_ty, layout=layout)
    i = n * 0
    while i < ctx.num_ranks:
        s = gl.load(order + i)
        flag = ready + s * programs + pid
        h = ctx.tracing.record_event_start(TraceEvent().wait, s, flag, pid, 0, payload=i)
        seen = gl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")  # a poll: a plain atomic, never traced
        spins = limit * 0
        while (seen != 1) & (spins < limit):
            seen = gl.atomic_cas(flag, 1, 1, sem="relaxed", scope="sys")
            spins += 1
        seen = ctx.atomic_cas(flag, 1, 1, ctx.cur_rank, sem="acquire", scope="sys")  # the acquire: one op, traced
        ctx.tracing.record_event_end(h)
        gl.thread_barrier()  # no thread reads the peer's block before the flag is seen
        h = ctx.tracing.record_event_start(TraceEvent().fetch, s, src + offs, pid, 0, mask=mask,
                                           payload=gl.where(seen == 1, i, -1))
        acc += ctx.load(src + offs, s, mask=mask, other=0, volatile=True)
        ctx.tracing.record_event_end(h)
        i += 1
    gl.store(out + offs, acc, mask=mask)


@st.composite
def params(draw, world_size):
    block = draw(S.block_size(), label="BLOCK")  # the cas is on one flag, not a block: the large block is fine
    return {{
        "n": draw(S.waiting_element_count(block), label="n"),  # at most WAITING_PROGRAMS programs
        "BLOCK": block,
        "TRACE_OPS": draw(S.trace_ops(), label="TRACE_OPS"),
        "order": draw(S.peer_orders(world_size), label="order"),  # each rank's loop over peers, drawn
    }}


def setup(rank, p):
    length = cdiv(p["n"], p["BLOCK"]) * p["BLOCK"]
    rank.buffer("src", length, "int32", fill=[rank.rank * length + j + 1 for j in range(length)])
    rank.buffer("out", length, "int32")
    rank.buffer("ready", rank.world_size * cdiv(p["n"], p["BLOCK"]), "int32")  # one flag per rank and program
    setup_order(rank, p)


def launch(kernel, rank, p):
    b = rank.buffers
    kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, b["src"], b["out"], b["ready"], b["order"], p["n"],
                                        spin_limit(rank), **rank.world_constexprs, TRACE_OPS=p["TRACE_OPS"],
                                        BLOCK=p["BLOCK"])


def model(p, world_size):
    raise NotImplementedError(
        "conformance/scenarios/{name}.py: model() is not written yet. Return Model(events, memory) "
        "(conformance.check.model): events[r] = the Event list rank r must record (conformance.kit.helpers.block_event "
        "for the wait and fetch ranges, conformance.kit.auto_ops.call_events for each op's own range when "
        "p['TRACE_OPS'] is on, nested with conformance.check.model.inside), memory[r] = {{buffer: final values}}. "
        "See conformance/scenarios/fused_gather_compute.py."
    )


SCENARIO = Scenario(
    name="{name}",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
    waits_on_peers=True,
)
'''
TEMPLATES = {"store": TEMPLATE, "waiting": WAITING_TEMPLATE}  # --template: a masked block op, a kernel that waits


def scaffold(name: str, folder: Path | None = None, template: str = "store") -> int:
    """Write ``conformance/scenarios/<name>.py`` from ``TEMPLATES[template]``; returns a process exit code.

    ``name`` must be a module name: a lowercase Python identifier, no keyword, not private (``_name``: those are the
    scenarios' shared modules), at most ``MAX_NAME_LENGTH`` characters."""
    if template not in TEMPLATES:
        return _refuse(f"template {template!r}: expected one of {', '.join(TEMPLATES)}")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or keyword.iskeyword(name):
        return _refuse(f"scenario name {name!r}: expected a lowercase Python identifier such as my_scenario")
    if len(name) > MAX_NAME_LENGTH:
        return _refuse(f"scenario name {name!r}: {len(name)} characters; expected at most {MAX_NAME_LENGTH}")
    folder = folder or Path(__file__).resolve().parent.parent / "scenarios"
    path = folder / f"{name}.py"
    if path.exists():
        return _refuse(f"scenario name {name!r}: {path} already exists; expected a new name (or edit that file)")
    try:
        path.write_text(TEMPLATES[template].format(name=name))
    except OSError as e:
        return _refuse(f"cannot write {path} ({e.strerror})")
    print(f"wrote {path}\nnext: fill in model() and the docstring, then run:")
    print(f"    python -m conformance run --scenario {name}")
    return 0


def _refuse(message: str) -> int:
    """Bad input to ``new``: one line on stderr, exit code 2."""
    print(f"python -m conformance new: {message}", file=sys.stderr)
    return 2
