"""The unbroken base scenario (the control: it passes)."""

from tests.conformance.faulty._base import scenario

SCENARIO = scenario("healthy")
