"""``python -m conformance new NAME``: write a paired-scenario skeleton that runs and fails helpfully."""

from __future__ import annotations

import keyword
import re
import sys
from pathlib import Path

MAX_NAME_LENGTH = 48  # a scenario name is a module name, part of every case id and trace file name

TEMPLATE = '''"""TODO: one line saying what {name} exercises.

Model (pseudo-code): TODO, e.g.
    per rank r, program p: event <name> range, target (r + offset) % R, address buf[p * BLOCK], size BLOCK x 4
    memory rank q: buf[j] = ...
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.kit import strategies as S
from conformance.kit.helpers import cdiv
from conformance.check.model import Model
from conformance.kit.scenario import Scenario
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size


@triton.jit(do_not_specialize=["n", "target"])
def triton_kernel(ctx_t, buf, n, target, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)  # ctx.rank, ctx.world_size: read at run time
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, mask=mask)
    ctx.store(buf + offs, offs, target, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "target"])
def gluon_kernel(ctx_t, buf, n, target, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    h = ctx.tracing.record_event_start(TraceEvent().store, target, buf + offs, pid, 0, mask=mask)
    ctx.store(buf + offs, offs, target, mask=mask)
    ctx.tracing.record_event_end(h)


@st.composite
def params(draw, world_size):
    return {{
        "n": draw(S.element_count(), label="n"),
        "BLOCK": draw(S.block_size(), label="BLOCK"),
        "offset": draw(S.rank_offset(world_size), label="offset"),
    }}


def setup(rank, p):
    rank.buffer("buf", cdiv(p["n"], p["BLOCK"]) * p["BLOCK"], "int32")


def launch(kernel, rank, p):
    target = (rank.rank + p["offset"]) % rank.world_size
    kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, rank.buffers["buf"], p["n"], target,
                                        **rank.world_constexprs, BLOCK=p["BLOCK"], num_warps=4)


def model(p, world_size):
    raise NotImplementedError(
        "conformance/scenarios/{name}.py: model() is not written yet. Return Model(events, memory): "
        "events[r] = the Event list rank r must record (conformance.kit.helpers.block_event builds block events), "
        "memory[r] = {{buffer: final values}}. See conformance/scenarios/tracing_1d_address.py."
    )


SCENARIO = Scenario(
    name="{name}",
    description=__doc__.splitlines()[0],
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
