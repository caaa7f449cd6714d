"""Its strategy rejects every draw (a filter nothing passes): no example runs, so the case has no verdict to pass."""

from tests.conformance.faulty._base import params, scenario


def nothing_passes(world_size):
    return params(world_size).filter(lambda p: False)


SCENARIO = scenario("rejects_every_draw", params=nothing_passes)
