"""Its strategy raises on every draw but the simplest: the exception is the case's error, whatever Hypothesis does."""

from hypothesis import strategies as st

from tests.conformance.faulty._base import BLOCK, scenario


def raises_but_first(world_size):
    return st.integers(0, 3).map(lambda i: {"BLOCK": BLOCK} if i == 0 else {}["BLOCK"])


SCENARIO = scenario("draw_raises", params=raises_but_first)
