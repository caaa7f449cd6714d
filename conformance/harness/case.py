"""One case (a scenario on a world size) under Hypothesis: the loop shared by the CLI and the pytest entry.

``run_case`` draws each example (``drawing``) with the run's settings (``run_settings.RunSettings``), runs it on the
ranks (``example.run_example``) and folds its ``ExampleResult`` into the case's ``CaseResult``. A divergence is
shrunk by Hypothesis; a hang (``hangs``), a dead rank, a broken scenario or a strategy that raises ends the case
with its error and replay command. On a GPU the case's kernel variants may be compiled ahead (``preparing``).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable

from hypothesis import given, note, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from conformance.harness.compile_ahead import Compiler
from conformance.harness.drawing import Example, example_of, examples, launch_key
from conformance.harness.example import run_example
from conformance.harness.hangs import ExampleHung, record_hang
from conformance.harness.preparing import Prepared, prepare
from conformance.harness.profiles import database_key
from conformance.harness.run_settings import RunSettings
from conformance.kit.scenario import Scenario, ScenarioError
from conformance.results import CaseResult, ExampleResult, replay_command
from iris.ranks import Pools, RankDied, RankError, RankTimeout


class ConformanceFailure(AssertionError):
    """An example whose Triton, Gluon and model results disagree (the message is the full report)."""


class _Spent(BaseException):
    """A case ran its ``max_runs`` examples (raised out of Hypothesis, which stops at once)."""


def run_case(pools: Pools, scenario: Scenario, world_size: int, run: RunSettings,
             ahead: Compiler | Prepared | None = None,
             on_example: Callable[[ExampleResult], None] | None = None) -> tuple[CaseResult, ExampleResult | None]:
    """Run the case and return its summary and last example (for its trace); never raises for a divergence.

    Every example also draws the trace chunk of its settings (one of ``drawing.CHUNK_SIZES``: slots a program claims
    at a time, a run-time value), unless ``run.chunk`` fixes it; its replay command sets it with ``--chunk``. Its
    params are drawn at ``run.scale`` (``conformance.kit.scale``; the replay command says ``--scale`` past
    ``SMALL``), which may also draw ``num_warps`` for launches that give none, unless ``run.num_warps`` fixes it
    (``--num-warps``). Hypothesis shrinks a failing example; ``case.failure`` holds the report of the smallest one.
    An example whose ranks do not all answer within its budget (``budget.example_budget``, at most ``run.timeout``)
    hangs the case: ``case.hang`` says which ranks were where, and ``case.error`` holds the pool's message and the
    replay command. No example runs after it: the one that hung is the finding, each more could cost a budget more,
    and Hypothesis never shrinks it (it sees no failure: each step would cost a budget).
    A dead rank, a broken scenario, or any other exception while an example runs sets ``case.error`` (with the
    example's replay command) and skips the remaining examples; so does a strategy that raises, or Hypothesis
    refusing to run the case (``Unsatisfiable``, a failed health check). A case that ran no example has no verdict
    (``CaseResult.problem``): it is never a pass.
    ``run.params`` runs exactly that example instead of drawing (with ``run.chunk``, by default ``DEFAULT_CHUNK``:
    what ``Scenario.settings`` gives, and ``run.num_warps``; params drawn past ``SMALL`` run with their scale).
    ``run.seed`` makes the drawn examples the same on every run. ``run.max_runs``: the most examples the case runs
    on the ranks, shrinking a failure included (Hypothesis's ``max_examples`` bounds only the examples it
    generates); once they ran, Hypothesis is stopped and the smallest failure found so far is the case's failure.
    ``ahead`` (GPU only): a ``Compiler``, and the examples are drawn first and every kernel variant they launch is
    compiled ahead on it, in parallel (``compile_ahead``), before the first runs; or what ``preparing.prepare``
    drew and submitted already, so the case only waits. ``on_example(result)`` sees each example.
    """
    return _CaseRun(pools, scenario, world_size, run, on_example).outcome(ahead)


class _CaseRun:
    """One run of one case: its ``CaseResult`` as it grows, and what Hypothesis's test of it needs between examples."""

    def __init__(self, pools: Pools, scenario: Scenario, world_size: int, run: RunSettings,
                 on_example: Callable[[ExampleResult], None] | None) -> None:
        self.pools, self.scenario, self.world_size, self.run = pools, scenario, world_size, run
        self.on_example = on_example
        self.ref = scenario.ref or scenario.name
        self.case = CaseResult(self.ref, world_size, run.backend, sanitizer=pools.sanitizer)
        self.last: ExampleResult | None = None
        self.failed = ""  # the report of the last failing example run: the smallest so far
        self.ahead: set[str] = set()  # the examples (``drawing.launch_key``) whose kernels were compiled ahead
        self.runs = 0

    def outcome(self, ahead: Compiler | Prepared | None) -> tuple[CaseResult, ExampleResult | None]:
        """Run the case's examples (``run_case``), then its result and last example."""
        case, run = self.case, self.run
        try:
            if run.params is not None:
                self.one(example_of(self.scenario, self.world_size, run.params, run.chunk, run.num_warps, run.scale))
            else:
                self._run_examples(self._prepared(ahead))
        except ConformanceFailure as e:
            case.failure = str(e)
        except _Spent:  # max_runs examples ran: the failure is the smallest one found, if any
            case.failure = self.failed
        except Exception as e:  # Hypothesis refused the case (Unsatisfiable, a failed health check, a flaky failure)
            if not case.error:
                case.error = f"{type(e).__name__}: {e}" + (f"\nreplay: {case.replay}" if case.replay else "")
        return case, self.last

    def _prepared(self, ahead: Compiler | Prepared | None) -> Prepared | None:
        """The case made ready ahead (``ahead`` itself, or prepared on the ``Compiler`` it is, on a GPU), after
        waiting for what is left of its compiles; None when nothing was compiled ahead."""
        run = self.run
        prepared = ahead if isinstance(ahead, Prepared) else None
        if isinstance(ahead, Compiler) and ahead.workers and run.backend == "gpu":
            prepared = prepare(self.scenario, self.world_size, run, ahead)
        if prepared is not None:
            case = self.case
            waiting = time.perf_counter()
            done = prepared.compiler.wait(prepared.compiling)
            case.ahead_variants, case.ahead_compiled = done.variants, done.compiled
            case.ahead_seconds, case.ahead_error = done.seconds, done.error
            if not done.error:
                self.ahead.update(prepared.launch_keys)
            case.seconds += time.perf_counter() - waiting  # what is left of its compiles when its turn came
        return prepared

    def _run_examples(self, prepared: Prepared | None) -> None:
        """Hypothesis's test of the case: every drawn example through ``one``, under the case's seed."""
        run = self.run
        test = settings(run.profile)(given(example=_guarded(self))(check))
        # Hypothesis keys its example database by the test function, the same ``check`` for every case: each case
        # adds its own key, as Hypothesis does for pytest's parametrized cases, so a failure saved for one case is
        # replayed by that case alone
        test.hypothesis.inner_test._hypothesis_internal_add_digest = database_key(
            self.ref, self.world_size, run.backend, run.scale, run.chunk, run.num_warps)
        case_seed = run.seed if prepared is None else prepared.seed
        if case_seed is not None:
            test = seed(case_seed)(test)
        test(self)

    def replay_of(self, example: Example) -> str:
        s = example.settings
        return replay_command(self.ref, self.world_size, self.run.backend, example.params, s.chunk, s.num_warps,
                              s.scale, self.case.sanitizer)

    def failed_on(self, example: Example) -> None:
        case = self.case
        case.failing_params, case.failing_settings = example.params, example.settings
        case.replay = self.replay_of(example)

    def one(self, example: Example | None) -> None:
        """Run ``example`` unless the case is over; ConformanceFailure with its report when it failed."""
        if self.case.error:  # a rank or the scenario failed, or the strategy raised (then ``example`` is None)
            return
        max_runs = self.run.max_runs
        if max_runs is not None and self.runs >= max_runs:
            raise _Spent  # not an Exception: Hypothesis lets it through, so it draws no further candidate
        self.runs += 1
        report = self.example(example)
        if report is not None:  # the last failing example is the one Hypothesis shrank to
            self.failed_on(example)
            self.failed = report
            raise ConformanceFailure(report)

    def example(self, example: Example) -> str | None:
        """Run one example; the report of its divergences, or None when it passed or it raised (``case.error``)."""
        case, run = self.case, self.run
        case.drew(example.params, example.settings)
        key = self.scenario.compile_key(example.params) + (example.settings.num_warps,)  # what compiles a variant
        try:
            result = run_example(self.pools, self.scenario, self.world_size, example, run.backend,
                                 timeout=run.timeout, compiled=key in case.seen or launch_key(example) in self.ahead)
            case.add(result, key)
            if self.on_example is not None:
                self.on_example(result)
        except ExampleHung as e:
            self.failed_on(example)
            record_hang(case, e)
            return None
        except (RankError, RankTimeout, RankDied, NotImplementedError, ScenarioError) as e:
            self.failed_on(example)
            case.error = f"{type(e).__name__}: {e}\nreplay: {case.replay}"
            return None
        except Exception as e:  # unexpected: the case's error, never an exception Hypothesis could shrink and lose
            self.failed_on(example)
            case.error = f"{type(e).__name__}: {e}\n{_traceback(e)}replay: {case.replay}"
            return None
        self.last = result
        return None if result.ok else result.report()


def check(case_run: _CaseRun, example: Example | None) -> None:
    """Hypothesis's test of a case (``_CaseRun._run_examples``): one drawn example, its replay line noted."""
    if example is not None:
        note(f"replay: {case_run.replay_of(example)}")
    case_run.one(example)


@st.composite
def _guarded(draw: st.DrawFn, case_run: _CaseRun) -> Example | None:
    """``drawing.examples``, or None once a draw raised (not Hypothesis's own control flow): ``case.error`` says
    what."""
    try:
        return draw(examples(case_run.scenario, case_run.world_size, case_run.run))
    except HypothesisException:
        raise
    except Exception as e:
        case = case_run.case
        if not case.error:
            case.error = (f"ScenarioError: {case_run.scenario.where or case_run.ref}: drawing an example raised "
                          f"{type(e).__name__}: {e}\n{_traceback(e)}")
        return None


def _traceback(e: BaseException) -> str:
    """The traceback of an exception the harness did not expect, for a case's error."""
    return "".join(traceback.format_exception(e))
