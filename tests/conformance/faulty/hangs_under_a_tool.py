"""Correct everywhere but under a sanitizer tool, where each rank's launch waits for what never comes: a hang that
only the tool's run shows (its control, the same example on ranks under no tool, passes)."""

import os
import time

from iris.ranks import progress, sanitizer
from tests.conformance.faulty import _base
from tests.conformance.faulty._base import scenario


def launch(kernel, rank, p):
    if os.environ.get(sanitizer.TOOL_ENV):
        progress("hangs_under_a_tool: waiting, under the tool, for what never comes")
        time.sleep(3600)
    _base.launch(kernel, rank, p)


SCENARIO = scenario("hangs_under_a_tool", launch=launch)
