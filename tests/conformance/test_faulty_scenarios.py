"""A wrong scenario module fails its own case, with a message naming the module and the problem; the run goes on.

Runs the test-only modules of ``tests/conformance/faulty`` (selected by dotted path) on a 2-rank cpu world, each
followed by the healthy control on the same pools: the control still passes after every failure. Nothing passes
vacuously: an exception while an example runs or draws is the case's error, and a case that ran no example fails.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time

import pytest
from hypothesis import settings

from conformance.cli import main
from conformance.harness import budget
from conformance.harness.case import run_case
from conformance.harness.drawing import CHUNK_SIZES
from conformance.harness.profiles import load_profile
from conformance.harness.run_settings import RunSettings
from conformance.kit.scenario import ScenarioError, load
from conformance.results import NO_EXAMPLE

from .hang_stacks import check_hang_stacks

pytestmark = pytest.mark.cpu_interpret

FAULTY = "tests.conformance.faulty."
WORLD = 2


def _run(pools, name: str, timeout: float = 120.0):
    case, _ = run_case(pools, load(FAULTY + name), WORLD, RunSettings("cpu", load_profile("dev"), timeout=timeout))
    return case


def _healthy_after(pools, what: str) -> None:
    __tracebackhide__ = True
    control = _run(pools, "healthy")
    # its params draw nothing but the trace chunk: one example per chunk size, then Hypothesis has seen them all
    assert control.ok and control.examples == len(CHUNK_SIZES), \
        f"after {what}: the healthy control failed: {control.error} ({control.examples} examples)"


def test_kernels_that_do_not_pair_are_refused_when_the_module_is_loaded():
    with pytest.raises(ScenarioError) as info:
        load(FAULTY + "mismatched_params")
    message = str(info.value)
    assert message.startswith("tests/conformance/faulty/mismatched_params.py: triton_kernel and gluon_kernel must "
                              "take the same parameters"), message
    assert "triton has ['ctx_t', 'out', 'BLOCK'], gluon has ['ctx_t', 'out', 'n', 'BLOCK']" in message, message


@pytest.mark.parametrize(("name", "problem"), [
    ("model_raises", "tests/conformance/faulty/model_raises.py: model raised ZeroDivisionError"),
    ("buffer_twice", "tests/conformance/faulty/buffer_twice.py: setup (triton kernel) raised ValueError: "
                     "buffer 'out' allocated twice"),
    ("gluon_does_not_compile", "tests/conformance/faulty/gluon_does_not_compile.py: launch (gluon kernel) raised"),
])
def test_a_broken_module_fails_its_case_and_names_the_problem(pools, name, problem):
    case = _run(pools, name)
    assert not case.ok and problem in case.error, f"{name}: error={case.error!r}, but should contain {problem!r}"
    assert "replay: python -m conformance run --scenario " + FAULTY + name in case.error, case.error
    _healthy_after(pools, name)


HANGS_REPLAY = (f"python -m conformance run --scenario {FAULTY}hangs --ranks 2 --backend cpu --chunk 3 "
                "--params '{\"BLOCK\":32}'")
HANGS_AT = {0: f"{FAULTY}hangs: barrier after the kernels (this rank's finished; waiting for the others)",
            1: f"{FAULTY}hangs: launch (triton kernel)"}  # the interpreter runs the kernel inside its launch



def test_a_hung_rank_is_a_hang_within_the_examples_derived_budget_and_the_run_goes_on(pools, monkeypatch):
    """The hanging example's budget is derived from its size (a smaller base here: the test waits it out), not the
    cap; no example runs after it, none is shrunk, and the next case passes on a rebuilt pool."""
    monkeypatch.setitem(budget.RULES, "cpu", dataclasses.replace(budget.RULES["cpu"], base=2.0))
    expected = 2.1  # 2 + 2 x 0.02 + 2 x 0.01 + 64 x 50e-6 (two events, two programs, two 32-element buffers), up
    assert budget.example_budget(budget.Size(2, 2, 64), "cpu", 300.0) == expected
    before = pools.get(WORLD, "cpu").generation
    start = time.monotonic()
    case = _run(pools, "hangs", timeout=300.0)
    elapsed = time.monotonic() - start
    assert case.status == "hang" and case.hang is not None, (case.status, case.error)
    assert (case.hang.ranks, case.hang.doing, case.hang.replay) == ([0, 1], HANGS_AT, HANGS_REPLAY), case.hang
    check_hang_stacks(case.hang.stacks, spinning=1, waiting=0)
    assert case.hang.timeout == expected, case.hang.timeout
    first, pool_said, *_, replay = case.error.splitlines()
    assert first == (f"hang: ranks 0, 1 did not finish within the example's budget of {case.hang.timeout:g} s "
                     f"(rank 0 at: {HANGS_AT[0]}; rank 1 at: {HANGS_AT[1]})"), first
    assert pool_said.startswith("RankTimeout: RankPool(2 ranks, cpu, generation ") and pool_said.endswith(
        f"did not finish within {case.hang.timeout:g} s: ranks 0, 1 had not answered; all ranks were killed; the "
        "pool will be rebuilt on the next run"), pool_said
    assert replay == f"replay: {HANGS_REPLAY}", replay
    assert (case.examples, case.started, case.failure) == (0, 1, ""), (case.examples, case.started)  # not shrunk
    assert expected <= case.seconds < expected + 5 and elapsed < expected + 30, (case.seconds, elapsed)
    assert case.budget_used >= 1.0, case.budget_used
    monkeypatch.undo()
    _healthy_after(pools, "a hung rank")
    assert pools.get(WORLD, "cpu").generation == max(before, 1) + 1  # the hung ranks were replaced once


def test_run_reports_a_hang_with_its_replay_replayed_once_within_its_budget(tmp_path, capsys):
    out = tmp_path / "out"
    start = time.monotonic()
    code = main(["run", "--scenario", FAULTY + "hangs", "--ranks", "1", "--backend", "cpu", "--timeout", "2",
                 "--out", str(out)])
    elapsed = time.monotonic() - start
    assert code == 1, f"exit code={code}, but should be 1"
    (record,) = json.loads((out / "results.json").read_text())["cases"]
    replay = HANGS_REPLAY.replace("--ranks 2", "--ranks 1")
    assert (record["ok"], record["status"], record["examples"], record["replay_outcome"]) == (
        False, "hang", 0, "reproduced"), record
    assert record["verdict"] == {"triton": "hang", "gluon": "hang", "triton vs gluon": "hang"}, record["verdict"]
    stacks = record["hang"].pop("stacks")
    assert record["hang"] == {"ranks": [0], "doing": {"0": HANGS_AT[1]}, "timeout": 2.0, "replay": replay}
    check_hang_stacks(stacks, spinning="0")
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    progress = lines.index(f"[1/1] {FAULTY}hangs on 1 rank(s) ...") + 1
    assert re.fullmatch(r"    HANG \(0 examples, 2\.\d s, replayed: reproduced\)", lines[progress]), printed
    assert lines[progress + 1] == (f"    hang: rank 0 did not finish within the example's budget of 2 s (rank 0 at: "
                                   f"{HANGS_AT[1]})"), printed
    assert f"\n    replay: {replay}\n" in printed, printed
    assert f"{FAULTY}hangs  1      HANG    HANG   HANG          0 " in printed, printed
    assert "\n0 passed, 1 failed (1 hung)\n" in printed, printed
    assert elapsed < 60, elapsed  # the hang and its one replay: 2 s each, not the default cap of 300 s


def test_a_killed_rank_fails_the_case_naming_the_rank(pools):
    case = _run(pools, "rank_dies")
    assert "RankDied" in case.error and "rank 1 died (exit code -9, killed by SIGKILL)" in case.error, case.error
    assert "rank 1 was at: tests.conformance.faulty.rank_dies: setup (triton kernel)" in case.error, case.error
    _healthy_after(pools, "a killed rank")


def test_a_divergence_is_a_failure_of_that_check_only(pools):
    case = _run(pools, "diverging")
    assert case.verdict == {"triton": "pass", "gluon": "FAIL", "triton vs gluon": "FAIL"}, case.verdict
    assert "value=2, but should be 1 [gluon vs model, rank 0, buffer out[0]]" in case.failure, case.failure


def _quiet(profile_name: str = "dev"):
    """The profile without the example database: the first example is the simplest draw, on every run."""
    return settings(load_profile(profile_name), database=None)


def test_an_exception_while_an_example_runs_is_the_case_error_even_once_max_runs_stops_hypothesis(pools):
    """Was a pass with 0 examples: the exception made Hypothesis shrink until ``max_runs`` stopped it, and was lost."""
    run = RunSettings("cpu", _quiet(), timeout=1e10, max_runs=2)
    case, last = run_case(pools, load(FAULTY + "healthy"), WORLD, run)
    assert (case.ok, case.examples, last) == (False, 0, None), (case.ok, case.examples, last)
    first, *_, replay = case.error.splitlines()
    assert first == ("ValueError: example budget: cap (--timeout) must be a positive number of seconds, at most 86400 "
                     "(MAX_TIMEOUT_S: a pool waits through poll(), whose timeout overflows past about 24 days), got "
                     "10000000000.0"), first
    assert replay == (f"replay: python -m conformance run --scenario {FAULTY}healthy --ranks 2 --backend cpu --chunk 3 "
                      "--params '{\"BLOCK\":32}'"), replay
    assert case.reported_verdict == {"triton": "error", "gluon": "error", "triton vs gluon": "error"}
    _healthy_after(pools, "a refused timeout")


def test_a_strategy_that_raises_is_the_case_error_whatever_hypothesis_does_next(pools):
    """Shrinking the strategy's exception ran passing examples until ``max_runs`` stopped it: a pass, before."""
    case, _ = run_case(pools, load(FAULTY + "draw_raises"), WORLD, RunSettings("cpu", _quiet(), max_runs=2))
    assert (case.ok, case.examples) == (False, 1), (case.ok, case.examples, case.error)  # the simplest draw ran
    assert case.error.startswith("ScenarioError: tests/conformance/faulty/draw_raises.py: drawing an example raised "
                                 "KeyError: 'BLOCK'\n"), case.error


