"""The host side of one case and of each of its examples: draw params, launch the ranks, model, compare.

``run_case`` runs one scenario x world size under Hypothesis (the loop shared by the CLI and the pytest entry):
each example's params (at the case's scale, ``conformance.kit.scale``) and the harness's settings beside them
(``ExampleSettings``: the trace chunk and slots, and at the GPU scale ``num_warps``) are drawn here, and
``run_example`` sends ``rank_side.run_example`` to every rank of the pool for ``(world_size, backend)`` (from
the run's :class:`iris.ranks.Pools`), builds the model on the host and returns an ``ExampleResult``
(``conformance.results``) with every divergence (``conformance.check.compare``), which the case folds into its
``CaseResult``. The model is built before the ranks start: its size gives the example's budget on the ranks
(``conformance.harness.budget``). An example whose ranks do not all answer within it is a hang (``Hang``): the
case's verdict, with the replay line; a dead rank fails the example with the pool's message; either way the pool
is rebuilt and the run goes on.
"""

from __future__ import annotations

import concurrent.futures as futures
import json
import os
import random
import time
import traceback
from typing import TYPE_CHECKING, NamedTuple

from hypothesis import HealthCheck, Phase, given, note, seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import HypothesisException

from conformance.check.compare import compare
from conformance.harness.budget import Size, example_budget
from conformance.harness.compile_ahead import Compiler
from conformance.harness.observation import RankObservation
from conformance.harness.rank_side import heap_bytes
from conformance.harness.sizing import sized
from conformance.kit.example_settings import ExampleSettings
from conformance.kit.scale import SMALL, Scale, drawing_at
from conformance.kit.scenario import APIS, Scenario, ScenarioError
from conformance.results import CaseResult, ExampleResult, Hang, replay_command
from iris.env_vars import env_folder
from iris.ranks import Pools, RankDied, RankError, RankTimeout
from iris.ranks.pool import START_JOB

if TYPE_CHECKING:
    from conformance.check.model import Model

# The most seconds one example may take on the ranks (``--timeout``): the cap of every example's budget, which is
# derived from its size (``conformance.harness.budget``).
JOB_TIMEOUT_S = 300.0
# The trace chunk every example draws (slots a program claims at a time, a run-time value): 3 first, so that the
# simplest example claims in mid-program.
CHUNK_SIZES = (3, 1, 16, 64)

# Hypothesis profiles: ``dev`` (fast), ``ci``, ``nightly`` (thorough), by examples per case. Chosen by
# ``--conformance-profile`` (pytest), ``--profile`` (CLI) or ``IRIS_CONFORMANCE_PROFILE``; the example database is
# Hypothesis's default folder unless ``IRIS_HYPOTHESIS_DB`` names another (``none`` turns it off).
PROFILES = {"dev": 6, "ci": 10, "nightly": 60}
DEFAULT_PROFILE = "dev"


def example_database():
    """The Hypothesis example database ``IRIS_HYPOTHESIS_DB`` names: a folder (``none``: no database; unset:
    Hypothesis's default); ``iris.env_vars.EnvVarError`` for a value that names no folder that can be written."""
    if os.environ.get("IRIS_HYPOTHESIS_DB") is None:
        return settings.default.database
    path = env_folder("IRIS_HYPOTHESIS_DB", "the folder of Hypothesis's example database (made if missing), or "
                      "none to keep no database", off="none")
    return None if path is None else DirectoryBasedExampleDatabase(str(path))


def database_key(ref: str, world_size: int, backend: str, scale: Scale, chunk: int | None,
                 num_warps: int | None) -> bytes:
    """What tells a case's examples apart in Hypothesis's database: every input of what its examples draw."""
    return f"{ref}@{world_size}:{backend}:{scale.name}:chunk={chunk}:num_warps={num_warps}".encode()


def register_profiles() -> None:
    """Register every profile with Hypothesis (idempotent)."""
    for name, examples in PROFILES.items():
        settings.register_profile(
            f"conformance-{name}",
            max_examples=examples,
            deadline=None,
            database=example_database(),
            print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )


def chosen_profile(name: str | None = None) -> str:
    """The profile name to use: ``name``, else ``IRIS_CONFORMANCE_PROFILE``, else ``dev``."""
    name = name or os.environ.get("IRIS_CONFORMANCE_PROFILE", DEFAULT_PROFILE)
    if name not in PROFILES:
        raise ValueError(f"profile={name!r}; expected one of {sorted(PROFILES)} (IRIS_CONFORMANCE_PROFILE)")
    return name


