"""What a run asks of every case, as one object: :class:`RunSettings`.

``python -m conformance run`` and ``gate`` build it once from their checked arguments; ``suite.run_cases`` hands
it whole to every case (``case.run_case``), which draws its examples with it (``drawing``) and turns each into the
``ExampleSettings`` its ranks run with. Replaying a failing example is the same object with that example's
settings (``replaying``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hypothesis import settings

from conformance.kit.scale import SMALL, Scale

# The most seconds one example may take on the ranks (``--timeout``): the cap of every example's budget, which is
# derived from its size (``conformance.harness.budget``).
JOB_TIMEOUT_S = 300.0


def detect_backend() -> str:
    """``gpu`` when torch sees a GPU, else ``cpu`` (interpreter worlds)."""
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


@dataclass(frozen=True)
class RunSettings:
    """The settings of a run, the same for every case of it.

    ``backend``: ``cpu`` (interpreter worlds) or ``gpu``; ``profile``: the Hypothesis settings its cases draw under
    (``profiles.load_profile``); ``params``: run exactly this example instead of drawing (``--params``);
    ``chunk``: the trace chunk of every example (None: drawn per example from ``drawing.CHUNK_SIZES``; a replay of
    ``params`` without it runs with ``DEFAULT_CHUNK``); ``seed``: the Hypothesis seed of every case (None: a fresh
    one per case); ``scale``: what the examples are drawn at (``conformance.kit.scale``); ``num_warps``: of every
    launch that gives none (None: drawn per example where the scale draws it); ``timeout``: the cap of every
    example's budget on the ranks, in seconds (``conformance.harness.budget``); ``max_runs``: the most examples a
    case runs, shrinking a failure included (None: the profile's count bounds only those generated);
    ``sanitizers``: compute-sanitizer tools (``iris.ranks.sanitizer.TOOLS``), each running the whole selection in a
    pass of its own (empty: one pass under none).
    """

    backend: str
    profile: settings
    params: dict | None = None
    chunk: int | None = None
    seed: int | None = None
    scale: Scale = SMALL
    num_warps: int | None = None
    timeout: float = JOB_TIMEOUT_S
    max_runs: int | None = None
    sanitizers: tuple[str, ...] = ()

    def replaying(self, params: dict, chunk: int | None, num_warps: int | None, timeout: float) -> RunSettings:
        """These settings running one example again: ``params`` with its own ``chunk`` and ``num_warps``, within
        ``timeout`` seconds, once (no seed, no bound on runs)."""
        return dataclasses.replace(self, params=params, chunk=chunk, num_warps=num_warps, timeout=timeout, seed=None,
                                   max_runs=None)
