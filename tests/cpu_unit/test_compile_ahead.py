"""Compiling ahead: which launches count as one variant, and which examples a case will run.

The compiling itself needs a GPU (tests/gpu/test_compile_ahead.py); what decides how much is compiled runs here:
``variant_key`` on the launches the stand-in rank captures, and ``drawn_examples`` against the examples that
``run_case`` then runs.
"""

from __future__ import annotations

import multiprocessing
import os

import pytest
from hypothesis import Phase, find, settings
from triton.backends.compiler import GPUTarget

from conformance.harness.case import run_case
from conformance.harness.compile_ahead import GPU_HIDING_ENV, Compiler, _this_gpu, default_workers, variant_key
from conformance.harness.drawing import CHUNK_SIZES, Example, drawn_examples
from conformance.harness.profiles import load_profile
from conformance.harness.run_settings import RunSettings
from conformance.harness.stand_in import Launch, captured_launches
from conformance.kit.scenario import load
from iris.ranks import Pools

pytestmark = pytest.mark.cpu_unit


def _simplest(scenario, world_size: int) -> dict:
    """Hypothesis's first example (generated only: shrinking call_shapes' params took half a minute)."""
    only_first = settings(database=None, max_examples=1, phases=(Phase.generate,))
    return find(scenario.params(world_size), lambda p: True, settings=only_first)


SM90 = GPUTarget("cuda", 90, 32)


def _keys(scenario, api: str, params: dict, rank: int = 0, world_size: int = 2) -> list[str]:
    kernel = scenario.kernel(api)
    return [variant_key(kernel, launch, SM90) for launch in captured_launches(scenario, api, params, rank, world_size)]


