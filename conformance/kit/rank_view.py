"""What a scenario's ``setup(rank, p)`` and ``launch(kernel, rank, p)`` may use of a rank: :class:`RankView`.

Two classes implement it: ``conformance.harness.rank_side.Rank`` (a rank of a real world: heap buffers, the
rank's context tensor, its ``iris`` host object) and ``conformance.harness.stand_in.StandInRank`` (CPU tensors,
launches captured to compile them ahead, nothing run). A scenario that uses anything else of a rank works on one
and breaks on the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch


@runtime_checkable
class TracingView(Protocol):
    """The host calls a launch may make on its rank's tracing between kernels."""

    def reset(self) -> None: ...

    def enable(self, max_events: int = ..., chunk: int = ...) -> None: ...

    def disable(self) -> None: ...


@runtime_checkable
class HostView(Protocol):
    """The part of a rank's ``iris`` host object (``rank.shmem``) a scenario may use."""

    @property
    def device(self) -> torch.device: ...

    @property
    def tracing(self) -> TracingView: ...

    def barrier(self) -> None: ...


@runtime_checkable
class RankView(Protocol):
    """One rank as a scenario sees it, for one API's kernel.

    ``rank``/``world_size``: host-side values such as targets; ``ctx``: the context tensor every kernel takes
    first; ``buffer(name, shape, dtype, fill)`` allocates a named heap buffer (same offset on every rank) and
    ``buffers`` holds them by name; ``world_constexprs``: the ``rank``/``world`` keywords the kernel takes, if any
    (``conformance.kit.scenario.world_constexprs``); ``shmem``: the device, the barrier and the tracing switch.
    """

    @property
    def rank(self) -> int: ...

    @property
    def world_size(self) -> int: ...

    @property
    def ctx(self) -> torch.Tensor: ...

    @property
    def buffers(self) -> dict[str, torch.Tensor]: ...

    @property
    def world_constexprs(self) -> dict[str, int]: ...

    @property
    def shmem(self) -> HostView: ...

    def buffer(self, name: str, shape: int | Sequence[int], dtype: str, fill: object = 0) -> torch.Tensor: ...
