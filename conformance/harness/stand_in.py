"""A scenario's launches captured instead of run: a stand-in rank and a recording kernel.

``captured_launches(scenario, api, params, rank, world_size)`` runs the scenario's ``setup`` on a
:class:`StandInRank` (CPU tensors of the drawn dtypes, no heap, no world) and its ``launch`` through a
:class:`Recorder`, and returns every ``kernel[grid](*args, **kwargs)`` call it made, in order. The arguments give
each launch's signature (pointer and scalar types) and constexprs: what Triton compiles, without a device. Used to
compile a case's kernels ahead (``compile_ahead``) and by the cross-compile tier (tests/cpu_compile).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import torch

from conformance.harness.rank_side import torch_dtype
from conformance.kit.scenario import world_constexprs


@dataclass
class Launch:
    """One captured ``kernel[grid](*args, **kwargs)``."""

    grid: object
    args: tuple
    kwargs: dict = field(default_factory=dict)


class StandInRank:
    """What a scenario's setup and launch use of a rank (``conformance.harness.rank_side.Rank``), with CPU tensors.

    ``device`` is the device the scenario believes it runs on (``rank.shmem.device``): a scenario may pass
    different scalars on a GPU, and those are part of what is compiled. Host calls between launches (barrier,
    tracing reset/enable/disable) do nothing.
    """

    def __init__(self, api: str, kernel, rank: int = 0, world_size: int = 2, device: str = "cuda") -> None:
        self.api, self.kernel, self.rank, self.world_size = api, kernel, rank, world_size
        self.ctx = torch.zeros(16, dtype=torch.int64)
        self.buffers: dict[str, torch.Tensor] = {}
        nothing = lambda *args, **kwargs: None  # noqa: E731
        tracing = SimpleNamespace(reset=nothing, disable=nothing, enable=nothing)
        self.shmem = SimpleNamespace(barrier=nothing, device=torch.device(device), tracing=tracing)

    @property
    def world_constexprs(self) -> dict[str, int]:
        return world_constexprs(self.kernel, self.rank, self.world_size)

    def buffer(self, name: str, shape, dtype: str, fill=0) -> torch.Tensor:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.buffers[name] = torch.zeros(shape, dtype=torch_dtype(dtype))
        return self.buffers[name]


class Recorder:
    """``kernel[grid](*args, **kwargs)`` that records the call instead of running it."""

    def __init__(self) -> None:
        self.launches: list[Launch] = []

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launches.append(Launch(grid, args, kwargs))


def captured_launches(scenario, api: str, params: dict, rank: int = 0, world_size: int = 2,
                      device: str = "cuda") -> list[Launch]:
    """Every launch ``scenario.launch`` makes for ``params`` on ``rank`` of ``world_size``, recorded, not run."""
    stand_in, recorder = StandInRank(api, scenario.kernel(api), rank, world_size, device), Recorder()
    scenario.setup(stand_in, params)
    scenario.launch(recorder, stand_in, params)
    return recorder.launches
