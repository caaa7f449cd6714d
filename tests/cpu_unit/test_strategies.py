"""conformance.kit.strategies: the simplest examples cross ranks, and every value stays reachable."""

from __future__ import annotations

import pytest
from hypothesis import Phase, find, settings

from conformance.kit import strategies as S

pytestmark = pytest.mark.cpu_unit


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
@pytest.mark.parametrize("after", [0, 1])
def test_rank_offset_simplest_is_after_plus_one_and_every_offset_is_reachable(world_size, after):
    assert find(S.rank_offset(world_size, after), lambda k: True) == (after + 1) % world_size
    for offset in range(world_size):
        assert find(S.rank_offset(world_size, after), lambda k, o=offset: k == o) == offset


def test_second_offset_differs_from_the_first_in_the_first_example():
    """The first example Hypothesis generates is the simplest one (what short runs such as ``mutate`` rely on)."""
    first = settings(database=None, max_examples=1, phases=[Phase.generate])
    p = find(S.masked_block(3, offsets=("source_offset", "target_offset"), payload=False), lambda p: True,
             settings=first)
    assert (p["source_offset"], p["target_offset"]) == (1, 2)


def test_masked_block_draws_the_auto_tracing_switch_on_first_and_off_too():
    first = settings(database=None, max_examples=1, phases=[Phase.generate])
    assert find(S.masked_block(2), lambda p: True, settings=first)["TRACE_OPS"] is True
    assert find(S.masked_block(2), lambda p: not p["TRACE_OPS"])["TRACE_OPS"] is False
    assert "TRACE_OPS" not in find(S.masked_block(2, trace_ops=False), lambda p: True, settings=first)
