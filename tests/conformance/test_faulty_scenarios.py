"""A wrong scenario module fails its own case, with a message naming the module and the problem; the run goes on.

Runs the test-only modules of ``tests/conformance/faulty`` (selected by dotted path) on a 2-rank cpu world, each
followed by the healthy control on the same pools: the control still passes after every failure.
"""

from __future__ import annotations

import pytest

from conformance.harness.host_side import CHUNK_SIZES, load_profile, run_case
from conformance.kit.scenario import ScenarioError, load

pytestmark = pytest.mark.cpu_interpret

FAULTY = "tests.conformance.faulty."
WORLD = 2


def _run(pools, name: str, timeout: float = 120.0):
    case, _ = run_case(pools, load(FAULTY + name), WORLD, "cpu", load_profile("dev"), timeout=timeout)
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


def test_a_hung_rank_fails_the_case_within_its_timeout_naming_the_rank(pools):
    case = _run(pools, "hangs", timeout=20.0)
    assert "RankTimeout" in case.error and "did not finish within 20 s" in case.error, case.error
    hung = "rank 1 was at: tests.conformance.faulty.hangs: launch (triton kernel)"  # the interpreter runs it in launch
    waiting = "rank 0 was at: tests.conformance.faulty.hangs: barrier after the kernels"
    assert hung in case.error and waiting in case.error, case.error
    _healthy_after(pools, "a hung rank")


def test_a_killed_rank_fails_the_case_naming_the_rank(pools):
    case = _run(pools, "rank_dies")
    assert "RankDied" in case.error and "rank 1 died (exit code -9, killed by SIGKILL)" in case.error, case.error
    assert "rank 1 was at: tests.conformance.faulty.rank_dies: setup (triton kernel)" in case.error, case.error
    _healthy_after(pools, "a killed rank")


def test_a_divergence_is_a_failure_of_that_check_only(pools):
    case = _run(pools, "diverging")
    assert case.verdict == {"triton": "pass", "gluon": "FAIL", "triton vs gluon": "FAIL"}, case.verdict
    assert "value=2, but should be 1 [gluon vs model, rank 0, buffer out[0]]" in case.failure, case.failure