@pytest.mark.parametrize("api", ["triton", "gluon"])
def test_run_time_values_share_a_variant_and_compile_time_values_do_not(api):
    scenario = load("load")
    p = _simplest(scenario, 2)
    base = _keys(scenario, api, p)
    assert len(base) == 1
    assert _keys(scenario, api, {**p, "payload": p["payload"] + 7}) == base  # a run-time value
    other_block = 64 if p["BLOCK"] == 32 else 32
    n = p["n"]
    bits = [[1] * (-(-n // other_block) * other_block)] * 2
    assert _keys(scenario, api, {**p, "BLOCK": other_block, "bits": bits}) != base  # a constexpr
    other_dtype = "int64" if p["dtype"] != "int64" else "int32"
    assert _keys(scenario, api, {**p, "dtype": other_dtype}) != base  # a pointer's element type


def test_the_key_follows_triton_integer_specialization():
    scenario = load("call_shapes")
    kernel = scenario.kernel("gluon")
    launch = captured_launches(scenario, "gluon", _simplest(scenario, 1), 0, 1)[0]
    step = [p.name for p in kernel.params].index("step")  # run time (do_not_specialize): any value, one variant
    keys = {variant_key(kernel, Launch(launch.grid, launch.args[:step] + (v,) + launch.args[step + 1:],
                                       launch.kwargs), SM90) for v in (0, 1, 16, 17)}
    assert len(keys) == 1
    assert variant_key(kernel, Launch(launch.grid, launch.args, {**launch.kwargs, "num_warps": 8}), SM90) != \
        variant_key(kernel, launch, SM90)


def test_a_kernel_that_takes_rank_constexprs_differs_per_rank_and_one_that_does_not_shares():
    taking = load("tracing_1d_address")
    p = _simplest(taking, 2)
    assert _keys(taking, "triton", p, 0) != _keys(taking, "triton", p, 1)
    assert _keys(taking, "gluon", p, 0) == _keys(taking, "gluon", p, 1)


@pytest.mark.parametrize("name", ["load", "store"])
def test_drawn_examples_are_the_examples_the_case_runs(name):
    scenario, profile = load(name), load_profile("dev")
    drawn = drawn_examples(scenario, 1, RunSettings("cpu", profile), case_seed=1234)
    ran: list[Example] = []
    with Pools() as pools:
        case, _ = run_case(pools, scenario, 1, RunSettings("cpu", profile, seed=1234),
                           on_example=lambda r: ran.append(Example(r.params, r.settings)))
    assert case.ok, case.failure or case.error
    assert ran == drawn
    assert len(drawn) == profile.max_examples
    assert all("chunk" not in e.params and e.settings.chunk in CHUNK_SIZES for e in drawn), drawn


def test_workers_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("IRIS_COMPILE_WORKERS", "3")
    assert default_workers() == 3
    for bad in ("many", "-1", "1e3", "+2", "\uff15", "\u00b2"):  # "²".isdigit() is True, and int("²") raised
        monkeypatch.setenv("IRIS_COMPILE_WORKERS", bad)
        with pytest.raises(ValueError) as e:
            default_workers()
        assert str(e.value) == (f"IRIS_COMPILE_WORKERS={bad!r}: not a whole number in plain digits; expected a number "
                                "of compile processes (0 turns compiling ahead off)")
    monkeypatch.setenv("IRIS_COMPILE_WORKERS", "0")
    assert default_workers() == 0
    monkeypatch.delenv("IRIS_COMPILE_WORKERS")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "10000")
    assert default_workers() == 1


def test_a_case_that_overruns_its_time_stops_the_pool_for_the_run():
    before = set(multiprocessing.active_children())
    with Compiler(workers=1, timeout=0.01, target=GPUTarget("cuda", 90, 32)) as compiler:
        ahead = compiler.ahead("load", 1, [{"n": 1}], ("gluon",), (0,))
        assert ahead.error == "compiling ahead took over 0.01 s; stopped for this run (the ranks compile)"
        assert compiler.workers == 0
        assert compiler.ahead("load", 1, [{"n": 1}], ("gluon",), (0,)).error == ""  # off: nothing more
    assert set(multiprocessing.active_children()) <= before


def test_with_no_gpu_and_no_target_a_case_says_so_and_no_worker_starts(monkeypatch):
    from conformance.harness import compile_ahead

    def no_gpu():
        raise RuntimeError("0 active drivers ([]). There should only be one.")  # what Triton says on a CPU host

    monkeypatch.setattr(compile_ahead, "_this_gpu", no_gpu)
    with Compiler(workers=1) as compiler:
        compiler.start()  # the missing GPU is not raised here: the case's wait reports it
        ahead = compiler.ahead("load", 1, [{"n": 1}], ("triton",), (0,))
        assert (ahead.variants, ahead.compiled, compiler.pids, compiler.target) == (0, 0, [], None)
    assert ahead.error == "RuntimeError: 0 active drivers ([]). There should only be one."


def test_the_workers_see_no_gpu_and_compile_for_the_target():
    target = GPUTarget("hip", "gfx942", 64)
    with Compiler(workers=1, target=target) as compiler:
        pool = compiler._executor()
        seen = [pool.submit(os.getenv, name).result() for name in GPU_HIDING_ENV]
        assert seen == ["", ""] and len(compiler.pids) == 1
        assert pool.submit(_this_gpu).result() == target


def test_no_workers_compile_nothing():
    with Compiler(workers=0) as compiler:
        ahead = compiler.ahead("load", 1, [{"n": 1}], ("triton",), (0,))
    assert (ahead.variants, ahead.compiled, ahead.error) == (0, 0, "")



def test_a_variant_another_process_compiles_is_left_for_later_unless_waiting(tmp_path, monkeypatch):
    import fcntl

    from conformance.harness import compile_ahead

    monkeypatch.setattr(compile_ahead, "_lock_path", lambda key: str(tmp_path / f"{key}.lock"))
    with compile_ahead.variant_lock("k", wait=False) as held:
        assert held
        with open(tmp_path / "k.lock") as other:  # what another process sees meanwhile (flock: per open file)
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with compile_ahead.variant_lock("k", wait=False) as again:
            assert again is False
    with compile_ahead.variant_lock("k", wait=False) as free_again:
        assert free_again
