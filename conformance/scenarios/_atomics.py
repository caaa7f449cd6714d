"""Shared kernels, parameters and model of the nine atomic scenarios: ``atomic_scenario(op) -> Scenario``.

Every rank r applies ``op`` to every rank t (one launch per target, t = 0 .. R-1) on a masked block of an
int32/int64 heap buffer ``buf`` (every rank starts with the same ``init``), with its own values ``vals[r]``,
tracing one range per program around the atomic (name = op, target t, payload t, address = the local block).

    active(r, j)  = j < n and bits[r][j]             (commutative ops: add sub xor and or min max)
    active(r, j) &= j % R == r                        (xchg, cas: one writer per element, so the result is exact)
    event         op range: pid p, target t, payload t, lanes {j in block p : active(r, j)} of buf on r; then, with
                  TRACE_OPS (drawn), the op's own range (auto_ops.call_events): target t, the same lanes (cas: every
                  lane of block p, it has no mask), payload 0
    buf on t      commutative: fold(op, init[j], vals[r][j] for every r with active(r, j))
                  xchg: vals[o][j] where active(o, j) for owner o = j % R, else init[j]
                  cas:  vals[o][j] where active(o, j) and cmp[o][j] == init[j], else init[j]
    old[t] on r   xchg/cas: init[j] where active(r, j) (the only writer sees the initial value), else OLD_FILL;
                  commutative ops never write ``old`` (old values depend on the order of the ranks)

cas has no mask: inactive lanes compare and swap with cmp == val, which leaves memory unchanged.
xchg, cas: every ``vals[r][j]`` differs from ``init[j]`` (a drawn value equal to it has its lowest bit flipped), so
each exclusive write shows in memory, the simplest example (all zeros) included.
Every example draws the memory semantics and scope: the results above must hold for each of them. They are
compile-time strings in the API; the kernels take their index (``ordering``) at run time and call the op with the
drawn pair out of one branch per pair, so one compile serves all eight (each new compile costs far more than the
example).
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.auto_ops import call_events
from conformance.kit.helpers import active_lanes, block_event, cast, cdiv
from conformance.kit.patterns import differing
from conformance.kit.scenario import Scenario
from iris import DeviceContext
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size
from iris.tracing.events import EVENT_IDS

OPS = ("atomic_add", "atomic_sub", "atomic_cas", "atomic_xchg", "atomic_xor", "atomic_and", "atomic_or",
       "atomic_min", "atomic_max")
EXCLUSIVE = ("atomic_xchg", "atomic_cas")  # not commutative: each element gets exactly one writer
OLD_FILL = 0x5A5A5A5A  # what ``old`` holds where nothing was written


@triton.constexpr_function
def _event_id(op):
    return EVENT_IDS[op]


@triton.constexpr_function
def _sem(k):
    return S.MEMORY_SEMANTICS[k // len(S.MEMORY_SCOPES)]


@triton.constexpr_function
def _scope(k):
    return S.MEMORY_SCOPES[k % len(S.MEMORY_SCOPES)]


ORDERINGS = tl.constexpr(len(S.MEMORY_SEMANTICS) * len(S.MEMORY_SCOPES))


def ordering(sem: str, scope: str) -> int:
    """The run-time index of (sem, scope) that the kernels turn back into the API's compile-time strings."""
    return S.MEMORY_SEMANTICS.index(sem) * len(S.MEMORY_SCOPES) + S.MEMORY_SCOPES.index(scope)


