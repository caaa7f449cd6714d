"""The context-tensor layout (v1): the only place it is defined.

Every other module derives offsets from here: the host builder, the Triton and Gluon device
contexts, and the pure-Python decoder used by tests and the conformance harness.

    [0] cur_rank   [1] num_ranks   [2] layout version
    [3 .. 3+T)     tracing block, fixed length T, at a fixed offset (independent of num_ranks):
                   enabled flag, max_events, counter pointer, records pointer
                   (int64 [num fields, max_events], row f = field f, TRACE_FIELDS order)
    [3+T .. 3+T+N) heap base of every rank (as mapped in the owning process)

With tracing off the tracing block is all zeros, same length.
"""

from __future__ import annotations

from dataclasses import dataclass

VERSION = 1

CUR_RANK = 0
NUM_RANKS = 1
LAYOUT_VERSION = 2
TRACE_BLOCK = 3
TRACE_ENABLED = TRACE_BLOCK + 0
TRACE_MAX_EVENTS = TRACE_BLOCK + 1
TRACE_COUNTER_PTR = TRACE_BLOCK + 2
TRACE_RECORDS_PTR = TRACE_BLOCK + 3
TRACE_BLOCK_LEN = 4
HEAP_BASES = TRACE_BLOCK + TRACE_BLOCK_LEN


def length(num_ranks: int) -> int:
    """Number of int64 entries in a context tensor for ``num_ranks`` ranks."""
    return HEAP_BASES + num_ranks


@dataclass(frozen=True)
class TracingBlock:
    """Decoded tracing block; all zeros means tracing is off."""

    enabled: int
    max_events: int
    counter_ptr: int
    records_ptr: int


@dataclass(frozen=True)
class Context:
    """Decoded context tensor."""

    cur_rank: int
    num_ranks: int
    version: int
    tracing: TracingBlock
    heap_bases: tuple[int, ...]


def encode(
    cur_rank: int,
    heap_bases: list[int] | tuple[int, ...],
    tracing: TracingBlock | None = None,
) -> list[int]:
    """The context entries as a list of ints (the host copies them into an int64 tensor)."""
    num_ranks = len(heap_bases)
    if not 0 <= cur_rank < num_ranks:
        raise ValueError(f"cur_rank={cur_rank} is outside [0, {num_ranks}) for {num_ranks} heap bases")
    block = [0] * TRACE_BLOCK_LEN
    if tracing is not None:
        block = [tracing.enabled, tracing.max_events, tracing.counter_ptr, tracing.records_ptr]
    return [cur_rank, num_ranks, VERSION, *block, *heap_bases]


def decode(values) -> Context:
    """Decode a context tensor (or any sequence of ints) into a ``Context``; checks length and version."""
    vals = [int(v) for v in (values.tolist() if hasattr(values, "tolist") else values)]
    if len(vals) < HEAP_BASES:
        raise ValueError(f"context has {len(vals)} entries, expected at least {HEAP_BASES}")
    if vals[LAYOUT_VERSION] != VERSION:
        raise ValueError(f"context layout version={vals[LAYOUT_VERSION]}, but this iris reads version {VERSION}")
    num_ranks = vals[NUM_RANKS]
    if num_ranks < 1:
        raise ValueError(f"context num_ranks={num_ranks}, expected at least 1")
    if not 0 <= vals[CUR_RANK] < num_ranks:
        raise ValueError(f"context cur_rank={vals[CUR_RANK]} is outside [0, {num_ranks})")
    if len(vals) != length(num_ranks):
        raise ValueError(f"context has {len(vals)} entries, expected {length(num_ranks)} for {num_ranks} ranks")
    t = vals[TRACE_BLOCK : TRACE_BLOCK + TRACE_BLOCK_LEN]
    return Context(
        cur_rank=vals[CUR_RANK],
        num_ranks=num_ranks,
        version=vals[LAYOUT_VERSION],
        tracing=TracingBlock(*t),
        heap_bases=tuple(vals[HEAP_BASES:]),
    )
