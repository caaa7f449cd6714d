"""gpu tier: a case compiled ahead (``conformance.harness.compile_ahead``) leaves its ranks nothing to compile.

On an empty Triton cache, the pool compiles every variant the case's examples launch; the ranks then load each one
from the cache and compile none, and compiling the same examples ahead again compiles nothing.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from conformance.harness.compile_ahead import Compiler
from conformance.harness.host_side import drawn_examples, load_profile, run_case
from conformance.kit.scenario import APIS, load
from iris.ranks import Pools

pytestmark = pytest.mark.gpu


@pytest.mark.long
@pytest.mark.parametrize(("name", "world_size"), [("load", 2), ("tracing_1d_address", 2)])
def test_a_case_compiled_ahead_only_loads_on_its_ranks(name, world_size, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))  # empty; ranks and workers inherit it
    scenario = load(name)
    profile = settings(load_profile("dev"), max_examples=3, database=None)
    with Compiler(workers=2) as compiler, Pools() as pools:
        case, _ = run_case(pools, scenario, world_size, "gpu", profile, fixed_seed=11, compiler=compiler)
        assert case.ok, case.failure or case.error
        assert case.ahead_error == ""
        assert case.ahead_variants >= len(APIS), "at least one variant per API"
        assert case.ahead_compiled == case.ahead_variants, "an empty cache: every variant compiled ahead"
        assert case.jit_compiled == 0, f"the ranks compiled {case.jit_compiled} variant(s) the pool did not"
        assert case.jit_loaded > 0
        again = compiler.ahead(name, world_size, [e.params for e in drawn_examples(scenario, world_size, profile, 11)],
                               APIS,
                               tuple(range(world_size)))
    assert (again.variants, again.compiled, again.error) == (case.ahead_variants, 0, "")


@pytest.mark.long
def test_a_run_compiles_every_case_ahead_at_its_start_and_its_ranks_only_load(tmp_path, monkeypatch):
    from conformance.harness.suite import plan, run_cases

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))  # empty; ranks and workers inherit it
    monkeypatch.setenv("IRIS_COMPILE_WORKERS", "2")
    cases, _ = plan(["load", "store", "get"], (1, 2))
    said: list[str] = []
    done = run_cases(cases, "gpu", settings(load_profile("dev"), max_examples=2, database=None), seed=5,
                     echo=said.append)
    assert said[0] == f"drawing the examples of {len(cases)} case(s) to compile their kernels ahead ..."
    assert len(done) == len(cases)
    for case, _ in done:
        assert case.ok, case.failure or case.error
        assert (case.ahead_error, case.jit_compiled) == ("", 0), (case.scenario, case.world_size, case.ahead_error)
        assert case.ahead_variants >= len(APIS) and case.jit_loaded > 0, case.scenario
