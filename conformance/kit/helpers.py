"""Small helpers for scenario modules: grids, dtype sizes, expected events of block operations, masked buffers.

``ELEMENT_BYTES`` and ``block_event`` are ``conformance.kit.block_events``'s, which ``auto_ops`` shares.
"""

from __future__ import annotations

from conformance.check.model import Event
from conformance.kit.auto_ops import call_events
from conformance.kit.block_events import ELEMENT_BYTES, block_event


def cdiv(a: int, b: int) -> int:
    """Ceiling division."""
    return -(-a // b)


def claimed_slots(records: int, chunk: int) -> int:
    """The slots one program's tracing view claims for ``records`` records (record semantics v2): its first chunk
    at ``initialize``, recording or not, then a chunk each time one is used up."""
    return chunk * max(1, cdiv(records, chunk))


def active_lanes(start: int, block: int, n: int, bits: list[int] | None = None) -> list[int]:
    """Element indices ``start .. start+block`` that are below ``n`` and (if given) have their bit set."""
    return [j for j in range(start, start + block) if j < n and (bits is None or bits[j])]


def program_lanes(p: dict, rank: int, pid: int) -> list[int]:
    """Active lanes of program ``pid`` of a masked block op (``strategies.masked_block`` params) on ``rank``."""
    return active_lanes(pid * p["BLOCK"], p["BLOCK"], p["n"], p["bits"][rank])


def per_program_events(p: dict, rank: int, name: str, kind: str, *, target: int, buffer: str,
                       heap_rank: int | None = None, payload=0, peers: dict | None = None,
                       pointers: dict | None = None) -> list[Event]:
    """The event of every program of a masked block op on ``rank``; ``payload``: an int or a function of the pid.

    With ``p["TRACE_OPS"]``, each program's event is followed (a range: the op runs inside it) or preceded (an
    instant: recorded once the op is done) by the ranges of the op ``name`` it traces, ``auto_ops.call_events`` of
    the same block (``peers`` and ``pointers`` override its parameters, as there: copy's two ends).
    """
    heap_rank = rank if heap_rank is None else heap_rank
    events = []
    for pid in range(cdiv(p["n"], p["BLOCK"])):
        lanes = program_lanes(p, rank, pid)
        event = block_event(name, kind, pid=pid, rank=rank, target=target, buffer=buffer, heap_rank=heap_rank,
                            lanes=lanes, dtype=p["dtype"], payload=payload(pid) if callable(payload) else payload)
        if not p.get("TRACE_OPS"):
            events.append(event)
            continue
        auto = call_events(p, name, rank=rank, pid=pid, target=target, buffer=buffer, heap_rank=heap_rank,
                           lanes=lanes, block=range(pid * p["BLOCK"], (pid + 1) * p["BLOCK"]), peers=peers,
                           pointers=pointers)
        events += [*auto, event] if kind == "instant" else [event, *auto]
    return events


SOURCE_STRIDE = 512  # rank q's source values start at 512 q + 1 (at SMALL, buffers of masked block ops stay below 512)


def source_values(q: int, length: int) -> list[int]:
    """Rank ``q``'s source data: element j holds j + 1 + 512 q (never 0; each rank's differs from every other
    rank's at the same j, and from every element of its own)."""
    return [j + 1 + SOURCE_STRIDE * q for j in range(length)]


def largest_source_value(world_size: int, length: int = SOURCE_STRIDE) -> int:
    """A bound on every ``source_values`` element of ``length`` elements on ``world_size`` ranks (512 R up to 512
    elements): the dtypes drawn must hold it."""
    return max(length, SOURCE_STRIDE) + SOURCE_STRIDE * (world_size - 1)


def masked_values(p: dict, rank: int, values: list, other=0) -> list:
    """``values[j]`` where lane j is active under ``rank``'s mask (j < n and its bit set), ``other`` elsewhere."""
    bits = p["bits"][rank]
    return [v if j < p["n"] and bits[j] else other for j, v in enumerate(values)]


def setup_masked(rank, p: dict, *zeroed: str, source: bool = False) -> None:
    """Allocate ``src`` (if ``source``: ``source_values``), the ``zeroed`` buffers, then ``bits`` (this rank's mask)."""
    length = len(p["bits"][0])
    if source:
        rank.buffer("src", length, p["dtype"], fill=source_values(rank.rank, length))
    for name in zeroed:
        rank.buffer(name, length, p["dtype"])
    rank.buffer("bits", length, "int8", fill=p["bits"][rank.rank])


def cast(values: list, dtype: str) -> list:
    """Python values as the device stores them for ``dtype`` (ints wrap, floats stay floats)."""
    if dtype.startswith("float") or dtype == "bfloat16":
        return [float(v) for v in values]
    bits = ELEMENT_BYTES[dtype] * 8
    return [((int(v) + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1)) for v in values]


def peer(rank, p: dict, key: str = "offset") -> int:
    """The rank ``p[key]`` steps after ``rank`` (a peer of a masked block op, as its kernel gets it)."""
    return (rank.rank + p[key]) % rank.world_size


# Spins before a wait on a flag gives up (its next event's payload -1) rather than hanging: a lost flag is then the
# divergence it causes, not a hang. An interpreter spin costs ~0.6 ms (2 ranks on 2 cores), so a lost flag fails in
# ~12 s per API there, inside the 30 s an example gets at least (conformance/harness/budget.py). A healthy wait lasts
# as long as the ranks are apart: each rank reads back and exports one API's trace before it launches the next, with
# no barrier between, so at 8 ranks on 2 busy cores a rank was seen to start its next launch over 3 s (5,000 spins)
# after its peers.
SPIN_LIMIT = {"cpu": 20_000, "cuda": 20_000_000}


def spin_limit(rank) -> int:
    """The spins a wait loop of ``rank``'s kernels takes at most (``SPIN_LIMIT`` of its device; a run-time arg)."""
    return SPIN_LIMIT["cpu" if rank.shmem.device.type == "cpu" else "cuda"]


def launch_blocks(kernel, rank, p: dict, *args, **constexprs) -> None:
    """Launch ``kernel(ctx, *args)`` on one program per ``BLOCK`` of ``n`` elements, with the API's world constexprs,
    ``constexprs``, ``TRACE_OPS`` where the params draw it, and ``BLOCK``."""
    switch = {"TRACE_OPS": p["TRACE_OPS"]} if "TRACE_OPS" in p else {}
    kernel[(cdiv(p["n"], p["BLOCK"]),)](rank.ctx, *args, **rank.world_constexprs, **constexprs, **switch,
                                        BLOCK=p["BLOCK"])


def transfer_memory(p: dict, world_size: int, source, target, other=None) -> dict[int, dict[str, list]]:
    """Final ``src`` and ``dst`` of every rank when rank r copies ``src`` of ``source(r)`` into ``dst`` of
    ``target(r)`` under r's lane mask (``strategies.masked_block`` params; ``setup_masked(..., "dst", source=True)``).

        dst_q[j] = src_{source(w)}[j] for j active for the writer w (target(w) = q); else 0, or ``other`` for
                   masked-off j < n when the op fills them (a load with ``other``)
        src_q[j] = source_values(q) (unchanged)
    """
    length, dtype = len(p["bits"][0]), p["dtype"]
    writer = {target(r): r for r in range(world_size)}
    memory = {}
    for q in range(world_size):
        w = writer[q]
        dst = masked_values(p, w, source_values(source(w), length), other=0 if other is None else other)
        if other is not None:
            dst = dst[: p["n"]] + [0] * (length - p["n"])
        memory[q] = {"src": cast(source_values(q, length), dtype), "dst": cast(dst, dtype)}
    return memory
