"""The conformance suite as pytest cases: every scenario x world size, on cpu (interpreter) and gpu.

Stable ids: ``test_conformance[<backend>-<scenario>-<R>r]`` (the gate's case ids). ``--ranks 1,2,8`` picks world
sizes (any R >= 1; default: each scenario's, ``conformance.kit.scenario.default_world_sizes()``);
``--conformance-profile ci`` (or IRIS_CONFORMANCE_PROFILE=ci) picks the example count.
"""

from __future__ import annotations

import pytest

from conformance.harness.case import run_case
from conformance.harness.profiles import load_profile
from conformance.harness.run_settings import RunSettings
from conformance.kit.scenario import all_scenarios
from tests.worlds import backends


def pytest_generate_tests(metafunc):
    """Every scenario x world size (``--ranks``, else the scenario's defaults) x backend, ids as the gate's, world
    size by world size: a test process then holds one world's rank pool at a time (``conftest.pools``), and moves
    on to the next world size about once."""
    if metafunc.definition.name != "test_conformance":
        return
    ranks = metafunc.config.getoption("--ranks")
    cases = sorted(((s, ws) for s in all_scenarios() for ws in (ranks or s.world_sizes) if s.refusal(ws) is None),
                   key=lambda case: case[1])  # stable: scenarios in order within a world size
    cases = [pytest.param(s, ws, id=f"{s.name}-{ws}r") for s, ws in cases]
    metafunc.parametrize("backend", backends())
    metafunc.parametrize(("scenario", "world_size"), cases)


def test_conformance(scenario, world_size, backend, pools, compiler, request):
    profile = load_profile(request.config.getoption("--conformance-profile"))
    case, _ = run_case(pools, scenario, world_size, RunSettings(backend, profile), compiler)
    if case.problem:
        pytest.fail(case.problem, pytrace=False)
    if not case.ok:
        pytest.fail(case.failure, pytrace=False)
    assert not case.ahead_error, f"{scenario.name}: compiling its variants ahead failed: {case.ahead_error}"
    gluon_variants = case.variants_per_config["gluon"]
    if backend == "gpu":  # compiled: one Gluon compile must serve every rank (rank and world are run-time values)
        assert gluon_variants == 1, (
            f"{scenario.name} on {world_size} rank(s): gluon compiled variants per configuration across ranks="
            f"{gluon_variants}, but should be 1"
        )
