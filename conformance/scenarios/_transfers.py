"""Shared kernels, parameters and model of get, put and their option twins: ``transfer_scenario(op, description)``.

Every rank r moves a masked block between itself and its peer s = (r + offset) % R with ``ctx.<op>``: get reads
``src`` of s into its own ``dst``, put writes its own ``src`` into ``dst`` of s. One traced range per op, its
address the op's local pointer (``src`` for get, ``dst`` for put, both on r). Lanes of program p:
L_r(p) = {j in block p : j < n and bits[r][j]}.

    plain (get, put):
    event         op range: pid p, target s, lanes L_r(p) of the local pointer on r, payload = payload + p; then,
                  with TRACE_OPS (drawn), the op's own range (auto_ops.call_events): the same but payload 0
    dst on q      src_w'[j] for j in L_w, 0 elsewhere, where w is the rank whose op writes q's dst and w' the rank
                  whose src it copies: get w = q, w' = (q + offset) % R; put w = w' = (q - offset) % R
    options (get_options, put_options; ``dst`` has ROUNDS rows, round k's modifiers and hint: see _options.py):
    events        op range per round, in round order: pid p, target s, lanes L_r(p) of the local pointer on r
                  (put: of row k of dst), payload = payload + k, each followed (TRACE_OPS) by the op's own range
    dst[k] on q   src_w'[j] for j in L_w, UNTOUCHED elsewhere (`other` fills masked-off lanes of the load, which
                  are not stored), w and w' as above
    src on q      j + 1 + 512 q (unchanged)

The two directions differ only in the op called and the pointer traced: each kernel body is written once, in a jit
helper taking the op as a constexpr (``OP == "get"`` is decided when compiling). The entry kernels are one call each:
they keep each direction's parameter names (``source`` for get, ``target`` for put) and ``do_not_specialize``
lists, and take no ``OP``, so every launch of a configuration compiles one variant. Each compiles to the TTGIR and
machine code of the kernel written for its op alone that it replaced (compared for sm_90 and gfx942).
"""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from conformance.check.model import Model
from conformance.kit import strategies as S
from conformance.kit.helpers import (
    cast,
    launch_blocks,
    peer,
    per_program_events,
    setup_masked,
    source_values,
    transfer_memory,
)
from conformance.kit.scenario import Scenario
from conformance.scenarios import _options
from conformance.scenarios._options import ROUNDS, hint, load_modifier, store_modifier
from iris import DeviceContext
from iris.experimental.iris_gluon import IrisDeviceCtx
from iris.experimental.layouts import blocked_1d, warp_size
from iris.tracing.events import EVENT_IDS

OPS = ("get", "put")
LOCAL = {"get": "src", "put": "dst"}  # the buffer of each op's local pointer, which its range records


@triton.constexpr_function
def _event_id(op):
    return EVENT_IDS[op]


# ---- plain: one op per program -----------------------------------------------------------------------------------

