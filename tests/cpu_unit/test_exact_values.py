"""Any world size stays exact: every value a scenario's model expects is representable in the dtype it drew.

float16 holds integers exactly only up to 2048, and several scenarios write values that grow with the rank
(512 q + j); ``strategies.exact_dtypes`` keeps such dtypes out of the draws where they would round.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.kit import strategies as S
from conformance.kit.helpers import largest_source_value, source_values
from conformance.kit.scenario import all_scenarios

pytestmark = pytest.mark.cpu_unit

WORLD_SIZES = (3, 5, 8)


def _numbers(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value


@pytest.mark.parametrize("world_size", range(1, 10))
def test_source_values_are_exact_in_every_dtype_drawn_for_the_world(world_size):
    values = [v for q in range(world_size) for v in source_values(q, 320)]
    drawn = S.exact_dtypes(largest_source_value(world_size))
    assert ("float16" in drawn) == (world_size <= 4), f"float16 drawn at R={world_size}: {'float16' in drawn}"
    for dtype in drawn:
        back = np.array(values, dtype=dtype).astype(np.int64).tolist()
        wrong = [(v, b) for b, v in zip(back, values, strict=True) if b != v]
        assert not wrong, f"{dtype} at R={world_size}: {wrong[0][0]} reads back as {wrong[0][1]}"


@pytest.mark.parametrize("scenario", all_scenarios(), ids=lambda s: s.name)
def test_model_values_are_exact_in_the_drawn_dtype_at_3_5_and_8_ranks(scenario):
    @settings(max_examples=8, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data(), world_size=st.sampled_from(WORLD_SIZES))
    def check(data, world_size):
        p = data.draw(scenario.params(world_size), label="params")
        dtype = p.get("dtype")
        if dtype not in ("float16", "bfloat16", "float32"):
            return
        memory = scenario.model(p, world_size).memory
        for rank, buffers in memory.items():
            for name, value in buffers.items():
                numbers = list(_numbers(value))
                back = np.array(numbers, dtype=np.float64).astype(dtype).astype(np.float64).tolist()
                bad = [(a, b) for a, b in zip(numbers, back, strict=True) if a != b]
                assert not bad, f"{scenario.name} R={world_size} rank {rank} {name} ({dtype}): {bad[0][0]} rounds " \
                                f"to {bad[0][1]}"

    check()
