"""How long one example may run on the ranks before it is a hang: a budget derived from what the example does.

    budget = min(cap, base + first + per_event * events + per_program * programs + per_element * elements)

The sum is rounded up to a tenth of a second (messages read "30.1 s"). ``first`` counts only where the ranks may do
one-off work for the example (``example_budget``'s ``first``). The size is read off the example's model
(:class:`Size`), which the host computes before it launches the ranks; the constants are per backend
(:data:`RULES`); ``cap`` is the run's ``--timeout`` (at most ``iris.ranks.pool.MAX_TIMEOUT_S``), so a budget never
exceeds what the user allows. Under a sanitizer the budget is the cap: the tools slow kernels by a factor that
depends on the tool and the kernel, which no size predicts.

The constants leave a wide margin over what was measured: on the CPU the base alone is many times the slowest
example and each term several times a least-squares fit over 1,368 examples; on a GPU the per-event term is several
times the ranks' host work per event (decode, export, reading the export back, pickling), and ``first`` covers a
fresh pool's first job and compiles of kernels not compiled ahead. The measurements are in ``docs/figures.md``,
"Example budgets".

A scenario that bounds its own waits keeps them inside ``base`` where it can, so that a lost flag is reported as
the divergence it causes rather than as a hang: ``message_passing``'s spin gives up within seconds on the CPU; on a
GPU it must outlast ranks whose compiles end seconds apart, and a lost flag there may end as a hang (whose report
names the rank still waiting for its kernel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from iris.ranks.pool import check_timeout

if TYPE_CHECKING:
    from conformance.check.model import Model


@dataclass(frozen=True)
class Size:
    """What an example does, over every rank: the model's ``events`` (each API records every one of them),
    ``programs`` (distinct rank and pid among those events) and ``elements`` (of the buffers the model checks)."""

    events: int
    programs: int
    elements: int

    @classmethod
    def of(cls, model: Model) -> Size:
        """The size of the example ``model`` describes."""
        return cls(events=sum(len(events) for events in model.events.values()),
                   programs=len({(rank, e.pid) for rank, events in model.events.items() for e in events}),
                   elements=sum(len(values) for buffers in model.memory.values() for values in buffers.values()))


@dataclass(frozen=True)
class Rule:
    """One backend's constants, in seconds."""

    base: float  # every example: dispatch, barriers, both launches and the read-back of a small one, on a busy host
    first: float  # more where the ranks may do one-off work: a fresh pool's first job, compiles on the ranks
    per_event: float
    per_program: float
    per_element: float


RULES: dict[str, Rule] = {
    # the interpreter: about 150 Triton ops of some 30 us a trace record, both APIs (1.6 ms an event, fitted);
    # nothing compiles and a fresh pool's first job took 0.3 s, inside the base
    "cpu": Rule(base=30.0, first=0.0, per_event=20e-3, per_program=10e-3, per_element=50e-6),
    # compiled: programs and elements cost the device microseconds; an event costs the ranks' host 74 us (both
    # APIs); the one-off work: compiles (about 12 s a cold call_shapes example) and a fresh pool's device and heap
    "gpu": Rule(base=20.0, first=100.0, per_event=250e-6, per_program=10e-6, per_element=5e-6),
}


def example_budget(size: Size, backend: str, cap: float, *, first: bool = True, sanitizer: str = "") -> float:
    """Seconds ``size``'s example may run on ``backend``'s ranks (the module docstring's rule): at most ``cap``,
    and the cap itself under a compute-sanitizer tool (``sanitizer``; "" for none). ``first``: the ranks may do
    one-off work for it (a fresh pool, kernels not known to be compiled). ValueError when ``cap`` is no number of
    seconds a pool can wait, or the backend is unknown."""
    check_timeout("example budget", "cap (--timeout)", cap)
    if backend not in RULES:
        raise ValueError(f"example budget: backend {backend!r} is unknown; expected one of {', '.join(RULES)}")
    if sanitizer:
        return float(cap)
    rule = RULES[backend]
    derived = (rule.base + (rule.first if first else 0.0) + rule.per_event * size.events
               + rule.per_program * size.programs + rule.per_element * size.elements)
    return min(float(cap), math.ceil(round(derived * 10, 6)) / 10)
