"""How long one example may run on the ranks before it is a hang: a budget derived from what the example does.

    budget = min(cap, base + first + per_event * events + per_program * programs + per_element * elements)

The sum is rounded up to a tenth of a second (messages read "30.1 s"). ``first`` counts only where the ranks may do
one-off work for the example (``example_budget``'s ``first``). The size is read off the example's model
(:class:`Size`), which the host computes before it launches the ranks; the constants are per backend
(:data:`RULES`); ``cap`` is the run's ``--timeout`` (at most ``iris.ranks.pool.MAX_TIMEOUT_S``), so a budget never
exceeds what the user allows. Under a sanitizer the budget is the cap: the tools slow kernels by a factor that
depends on the tool and the kernel, which no size predicts.

The constants leave a wide margin over what was measured (CPU: 1,368 examples of every scenario at 1, 2 and 4 ranks
on a shared 2-core machine; GPU: the host work per event on the ranks, measured on the same machine):

- CPU (the Triton interpreter): the slowest example took 2.2 s on the ranks (call_shapes on 4 ranks: 828 events,
  48 programs); a least-squares fit over all of them gives 0.05 s + 1.6 ms an event + 0.74 ms a program + 7 us an
  element, and the worst event-heavy ratio was auto_ops at 16 ms an event (its ops do untraced work too). The base
  alone is 14 times the slowest example, each term is 10 times or more its fit, and no example came within 21
  times its budget.
- GPU: an example of today's sizes runs in under a second (the base is 20 times that); what grows with the events
  is the ranks' host work, per event and API: decode 0.4 us, export 6 us, read the export back 24 us, pickle and
  unpickle 7 us (200,000 events on the 2-core machine), 74 us an event for both APIs; the budget's 250 us is over
  3 times that for one rank, and more for several, whose host work runs in parallel. A fresh pool's first job
  (imports, device, heap) and compiles of kernels not compiled ahead are the one-off work: before kernels were
  compiled ahead, call_shapes' four cases took 287 s of a cold GPU gate (README, "Suite speed"), about 12 s an
  example at 6 examples a case. Read against the GPU: on one H100, in the scaled gate at 1, 2, 4 and 8 ranks with
  an empty Triton cache (148 cases, 888 examples), no example took more than 12% of its
  budget (put_options; every other scenario under 5%), and half the cases stayed under 0.7%.

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
