"""Shared pieces of the get/put/copy option scenarios (``get_options``, ``put_options``, ``copy_options``).

Each program repeats its op in ``ROUNDS`` rounds; round k writes row k of the destination ``dst[ROUNDS][length]``
and uses, by construction, every load and every store cache modifier of ``iris.op_options`` (None included)
at least once, ``other`` (drawn, never stored: masked-off lanes keep ``UNTOUCHED``) and a pointer hint:

    round k:  load_cache_modifier = (None, *LOAD_CACHE_MODIFIERS)[k % 4]
              store_cache_modifier = (None, *STORE_CACHE_MODIFIERS)[k % 5]
              hint = None in round 0, BLOCK after (true: a block is BLOCK contiguous elements, and every block
                     starts at a multiple of BLOCK elements of a 256-byte-aligned heap buffer)

With TRACE_OPS (drawn) each round's range is followed by the op's own (``round_events``), a pointer into ``dst``
addressing round k's row.
"""

import triton
import triton.language as tl

from conformance.check.model import Event
from conformance.kit import strategies as S
from conformance.kit.auto_ops import call_events
from conformance.kit.helpers import block_event, cast, program_lanes, source_values
from iris import op_options

_LOADS = (None, *op_options.LOAD_CACHE_MODIFIERS)
_STORES = (None, *op_options.STORE_CACHE_MODIFIERS)
ROUNDS = tl.constexpr(max(len(_LOADS), len(_STORES)))
UNTOUCHED = -3000  # dst before the launch: differs from every `other` (-2048 .. -1) and every source value (> 0)


@triton.constexpr_function
def load_modifier(k):
    """The load cache modifier of round ``k``."""
    return _LOADS[k % len(_LOADS)]


@triton.constexpr_function
def store_modifier(k):
    """The store cache modifier of round ``k``."""
    return _STORES[k % len(_STORES)]


@triton.constexpr_function
def hint(k, block):
    """The pointer hint of round ``k``: none in round 0, the block size after."""
    return None if k == 0 else block


def params(world_size, offsets=("offset",)):
    """Masked 1-D block params (``strategies.masked_block``) with a drawn ``other`` and a payload."""
    return S.masked_block(world_size, offsets=offsets, other=S.other_value())


def setup(rank, p) -> None:
    """``src`` (``source_values``), ``dst[ROUNDS][length]`` filled with ``UNTOUCHED``, and this rank's ``bits``."""
    length = len(p["bits"][0])
    rank.buffer("src", length, p["dtype"], fill=source_values(rank.rank, length))
    rank.buffer("dst", (ROUNDS.value, length), p["dtype"], fill=UNTOUCHED)
    rank.buffer("bits", length, "int8", fill=p["bits"][rank.rank])


def round_events(p, rank: int, name: str, *, target: int, buffer: str, heap_rank: int, row_offset: bool,
                 pointers: dict | None = None, peers: dict | None = None) -> list[Event]:
    """Every program's ``ROUNDS`` events, in program order; round k has payload ``payload + k`` and, with
    ``row_offset``, addresses row k of ``buffer`` (else the same lanes every round). With ``p["TRACE_OPS"]``, each
    is followed by the ranges of the op ``name`` it wraps (``auto_ops.call_events``; ``pointers``, ``peers``: as
    there), whose pointers into ``dst`` address row k."""
    length = len(p["bits"][0])
    events = []
    for pid in range(-(-p["n"] // p["BLOCK"])):
        lanes = program_lanes(p, rank, pid)
        for k in range(ROUNDS.value):
            shift = k * length if row_offset else 0
            events.append(block_event(name, "range", pid=pid, rank=rank, target=target, buffer=buffer,
                                      heap_rank=heap_rank, lanes=[shift + j for j in lanes], dtype=p["dtype"],
                                      payload=p["payload"] + k))
            events += call_events(p, name, rank=rank, pid=pid, target=target, buffer=buffer, heap_rank=heap_rank,
                                  lanes=lanes, pointers=pointers, peers=peers, rows={"dst": k * length})
    return events


def dst_rows(p, writer: int, source: int) -> list[list]:
    """``dst`` after ``writer`` copied ``source``'s data in every round: its active lanes, ``UNTOUCHED`` elsewhere."""
    length, n, bits = len(p["bits"][0]), p["n"], p["bits"][writer]
    data = source_values(source, length)
    row = [data[j] if j < n and bits[j] else UNTOUCHED for j in range(length)]
    return [cast(row, p["dtype"]) for _ in range(ROUNDS.value)]
