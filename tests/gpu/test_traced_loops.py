"""gpu tier: a program of 4 warps looping over 250 traced calls (four chunk claims) finishes launch after launch and
records every call, in both APIs, for manual ranges and auto-traced ops.

The loop is ``benchmarks.stress_traced_loops``'s case, one rank per case under a timeout. Before the cursor was
read through lane 0 (``iris.tracing.hw.load_lane0``), such loops hung on one H200 within a few launches (a warp's
lanes split across the chunk-refill branch); ``tests/cpu_compile/test_cross_compile.py`` checks the machine code.

Kept beside the conformance suite's GPU-scale draws (``counted_loop``: this loop's form with ``num_warps`` >= 4 and
hundreds of records a program, where such a loop that does not finish is a ``hang``): those find this class of bug at
random; this is a fast, deterministic regression check of the one configuration known to have hung, in the tier
every pull request runs, whatever the suite draws that day.
"""

from __future__ import annotations

import pytest

from benchmarks.stress_traced_loops import KINDS, run_case
from iris.ranks import RankTimeout, backend_env, launch

pytestmark = pytest.mark.gpu

WARPS, ITERATIONS, LAUNCHES = 4, 250, 20
TIMEOUT_S = 120.0  # start-up and compiling included; the launches themselves take milliseconds


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("api", ["triton", "gluon"])
def test_a_long_traced_loop_finishes_every_launch_and_records_every_call(api, kind):
    try:
        result = launch(run_case, 1, api, kind, WARPS, ITERATIONS, LAUNCHES, timeout=TIMEOUT_S,
                        env=backend_env("gpu"))[0]
    except RankTimeout:
        pytest.fail(f"{api} {kind}: {LAUNCHES} launches of one {WARPS}-warp program looping over {ITERATIONS} "
                    f"traced calls did not finish in {TIMEOUT_S:g} s")
    assert result["wrong"] is None, f"{api} {kind}: {result['wrong']}"
