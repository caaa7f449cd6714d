"""The context-tensor layout (v3) and the trace buffers it points at: the only place they are defined.

Every other module derives offsets from here: the host builder, the Triton and Gluon device
contexts, and the pure-Python decoder used by tests and the conformance harness.

    [0] cur_rank   [1] num_ranks   [2] layout version
    [3 .. 3+T)     tracing block, fixed length T, at a fixed offset (independent of num_ranks):
                   enabled flag, max_events, chunk (slots a program claims at a time), counters pointer,
                   records pointer, cursors pointer
    [3+T .. 3+T+N) heap base of every rank (as mapped in the owning process)

The buffers (int64, on the rank's device):

    counters  [COUNTERS]                    [COUNTER_CLAIMED] slots claimed (chunk by chunk), [COUNTER_DROPPED]
                                            records that found no slot below max_events
    records   [max_events + 1, RECORD_WORDS] one 64-byte record per slot: where each field lives is the field
                                            table's ``word``/``shift`` (``iris.tracing.events.FIELDS``; 32-bit
                                            fields share a word); a slot never written keeps event_id EMPTY_EVENT;
                                            the last is the guard slot no kernel writes (``iris.tracing.guard``)
    cursors   [cursor_cells(...)]           per-program cursor of both tracings, cell = first chunk's base // chunk:
                                            (end of chunk << 32) | next slot, one word (written and read by thread 0)

Slots and chunk ends are below ``SLOT_LIMIT`` (2**31), so a cursor packs both in one word and ``op_index`` is a
32-bit value. With tracing off the tracing block is all zeros, same length. Version 1 had no chunk and no cursors,
one claim per event, and the records field-major ([fields, max_events]); version 2 had 128-byte records (one
int64 word per field) and a two-word cursor.
"""

from __future__ import annotations

from dataclasses import dataclass

VERSION = 3  # the layout version this iris writes and reads (in slot VERSION_SLOT)

# the slots of the context tensor
CUR_RANK = 0
NUM_RANKS = 1
VERSION_SLOT = 2
TRACE_BLOCK = 3
TRACE_ENABLED = TRACE_BLOCK + 0
TRACE_MAX_EVENTS = TRACE_BLOCK + 1
TRACE_CHUNK = TRACE_BLOCK + 2
TRACE_COUNTERS_PTR = TRACE_BLOCK + 3
TRACE_RECORDS_PTR = TRACE_BLOCK + 4
TRACE_CURSORS_PTR = TRACE_BLOCK + 5
TRACE_BLOCK_LEN = 6
HEAP_BASES = TRACE_BLOCK + TRACE_BLOCK_LEN

COUNTER_CLAIMED, COUNTER_DROPPED = 0, 1
COUNTERS = 2
RECORD_WORDS = 8  # int64 words per record: 64 bytes (iris.tracing.events.FIELDS says which field is where)
CURSOR_WORDS = 1  # (end of the chunk << 32) | next slot
SLOT_LIMIT = 1 << 31  # every slot and chunk end is below this: a cursor holds two of them, op_index is 32-bit


def length(num_ranks: int) -> int:
    """Number of int64 entries in a context tensor for ``num_ranks`` ranks."""
    return HEAP_BASES + num_ranks


def cursor_cells(max_events: int, chunk: int) -> int:
    """Cursor cells a tracing of ``max_events`` slots in chunks of ``chunk`` needs: one per chunk that starts
    below ``max_events`` (a program whose first chunk starts later has no room, and no cell)."""
    return -(-max_events // chunk)


@dataclass(frozen=True)
class TracingBlock:
    """Decoded tracing block; all zeros means tracing is off."""

    enabled: int
    max_events: int
    chunk: int
    counters_ptr: int
    records_ptr: int
    cursors_ptr: int


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
        block = [tracing.enabled, tracing.max_events, tracing.chunk, tracing.counters_ptr, tracing.records_ptr,
                 tracing.cursors_ptr]
    return [cur_rank, num_ranks, VERSION, *block, *heap_bases]


def decode(values) -> Context:
    """Decode a context tensor (or any sequence of ints) into a ``Context``; checks length and version."""
    vals = [int(v) for v in (values.tolist() if hasattr(values, "tolist") else values)]
    if len(vals) < HEAP_BASES:
        raise ValueError(f"context has {len(vals)} entries, expected at least {HEAP_BASES}")
    if vals[VERSION_SLOT] != VERSION:
        raise ValueError(f"context layout version={vals[VERSION_SLOT]}, but this iris reads version {VERSION}")
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
        version=vals[VERSION_SLOT],
        tracing=TracingBlock(*t),
        heap_bases=tuple(vals[HEAP_BASES:]),
    )
