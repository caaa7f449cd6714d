"""What scale means: the range of every scale dimension, and the scale the examples of a case are drawn at.

Two scales. ``SMALL`` is what the CPU interpreter and the pull-request gate run: at most 300 elements, a few
programs, 8 events a program, 20 trace slots under overflow, every launch with its own ``num_warps``; the
interpreter runs a rank's programs one after another, so its cost grows with every program. ``GPU`` draws what
only a GPU shows: ``num_warps`` 1 to 16 on every launch that gives none, grids of several waves of a 132-SM GPU,
run-time trace loops of thousands of iterations (a program's chunk refills many times), blocks of tens of
thousands of elements, and trace capacity close to what the programs attempt (many programs race for the last
chunks). Run with ``python -m conformance run --scale gpu`` (or ``gate``; ``docs/suite.md``, "Scale").

A scenario's strategy draws at the scale the harness sets around its draws (``drawing_at``); the strategies of
``conformance.kit.strategies`` read it (``current``), so every scenario built on them draws scale without code of
its own. A bound a scenario gives a strategy is its bound at ``SMALL``; a larger scale multiplies it by that
dimension's factor, so SMALL draws stay exactly what they were. Compile-time sets stay small
(each value is a compile): the GPU scale adds one large block size, and loop trip counts stay run-time values.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Scale:
    """The ranges of every scale dimension at one scale (factors widen a scenario's own ``SMALL`` bound)."""

    name: str
    elements: int  # a 1-D launch's element count (``element_count``) grows this many times
    axis: int  # each axis of a 2-D launch (``axis_length``) grows this many times: the elements grow by its square
    programs: int  # a grid extent (``grid_size``) grows this many times
    events: int  # a run-time trace loop's trip count (``events_per_program``, ``event_counts``) grows this many times
    loop_budget: int | None  # the most trace-loop iterations of one rank's programs together (None: no budget)
    block_sizes: tuple[int, ...]  # compile-time 1-D block sizes (``block_size``)
    num_warps: tuple[int, ...]  # what the harness draws per example for launches that give none; (): not drawn
    patterns: bool  # masks and value lists drawn as patterns of a few values (``kit.patterns``), not per element
    near_full: bool  # an overflow's trace capacity drawn close to the events attempted (``trace_max_events``)
    sized_by_model: bool  # trace slots from the example's own events and programs (``harness.sizing``)

    def loop_bound(self, bound: int, programs: int) -> int:
        """The largest trip count of a run-time trace loop that ``programs`` programs each run: ``bound`` widened by
        ``events``, within ``loop_budget`` shared among the programs (at least 1)."""
        widened = bound * self.events
        if self.loop_budget is None:
            return widened
        return max(1, min(widened, self.loop_budget // max(1, programs)))


SMALL = Scale("small", elements=1, axis=1, programs=1, events=1, loop_budget=None, block_sizes=(32, 64),
              num_warps=(), patterns=False, near_full=False, sized_by_model=False)
SMS = 132  # streaming multiprocessors of one H200
# grid_size's own bound (4 programs) reaches 3 waves of the SMs (396 programs); 300 elements reach 19200
GPU = Scale("gpu", elements=64, axis=4, programs=3 * SMS // 4, events=512, loop_budget=1 << 14,
            block_sizes=(32, 64, 1024), num_warps=(4, 1, 2, 8, 16), patterns=True, near_full=True, sized_by_model=True)
SCALES = {s.name: s for s in (SMALL, GPU)}

_current: ContextVar[Scale] = ContextVar("conformance_scale", default=SMALL)


def scale_named(name: str) -> Scale:
    """The scale called ``name`` (``small`` or ``gpu``); ValueError naming the choices otherwise."""
    if name not in SCALES:
        raise ValueError(f"scale {name!r}; expected one of {', '.join(SCALES)}")
    return SCALES[name]


def current() -> Scale:
    """The scale strategies draw at now: the one ``drawing_at`` set, else ``SMALL``."""
    return _current.get()


@contextmanager
def drawing_at(scale: Scale) -> Iterator[Scale]:
    """Strategies built inside the block draw at ``scale`` (this thread and context only)."""
    token = _current.set(scale)
    try:
        yield scale
    finally:
        _current.reset(token)
