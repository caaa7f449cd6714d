"""Every call shape of the family (``conformance.kit.call_shapes``): each site's trace call, on every num_warps and
element size, on grids of 1, 2 and 3 axes, with pid_m/pid_n from any axis or an expression, then a long loop.

Model, per rank r; launch j of LAUNCHES (num_warps, dtype) on grid G_j with axes(j) = 1 + (j + axes_shift) % 3
axes; program p (linear over the grid, axis ids a) at origin o = origins[p]; site s runs in launch
(s + shift) % 4, in every program with on[s] and always in program 0:
    event  site s: name event(s), kind record(s) (nested: the range, then a user instant at buf[o]), pid p,
           pid_m / pid_n = source (s + m_shift) % 5 / (s + 2 + n_shift) % 5 of (a0, a1, a2, p, (a0 - a1) 5 +
           a2 3 - 1), target (r + offsets[s]) % R, address = the lowest active element of buf_<dtype> on r (lanes
           and mask per call_shapes.offsets/active, flag = (shape(s) + flag_shift) % 2), size = active x bytes,
           payload pays[s] if the site has one, else 0
    loop   launch loop_launch, program loop_pid, i < reps: compute range (i even) / wait instant (i odd) at
           buf[o + i], pid_m p, pid_n i, target of site 0, size 1 x bytes, payload loop_payload + i
    memory unchanged (only trace calls)
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import call_shapes as C
from conformance.kit import call_shapes_constexpr as K
from conformance.kit import strategies as S
from conformance.kit.call_shapes_device import (
    gluon_mask,
    gluon_offsets,
    gluon_pid_sources,
    gluon_record,
    triton_mask,
    triton_offsets,
    triton_pid_sources,
    triton_record,
)
from conformance.kit.helpers import block_event
from conformance.kit.scenario import Scenario, first_sentence
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.tracing.events import EVENT_NAMES

RUN_TIME = ["part", "step", "ld", "loop_pid", "loop_reps"]


@triton.jit(do_not_specialize=RUN_TIME)
def triton_kernel(ctx_t, buf, bits, gather, origins, plan, pays, part, step, ld, loop_pid, loop_reps):
    ctx = DeviceContext.initialize(ctx_t, tracing=True)
    sources = triton_pid_sources()
    pid = sources[3]
    others = (pid != 0).to(tl.int32)  # gate 1: program 0 only; gate 2: every program
    origin = tl.load(origins + pid)
    for s in tl.static_range(K.NUM_SITES):
        row = plan + s * K.PLAN_FIELDS
        if tl.load(row + part) > others:
            offs = triton_offsets(C.site_shape(s), C.site_layout(s), origin, step, ld, gather)
            mask = None
            if C.site_mask(s) != K.NONE:
                mask = triton_mask(C.site_shape(s), C.site_layout(s), C.site_mask(s), offs, origin, bits,
                                  tl.load(row + K.PLAN_FLAG))
            payload = None
            if C.site_has_payload(s):
                payload = tl.load(pays + s)
            triton_record(ctx, C.site_record(s), C.site_event(s), tl.load(row + K.PLAN_TARGET), buf + offs,
                         sources[C.site_pid_m(s)], sources[C.site_pid_n(s)], mask, payload, buf + origin)
    if pid == loop_pid:
        target = tl.load(plan + K.PLAN_TARGET)
        base = tl.load(pays + K.NUM_SITES)
        i = loop_reps * 0
        while i < loop_reps:
            if i % 2 == 0:
                h = ctx.tracing.record_event_start(TraceEvent().compute, target, buf + origin + i, pid, i,
                                                   payload=base + i)
                ctx.tracing.record_event_end(h)
            else:
                ctx.tracing.record_event(TraceEvent().wait, target, buf + origin + i, pid, i, payload=base + i)
            i += 1


@gluon.jit(do_not_specialize=RUN_TIME)
def gluon_kernel(ctx_t, buf, bits, gather, origins, plan, pays, part, step, ld, loop_pid, loop_reps):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True)
    sources = gluon_pid_sources()
    pid = sources[3]
    others = (pid != 0).to(gl.int32)  # gate 1: program 0 only; gate 2: every program
    origin = gl.load(origins + pid)
    for s in gl.static_range(K.NUM_SITES):
        row = plan + s * K.PLAN_FIELDS
        if gl.load(row + part) > others:
            offs = gluon_offsets(C.site_shape(s), C.site_layout(s), origin, step, ld, gather)
            mask = None
            if C.site_mask(s) != K.NONE:
                mask = gluon_mask(C.site_shape(s), C.site_layout(s), C.site_mask(s), offs, origin, bits,
                                  gl.load(row + K.PLAN_FLAG))
            payload = None
            if C.site_has_payload(s):
                payload = gl.load(pays + s)
            gluon_record(ctx, C.site_record(s), C.site_event(s), gl.load(row + K.PLAN_TARGET), buf + offs,
                         sources[C.site_pid_m(s)], sources[C.site_pid_n(s)], mask, payload, buf + origin)
    if pid == loop_pid:
        target = gl.load(plan + K.PLAN_TARGET)
        base = gl.load(pays + K.NUM_SITES)
        i = loop_reps * 0
        while i < loop_reps:
            if i % 2 == 0:
                h = ctx.tracing.record_event_start(TraceEvent().compute, target, buf + origin + i, pid, i,
                                                   payload=base + i)
                ctx.tracing.record_event_end(h)
            else:
                ctx.tracing.record_event(TraceEvent().wait, target, buf + origin + i, pid, i, payload=base + i)
            i += 1


MAX_PROGRAMS = 3 * 3 * 2
INT64 = (-(2**63), 2**63 - 1)
LOOP_REPS = (64, 80)


def _extent(largest: int):
    """A grid extent in 1 .. largest whose simplest draw is 2 (several programs), then 1, then the rest."""
    return st.sampled_from([2, 1, *range(3, largest + 1)])


def _alternating(length: int):
    """Bits whose simplest draw alternates 0, 1, ... (half the sites in the programs other than 0)."""
    return st.lists(st.integers(0, 1), min_size=length, max_size=length).map(
        lambda bits: [b ^ (i % 2) for i, b in enumerate(bits)])


@st.composite
def params(draw, world_size):
    sites = C.NUM_SITES
    grids = [[draw(_extent(3), label="grid0"), draw(_extent(3), label="grid1"), draw(_extent(2), label="grid2")]
             for _ in C.LAUNCHES]
    p = {
        "grids": grids,
        "axes_shift": draw(st.integers(0, 2), label="axes_shift"),
        "shift": draw(st.integers(0, len(C.LAUNCHES) - 1), label="shift"),
        "origins": draw(st.lists(st.integers(0, 255), min_size=MAX_PROGRAMS, max_size=MAX_PROGRAMS), label="origins"),
        "step": draw(st.integers(0, 3), label="step"),
        "ld": draw(st.integers(C.BN, 2 * C.BN), label="ld"),
        "gather": draw(st.lists(st.integers(0, 2 * C.B1 - 1), min_size=C.B1, max_size=C.B1), label="gather"),
        "bits": draw(S.mask_bits(C.BUFFER), label="bits"),
        "on": draw(_alternating(sites), label="on"),
        "offsets": draw(st.lists(S.rank_offset(world_size), min_size=sites, max_size=sites), label="offsets"),
        "flag_shift": draw(st.integers(0, 1), label="flag_shift"),
        # the first three payloads are the int64 extremes and -1; the others anything in int64
        "pays": [*INT64, -1] + draw(st.lists(st.integers(*INT64), min_size=sites - 3, max_size=sites - 3),
                                    label="pays"),
        "loop_launch": draw(st.integers(0, len(C.LAUNCHES) - 1), label="loop_launch"),
        "loop_reps": draw(st.integers(*LOOP_REPS), label="loop_reps"),
        "loop_payload": draw(st.integers(INT64[0], INT64[1] - LOOP_REPS[1]), label="loop_payload"),
    }
    programs = _programs(p, p["loop_launch"])
    p["loop_pid"] = draw(st.integers(0, programs - 1), label="loop_pid")
    return p


def _grid(p, j: int) -> tuple[int, int, int]:
    """Launch j's grid as three extents (axes past its axis count have extent 1)."""
    axes = 1 + (j + p["axes_shift"]) % 3
    g = p["grids"][j]
    return tuple(g[a] if a < axes else 1 for a in range(3))