@triton.jit
def _triton_transfer(ctx_t, OP: tl.constexpr, src, dst, bits, n, peer, payload, TRACE_OPS: tl.constexpr,
                     BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    # the op's local pointer, inline: Triton evaluates keyword arguments first, so this keeps a one-op kernel's order
    h = ctx.tracing.record_event_start(_event_id(OP), peer, src + offs if OP == "get" else dst + offs, pid, 0,
                                       mask=mask, payload=payload + pid)
    if OP == "get":
        ctx.get(src + offs, dst + offs, peer, mask=mask)
    else:
        ctx.put(src + offs, dst + offs, peer, mask=mask)
    ctx.tracing.record_event_end(h)


@triton.jit(do_not_specialize=["n", "source", "payload"])
def triton_get(ctx_t, src, dst, bits, n, source, payload, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    _triton_transfer(ctx_t, "get", src, dst, bits, n, source, payload, TRACE_OPS, BLOCK)


@triton.jit(do_not_specialize=["n", "target", "payload"])
def triton_put(ctx_t, src, dst, bits, n, target, payload, TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    _triton_transfer(ctx_t, "put", src, dst, bits, n, target, payload, TRACE_OPS, BLOCK)


@gluon.jit
def _gluon_transfer(ctx_t, OP: gl.constexpr, src, dst, bits, n, peer, payload, TRACE_OPS: gl.constexpr,
                    BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    # the op's local pointer, inline: Triton evaluates keyword arguments first, so this keeps a one-op kernel's order
    h = ctx.tracing.record_event_start(_event_id(OP), peer, src + offs if OP == "get" else dst + offs, pid, 0,
                                       mask=mask, payload=payload + pid)
    if OP == "get":
        ctx.get(src + offs, dst + offs, peer, mask=mask)
    else:
        ctx.put(src + offs, dst + offs, peer, mask=mask)
    ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "source", "payload"])
def gluon_get(ctx_t, src, dst, bits, n, source, payload, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    _gluon_transfer(ctx_t, "get", src, dst, bits, n, source, payload, TRACE_OPS, BLOCK)


@gluon.jit(do_not_specialize=["n", "target", "payload"])
def gluon_put(ctx_t, src, dst, bits, n, target, payload, TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    _gluon_transfer(ctx_t, "put", src, dst, bits, n, target, payload, TRACE_OPS, BLOCK)


# ---- options: ROUNDS ops per program, with `other`, cache modifiers and a hint ------------------------------------

@triton.jit
def _triton_transfer_rounds(ctx_t, OP: tl.constexpr, src, dst, bits, n, stride, peer, other, payload,
                            TRACE_OPS: tl.constexpr, BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (tl.load(bits + offs) != 0)
    for k in tl.static_range(ROUNDS):
        local = src + offs if OP == "get" else dst + k * stride + offs  # the op's local pointer
        h = ctx.tracing.record_event_start(_event_id(OP), peer, local, pid, 0, mask=mask, payload=payload + k)
        if OP == "get":
            ctx.get(src + offs, dst + k * stride + offs, peer, mask=mask, other=other,
                    load_cache_modifier=load_modifier(k), store_cache_modifier=store_modifier(k), hint=hint(k, BLOCK))
        else:
            ctx.put(src + offs, dst + k * stride + offs, peer, mask=mask, other=other,
                    load_cache_modifier=load_modifier(k), store_cache_modifier=store_modifier(k), hint=hint(k, BLOCK))
        ctx.tracing.record_event_end(h)


@triton.jit(do_not_specialize=["n", "stride", "source", "other", "payload"])
def triton_get_options(ctx_t, src, dst, bits, n, stride, source, other, payload, TRACE_OPS: tl.constexpr,
                       BLOCK: tl.constexpr):
    _triton_transfer_rounds(ctx_t, "get", src, dst, bits, n, stride, source, other, payload, TRACE_OPS, BLOCK)


@triton.jit(do_not_specialize=["n", "stride", "target", "other", "payload"])
def triton_put_options(ctx_t, src, dst, bits, n, stride, target, other, payload, TRACE_OPS: tl.constexpr,
                       BLOCK: tl.constexpr):
    _triton_transfer_rounds(ctx_t, "put", src, dst, bits, n, stride, target, other, payload, TRACE_OPS, BLOCK)


@gluon.jit
def _gluon_transfer_rounds(ctx_t, OP: gl.constexpr, src, dst, bits, n, stride, peer, other, payload,
                           TRACE_OPS: gl.constexpr, BLOCK: gl.constexpr):
    ctx = IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)
    layout: gl.constexpr = blocked_1d(warp_size(), gl.num_warps())
    pid = gl.program_id(0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = (offs < n) & (gl.load(bits + offs) != 0)
    for k in gl.static_range(ROUNDS):
        local = src + offs if OP == "get" else dst + k * stride + offs  # the op's local pointer
        h = ctx.tracing.record_event_start(_event_id(OP), peer, local, pid, 0, mask=mask, payload=payload + k)
        if OP == "get":
            ctx.get(src + offs, dst + k * stride + offs, peer, mask=mask, other=other,
                    load_cache_modifier=load_modifier(k), store_cache_modifier=store_modifier(k), hint=hint(k, BLOCK))
        else:
            ctx.put(src + offs, dst + k * stride + offs, peer, mask=mask, other=other,
                    load_cache_modifier=load_modifier(k), store_cache_modifier=store_modifier(k), hint=hint(k, BLOCK))
        ctx.tracing.record_event_end(h)


@gluon.jit(do_not_specialize=["n", "stride", "source", "other", "payload"])
def gluon_get_options(ctx_t, src, dst, bits, n, stride, source, other, payload, TRACE_OPS: gl.constexpr,
                      BLOCK: gl.constexpr):
    _gluon_transfer_rounds(ctx_t, "get", src, dst, bits, n, stride, source, other, payload, TRACE_OPS, BLOCK)


@gluon.jit(do_not_specialize=["n", "stride", "target", "other", "payload"])
def gluon_put_options(ctx_t, src, dst, bits, n, stride, target, other, payload, TRACE_OPS: gl.constexpr,
                      BLOCK: gl.constexpr):
    _gluon_transfer_rounds(ctx_t, "put", src, dst, bits, n, stride, target, other, payload, TRACE_OPS, BLOCK)


# (op, options) -> (Triton kernel, Gluon kernel)
KERNELS = {
    ("get", False): (triton_get, gluon_get),
    ("put", False): (triton_put, gluon_put),
    ("get", True): (triton_get_options, gluon_get_options),
    ("put", True): (triton_put_options, gluon_put_options),
}


# ---- host side ---------------------------------------------------------------------------------------------------

def _ends(op, p, world_size):
    """(peer, source, target) as functions of the rank r issuing the op: its peer (r + offset) % R, the rank whose
    src it reads and the rank whose dst it writes (get: peer and r, put: r and peer)."""
    def partner(r):
        return (r + p["offset"]) % world_size

    def itself(r):
        return r

    return (partner, partner, itself) if op == "get" else (partner, itself, partner)


def _setup(rank, p):
    setup_masked(rank, p, "dst", source=True)


def _launch(kernel, rank, p):
    b = rank.buffers
    launch_blocks(kernel, rank, p, b["src"], b["dst"], b["bits"], p["n"], peer(rank, p), p["payload"])


def _model(op):
    def model(p, world_size):
        partner, source, target = _ends(op, p, world_size)
        events = {r: per_program_events(p, r, op, "range", target=partner(r), buffer=LOCAL[op],
                                        payload=lambda pid: p["payload"] + pid) for r in range(world_size)}
        return Model(events, transfer_memory(p, world_size, source, target))

    return model


def _launch_options(kernel, rank, p):
    b = rank.buffers
    launch_blocks(kernel, rank, p, b["src"], b["dst"], b["bits"], p["n"], b["dst"].stride(0), peer(rank, p),
                  p["other"], p["payload"])


def _options_model(op):
    def model(p, world_size):
        partner, source, target = _ends(op, p, world_size)
        writer = {target(r): r for r in range(world_size)}  # the rank whose op writes r's dst
        length, dtype = len(p["bits"][0]), p["dtype"]
        events, memory = {}, {}
        for r in range(world_size):
            w = writer[r]
            events[r] = _options.round_events(p, r, op, target=partner(r), buffer=LOCAL[op], heap_rank=r,
                                              row_offset=op == "put")
            memory[r] = {"src": cast(source_values(r, length), dtype), "dst": _options.dst_rows(p, w, source(w))}
        return Model(events, memory)

    return model


def transfer_scenario(op: str, description: str, *, options: bool = False) -> Scenario:
    """The paired scenario of ``op`` ("get" or "put"), named ``op`` or, with ``options``, ``<op>_options``; see the
    module docstring for its model. ``description``: the first sentence of the scenario module's docstring
    (``first_sentence``)."""
    if op not in OPS:
        raise ValueError(f"op={op!r}, expected one of {OPS}")
    triton_kernel, gluon_kernel = KERNELS[op, options]
    if options:
        params, setup, launch, model = _options.params, _options.setup, _launch_options, _options_model(op)
    else:
        params, setup, launch, model = S.masked_block, _setup, _launch, _model(op)
    return Scenario(
        name=f"{op}_options" if options else op,
        description=description,
        triton_kernel=triton_kernel,
        gluon_kernel=gluon_kernel,
        params=params,
        setup=setup,
        launch=launch,
        model=model,
    )
