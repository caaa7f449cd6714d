"""gpu tier: a case compiled ahead (``conformance.harness.compile_ahead``) leaves its ranks nothing to compile.

On an empty Triton cache, the pool compiles every variant the case's examples launch; the ranks then load each one
from the cache and compile none, and compiling the same examples ahead again compiles nothing. The pool's processes
hold no GPU memory: they compile for the GPU without touching it.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from conformance.harness.case import run_case
from conformance.harness.compile_ahead import Compiler
from conformance.harness.drawing import drawn_examples
from conformance.harness.profiles import load_profile
from conformance.harness.run_settings import RunSettings
from conformance.kit.scenario import APIS, load
from iris.ranks import Pools
from tests import gpu_memory

pytestmark = pytest.mark.gpu


@pytest.mark.long
@pytest.mark.parametrize(("name", "world_size"), [("load", 2), ("tracing_1d_address", 2)])
def test_a_case_compiled_ahead_only_loads_on_its_ranks(name, world_size, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))  # empty; ranks and workers inherit it
    scenario = load(name)
    profile = settings(load_profile("dev"), max_examples=3, database=None)
    with Compiler(workers=2) as compiler, Pools() as pools:
        case, _ = run_case(pools, scenario, world_size, RunSettings("gpu", profile, seed=11), compiler)
        assert case.ok, case.failure or case.error
        assert case.ahead_error == ""
        assert case.ahead_variants >= len(APIS), "at least one variant per API"
        assert case.ahead_compiled == case.ahead_variants, "an empty cache: every variant compiled ahead"
        assert case.jit_compiled == 0, f"the ranks compiled {case.jit_compiled} variant(s) the pool did not"
        assert case.jit_loaded > 0
        drawn = drawn_examples(scenario, world_size, RunSettings("gpu", profile), 11)
        again = compiler.ahead(name, world_size, [e.params for e in drawn], APIS, tuple(range(world_size)))
    assert (again.variants, again.compiled, again.error) == (case.ahead_variants, 0, "")


@pytest.mark.long
def test_a_run_compiles_every_case_ahead_at_its_start_and_its_ranks_only_load(tmp_path, monkeypatch):
    from conformance.harness.suite import plan, run_cases

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))  # empty; ranks and workers inherit it
    monkeypatch.setenv("IRIS_COMPILE_WORKERS", "2")
    cases, _ = plan(["load", "store", "get"], (1, 2))
    said: list[str] = []
    done = run_cases(cases, RunSettings("gpu", settings(load_profile("dev"), max_examples=2, database=None), seed=5),
                     echo=said.append)
    assert said[0] == f"drawing the examples of {len(cases)} case(s) to compile their kernels ahead ..."
    assert len(done) == len(cases)
    for case, _ in done:
        assert case.ok, case.failure or case.error
        assert (case.ahead_error, case.jit_compiled) == ("", 0), (case.scenario, case.world_size, case.ahead_error)
        assert case.ahead_variants >= len(APIS) and case.jit_loaded > 0, case.scenario


def test_the_compile_workers_hold_no_gpu_memory(tmp_path, monkeypatch):
    """chunked_claims's launch makes a second CUDA stream where a GPU is visible: captured on a worker that could
    see the GPU, it gave that worker a CUDA context (about 0.5 GiB) for the rest of the run."""
    pytest.importorskip("pynvml", reason="per-process GPU memory needs NVML (pip install nvidia-ml-py)")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    scenario, world_size = load("chunked_claims"), 1
    profile = settings(load_profile("dev"), max_examples=2, database=None)
    examples = [e.params for e in drawn_examples(scenario, world_size, RunSettings("gpu", profile), 3)]
    with Compiler(workers=2) as compiler:
        ahead = compiler.ahead("chunked_claims", world_size, examples, APIS, (0,))
        assert (ahead.error, ahead.compiled > 0, len(compiler.pids)) == ("", True, 2)
        held = {pid: b for pid, b in gpu_memory.bytes_by_pid().items() if pid in compiler.pids}
    assert held == {}, f"compile workers holding GPU memory (pid: bytes): {held}"
