"""The compile-ahead pool itself, cross-compiling for sm_90 (``Compiler(target=...)``: no GPU needed).

A run submits every case at its start and each case waits only for its own variants: a variant two cases need is
compiled once, a case is not held behind an earlier one whose variant another process is compiling, and a case
prepared ahead (``preparing.prepare``) runs exactly the examples whose kernels were compiled for it.
"""

from __future__ import annotations

import json
import multiprocessing

import pytest
from hypothesis import Phase, find, settings
from triton.backends.compiler import GPUTarget

from conformance.harness.case import run_case
from conformance.harness.compile_ahead import Compiler, variant_key, variant_lock
from conformance.harness.drawing import drawn_examples
from conformance.harness.preparing import prepare
from conformance.harness.profiles import load_profile
from conformance.harness.run_settings import RunSettings
from conformance.harness.stand_in import captured_launches
from conformance.kit.scenario import APIS, load
from iris.ranks import Pools

pytestmark = pytest.mark.cpu_compile

SM90 = GPUTarget("cuda", 90, 32)
WAIT_S = 300.0  # a case's wait for its compiles: far above what two workers need here, and it ends a stuck test
# Workers of a pool whose tests are about which case gets which examples and compiles, not about two workers at once
# (each worker is a process that imports torch, Triton and every scenario, and compiles the harness's clock kernel)
ONE = 1


def _simplest(name: str) -> dict:
    only_first = settings(database=None, max_examples=1, phases=(Phase.generate,))
    return find(load(name).params(1), lambda p: True, settings=only_first)


def _keys(name: str, apis: tuple[str, ...], examples: list[dict]) -> set[str]:
    scenario = load(name)
    return {variant_key(scenario.kernel(api), launch, SM90)
            for api in apis for p in examples for launch in captured_launches(scenario, api, p, 0, 1)}


def _compiled_kernels(cache) -> list[str]:
    """The names of the kernels in Triton's cache folder ``cache``, one per compile."""
    return sorted(json.loads(f.read_text())["name"] for f in cache.glob("*/*.json") if not f.name.startswith("__grp__"))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))  # empty; the pool's processes inherit it
    return tmp_path


def test_a_variant_two_cases_need_is_compiled_once_and_counted_in_the_first(cache):
    p = _simplest("load")
    with Compiler(workers=2, timeout=WAIT_S, target=SM90) as compiler:
        first = compiler.submit("load", 1, [p], APIS, (0,))
        second = compiler.submit("load", 1, [p], APIS, (0,))
        a, b = compiler.wait(first), compiler.wait(second)
    expected = len(_keys("load", APIS, [p]))
    assert expected == len(APIS)
    assert (a.variants, a.compiled, a.error) == (expected, expected, "")
    assert (b.variants, b.compiled, b.error) == (expected, 0, "")
    kernels = _compiled_kernels(cache)  # the scenario's two and the harness's clock kernel, each compiled once
    assert len(kernels) == expected + 1, kernels
    assert {load("load").kernel(api).fn.__name__ for api in APIS} < set(kernels)


def test_a_case_is_not_held_behind_an_earlier_one_that_waits_for_another_process(cache):
    p, q = _simplest("load"), _simplest("store")
    (busy,) = _keys("load", ("gluon",), [p])
    with Compiler(workers=2, timeout=WAIT_S, target=SM90) as compiler:
        with variant_lock(busy, wait=True):  # as another process compiling the earlier case's variant holds it
            earlier = compiler.submit("load", 1, [p], ("gluon",), (0,))
            later = compiler.submit("store", 1, [q], ("gluon",), (0,))
            b = compiler.wait(later)
            assert not earlier.done(), "the earlier case compiled a variant whose lock another process held"
        a = compiler.wait(earlier)  # released: it compiles it now
    assert (b.variants, b.compiled, b.error) == (1, 1, "")
    assert (a.variants, a.compiled, a.error) == (1, 1, "")


def test_a_prepared_case_runs_the_examples_it_compiled_ahead(cache):
    scenario = load("load")
    profile = settings(load_profile("dev"), max_examples=3, database=None)
    ran: list[dict] = []
    with Compiler(workers=ONE, timeout=WAIT_S, target=SM90) as compiler, Pools() as pools:
        prepared = prepare(scenario, 1, RunSettings("cpu", profile, seed=7), compiler)
        case, _ = run_case(pools, scenario, 1, RunSettings("cpu", profile), prepared,
                           on_example=lambda r: ran.append(r.params))
    assert case.ok, case.failure or case.error
    drawn = [e.params for e in drawn_examples(scenario, 1, RunSettings("cpu", profile), 7, sizing=False)]
    assert prepared.seed == 7 and ran == drawn
    assert prepared.launch_keys == {json.dumps([d, None], sort_keys=True) for d in drawn}
    assert (case.ahead_variants, case.ahead_error) == (len(_keys("load", APIS, drawn)), "")
    assert case.ahead_compiled == case.ahead_variants  # an empty cache