def load_profile(name: str | None = None) -> settings:
    """Register the profiles and return the settings of the chosen one."""
    register_profiles()
    return settings.get_profile(f"conformance-{chosen_profile(name)}")


def detect_backend() -> str:
    """``gpu`` when torch sees a GPU, else ``cpu`` (interpreter worlds)."""
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


class _Drawn(NamedTuple):
    params: dict
    settings: ExampleSettings


class Example(_Drawn):
    """One example to run: the params its scenario's strategy drew and the harness's settings beside them (it
    unpacks as ``params, settings``), and ``model``, the model where sizing its trace buffers built it already
    (``sizing.sized``; None: ``run_example`` builds it)."""

    model: Model | None = None


@st.composite
def examples(draw: st.DrawFn, scenario: Scenario, world_size: int, chunk: int | None = None,
             scale: Scale = SMALL, num_warps: int | None = None, sizing: bool = True) -> Example:
    """A strategy of one example (what ``run_case`` draws): ``scenario.params(world_size)`` drawn at ``scale``
    under the label "params", the trace chunk of its settings under "chunk" (one of ``CHUNK_SIZES``, or ``chunk``
    if given) and, at a scale that draws it (or given), ``num_warps`` under "num_warps" (one of
    ``scale.num_warps``); its trace slots are sized for ``scale`` (``sizing.sized``) unless ``sizing`` is False
    (then they are the declared ones: what compiling ahead needs, as it runs nothing)."""
    data = draw(st.data())  # the test's data object: a failing example prints every draw under its label
    with drawing_at(scale):
        p = data.draw(scenario.params(world_size), label="params")
    drawn_chunk = data.draw(st.sampled_from(CHUNK_SIZES) if chunk is None else st.just(chunk), label="chunk")
    warps = num_warps
    if num_warps is not None or scale.num_warps:  # SMALL draws nothing here: its examples stay what they were
        warps = data.draw(st.sampled_from(scale.num_warps) if num_warps is None else st.just(num_warps),
                          label="num_warps")
    return example_of(scenario, world_size, p, drawn_chunk, warps, scale, sizing)


def example_of(scenario: Scenario, world_size: int, params: dict, chunk: int | None = None,
               num_warps: int | None = None, scale: Scale = SMALL, sizing: bool = True) -> Example:
    """The example of ``params`` drawn at ``scale`` on ``world_size`` ranks, run with trace chunk ``chunk`` (None:
    the replay default) and ``num_warps``: its settings, trace slots sized for ``scale`` unless ``sizing`` is
    False (``sizing.sized``, which may build its model)."""
    settings = scenario.settings(params, chunk, num_warps=num_warps, scale=scale.name)
    if not sizing:
        return Example(params, settings)
    settings, model = sized(scenario, world_size, params, settings)
    example = Example(params, settings)
    example.model = model
    return example


def drawn_examples(scenario: Scenario, world_size: int, profile: settings, case_seed: int,
                   chunk: int | None = None, scale: Scale = SMALL, num_warps: int | None = None,
                   sizing: bool = True) -> list[Example]:
    """The examples ``run_case`` draws under ``case_seed`` (and ``chunk``, ``scale``, ``num_warps``), drawn
    without running them (``sizing``: as ``examples``).

    Those Hypothesis generates; an example it replays from its database first is not among them.
    """
    drawn: list[Example] = []

    @seed(case_seed)
    @settings(profile, database=None, phases=(Phase.explicit, Phase.generate))
    @given(example=examples(scenario, world_size, chunk, scale, num_warps, sizing))
    def draw(example):
        drawn.append(example)

    draw()
    return drawn


class Prepared(NamedTuple):
    """A case made ready ahead of its turn (``prepare``): the seed its examples are drawn under, what they launch
    (``_launch_key``) and the future of their variants compiling ahead (``Compiler.submit``)."""

    seed: int
    launch_keys: frozenset[str]
    compiling: futures.Future


