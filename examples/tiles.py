"""The collective examples' data, defined once for both APIs: each rank's input, what the gathered output and the
fused kernel's inbox and result must hold, and a trace's events counted by name."""

from __future__ import annotations

import torch


def input_of(rank: int, m: int, n: int) -> torch.Tensor:
    """Rank ``rank``'s [m, n] input: ``rank m n + i n + j`` at (i, j), distinct on every rank and exact in float32
    (below 2**24 up to 64 ranks of 4096 x 64)."""
    return (torch.arange(m * n, dtype=torch.float32) + rank * m * n).reshape(m, n)


def gathered(world: int, m: int, n: int) -> torch.Tensor:
    """The all-gather's [m, world n] output on every rank: rank q's input in columns [q n, (q + 1) n)."""
    return torch.cat([input_of(q, m, n) for q in range(world)], dim=1)


def stacked(world: int, m: int, n: int) -> torch.Tensor:
    """The fused kernel's [world, m, n] inbox on every rank: rank q's input at [q]."""
    return torch.stack([input_of(q, m, n) for q in range(world)])


def weighted_sum(world: int, m: int, n: int) -> torch.Tensor:
    """The fused kernel's [m, n] result on every rank: the sum over ranks q of (q + 1) times rank q's input; whole
    numbers below 2**24, so exact in float32 in any order of addition, up to 36 ranks at the examples' 40 x 24."""
    return sum((q + 1) * input_of(q, m, n) for q in range(world))


def counts(names: list[str]) -> dict[str, int]:
    """How many events of each name ``names`` holds, by name."""
    return {name: names.count(name) for name in sorted(set(names))}
