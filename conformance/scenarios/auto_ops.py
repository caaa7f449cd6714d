"""Auto-tracing: all 14 ops on a masked block, ``trace_ops`` drawn on or off, inside one manual range per program.

Every rank r runs, per program p on lanes L(p) = {j in block p: j < n, bits_r[j]}, the ops in the op contract's
order, op k on region k of ``dst`` (``length`` elements each), with peer t = (r + offset) % R (copy: from t, to
t2 = (r + offset2) % R; each a bijection, so an element of a region has one writer and both APIs end with the same
memory): load src of t into the local region 0, store/get/put/copy src to region k, an atomic applies src's values
to region k (atomic_cas: every lane of the block, compared with 0) and keeps the old values in ``ret``'s region k.
Model, program p of rank r:
    compute range (manual, around every op): target r, address src[p BLOCK] on r, BLOCK x bytes, payload p
    then, with trace_ops, each op's ranges in order (iris.op_trace, through conformance.kit.auto_ops.op_events):
        pid p, pid_m p, pid_n 0, target = its peer parameter, address and size = its pointer block's lanes L(p) in
        src (load, get, put's source, copy's read) or in dst's region k (atomic_cas: the whole block), payload 0
    memory: not modelled here (the op scenarios check each op's effects); the two APIs must agree on it
"""

import triton
import triton.language as tl
from hypothesis import strategies as st
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Addr, Event, Model
from conformance.kit import strategies as S
from conformance.kit.auto_ops import op_events
from conformance.kit.helpers import ELEMENT_BYTES, cdiv, launch_blocks, peer, program_lanes, source_values
from conformance.kit.scenario import Scenario, first_sentence
from conformance.scenarios._collectives import padded_length
from iris import DeviceContext, TraceEvent
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size
from iris.op_contract import OPS

OP_NAMES = tuple(op.name for op in OPS)


@triton.jit
def _triton_ops(ctx, src, dst, ret, offs, mask, peer, peer2, length):
    """Every op once, in the op contract's order, op k on region k of ``dst`` (and ``ret``)."""
    tl.store(dst + offs, ctx.load(src + offs, peer, mask=mask), mask=mask)
    ctx.store(dst + length + offs, tl.load(src + offs, mask=mask), peer, mask=mask)
    ctx.get(src + offs, dst + 2 * length + offs, peer, mask=mask)
    ctx.put(src + offs, dst + 3 * length + offs, peer, mask=mask)
    ctx.copy(src + offs, dst + 4 * length + offs, peer, peer2, mask=mask)
    val = tl.load(src + offs, mask=mask)
    old = ctx.atomic_add(dst + 5 * length + offs, val, peer, mask=mask)
    tl.store(ret + 5 * length + offs, old, mask=mask)
    old = ctx.atomic_sub(dst + 6 * length + offs, val, peer, mask=mask)
    tl.store(ret + 6 * length + offs, old, mask=mask)
    old = ctx.atomic_cas(dst + 7 * length + offs, val * 0, val, peer)
    tl.store(ret + 7 * length + offs, old, mask=mask)
    old = ctx.atomic_xchg(dst + 8 * length + offs, val, peer, mask=mask)
    tl.store(ret + 8 * length + offs, old, mask=mask)
    old = ctx.atomic_xor(dst + 9 * length + offs, val, peer, mask=mask)
    tl.store(ret + 9 * length + offs, old, mask=mask)
    old = ctx.atomic_and(dst + 10 * length + offs, val, peer, mask=mask)
    tl.store(ret + 10 * length + offs, old, mask=mask)
    old = ctx.atomic_or(dst + 11 * length + offs, val, peer, mask=mask)
    tl.store(ret + 11 * length + offs, old, mask=mask)
    old = ctx.atomic_min(dst + 12 * length + offs, val, peer, mask=mask)
    tl.store(ret + 12 * length + offs, old, mask=mask)
    old = ctx.atomic_max(dst + 13 * length + offs, val, peer, mask=mask)
    tl.store(ret + 13 * length + offs, old, mask=mask)


@gluon.jit
def _gluon_ops(ctx, src, dst, ret, offs, mask, peer, peer2, length):
    """Every op once, in the op contract's order, op k on region k of ``dst`` (and ``ret``)."""
    gl.store(dst + offs, ctx.load(src + offs, peer, mask=mask), mask=mask)
    ctx.store(dst + length + offs, gl.load(src + offs, mask=mask), peer, mask=mask)
    ctx.get(src + offs, dst + 2 * length + offs, peer, mask=mask)
    ctx.put(src + offs, dst + 3 * length + offs, peer, mask=mask)
    ctx.copy(src + offs, dst + 4 * length + offs, peer, peer2, mask=mask)
    val = gl.load(src + offs, mask=mask)
    old = ctx.atomic_add(dst + 5 * length + offs, val, peer, mask=mask)
    gl.store(ret + 5 * length + offs, old, mask=mask)
    old = ctx.atomic_sub(dst + 6 * length + offs, val, peer, mask=mask)
    gl.store(ret + 6 * length + offs, old, mask=mask)
    old = ctx.atomic_cas(dst + 7 * length + offs, val * 0, val, peer)
    gl.store(ret + 7 * length + offs, old, mask=mask)
    old = ctx.atomic_xchg(dst + 8 * length + offs, val, peer, mask=mask)
    gl.store(ret + 8 * length + offs, old, mask=mask)
    old = ctx.atomic_xor(dst + 9 * length + offs, val, peer, mask=mask)
    gl.store(ret + 9 * length + offs, old, mask=mask)
    old = ctx.atomic_and(dst + 10 * length + offs, val, peer, mask=mask)
    gl.store(ret + 10 * length + offs, old, mask=mask)
    old = ctx.atomic_or(dst + 11 * length + offs, val, peer, mask=mask)
    gl.store(ret + 11 * length + offs, old, mask=mask)
    old = ctx.atomic_min(dst + 12 * length + offs, val, peer, mask=mask)
    gl.store(ret + 12 * length + offs, old, mask=mask)
    old = ctx.atomic_max(dst + 13 * length + offs, val, peer, mask=mask)
    gl.store(ret + 13 * length + offs, old, mask=mask)