def prepare(scenario: Scenario, world_size: int, profile: settings, compiler: Compiler, *,
            chunk: int | None = None, fixed_seed: int | None = None, scale: Scale = SMALL,
            num_warps: int | None = None) -> Prepared:
    """Draw the case's examples under its seed (``fixed_seed``, else a fresh one) and submit their kernel variants
    to ``compiler``, without waiting: ``run_case(..., prepared=)`` then runs exactly those examples and waits only
    for what of their compiles is left. Raises what drawing raises (a broken strategy)."""
    case_seed = random.getrandbits(64) if fixed_seed is None else fixed_seed
    drawn = drawn_examples(scenario, world_size, profile, case_seed, chunk, scale, num_warps, sizing=False)
    pending = compiler.submit(scenario.ref or scenario.name, world_size, [e.params for e in drawn], APIS,
                              tuple(range(world_size)), [e.settings.num_warps for e in drawn])
    return Prepared(case_seed, frozenset(_launch_key(e) for e in drawn), pending)


class ConformanceFailure(AssertionError):
    """An example whose Triton, Gluon and model results disagree (the message is the full report)."""


def run_case(pools: Pools, scenario: Scenario, world_size: int, backend: str, profile: settings,
             params: dict | None = None, on_example=None, *, chunk: int | None = None, fixed_seed: int | None = None,
             timeout: float = JOB_TIMEOUT_S, compiler: Compiler | None = None,
             max_runs: int | None = None, scale: Scale = SMALL, num_warps: int | None = None,
             prepared: Prepared | None = None) -> tuple[CaseResult, ExampleResult | None]:
    """Run the case and return its summary and last example (for its trace); never raises for a divergence.

    Every example also draws the trace chunk of its settings (one of ``CHUNK_SIZES``: slots a program claims at a
    time, a run-time value), unless ``chunk`` fixes it; its replay command sets it with ``--chunk``. Its params
    are drawn at ``scale`` (``conformance.kit.scale``; the replay command says ``--scale`` past ``SMALL``), which
    may also draw ``num_warps`` for launches that give none, unless ``num_warps`` fixes it (``--num-warps``). Hypothesis
    shrinks a failing example; ``case.failure`` holds the report of the smallest one.
    An example whose ranks do not all answer within its budget (``budget.example_budget``, at most ``timeout``) hangs
    the case: ``case.hang`` says which ranks were where, and ``case.error`` holds the pool's message and the replay
    command. No example runs after it: the one that hung is the finding, each more could cost a budget more, and
    Hypothesis never shrinks it (it sees no failure: each step would cost a budget).
    A dead rank, a broken scenario, or any other exception while an example runs sets ``case.error`` (with the
    example's replay command) and skips the remaining examples; so does a strategy that raises, or Hypothesis
    refusing to run the case (``Unsatisfiable``, a failed health check). A case that ran no example has no verdict
    (``CaseResult.problem``): it is never a pass.
    ``params`` runs exactly that example instead of drawing (with ``chunk``, by default ``DEFAULT_CHUNK``: what
    ``Scenario.settings`` gives, and ``num_warps``; params drawn past ``SMALL`` run with their ``scale``).
    ``on_example(result)`` sees each example.
    ``fixed_seed`` makes the drawn examples the same on every run; ``timeout``: the cap of every example's budget on
    the ranks (seconds). ``compiler`` (GPU only): the examples are drawn first and
    every kernel variant they launch is compiled ahead, in parallel (``compile_ahead``), before the first runs;
    ``prepared`` (``prepare``, with the same ``compiler``): drawn and submitted already, so the case only waits.
    ``max_runs``: the most examples the case runs on the ranks, shrinking a failure included (Hypothesis's
    ``max_examples`` bounds only the examples it generates); once they ran, Hypothesis is stopped and the smallest
    failure found so far is the case's failure.
    """
    ref = scenario.ref or scenario.name
    case = CaseResult(ref, world_size, backend, sanitizer=pools.sanitizer)
    last: list[ExampleResult] = []
    failed: list[str] = []  # the report of the last failing example run: the smallest so far
    ahead: set[str] = set()  # the examples (``_launch_key``) whose kernels were compiled ahead
    runs = 0

    def replay_of(example: Example) -> str:
        return replay_command(ref, world_size, backend, example.params, example.settings.chunk,
                              example.settings.num_warps, example.settings.scale, case.sanitizer)

    def failed_on(example: Example) -> None:
        case.failing_params, case.failing_settings = example.params, example.settings
        case.replay = replay_of(example)

    def one(example: Example | None) -> None:
        nonlocal runs
        if case.error:  # a rank or the scenario failed, or the strategy raised (then ``example`` is None)
            return
        if max_runs is not None and runs >= max_runs:
            raise _Spent  # not an Exception: Hypothesis lets it through, so it draws no further candidate
        runs += 1
        report = run(example)
        if report is not None:  # the last failing example is the one Hypothesis shrank to
            failed_on(example)
            failed[:] = [report]
            raise ConformanceFailure(report)

    def run(example: Example) -> str | None:
        """Run one example; the report of its divergences, or None when it passed or it raised (``case.error``)."""
        case.drew(example.params, example.settings)
        key = scenario.compile_key(example.params) + (example.settings.num_warps,)  # what compiles a variant
        try:
            built = {} if example.model is None else {"model": example.model}  # at small none: the call as it was
            result = run_example(pools, scenario, world_size, example.params, backend, timeout=timeout,
                                 settings=example.settings,
                                 compiled=key in case.seen or _launch_key(example) in ahead, **built)
            case.add(result, key)
            if on_example is not None:
                on_example(result)
        except ExampleHung as e:
            failed_on(example)
            case.hang = Hang(e.error.ranks, e.error.doing, e.error.timeout, case.replay, e.error.stacks)
            case.seconds += e.seconds
            case.budget_used = max(case.budget_used, round(e.seconds / e.error.timeout, 4))
            case.error = f"hang: {case.hang.summary()}\n{type(e.error).__name__}: {e.error}\nreplay: {case.replay}"
            return None
        except (RankError, RankTimeout, RankDied, NotImplementedError, ScenarioError) as e:
            failed_on(example)
            case.error = f"{type(e).__name__}: {e}\nreplay: {case.replay}"
            return None
        except Exception as e:  # unexpected: the case's error, never an exception Hypothesis could shrink and lose
            failed_on(example)
            case.error = f"{type(e).__name__}: {e}\n{_traceback(e)}replay: {case.replay}"
            return None
        last[:] = [result]
        return None if result.ok else result.report()

    @st.composite
    def guarded(draw: st.DrawFn) -> Example | None:
        """``examples``, or None once a draw raised (not Hypothesis's own control flow): ``case.error`` says what."""
        try:
            return draw(examples(scenario, world_size, chunk, scale, num_warps))
        except HypothesisException:
            raise
        except Exception as e:
            if not case.error:
                case.error = (f"ScenarioError: {scenario.where or ref}: drawing an example raised "
                              f"{type(e).__name__}: {e}\n{_traceback(e)}")
            return None

    try:
        if params is not None:
            one(example_of(scenario, world_size, params, chunk, num_warps, scale))
        else:

            @settings(profile)
            @given(example=guarded())
            def check(example):
                if example is not None:
                    note(f"replay: {replay_of(example)}")
                one(example)

            # Hypothesis keys its example database by the test function, the same ``check`` for every case: each case
            # adds its own key, as Hypothesis does for pytest's parametrized cases, so a failure saved for one case is
            # replayed by that case alone
            check.hypothesis.inner_test._hypothesis_internal_add_digest = database_key(
                ref, world_size, backend, scale, chunk, num_warps)
            case_seed = fixed_seed
            if prepared is None and compiler is not None and compiler.workers and backend == "gpu":
                prepared = prepare(scenario, world_size, profile, compiler, chunk=chunk, fixed_seed=fixed_seed,
                                   scale=scale, num_warps=num_warps)
            if prepared is not None:
                case_seed = prepared.seed
                waiting = time.perf_counter()
                done = compiler.wait(prepared.compiling)
                case.ahead_variants, case.ahead_compiled = done.variants, done.compiled
                case.ahead_seconds, case.ahead_error = done.seconds, done.error
                if not done.error:
                    ahead.update(prepared.launch_keys)
                case.seconds += time.perf_counter() - waiting  # what is left of its compiles when its turn came
            if case_seed is not None:
                check = seed(case_seed)(check)
            check()
    except ConformanceFailure as e:
        case.failure = str(e)
    except _Spent:  # max_runs examples ran: the failure is the smallest one found, if any
        case.failure = failed[0] if failed else ""
    except Exception as e:  # Hypothesis refused the case (Unsatisfiable, a failed health check, a flaky failure)
        if not case.error:
            case.error = f"{type(e).__name__}: {e}" + (f"\nreplay: {case.replay}" if case.replay else "")
    return case, (last[0] if last else None)