def _programs(p, j: int) -> int:
    g = _grid(p, j)
    return g[0] * g[1] * g[2]


def _part(p, s: int) -> int:
    return (s + p["shift"]) % len(C.LAUNCHES)


def _plan(p, rank: int, world_size: int) -> list[int]:
    rows = []
    for s, (shape, *_) in enumerate(C.SITES):
        row = [0] * C.PLAN_FIELDS
        row[_part(p, s)] = 2 if p["on"][s] else 1
        row[C.PLAN_TARGET] = (rank + p["offsets"][s]) % world_size
        row[C.PLAN_FLAG] = (shape + p["flag_shift"]) % 2
        rows += row
    return rows


def setup(rank, p):
    for _, dtype in C.LAUNCHES:
        rank.buffer(f"buf_{dtype}", C.BUFFER, dtype)
    rank.buffer("bits", C.BUFFER, "int8", fill=p["bits"])
    rank.buffer("gather", C.B1, "int32", fill=p["gather"])
    rank.buffer("origins", MAX_PROGRAMS, "int32", fill=p["origins"])
    rank.buffer("plan", C.NUM_SITES * C.PLAN_FIELDS, "int32", fill=_plan(p, rank.rank, rank.world_size))
    rank.buffer("pays", C.NUM_SITES + 1, "int64", fill=p["pays"] + [p["loop_payload"]])


