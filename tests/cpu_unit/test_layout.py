"""Context layout v3: encode/decode round trips, fixed offsets, tracing-off zeros, errors naming bad values, and
the cursor cells a tracing needs."""

from __future__ import annotations

import importlib
import re
import sys

import pytest
import torch

from iris import context_layout as layout
from tests.cpu_unit.checks import check, check_raises

pytestmark = pytest.mark.cpu_unit

RANK_COUNTS = (1, 2, 4, 8)
BLOCK = layout.TracingBlock(enabled=1, max_events=1000, chunk=16, counters_ptr=0x7F00_0000_1000,
                            records_ptr=0x7F00_0000_2000, cursors_ptr=0x7F00_0000_3000)


def _bases(num_ranks: int) -> list[int]:
    """Distinct, realistic heap bases (1 GiB apart)."""
    return [0x7E00_0000_0000 + r * (1 << 30) for r in range(num_ranks)]


@pytest.mark.parametrize("tracing", [None, BLOCK], ids=["tracing_off", "tracing_on"])
@pytest.mark.parametrize("num_ranks", RANK_COUNTS)
def test_round_trip(num_ranks, tracing):
    for cur_rank in range(num_ranks):
        where = f"encode({cur_rank}, {num_ranks} bases, {tracing})"
        values = layout.encode(cur_rank, _bases(num_ranks), tracing)
        check("len(values)", len(values), layout.length(num_ranks), where)
        ctx = layout.decode(values)
        check("cur_rank", ctx.cur_rank, cur_rank, where)
        check("num_ranks", ctx.num_ranks, num_ranks, where)
        check("version", ctx.version, layout.VERSION, where)
        check("heap_bases", ctx.heap_bases, tuple(_bases(num_ranks)), where)
        check("tracing", ctx.tracing, tracing or layout.TracingBlock(0, 0, 0, 0, 0, 0), where)


@pytest.mark.parametrize("num_ranks", RANK_COUNTS)
def test_decode_accepts_an_int64_tensor(num_ranks):
    values = layout.encode(num_ranks - 1, _bases(num_ranks), BLOCK)
    ctx = layout.decode(torch.tensor(values, dtype=torch.int64))
    check("decode(tensor)", ctx, layout.decode(values))


def test_offsets_do_not_depend_on_num_ranks():
    """The tracing block sits at the same index for any rank count, and the heap bases follow it."""
    block = [BLOCK.enabled, BLOCK.max_events, BLOCK.chunk, BLOCK.counters_ptr, BLOCK.records_ptr, BLOCK.cursors_ptr]
    check("TRACE_BLOCK_LEN", layout.TRACE_BLOCK_LEN, len(block))
    check("HEAP_BASES", layout.HEAP_BASES, layout.TRACE_BLOCK + layout.TRACE_BLOCK_LEN)
    for name, index in [("TRACE_ENABLED", 0), ("TRACE_MAX_EVENTS", 1), ("TRACE_CHUNK", 2), ("TRACE_COUNTERS_PTR", 3),
                        ("TRACE_RECORDS_PTR", 4), ("TRACE_CURSORS_PTR", 5)]:
        check(name, getattr(layout, name), layout.TRACE_BLOCK + index)
    for num_ranks in RANK_COUNTS:
        where = f"{num_ranks} ranks"
        values = layout.encode(0, _bases(num_ranks), BLOCK)
        check("values[CUR_RANK]", values[layout.CUR_RANK], 0, where)
        check("values[NUM_RANKS]", values[layout.NUM_RANKS], num_ranks, where)
        check("values[VERSION_SLOT]", values[layout.VERSION_SLOT], layout.VERSION, where)
        check("tracing block", values[layout.TRACE_BLOCK : layout.TRACE_BLOCK + layout.TRACE_BLOCK_LEN], block, where)
        check("heap bases", values[layout.HEAP_BASES :], _bases(num_ranks), where)
        check("length", layout.length(num_ranks), layout.HEAP_BASES + num_ranks, where)


@pytest.mark.parametrize("num_ranks", RANK_COUNTS)
def test_tracing_off_is_zeros_of_the_same_length(num_ranks):
    on = layout.encode(0, _bases(num_ranks), BLOCK)
    off = layout.encode(0, _bases(num_ranks))
    check("len(tracing off)", len(off), len(on), f"{num_ranks} ranks")
    check("tracing block off", off[layout.TRACE_BLOCK : layout.HEAP_BASES], [0] * layout.TRACE_BLOCK_LEN)
    check("entries outside the tracing block", off[: layout.TRACE_BLOCK] + off[layout.HEAP_BASES :],
          on[: layout.TRACE_BLOCK] + on[layout.HEAP_BASES :])


@pytest.mark.parametrize("cur_rank", [-1, 2, 3, 100])
def test_encode_rejects_a_bad_cur_rank(cur_rank):
    check_raises(ValueError, lambda: layout.encode(cur_rank, _bases(2)), mentions=[f"cur_rank={cur_rank}"])


def test_encode_rejects_no_heap_bases():
    check_raises(ValueError, lambda: layout.encode(0, []), mentions=["cur_rank=0", "0 heap bases"])


@pytest.mark.parametrize("version", [0, 1, 2, 4, -1, 99])
def test_decode_rejects_a_wrong_version(version):
    values = layout.encode(0, _bases(2))
    values[layout.VERSION_SLOT] = version
    check_raises(ValueError, lambda: layout.decode(values), mentions=[f"version={version}", str(layout.VERSION)])


@pytest.mark.parametrize("num_ranks", [1, 4])
@pytest.mark.parametrize("delta", [-1, 1, 5])
def test_decode_rejects_a_length_that_disagrees_with_num_ranks(num_ranks, delta):
    values = layout.encode(0, _bases(num_ranks))
    values = values[:delta] if delta < 0 else values + [0] * delta
    check_raises(ValueError, lambda: layout.decode(values),
                 mentions=[f"{len(values)} entries", f"{layout.length(num_ranks)} for {num_ranks} ranks"])


@pytest.mark.parametrize("n", [0, 1, layout.HEAP_BASES - 1])
def test_decode_rejects_a_truncated_header(n):
    values = layout.encode(0, _bases(1))[:n]
    check_raises(ValueError, lambda: layout.decode(values), mentions=[f"{n} entries", str(layout.HEAP_BASES)])


@pytest.mark.parametrize("cur_rank", [-1, 2])
def test_decode_rejects_a_bad_cur_rank(cur_rank):
    values = layout.encode(0, _bases(2))
    values[layout.CUR_RANK] = cur_rank
    check_raises(ValueError, lambda: layout.decode(values), mentions=[f"cur_rank={cur_rank}"])


@pytest.mark.parametrize(("max_events", "chunk", "cells"), [(1000, 16, 63), (1024, 16, 64), (5, 1, 5), (5, 64, 1),
                                                         (1, 1, 1)])
def test_one_cursor_cell_per_chunk_that_starts_below_max_events(max_events, chunk, cells):
    check("cursor_cells", layout.cursor_cells(max_events, chunk), cells, f"max_events={max_events}, chunk={chunk}")
    check("last chunk start", (cells - 1) * chunk < max_events <= cells * chunk, True)


@pytest.mark.parametrize(("old", "new"), [("iris.layout", "iris.context_layout"),
                                          ("iris.layout_constexpr", "iris.context_layout_constexpr")])
def test_the_old_path_warns_and_gives_the_moved_module(old, new, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"^{re.escape(old)} is deprecated: import {re.escape(new)} "):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
