"""``--examples N`` bounds a case's examples, shrinking a failure included (``RunSettings(max_runs=N)``); a hang ends a
case at the example that hung, unshrunk.

No ranks (the owner of pools starts none): ``run_example`` is replaced by a stand-in that fails every example with
more than 40 elements, so Hypothesis has a failure to shrink; the stand-in counts the examples the case runs.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from conformance.check.divergence import Divergence
from conformance.harness import case as case_module
from conformance.harness.hangs import ExampleHung
from conformance.harness.run_settings import RunSettings
from conformance.kit.scenario import load
from conformance.results import ExampleResult, Hang
from iris.ranks import Pools, RankTimeout

pytestmark = pytest.mark.cpu_unit

PROFILE = settings(max_examples=6, deadline=None, database=None)


def _stand_in(ran: list[dict]):
    def run_example(pools, scenario, world_size, example, backend=None, timeout=None, compiled=False):
        params = example.params
        ran.append(params)
        wrong = [Divergence("triton vs model", 0, "buffer dst[40]", "value", 1, 0)] if params["n"] > 40 else []
        return ExampleResult(scenario.name, world_size, "cpu", params, wrong, 0.0)

    return run_example


def _case(monkeypatch, max_runs: int | None):
    ran: list[dict] = []
    monkeypatch.setattr(case_module, "run_example", _stand_in(ran))
    case, _ = case_module.run_case(Pools(), load("store"), 1, RunSettings("cpu", PROFILE, seed=5, max_runs=max_runs))
    return case, ran


def test_a_failing_case_shrinks_past_max_examples_without_a_bound(monkeypatch):
    case, ran = _case(monkeypatch, None)
    assert case.failure and case.failing_params["n"] == 41, case.failing_params  # shrunk to the smallest failure
    assert len(ran) > 2 * PROFILE.max_examples, f"{len(ran)} examples: the stand-in should make Hypothesis shrink"


@pytest.mark.parametrize("bound", [1, 4, 6])
def test_max_runs_bounds_shrinking_too(monkeypatch, bound):
    case, ran = _case(monkeypatch, bound)
    assert len(ran) == bound and case.examples == bound, (len(ran), case.examples)  # not one more, shrinking or not
    failing = [p for p in ran if p["n"] > 40]
    assert bool(failing) == (bound > 1), [p["n"] for p in ran]  # seed 5: the second example fails (n=220)
    if failing:  # the case's failure is the last failing example it ran (the smallest Hypothesis found so far)
        assert case.failing_params == failing[-1] and "value=1, but should be 0" in case.failure, case.failure
        assert case.failure.endswith(f"--params '{_json(failing[-1])}'"), case.failure
        assert case.replay.endswith(f"--params '{_json(failing[-1])}'"), case.replay
    else:
        assert not case.failure and case.ok, case.failure


def _json(params: dict) -> str:
    import json

    return json.dumps(params, separators=(",", ":"))


STACK = 'File "/x/iris/device/tracing.py", line 9 in _claim'  # where the hung rank was, as iris.ranks.stacks quotes it


def test_a_hang_ends_the_case_at_the_example_that_hung_and_is_never_shrunk(monkeypatch):
    """Shrinking a hang would cost a budget a step: the example that hung is the case's finding, the last it runs."""
    ran: list[dict] = []

    def run_example(pools, scenario, world_size, example, backend=None, timeout=None, compiled=False):
        params = example.params
        ran.append(params)
        if params["n"] > 40:
            timed_out = RankTimeout("RankPool(1 ranks, cpu, generation 1): ...", [0], "job", 7.5,
                                    {0: "store: launch (triton kernel)"}, {0: STACK})
            raise ExampleHung(timed_out, 7.6)
        return ExampleResult(scenario.name, world_size, "cpu", params, [], 0.5, budget=30.0, ranks_seconds=0.3)

    monkeypatch.setattr(case_module, "run_example", run_example)
    # run_example stands in
    case, last = case_module.run_case(Pools(), load("store"), 1, RunSettings("cpu", PROFILE, seed=5))
    assert [p["n"] > 40 for p in ran] == [False, True], [p["n"] for p in ran]  # seed 5: the second has n=220
    assert case.hang == Hang([0], {0: "store: launch (triton kernel)"}, 7.5, case.replay, {0: STACK}), case.hang
    assert case.replay.endswith(f"--params '{_json(ran[-1])}'"), case.replay
    assert (case.status, case.examples, case.started, case.failure) == ("hang", 1, 2, ""), case
    assert (case.seconds, case.budget_used, last.params) == (0.5 + 7.6, round(7.6 / 7.5, 4), ran[0])
    assert case.error.splitlines()[:2] == [
        "hang: rank 0 did not finish within the example's budget of 7.5 s (rank 0 at: store: launch (triton kernel))",
        "RankTimeout: RankPool(1 ranks, cpu, generation 1): ..."], case.error