def launch(kernel, rank, p):
    b = rank.buffers
    for j, (num_warps, dtype) in enumerate(C.LAUNCHES):
        grid = _grid(p, j)[: 1 + (j + p["axes_shift"]) % 3]
        loop_pid = p["loop_pid"] if j == p["loop_launch"] else -1
        kernel[grid](rank.ctx, b[f"buf_{dtype}"], b["bits"], b["gather"], b["origins"], b["plan"], b["pays"], j,
                     p["step"], p["ld"], loop_pid, p["loop_reps"], **rank.world_constexprs, num_warps=num_warps)


def _site_events(p, s: int, rank: int, world_size: int, dtype: str, grid, axes, pid: int):
    shape, mask, _, record, has_payload, event_id, _, _ = C.SITES[s]
    origin = p["origins"][pid]
    lanes = C.offsets(shape, origin, p["step"], p["ld"], p["gather"])
    on = C.active(shape, mask, lanes, origin, p["bits"], (shape + p["flag_shift"]) % 2)
    common = {"pid": pid, "rank": rank, "target": (rank + p["offsets"][s]) % world_size, "buffer": f"buf_{dtype}",
              "heap_rank": rank, "dtype": dtype,
              "pid_m": C.pid_source(C.SITES[s][6], axes, grid), "pid_n": C.pid_source(C.SITES[s][7], axes, grid)}
    name = EVENT_NAMES[event_id]
    kind = "instant" if record == C.INSTANT else "range"
    events = [block_event(name, kind, lanes=[e for e, a in zip(lanes, on, strict=True) if a],
                          payload=p["pays"][s] if has_payload else 0, **common)]
    if record == C.NESTED:
        events.append(block_event("user", "instant", lanes=[origin], **common))
    return events


def model(p, world_size):
    events = {}
    for r in range(world_size):
        evs = []
        for j, (_, dtype) in enumerate(C.LAUNCHES):
            grid = _grid(p, j)
            for a2 in range(grid[2]):
                for a1 in range(grid[1]):
                    for a0 in range(grid[0]):
                        pid = a0 + a1 * grid[0] + a2 * grid[0] * grid[1]
                        for s in range(C.NUM_SITES):
                            if _part(p, s) == j and (pid == 0 or p["on"][s]):
                                evs += _site_events(p, s, r, world_size, dtype, grid, (a0, a1, a2), pid)
                        if j == p["loop_launch"] and pid == p["loop_pid"]:
                            evs += _loop_events(p, r, world_size, dtype, pid)
        events[r] = evs
    return Model(events, {})


def _loop_events(p, rank: int, world_size: int, dtype: str, pid: int):
    origin = p["origins"][pid]
    target = (rank + p["offsets"][0]) % world_size
    return [block_event("compute" if i % 2 == 0 else "wait", "range" if i % 2 == 0 else "instant", pid=pid,
                        pid_m=pid, pid_n=i, rank=rank, target=target, buffer=f"buf_{dtype}", heap_rank=rank,
                        lanes=[origin + i], dtype=dtype, payload=p["loop_payload"] + i)
            for i in range(p["loop_reps"])]


SCENARIO = Scenario(
    name="call_shapes",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
    max_events=4096,
)
