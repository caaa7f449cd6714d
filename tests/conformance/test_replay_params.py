"""``--params`` checked against the domain read off each scenario's own strategy (``harness.replay_params``).

What every scenario draws must pass (no replay of a drawn example is ever refused); values outside it are refused
naming the key, the value and what the strategy accepts, bounds that depend on earlier draws included.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from conformance.harness.drawing import drawn_examples
from conformance.harness.replay_params import ParamsError, check, domain_problem, reference
from conformance.harness.run_settings import RunSettings
from conformance.kit import strategies as S
from conformance.kit.scenario import load, names

pytestmark = pytest.mark.cpu_unit

DRAWS = settings(max_examples=4, deadline=None, database=None)


@pytest.mark.parametrize("name", names())
def test_every_drawn_example_replays(name):
    scenario = load(name)
    for world_size in (1, 3):
        if scenario.refusal(world_size) is None:
            for params, settings in drawn_examples(scenario, world_size, RunSettings("cpu", DRAWS), 20_240_917):
                check(scenario, world_size, params, settings.chunk)  # raises ParamsError naming what it refuses


def _refusal(name: str, world_size: int, **changes) -> str:
    scenario = load(name)
    with pytest.raises(ParamsError) as e:
        check(scenario, world_size, reference(scenario, world_size) | changes)
    return str(e.value).split(": ", 1)[1]


def test_a_bound_that_depends_on_earlier_draws_uses_the_replayed_values():
    # overflow draws n <= programs * BLOCK: with the reference's programs and BLOCK=64 that is 64, not 32
    ref = reference(load("overflow"), 2)
    assert (ref["programs"], ref["BLOCK"]) == (1, 32), ref
    assert _refusal("overflow", 2, BLOCK=64, n=65) == "n=65; expected an int in 1..64"
    assert _refusal("overflow", 2, n=33) == "n=33; expected an int in 1..32"
    assert _refusal("overflow", 2, per_program=7) == "per_program=7; expected an int in 1..6"


def test_keys_after_a_draw_no_key_answers():
    # call_shapes draws its grid extents under labels that are not keys: a later draw whose strategy does not
    # depend on them is still checked; one that does (loop_pid < programs of a grid) is not
    scenario = load("call_shapes")
    params = reference(scenario, 2)
    assert _refusal("call_shapes", 2, axes_shift=3) == "axes_shift=3; expected an int in 0..2"
    offsets = [*params["offsets"][:11], 2, *params["offsets"][12:]]
    assert _refusal("call_shapes", 2, offsets=offsets) == "offsets[11]=2; expected one of [1, 0]"
    params["grids"] = [[3, 3, 2]] * len(params["grids"])
    check(scenario, 2, params | {"loop_pid": 17})  # programs of a 3 x 3 x 2 grid: loop_pid 17 is the last


def test_domains_read_off_the_strategies():
    assert domain_problem(S.block_size(), 32, "BLOCK") is None
    assert domain_problem(S.block_size(), True, "BLOCK") == "BLOCK=True; expected one of [32, 64]"
    assert domain_problem(S.element_count(), 300, "n") is None
    assert domain_problem(S.element_count(), 1.0, "n") == "n=1.0; expected an int in 1..300"
    assert domain_problem(S.rank_offset(8), 7, "offset") is None
    assert domain_problem(S.rank_offset(8), 8, "offset") == "offset=8; expected an int in 0..7"
    assert domain_problem(S.per_rank(2, lambda r: S.mask_bits(3)), [[1, 1, 1], [0, 1, 0]], "bits") is None
    assert domain_problem(S.per_rank(2, lambda r: S.mask_bits(3)), [[1, 1, 1]], "bits") == "bits: 1 entries; " \
                                                                                            "expected 2"
    assert domain_problem(S.per_rank(2, lambda r: S.mask_bits(3)), [[1, 1, 1], [0, 1]], "bits") == "bits[1]: 2 " \
                                                                                                 "entries; expected 3"
    assert domain_problem(st.integers(min_value=0), -1, "k") == "k=-1; expected an int >= 0"
    assert domain_problem(st.booleans(), 1, "flag") == "flag=1; expected true or false"
    # what cannot be read off a strategy is not refused
    assert domain_problem(st.integers(1, 3).map(lambda x: x * 2), 100, "k") is None
    assert domain_problem(st.floats(0, 1), 5.0, "x") is None


def test_the_auto_tracing_switch_is_a_boolean():
    assert domain_problem(S.trace_ops(), True, "TRACE_OPS") is None
    assert domain_problem(S.trace_ops(), 1, "TRACE_OPS") == "TRACE_OPS=1; expected one of [True, False]"
    assert _refusal("load", 2, TRACE_OPS=1) == "TRACE_OPS=1: expected a bool like True"