def _launch_key(example: Example) -> str:
    """What an example launches, as a set member: its params and the ``num_warps`` the harness gives its launches
    (equal keys, equal kernel variants)."""
    return json.dumps([example.params, example.settings.num_warps], sort_keys=True)


def _traceback(e: BaseException) -> str:
    """The traceback of an exception the harness did not expect, for a case's error."""
    return "".join(traceback.format_exception(e))


class _Spent(BaseException):
    """A case ran its ``max_runs`` examples (raised out of Hypothesis, which stops at once)."""


class ExampleHung(Exception):
    """An example's ranks did not all answer within its budget: ``error`` is the pool's ``RankTimeout`` (its
    ``timeout`` the budget), ``seconds`` how long the example ran before its ranks were killed."""

    def __init__(self, error: RankTimeout, seconds: float) -> None:
        super().__init__(str(error))
        self.error, self.seconds = error, seconds


def run_example(pools: Pools, scenario: Scenario, world_size: int, params: dict, backend: str | None = None,
                apis: tuple[str, ...] = APIS, timeout: float = JOB_TIMEOUT_S,
                settings: ExampleSettings | None = None, model: Model | None = None,
                compiled: bool = False) -> ExampleResult:
    """Run ``params`` through every API on a pooled world of ``world_size`` ranks and compare; ``settings``: the
    harness's settings of the example (default: ``scenario.settings(params)``); ``model``: its model where it
    was built already (``Example.model``), else built here.

    The model comes first: its size gives the ranks' budget (``budget.example_budget``, at most ``timeout``
    seconds; ``compiled``: the example's kernels are known to be compiled, so the ranks only load them). Raises
    :class:`ExampleHung` when the ranks do not all answer within it."""
    from conformance.harness.rank_side import run_example as rank_job

    backend = backend or detect_backend()
    settings = settings or scenario.settings(params)
    refusal = scenario.refusal(world_size)
    if refusal:
        raise ValueError(refusal)
    ref = scenario.ref or scenario.name
    modelling = time.perf_counter()
    try:
        model = scenario.expected(params, world_size, settings) if model is None else model
    except Exception as e:
        raise ScenarioError(f"{scenario.where or ref}: model raised {type(e).__name__}: {e}") from e
    modelled = time.perf_counter() - modelling
    pool = pools.get(world_size, backend)
    pool.start()  # a new pool's start-up (processes, imports, device, heap) is not this example's time
    budget = example_budget(Size.of(model), backend, timeout, first=pool.fresh or not compiled,
                            sanitized=pool.sanitized)
    start = time.perf_counter()
    try:
        observations = pool.run(rank_job, ref, params, settings, apis, timeout=budget)
    except RankTimeout as e:
        if e.job == START_JOB:  # the ranks' start-up (a rank found dead was replaced), not this example
            raise
        raise ExampleHung(e, time.perf_counter() - start) from e
    job = time.perf_counter()
    divergences = compare(model, observations, apis, heap_bytes(backend), settings.chunk, settings.max_events)
    timings = _breakdown(observations, job - start, modelled, time.perf_counter() - job)
    compiles = {api: sum(o.apis[api].compiles for o in observations) for api in apis}
    variants = {api: variants_per_config(observations, api) for api in apis}
    jit = {"compiled": sum(o.apis[api].jit_compiled for o in observations for api in apis),
           "loaded": sum(o.apis[api].jit_loaded for o in observations for api in apis)}
    return ExampleResult(ref, world_size, backend, params, divergences, time.perf_counter() - start + modelled,
                         compiles, variants, observations, timings, jit, settings, sanitizer=pool.sanitizer,
                         budget=budget, ranks_seconds=job - start)


def variants_per_config(observations: list[RankObservation], api: str) -> int | None:
    """Distinct compiled variants of ``api``'s kernel across the ranks, per kernel configuration.

    Every rank reports the hashes of the compiled variants it launched; the variants of all ranks together,
    divided by the most any one rank launched, is 1 when one compile serves every rank and R when each of R
    ranks compiles its own copy. None when nothing was compiled (the CPU interpreter).
    """
    per_rank = [set(o.apis[api].variants) for o in observations]
    most = max((len(v) for v in per_rank), default=0)
    if not most:
        return None
    return -(-len(set().union(*per_rank)) // most)


def _breakdown(observations: list[RankObservation], job: float, model: float, compare: float) -> dict[str, float]:
    """Seconds of one example by phase: the phases of the rank whose kernels took longest (the others' barriers
    include waiting for it), the pool's dispatch (job round trip minus that rank's time: pickling, pipes,
    wake-up), the model and the comparison."""
    slowest = max(observations, key=lambda o: o.seconds.get("launch", 0.0) + o.seconds.get("kernel", 0.0)).seconds
    return {**slowest, "dispatch": max(job - sum(slowest.values()), 0.0), "model": model, "compare": compare}
