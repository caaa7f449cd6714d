"""One scenario x world size under Hypothesis: the loop shared by the CLI and the pytest entry."""

from __future__ import annotations

from hypothesis import given, note, seed, settings
from hypothesis import strategies as st

from conformance.kit import strategies as S
from conformance.kit.scenario import Scenario, ScenarioError
from conformance.report import CaseResult
from conformance.runner import JOB_TIMEOUT_S, ExampleResult, replay_command, run_example
from iris.ranks import Pools, RankDied, RankError, RankTimeout
from iris.tracing.core import DEFAULT_CHUNK


class ConformanceFailure(AssertionError):
    """An example whose Triton, Gluon and model results disagree (the message is the full report)."""


def run_case(pools: Pools, scenario: Scenario, world_size: int, backend: str, profile: settings,
             params: dict | None = None, on_example=None, *, fixed_seed: int | None = None,
             timeout: float = JOB_TIMEOUT_S) -> tuple[CaseResult, ExampleResult | None]:
    """Run the case and return its summary and last example (for its trace); never raises for a divergence.

    Every example also draws the trace ``chunk`` (``strategies.chunk_size``: slots a program claims at a time, a
    run-time value), kept in its params so a replay uses it. Hypothesis shrinks a failing example;
    ``case.failure`` holds the report of the smallest one.
    A hung or dead rank, or a broken scenario, sets ``case.error`` and skips the remaining examples.
    ``params`` runs exactly that example instead of drawing. ``on_example(result)`` sees each example.
    ``fixed_seed`` makes the drawn examples the same on every run; ``timeout``: seconds one example may take on the
    ranks before they are killed and the case fails.
    """
    ref = scenario.ref or scenario.name
    case = CaseResult(ref, world_size, backend)
    last: list[ExampleResult] = []

    def one(p: dict) -> None:
        if case.error:
            return
        case.drew(p)
        try:
            result = run_example(pools, scenario, world_size, p, backend, timeout=timeout)
        except (RankError, RankTimeout, RankDied, NotImplementedError, ScenarioError) as e:
            case.failing_params, case.replay = p, replay_command(ref, world_size, backend, p)
            case.error = f"{type(e).__name__}: {e}\nreplay: {case.replay}"
            return
        case.add(result, scenario.compile_key(p))
        last[:] = [result]
        if on_example is not None:
            on_example(result)
        if not result.ok:  # the last failing example is the one Hypothesis shrank to (it runs it again at the end)
            case.failing_params, case.replay = p, result.replay
            raise ConformanceFailure(result.report())

    try:
        if params is not None:
            one({"chunk": DEFAULT_CHUNK, **params})
        else:

            @settings(profile)
            @given(data=st.data())
            def check(data):
                p = data.draw(scenario.params(world_size), label="params")
                p["chunk"] = data.draw(S.chunk_size(), label="chunk")
                note(f"replay: {replay_command(ref, world_size, backend, p)}")
                one(p)

            if fixed_seed is not None:
                check = seed(fixed_seed)(check)
            check()
    except ConformanceFailure as e:
        case.failure = str(e)
    return case, (last[0] if last else None)
