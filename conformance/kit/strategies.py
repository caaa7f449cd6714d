"""Every Hypothesis strategy the scenarios draw from, one line of why each.

Run-time values (element counts, mask bits, offsets, payloads, target ranks) are drawn freely;
compile-time values (block sizes, dtypes) come from small fixed sets, so examples reuse the
kernels already compiled instead of triggering new JIT compiles.

Every strategy of a scale dimension draws at the current scale (``conformance.kit.scale``): a bound a scenario
gives is its bound at ``SMALL``, which a larger scale widens; long lists (masks, values) are drawn as patterns
there (``conformance.kit.patterns``). At ``SMALL`` every strategy is what it always was.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.kit import patterns
from conformance.kit.helpers import cdiv, largest_source_value
from conformance.kit.scale import SMALL, current

BLOCK_SIZES = SMALL.block_sizes  # (32, 64); the GPU scale adds one large block
DATA_DTYPES = ("int32", "float32", "int64", "float16")
ATOMIC_DTYPES = ("int32", "int64")


def block_size(large: bool = True) -> st.SearchStrategy[int]:
    """A compile-time block size from a small set (no fresh compiles per example): the scale's block sizes, or with
    ``large=False`` ``BLOCK_SIZES`` at every scale: for one side of a 2-D tile (a large block squared is no tile),
    and for a kernel calling ``atomic_cas``, which Triton 3.6 cannot compile for AMD with more than one element per
    thread (triton-lang/triton#8867), as a large block on a 64-wide warp would give it."""
    return st.sampled_from(current().block_sizes if large else BLOCK_SIZES)


# Every integer of magnitude up to this is exact in the dtype (integer dtypes: their whole range).
EXACT_INTEGERS = {"int8": 2**7 - 1, "int16": 2**15 - 1, "int32": 2**31 - 1, "int64": 2**63 - 1, "float16": 2**11,
                  "bfloat16": 2**8, "float32": 2**24, "float64": 2**53}


MEMORY_SEMANTICS = ("acq_rel", "relaxed", "acquire", "release")
MEMORY_SCOPES = ("sys", "gpu")  # for peers in other processes


def memory_semantics() -> st.SearchStrategy[str]:
    """An atomic's ``sem`` (a compile-time value in the API): each must give the same results."""
    return st.sampled_from(MEMORY_SEMANTICS)


def memory_scope() -> st.SearchStrategy[str]:
    """An atomic's ``scope`` (a compile-time value in the API): "gpu" or "sys"."""
    return st.sampled_from(MEMORY_SCOPES)


def dtype_name(options=DATA_DTYPES) -> st.SearchStrategy[str]:
    """A compile-time element dtype, by name, from a small set."""
    return st.sampled_from(options)


def exact_dtypes(largest: int, options=DATA_DTYPES) -> tuple[str, ...]:
    """The dtypes of ``options`` that hold every integer up to ``largest`` exactly (e.g. float16 only to 2048).

    Scenarios whose values grow with the world size draw from ``exact_dtypes(<their largest value at R ranks>)``,
    so any world size stays exact: float16 drops out of the draws where its values would be rounded.
    """
    return tuple(d for d in options if EXACT_INTEGERS[d] >= largest)


def element_count(max_value: int = 300, scaled: bool = True) -> st.SearchStrategy[int]:
    """How many elements the launch covers: run time, so any value (tails and single elements included);
    ``max_value`` at ``SMALL``, times the scale's ``elements``, unless ``scaled=False``: a bound made of
    other draws, which the scale widened already (``programs * BLOCK``), kept at every scale."""
    return st.integers(1, max_value * current().elements if scaled else max_value)


def axis_length(max_value: int) -> st.SearchStrategy[int]:
    """Elements along one axis of a 2-D launch (run time); ``max_value`` at ``SMALL``, times the scale's
    ``axis`` (the elements grow by its square)."""
    return st.integers(1, max_value * current().axis)


def rank_offset(world_size: int, after: int = 0) -> st.SearchStrategy[int]:
    """Target = (own rank + offset) % world_size, every offset reachable; the simplest is ``after + 1``.

    So the simplest example already crosses ranks (a peer, or a second offset other than the first ``after``).
    """
    # sampled_from, not integers().map(...): Hypothesis shows a mapped value as the call that made it, and small
    # ints are shared objects, so every equal int of a report (thousands of mask bits) would be shown that way
    return st.sampled_from([(after + 1 + k) % world_size for k in range(world_size)])


def peer_order(world_size: int, rank: int) -> st.SearchStrategy[list[int]]:
    """The order in which ``rank`` visits every rank, itself included (a loop over peers reading it from a run-time
    buffer): a ring from any offset, the simplest from the next peer with ``rank`` last, or any permutation."""
    rings = [[(rank + offset + k) % world_size for k in range(world_size)]
             for offset in ((1 + k) % world_size for k in range(world_size))]
    return st.one_of(st.sampled_from(rings), st.permutations(range(world_size)))


def peer_orders(world_size: int) -> st.SearchStrategy[list[list[int]]]:
    """One ``peer_order`` per rank (every rank its own order)."""
    return per_rank(world_size, lambda r: peer_order(world_size, r))


WAITING_PROGRAMS = 4


def waiting_element_count(block: int, max_programs: int = WAITING_PROGRAMS) -> st.SearchStrategy[int]:
    """Elements of a launch of one program per ``block`` whose programs wait on flags that programs of other ranks
    set: at most ``max_programs`` blocks at every scale (the scale widens ``block`` only), so that every program of
    every rank is resident at once on a GPU and no wait can starve the program it waits for."""
    return st.integers(1, max_programs * block)


def mask_bits(length: int) -> st.SearchStrategy[list[int]]:
    """One 0/1 lane mask of ``length`` elements: all-on, all-off and mixed masks all occur (at a scale with
    ``patterns``: all on, all off, periodic, runs and random masks, ``patterns.masks``)."""
    if current().patterns:
        return patterns.masks(length)
    return st.one_of(
        st.just([1] * length),
        st.just([0] * length),
        st.lists(st.integers(0, 1), min_size=length, max_size=length),
    )


def per_rank(world_size: int, strategy_of_rank) -> st.SearchStrategy[list]:
    """One draw of ``strategy_of_rank(rank)`` per rank."""
    return st.tuples(*[strategy_of_rank(r) for r in range(world_size)]).map(list)


PAYLOAD_MAX = 2**30


def payload() -> st.SearchStrategy[int]:
    """A user payload (e.g. a loop index or a tag): a non-negative int32 with headroom for adding a program id."""
    return st.integers(0, PAYLOAD_MAX)


def payloads(length: int) -> st.SearchStrategy[list[int]]:
    """``length`` payloads (e.g. one per program); a pattern at a scale with ``patterns``."""
    if current().patterns:
        return patterns.values(length, 0, PAYLOAD_MAX)
    return st.lists(payload(), min_size=length, max_size=length)


def grid_size(max_value: int = 4) -> st.SearchStrategy[int]:
    """Programs along one grid axis; ``max_value`` at ``SMALL``, times the scale's ``programs``."""
    return st.integers(1, max_value * current().programs)


TILE_SIZES = (16, 32)
LOOP_COUNTS = (1, 3)


def tile_size() -> st.SearchStrategy[int]:
    """A compile-time 2-D tile side (BM or BN) from a small set."""
    return st.sampled_from(TILE_SIZES)


def loop_count() -> st.SearchStrategy[int]:
    """A compile-time loop trip count (constexpr: range() of a run-time value breaks the 3.6 interpreter)."""
    return st.sampled_from(LOOP_COUNTS)


def other_value() -> st.SearchStrategy[int]:
    """A run-time ``other`` for masked loads: negative (never equal to loaded data) and exact in float16."""
    return st.integers(-2048, -1)


INT32 = (-(2**31), 2**31 - 1)


def int_values(length: int) -> st.SearchStrategy[list[int]]:
    """``length`` integer element values over the whole int32 range: signs, carries and every bit occur (a pattern
    at a scale with ``patterns``: constant, ramp or uniform)."""
    if current().patterns:
        return patterns.values(length, *INT32)
    return st.lists(st.integers(*INT32), min_size=length, max_size=length)


def trace_max_events(max_value: int = 20, attempts: int | None = None) -> st.SearchStrategy[int]:
    """A ``max_events`` below what the programs attempt (``attempts`` events, where given), so that they overflow the
    trace buffers: 1 .. ``max_value`` at ``SMALL``. At a scale with ``near_full``, 1 .. attempts - 1 with the
    simplest at half the attempts: capacity close to the attempts, so that many programs race for the last chunks."""
    scale = current()
    if not scale.near_full or attempts is None:
        top = max_value * scale.events
        return st.integers(1, top if attempts is None else max(1, min(top, attempts - 1)))
    return st.one_of(st.integers(max(1, attempts // 2), max(1, attempts - 1)), st.integers(1, max(1, attempts - 1)))


def events_per_program(max_value: int = 8, programs: int = 1) -> st.SearchStrategy[int]:
    """A run-time loop trip count: how many events (or iterations) one program records, 1 .. max_value at
    ``SMALL``; at a larger scale widened by its ``events``, within its ``loop_budget`` shared among ``programs``
    programs (pass the grid drawn before, times the events an iteration records)."""
    return st.integers(1, current().loop_bound(max_value, programs))


def event_counts(programs: int, small: st.SearchStrategy[int], most: int) -> st.SearchStrategy[list[int]]:
    """Events each of ``programs`` programs records (run time, 0 included): a list of ``small`` draws at ``SMALL``,
    where they are at most ``most``; at a larger scale a pattern of counts in 0 .. ``most`` widened by its
    ``events`` within its ``loop_budget`` (uniform counts the simplest: programs that refill at different times)."""
    scale = current()
    if not scale.patterns:
        return st.lists(small, min_size=programs, max_size=programs)
    return patterns.values(programs, 0, scale.loop_bound(most, programs), first="uniform")


def trace_ops() -> st.SearchStrategy[bool]:
    """``TRACE_OPS``, the kernel's ``initialize(..., trace_ops=TRACE_OPS)`` (compile time): each example on or off,
    on in the simplest one, so that short runs (``mutate``) check the ops' own ranges on its crossing peers too."""
    return st.sampled_from((True, False))


_payload, _trace_ops = payload, trace_ops  # masked_block's keywords shadow the strategies


@st.composite
def masked_block(draw, world_size, *, offsets=("offset",), payload=True, trace_ops=True, **extra) -> dict:
    """Masked 1-D block op: n, BLOCK, dtype, TRACE_OPS (unless ``trace_ops=False``: a kernel that calls no op),
    offsets, extra (strategy or fn of p), payload, per-rank bits; in order."""
    p = {"n": draw(element_count(), label="n"), "BLOCK": draw(block_size(), label="BLOCK")}
    length = cdiv(p["n"], p["BLOCK"]) * p["BLOCK"]
    p["dtype"] = draw(dtype_name(exact_dtypes(largest_source_value(world_size, length))), label="dtype")
    if trace_ops:
        p["TRACE_OPS"] = draw(_trace_ops(), label="TRACE_OPS")
    previous = 0
    for name in offsets:
        p[name] = previous = draw(rank_offset(world_size, after=previous), label=name)
    for name, strategy in extra.items():
        p[name] = draw(strategy(p) if callable(strategy) else strategy, label=name)
    if payload:
        p["payload"] = draw(_payload(), label="payload")
    p["bits"] = draw(per_rank(world_size, lambda r: mask_bits(length)), label="bits")
    return p
