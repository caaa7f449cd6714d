"""The healthy scenario declaring a world-size constraint (even worlds only): a world size it refuses is bad input."""

from conformance.kit.scenario import WorldConstraint
from tests.conformance.faulty._base import scenario

SCENARIO = scenario("even_ranks", world_constraint=WorldConstraint(lambda r: r % 2 == 0,
                                                                   "pairs rank 2k with 2k+1 (an even world)"))