def test_a_strategy_that_rejects_every_draw_runs_no_example_and_is_no_pass(pools):
    case, last = run_case(pools, load(FAULTY + "rejects_every_draw"), WORLD, RunSettings("cpu", _quiet()))
    assert (case.ok, case.examples, last) == (False, 0, None), (case.ok, case.examples, last)
    assert case.error.startswith("Unsatisfiable: Unable to satisfy assumptions of check."), case.error


def test_a_case_stopped_before_its_first_example_is_no_pass(pools):
    case, _ = run_case(pools, load(FAULTY + "healthy"), WORLD, RunSettings("cpu", _quiet(), max_runs=0))
    assert (case.ok, case.examples, case.error, case.failure) == (False, 0, "", ""), case
    assert case.problem == NO_EXAMPLE


def test_run_exits_1_and_writes_error_verdicts_when_no_example_ran(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["run", "--scenario", FAULTY + "rejects_every_draw", "--ranks", "1", "--backend", "cpu", "--out",
                 str(out)])
    assert code == 1, f"exit code={code}, but should be 1"
    (record,) = json.loads((out / "results.json").read_text())["cases"]
    assert (record["ok"], record["examples"], record["verdict"]) == (
        False, 0, {"triton": "error", "gluon": "error", "triton vs gluon": "error"}), record
    assert record["error"].startswith("Unsatisfiable: Unable to satisfy assumptions of check."), record["error"]
    printed = capsys.readouterr().out
    assert f"{FAULTY}rejects_every_draw  1      ERROR   ERROR  ERROR         0 " in printed, printed
    assert "\n0 passed, 1 failed\n" in printed, printed
