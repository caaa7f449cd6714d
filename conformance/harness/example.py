"""One example on the ranks: model it on the host, run it through every API on a pooled world, compare.

The model is built before the ranks start: its size gives the example's budget on the ranks
(``conformance.harness.budget``). An example whose ranks do not all answer within it raises ``hangs.ExampleHung``;
a dead rank raises the pool's ``RankDied``; either way the pool is rebuilt by its next job.
"""

from __future__ import annotations

import time

from conformance.check.compare import compare
from conformance.check.observation import RankObservation
from conformance.harness.budget import Size, example_budget
from conformance.harness.drawing import Example
from conformance.harness.hangs import ExampleHung
from conformance.harness.rank_side import heap_bytes
from conformance.harness.run_settings import JOB_TIMEOUT_S, detect_backend
from conformance.kit.scenario import APIS, Scenario, ScenarioError
from conformance.results import ExampleResult
from iris.ranks import Pools, RankTimeout
from iris.ranks.pool import START_JOB


def run_example(pools: Pools, scenario: Scenario, world_size: int, example: Example, backend: str | None = None, *,
                timeout: float = JOB_TIMEOUT_S, compiled: bool = False) -> ExampleResult:
    """Run ``example`` (its params and the harness's settings; its model where it was built already, else built
    here) through every API on a pooled world of ``world_size`` ranks and compare.

    The model comes first: its size gives the ranks' budget (``budget.example_budget``, at most ``timeout``
    seconds; ``compiled``: the example's kernels are known to be compiled, so the ranks only load them). Raises
    :class:`ExampleHung` when the ranks do not all answer within it."""
    from conformance.harness.rank_side import run_example as rank_job

    backend = backend or detect_backend()
    params, settings, model = example.params, example.settings, example.model
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
                            sanitizer=pool.sanitizer)
    start = time.perf_counter()
    try:
        observations = pool.run(rank_job, ref, params, settings, APIS, timeout=budget)
    except RankTimeout as e:
        if e.job == START_JOB:  # the ranks' start-up (a rank found dead was replaced), not this example
            raise
        raise ExampleHung(e, time.perf_counter() - start) from e
    job = time.perf_counter()
    divergences = compare(model, observations, APIS, heap_bytes(backend), settings.chunk, settings.max_events)
    timings = _breakdown(observations, job - start, modelled, time.perf_counter() - job)
    compiles = {api: sum(o.apis[api].compiles for o in observations) for api in APIS}
    variants = {api: variants_per_config(observations, api) for api in APIS}
    jit = {"compiled": sum(o.apis[api].jit_compiled for o in observations for api in APIS),
           "loaded": sum(o.apis[api].jit_loaded for o in observations for api in APIS)}
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
