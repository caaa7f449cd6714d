"""gpu tier: compute-sanitizer's tools on real reports. initcheck's report of a read of memory nobody wrote fails the
job, quoting the tool; its reports on peer memory mapped through IPC (its documented false positive) are listed as
not ours and fail nothing. (memcheck's out-of-bounds store: tests/gpu/test_faults.py; every scenario under every
tool: ./ci/sanitize.sh.)"""

from __future__ import annotations

import pytest
from hypothesis import settings

from conformance.harness.case import run_case
from conformance.harness.compile_ahead import Compiler
from conformance.harness.run_settings import RunSettings
from conformance.kit.scenario import load
from iris.ranks import Pools, RankError, RankPool
from iris.ranks.sanitizer import TOOLS, SanitizerUnavailable, find_tool
from tests.cpu_interpret import pool_jobs as jobs

pytestmark = [pytest.mark.gpu, pytest.mark.long]  # the tier's slowest: handed out first


@pytest.fixture(scope="module", autouse=True)
def _tool():
    try:
        find_tool()
    except SanitizerUnavailable as e:
        pytest.skip(str(e))


def test_initcheck_fails_a_job_that_reads_memory_nobody_wrote_quoting_the_tool():
    with RankPool(1, "gpu", sanitizer="initcheck") as pool:
        with pytest.raises(RankError) as info:
            pool.run(jobs.read_uninitialized, timeout=300)
    message = str(info.value)
    assert "compute-sanitizer initcheck reported " in message and " uninitialized read" in message, message
    assert "========= Uninitialized __global__ memory read of size " in message, message


def test_initcheck_lists_reads_of_peer_memory_as_not_ours_and_passes_the_case():
    # compiled ahead, outside the tool, as the suite's --sanitize runs do: the ranks under initcheck only load
    # (on an empty cache this test outran 200 s; warm, it passed)
    with Compiler(workers=2) as compiler, Pools(sanitizer="initcheck") as pools:
        run = RunSettings("gpu", settings(max_examples=2, deadline=None, database=None), timeout=300)
        case, _ = run_case(pools, load("load"), 2, run, compiler)
        not_ours = pools.get(2, "gpu").take_not_ours()
    print(f"initcheck, load on 2 ranks: not ours: {not_ours}")
    assert case.ok and case.sanitizer == "initcheck", case.error
    why = TOOLS["initcheck"].peer_memory_unsupported
    assert all(e["tool"] == "initcheck" and e["why"] == why for e in not_ours), not_ours
