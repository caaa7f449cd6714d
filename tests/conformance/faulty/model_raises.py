"""The model divides by zero."""

from tests.conformance.faulty._base import scenario


def model(p, world_size):
    return p["BLOCK"] // 0


SCENARIO = scenario("model_raises", model=model)
