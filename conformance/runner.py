"""Run one example of a scenario on a pooled world, compare, and say how to replay it.

``run_example`` sends ``rank_side.run_example`` to every rank of the pool for ``(world_size,
backend)`` (from the run's :class:`iris.ranks.Pools`), builds the model on the host and returns an
``ExampleResult`` with every divergence.
A hung or dead rank fails that example with the pool's message; the pool rebuilds itself.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass, field

from conformance.compare import Divergence, compare
from conformance.kit.scenario import APIS, Scenario, ScenarioError
from conformance.rank_side import HEAP_BYTES
from iris.ranks import Pools

JOB_TIMEOUT_S = 300.0


def detect_backend() -> str:
    """``gpu`` when torch sees a GPU, else ``cpu`` (interpreter worlds)."""
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


def replay_command(scenario: str, world_size: int, backend: str, params: dict) -> str:
    """A shell command that runs exactly this example again."""
    return (f"python -m conformance run --scenario {scenario} --ranks {world_size} --backend {backend} "
            f"--params {shlex.quote(json.dumps(params, separators=(',', ':')))}")


def variants_per_config(observations: list[dict], api: str) -> int | None:
    """Distinct compiled variants of ``api``'s kernel across the ranks, per kernel configuration.

    Every rank reports the hashes of the compiled variants it launched; the variants of all ranks together,
    divided by the most any one rank launched, is 1 when one compile serves every rank and R when each of R
    ranks compiles its own copy. None when nothing was compiled (the CPU interpreter).
    """
    per_rank = [set(o["apis"][api].get("variants", ())) for o in observations]
    most = max((len(v) for v in per_rank), default=0)
    if not most:
        return None
    return -(-len(set().union(*per_rank)) // most)


@dataclass
class ExampleResult:
    """Outcome of one example: divergences (empty = pass), timing, compiles, variants, raw observations."""

    scenario: str
    world_size: int
    backend: str
    params: dict
    divergences: list[Divergence]
    seconds: float
    compiles: dict[str, int] = field(default_factory=dict)
    variants: dict[str, int | None] = field(default_factory=dict)
    observations: list[dict] = field(default_factory=list, repr=False)
    timings: dict[str, float] = field(default_factory=dict)  # seconds by phase (``_breakdown``)
    jit: dict[str, int] = field(default_factory=dict)  # kernels Triton compiled / loaded from its disk cache

    @property
    def ok(self) -> bool:
        return not self.divergences

    @property
    def replay(self) -> str:
        return replay_command(self.scenario, self.world_size, self.backend, self.params)

    def report(self, limit: int = 6) -> str:
        """Human-readable divergence report with the replay command."""
        lines = [f"{self.scenario} on {self.world_size} rank(s), {self.backend}: {len(self.divergences)} divergence(s)"]
        lines += [str(d) for d in self.divergences[:limit]]
        if len(self.divergences) > limit:
            lines.append(f"... and {len(self.divergences) - limit} more")
        lines.append(f"replay: {self.replay}")
        return "\n".join(lines)


def run_example(pools: Pools, scenario: Scenario, world_size: int, params: dict, backend: str | None = None,
                apis: tuple[str, ...] = APIS, timeout: float = JOB_TIMEOUT_S) -> ExampleResult:
    """Run ``params`` through every API on a pooled world of ``world_size`` ranks and compare."""
    from conformance.rank_side import run_example as rank_job

    backend = backend or detect_backend()
    refusal = scenario.refusal(world_size)
    if refusal:
        raise ValueError(refusal)
    pool = pools.get(world_size, backend)
    pool.start()  # a new pool's start-up (processes, imports, device, heap) is not this example's time
    start = time.perf_counter()
    ref = scenario.ref or scenario.name
    observations = pool.run(rank_job, ref, params, apis, timeout=timeout)
    job = time.perf_counter()
    try:
        model = scenario.model(params, world_size)
    except Exception as e:
        raise ScenarioError(f"{scenario.where or ref}: model raised {type(e).__name__}: {e}") from e
    modelled = time.perf_counter()
    divergences = compare(model, observations, apis, HEAP_BYTES)
    timings = _breakdown(observations, job - start, modelled - job, time.perf_counter() - modelled)
    compiles = {api: sum(o["apis"][api]["compiles"] for o in observations) for api in apis}
    variants = {api: variants_per_config(observations, api) for api in apis}
    jit = {k: sum(o["apis"][api]["jit"][k] for o in observations for api in apis) for k in ("compiled", "loaded")}
    return ExampleResult(ref, world_size, backend, params, divergences, time.perf_counter() - start,
                         compiles, variants, observations, timings, jit)


def _breakdown(observations: list[dict], job: float, model: float, compare: float) -> dict[str, float]:
    """Seconds of one example by phase: the phases of the rank whose kernels took longest (the others' barriers
    include waiting for it), the pool's dispatch (job round trip minus that rank's time: pickling, pipes,
    wake-up), the model and the comparison."""
    slowest = max(observations, key=lambda o: o["seconds"].get("launch", 0.0) + o["seconds"].get("kernel", 0.0))
    slowest = slowest["seconds"]
    return {**slowest, "dispatch": max(job - sum(slowest.values()), 0.0), "model": model, "compare": compare}