def test_a_run_submits_every_case_it_can_draw_at_its_start(cache, monkeypatch):
    from conformance.harness import suite

    cases, _ = suite.plan(["load", "store"], (1,))
    cases.insert(1, suite.Planned("broken", 1, None, "ImportError: no module"))
    drawing = suite.prepare

    def prepare(scenario, *args, **kwargs):
        if scenario.name == "store":
            raise ValueError("the strategy raised")
        return drawing(scenario, *args, **kwargs)

    monkeypatch.setattr(suite, "prepare", prepare)
    said: list[str] = []
    profile = settings(load_profile("dev"), max_examples=2, database=None)
    with Compiler(workers=ONE, timeout=WAIT_S, target=SM90) as compiler:
        prepared = suite._prepare_all(cases, compiler, RunSettings("gpu", profile, seed=3), said.append)
        done = {i: compiler.wait(p.compiling) for i, p in prepared.items()}
    assert said == ["drawing the examples of 3 case(s) to compile their kernels ahead ..."]
    assert list(prepared) == [0]  # not the broken module's case, nor the one whose drawing raised
    assert prepared[0].seed == 3
    drawn = [e.params for e in drawn_examples(load("load"), 1, RunSettings("gpu", profile), 3, sizing=False)]
    assert (done[0].variants, done[0].compiled, done[0].error) == (len(_keys("load", APIS, drawn)),) * 2 + ("",)
    with Compiler(workers=0) as off:
        assert suite._prepare_all(cases, off, RunSettings("gpu", profile, seed=3), said.append) == {}


def test_a_case_submitted_before_the_pool_was_stopped_is_not_left_waiting(cache):
    p = _simplest("load")
    before = set(multiprocessing.active_children())
    with Compiler(workers=1, timeout=0.01, target=SM90) as compiler:
        first = compiler.submit("load", 1, [p], APIS, (0,))
        second = compiler.submit("store", 1, [_simplest("store")], APIS, (0,))
        stopped = compiler.wait(first)
        assert stopped.error == "compiling ahead took over 0.01 s; stopped for this run (the ranks compile)"
        assert compiler.workers == 0
        late = second.result(timeout=WAIT_S)  # settled by the stop (nothing compiled), not by a timeout of its own
        assert late.compiled == 0, late
    assert set(multiprocessing.active_children()) <= before


def test_a_gpu_run_hands_each_case_the_examples_drawn_and_compiled_for_it_at_its_start(cache, monkeypatch):
    from conformance.harness import suite
    from conformance.results import CaseResult

    cases, _ = suite.plan(["load", "store"], (1,))
    profile = settings(load_profile("dev"), max_examples=2, database=None)
    ran: list[tuple] = []
    order: list[str] = []

    def run_one(pools, planned, run, prepared):  # the case's turn: what it was handed (no ranks on this machine)
        order.append(f"run {planned.name}")
        ahead = prepared.compiler.wait(prepared.compiling)
        ran.append((planned.name, prepared.seed, ahead.variants, ahead.compiled, ahead.error))
        return CaseResult(planned.name, planned.world_size, run.backend), None

    monkeypatch.setattr(suite, "_run_one", run_one)
    monkeypatch.setattr(suite, "_start_pools", lambda pools, cases, backend: None)
    monkeypatch.setattr(suite, "Compiler", lambda workers: Compiler(workers=ONE, timeout=WAIT_S, target=SM90))
    suite.run_cases(cases, RunSettings("gpu", profile, seed=9), echo=order.append)
    assert order[:2] == ["drawing the examples of 2 case(s) to compile their kernels ahead ...",
                         "[1/2] load on 1 rank(s) ..."], order
    run = RunSettings("gpu", profile)
    expected = {name: len(_keys(name, APIS, [e.params for e in drawn_examples(load(name), 1, run, 9, sizing=False)]))
                for name in ("load", "store")}
    assert ran == [(name, 9, n, n, "") for name, n in expected.items()]


def test_a_variant_that_does_not_compile_is_each_waiting_case_s_error_and_holds_up_no_other(cache):
    broken, p = "tests.conformance.faulty.gluon_does_not_compile", {"BLOCK": 32}
    with Compiler(workers=2, timeout=WAIT_S, target=SM90) as compiler:
        first = compiler.submit(broken, 1, [p], APIS, (0,))
        healthy = compiler.submit("tests.conformance.faulty.healthy", 1, [p], APIS, (0,))
        again = compiler.submit(broken, 1, [p], ("gluon",), (0,))  # waits for the first case's compile of it
        a, h, b = compiler.wait(first), compiler.wait(healthy), compiler.wait(again)
    for failed in (a, b):
        assert failed.error.startswith("CompileTimeAssertionFailure: "), failed
        assert "BLOCK must be negative" in failed.error, failed
        assert failed.compiled == 0, failed
    assert (a.variants, b.variants) == (2, 1)
    # its Triton variant is the broken module's (both copy one scenario): compiled once, by the first case
    assert (h.variants, h.compiled, h.error) == (2, 1, "")
