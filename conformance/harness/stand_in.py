"""A scenario's launches captured instead of run: a stand-in rank and a recording kernel.

``captured_launches(scenario, api, params, rank, world_size)`` runs the scenario's ``setup`` on a
:class:`StandInRank` (a ``RankView`` of CPU tensors of the drawn dtypes, no heap, no world) and its ``launch``
through a :class:`Recorder`, and returns every ``kernel[grid](*args, **kwargs)`` call it made, in order, with the
example's ``num_warps`` added where the launch gives none, as the ranks launch it. The arguments give each
launch's signature (pointer and scalar types) and constexprs: what Triton compiles, without a device. Used to
compile a case's kernels ahead (``compile_ahead``), to count an example's programs (``launched_programs``,
``harness.sizing``) and by the cross-compile tier (tests/cpu_compile).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from conformance.harness.rank_side import launch_options, torch_dtype
from conformance.kit.rank_view import RankView
from conformance.kit.scenario import APIS, world_constexprs
from iris import context_layout


@dataclass
class Launch:
    """One captured ``kernel[grid](*args, **kwargs)``."""

    grid: object
    args: tuple
    kwargs: dict = field(default_factory=dict)


class StandInTracing:
    """A tracing switch whose host calls between launches (reset, enable, disable) do nothing."""

    def reset(self) -> None:
        pass

    def enable(self, max_events: int = 0, chunk: int = 0) -> None:
        pass

    def disable(self) -> None:
        pass


@dataclass
class StandInHost:
    """``rank.shmem`` of a stand-in rank: the device the scenario believes it runs on (a scenario may pass
    different scalars on a GPU, and those are part of what is compiled), a barrier that waits for nobody, and a
    tracing switch that does nothing."""

    device: torch.device
    tracing: StandInTracing = field(default_factory=StandInTracing)

    def barrier(self) -> None:
        pass


class StandInRank:
    """A :class:`~conformance.kit.rank_view.RankView` of CPU tensors: no heap, no world.

    ``ctx`` is a real context tensor of ``rank`` in a world of ``world_size`` (``iris.context_layout.encode``: tracing
    off, every heap base 0): its type, shape and alignment are what Triton specializes a launch on.
    """

    def __init__(self, api: str, kernel, rank: int = 0, world_size: int = 2, device: str = "cuda") -> None:
        self.api, self.kernel, self.rank, self.world_size = api, kernel, rank, world_size
        self.ctx = torch.tensor(context_layout.encode(rank, [0] * world_size), dtype=torch.int64)
        self.buffers: dict[str, torch.Tensor] = {}
        self.shmem = StandInHost(torch.device(device))

    @property
    def world_constexprs(self) -> dict[str, int]:
        return world_constexprs(self.kernel, self.rank, self.world_size)

    def buffer(self, name: str, shape: int | Sequence[int], dtype: str, fill: object = 0) -> torch.Tensor:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.buffers[name] = torch.zeros(shape, dtype=torch_dtype(dtype))
        return self.buffers[name]


class Recorder:
    """``kernel[grid](*args, **kwargs)`` that records the call instead of running it, with ``num_warps`` added
    where the launch gives none (``rank_side.launch_options``)."""

    def __init__(self, num_warps: int | None = None) -> None:
        self.num_warps = num_warps
        self.launches: list[Launch] = []

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launches.append(Launch(grid, args, launch_options(kwargs,
                                                                                             self.num_warps)))


def captured_launches(scenario, api: str, params: dict, rank: int = 0, world_size: int = 2,
                      device: str = "cuda", num_warps: int | None = None) -> list[Launch]:
    """Every launch ``scenario.launch`` makes for ``params`` on ``rank`` of ``world_size``, recorded, not run
    (``num_warps``: the example's, for launches that give none)."""
    stand_in: RankView = StandInRank(api, scenario.kernel(api), rank, world_size, device)
    recorder = Recorder(num_warps)
    scenario.setup(stand_in, params)
    scenario.launch(recorder, stand_in, params)
    return recorder.launches


def programs(launch: Launch) -> int:
    """The program instances ``launch`` starts: the product of its grid (a grid function gets its keywords)."""
    grid = launch.grid(launch.kwargs) if callable(launch.grid) else launch.grid
    return math.prod(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))


def launched_programs(scenario, params: dict, world_size: int) -> int:
    """The most program instances one rank's launches start for ``params``, every launch counted (each rank's
    launches captured on a CPU stand-in; one API's, as both APIs launch alike)."""
    return max(sum(programs(launch) for launch in captured_launches(scenario, APIS[0], params, rank, world_size,
                                                                     "cpu"))
               for rank in range(world_size))