@triton.jit(do_not_specialize=["n", "length", "peer", "peer2"])
def triton_kernel(ctx_t, src, dst, ret, bits, n, length, peer, peer2, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().compute, ctx.rank, src + offs, pid, 0, payload=pid)
    _triton_ops(ctx, src, dst, ret, offs, mask, peer, peer2, length)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "length", "peer", "peer2"])
def gluon_kernel(ctx_t, src, dst, ret, bits, n, length, peer, peer2, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    h = ctx.tracing.record_event_start(TraceEvent().compute, ctx.cur_rank, src + offs, pid, 0, payload=pid)
    _gluon_ops(ctx, src, dst, ret, offs, mask, peer, peer2, length)
    ctx.tracing.record_event_end(h)


@st.composite
def params(draw, world_size):
    p = {"TRACE_OPS": draw(S.trace_ops(), label="TRACE_OPS"), "n": draw(S.element_count(), label="n"),
         "BLOCK": draw(S.block_size(large=False), label="BLOCK"),  # it calls atomic_cas
         "dtype": draw(S.dtype_name(S.ATOMIC_DTYPES), label="dtype")}
    p["offset"] = draw(S.rank_offset(world_size), label="offset")
    p["offset2"] = draw(S.rank_offset(world_size, after=p["offset"]), label="offset2")
    length = cdiv(p["n"], p["BLOCK"]) * p["BLOCK"]
    p["bits"] = draw(S.per_rank(world_size, lambda r: S.mask_bits(length)), label="bits")
    return p


def setup(rank, p):
    length = padded_length(p)
    rank.buffer("src", length, p["dtype"], fill=source_values(rank.rank, length))
    rank.buffer("dst", len(OP_NAMES) * length, p["dtype"])
    rank.buffer("ret", len(OP_NAMES) * length, p["dtype"])
    rank.buffer("bits", length, "int8", fill=p["bits"][rank.rank])


def launch(kernel, rank, p):
    b = rank.buffers
    launch_blocks(kernel, rank, p, b["src"], b["dst"], b["ret"], b["bits"], p["n"], padded_length(p), peer(rank, p),
                  peer(rank, p, "offset2"))


def _blocks(op: str, k: int, r: int, lanes: list[int], length: int) -> dict[str, tuple[int, str, list[int]]]:
    """The (heap rank, buffer, lanes) of each pointer parameter of op ``op`` (the k-th) on rank ``r``."""
    region = [k * length + j for j in lanes]
    return {"pointer": (r, "src", lanes) if op == "load" else (r, "dst", region), "from_ptr": (r, "src", lanes),
            "to_ptr": (r, "dst", region), "src_ptr": (r, "src", lanes), "dst_ptr": (r, "dst", region)}


def model(p, world_size):
    block, size, length = p["BLOCK"], ELEMENT_BYTES[p["dtype"]], padded_length(p)
    events = {}
    for r in range(world_size):
        events[r] = []
        for pid in range(cdiv(p["n"], block)):
            events[r].append(Event(name="compute", kind="range", pid=pid, pid_m=pid, pid_n=0, cur_rank=r, target_rank=r,
                                   address=Addr(r, "src", pid * block), payload_size=block * size, payload=pid))
            if not p["TRACE_OPS"]:
                continue
            for k, op in enumerate(OP_NAMES):
                peers = {"from_rank": (r + p["offset"]) % world_size,
                         "to_rank": (r + (p["offset2"] if op == "copy" else p["offset"])) % world_size}
                whole = list(range(pid * block, (pid + 1) * block))
                lanes = whole if op == "atomic_cas" else program_lanes(p, r, pid)
                events[r] += op_events(op, rank=r, pid=pid, peers=peers, blocks=_blocks(op, k, r, lanes, length),
                                       dtype=p["dtype"])
    return Model(events)


SCENARIO = Scenario(
    name="auto_ops",
    description=first_sentence(__doc__),
    triton_kernel=triton_kernel,
    gluon_kernel=gluon_kernel,
    params=params,
    setup=setup,
    launch=launch,
    model=model,
)
