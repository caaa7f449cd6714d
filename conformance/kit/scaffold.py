"""``python -m conformance new NAME``: write a paired-scenario skeleton that runs and fails helpfully."""

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


def scaffold(name: str, folder: Path | None = None) -> int:
    """Write ``conformance/scenarios/<name>.py``; returns a process exit code.

    ``name`` must be a module name: a lowercase Python identifier, no keyword, not private (``_name``: those are the
    scenarios' shared modules), at most ``MAX_NAME_LENGTH`` characters."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or keyword.iskeyword(name):
        return _refuse(f"scenario name {name!r}: expected a lowercase Python identifier such as my_scenario")
    if len(name) > MAX_NAME_LENGTH:
        return _refuse(f"scenario name {name!r}: {len(name)} characters; expected at most {MAX_NAME_LENGTH}")
    folder = folder or Path(__file__).resolve().parent.parent / "scenarios"
    path = folder / f"{name}.py"
    if path.exists():
        return _refuse(f"scenario name {name!r}: {path} already exists; expected a new name (or edit that file)")
    try:
        path.write_text(TEMPLATE.format(name=name))
    except OSError as e:
        return _refuse(f"cannot write {path} ({e.strerror})")
    print(f"wrote {path}\nnext: fill in model() and the docstring, then run:")
    print(f"    python -m conformance run --scenario {name}")
    return 0


def _refuse(message: str) -> int:
    """Bad input to ``new``: one line on stderr, exit code 2."""
    print(f"python -m conformance new: {message}", file=sys.stderr)
    return 2