@triton.jit
def _triton_atomic(ctx, OP: tl.constexpr, SEM: tl.constexpr, SCOPE: tl.constexpr, buf, cmps, old, offs, val, mask,
                   target):
    if OP == "atomic_add":
        ctx.atomic_add(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_sub":
        ctx.atomic_sub(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_xor":
        ctx.atomic_xor(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_and":
        ctx.atomic_and(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_or":
        ctx.atomic_or(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_min":
        ctx.atomic_min(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_max":
        ctx.atomic_max(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_xchg":
        prev = ctx.atomic_xchg(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
        tl.store(old + offs, prev, mask=mask)
    else:
        tl.static_assert(OP == "atomic_cas", "unknown OP")
        cmp = tl.where(mask, tl.load(cmps + offs), val)  # inactive lanes: cmp == val changes nothing
        prev = ctx.atomic_cas(buf + offs, cmp, val, target, sem=SEM, scope=SCOPE)
        tl.store(old + offs, prev, mask=mask)


@triton.jit(do_not_specialize=["n", "target", "ordering"])
def triton_kernel(ctx_t, buf, vals, cmps, old, bits, n, target, ordering, OP: tl.constexpr,
                  TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    if OP == "atomic_xchg" or OP == "atomic_cas":
        mask = mask & (offs % ctx.world_size == ctx.rank)
    val = tl.load(vals + offs)
    h = ctx.tracing.record_event_start(_event_id(OP), target, buf + offs, pid, 0, mask=mask, payload=target)
    for k in tl.static_range(ORDERINGS):
        if ordering == k:
            _triton_atomic(ctx, OP, _sem(k), _scope(k), buf, cmps, old, offs, val, mask, target)
    ctx.tracing.record_event_end(h)


@gluon.jit
def _gluon_atomic(ctx, OP: gl.constexpr, SEM: gl.constexpr, SCOPE: gl.constexpr, buf, cmps, old, offs, val, mask,
                  target):
    if OP == "atomic_add":
        ctx.atomic_add(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_sub":
        ctx.atomic_sub(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_xor":
        ctx.atomic_xor(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_and":
        ctx.atomic_and(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_or":
        ctx.atomic_or(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_min":
        ctx.atomic_min(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_max":
        ctx.atomic_max(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "atomic_xchg":
        prev = ctx.atomic_xchg(buf + offs, val, target, mask=mask, sem=SEM, scope=SCOPE)
        gl.store(old + offs, prev, mask=mask)
    else:
        gl.static_assert(OP == "atomic_cas", "unknown OP")
        cmp = gl.where(mask, gl.load(cmps + offs), val)  # inactive lanes: cmp == val changes nothing
        prev = ctx.atomic_cas(buf + offs, cmp, val, target, sem=SEM, scope=SCOPE)
        gl.store(old + offs, prev, mask=mask)


@gluon.jit(do_not_specialize=["n", "target", "ordering"])
def gluon_kernel(ctx_t, buf, vals, cmps, old, bits, n, target, ordering, OP: gl.constexpr,
                 TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    if OP == "atomic_xchg" or OP == "atomic_cas":
        mask = mask & (offs % ctx.num_ranks == ctx.cur_rank)
    val = gl.load(vals + offs)
    h = ctx.tracing.record_event_start(_event_id(OP), target, buf + offs, pid, 0, mask=mask, payload=target)
    for k in gl.static_range(ORDERINGS):
        if ordering == k:
            _gluon_atomic(ctx, OP, _sem(k), _scope(k), buf, cmps, old, offs, val, mask, target)
    ctx.tracing.record_event_end(h)


def _params(op):
    @st.composite
    def params(draw, world_size):
        n = draw(S.element_count(256), label="n")
        block = draw(S.block_size(large=op != "atomic_cas"), label="BLOCK")
        length = cdiv(n, block) * block
        p = {
            "n": n,
            "BLOCK": block,
            "dtype": draw(S.dtype_name(S.ATOMIC_DTYPES), label="dtype"),
            "TRACE_OPS": draw(S.trace_ops(), label="TRACE_OPS"),
            "SEM": draw(S.memory_semantics(), label="SEM"),
            "SCOPE": draw(S.memory_scope(), label="SCOPE"),
            "init": draw(S.int_values(length), label="init"),
            "vals": draw(S.per_rank(world_size, lambda r: S.int_values(length)), label="vals"),
            "bits": draw(S.per_rank(world_size, lambda r: S.mask_bits(length)), label="bits"),
        }
        if op == "atomic_cas":  # hit[r][j]: rank r's compare value equals the initial value
            p["hits"] = draw(S.per_rank(world_size, lambda r: S.mask_bits(length)), label="hits")
        if op in EXCLUSIVE:  # writing the initial value back is invisible: every value differs from it
            p["vals"] = [differing(row, p["init"]) for row in p["vals"]]
        return p

    return params


def _cmps(p, r):
    """Rank r's compare values: the initial value where it should hit, a different one where it should miss."""
    hits = p["hits"][r] if "hits" in p else [1] * len(p["init"])
    return cast([v if h else v + 1 for v, h in zip(p["init"], hits, strict=True)], p["dtype"])


def _setup(rank, p):
    length, world = len(p["init"]), rank.world_size
    rank.buffer("buf", length, p["dtype"], fill=cast(p["init"], p["dtype"]))
    rank.buffer("vals", length, p["dtype"], fill=cast(p["vals"][rank.rank], p["dtype"]))
    rank.buffer("cmps", length, p["dtype"], fill=_cmps(p, rank.rank))
    rank.buffer("old", (world, length), p["dtype"], fill=OLD_FILL)
    rank.buffer("bits", length, "int8", fill=p["bits"][rank.rank])


def _launch(op):
    def launch(kernel, rank, p):
        b = rank.buffers
        for t in range(rank.world_size):
            kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, b["buf"], b["vals"], b["cmps"], b["old"][t], b["bits"],
                                                 p["n"], t, ordering(p["SEM"], p["SCOPE"]), **rank.world_constexprs,
                                                 OP=op, TRACE_OPS=p["TRACE_OPS"], BLOCK=p["BLOCK"])

    return launch


_FOLD = {
    "atomic_add": lambda a, b: a + b,
    "atomic_sub": lambda a, b: a - b,
    "atomic_xor": lambda a, b: a ^ b,
    "atomic_and": lambda a, b: a & b,
    "atomic_or": lambda a, b: a | b,
    "atomic_min": min,
    "atomic_max": max,
}


def _model(op):
    def model(p, world_size):
        n, block, init, dtype = p["n"], p["BLOCK"], p["init"], p["dtype"]
        length = len(init)
        active = [set(active_lanes(0, length, n, p["bits"][r])) for r in range(world_size)]
        if op in EXCLUSIVE:
            active = [{j for j in a if j % world_size == r} for r, a in enumerate(active)]
        events, memory = {}, {}
        for r in range(world_size):
            events[r] = []
            for t in range(world_size):
                for pid in range(cdiv(n, block)):
                    whole = range(pid * block, (pid + 1) * block)
                    lanes = [j for j in whole if j in active[r]]
                    events[r].append(block_event(op, "range", pid=pid, rank=r, target=t, buffer="buf", heap_rank=r,
                                                 dtype=dtype, lanes=lanes, payload=t))
                    events[r] += call_events(p, op, rank=r, pid=pid, target=t, buffer="buf", heap_rank=r,
                                             lanes=lanes, block=whole)
        cmps = [_cmps(p, r) for r in range(world_size)]
        final = list(init)
        for j in range(length):
            for r in (r for r in range(world_size) if j in active[r]):
                if op in _FOLD:
                    final[j] = _FOLD[op](final[j], p["vals"][r][j])
                elif op == "atomic_xchg" or cmps[r][j] == init[j]:
                    final[j] = p["vals"][r][j]
        for r in range(world_size):
            old_row = [init[j] if op in EXCLUSIVE and j in active[r] else OLD_FILL for j in range(length)]
            memory[r] = {"buf": cast(final, dtype), "old": [cast(old_row, dtype)] * world_size}
        return Model(events, memory)

    return model


def atomic_scenario(op: str) -> Scenario:
    """The paired scenario of atomic ``op`` (one of ``OPS``); see the module docstring for its model."""
    if op not in OPS:
        raise ValueError(f"op={op!r}, expected one of {OPS}")
    return Scenario(
        name=op,
        description=f"{op} from every rank to every rank on a masked int block; one traced range per program "
                    "and target.",
        triton_kernel=triton_kernel,
        gluon_kernel=gluon_kernel,
        params=_params(op),
        setup=_setup,
        launch=_launch(op),
        model=_model(op),
    )
