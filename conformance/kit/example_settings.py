"""What the harness sets for one example beside the params its scenario draws: :class:`ExampleSettings`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExampleSettings:
    """The trace and launch settings of one example, the same on every rank and API; never part of a scenario's params.

    ``chunk``: trace slots a program claims at a time (a run-time value: drawn per example from
    ``harness.drawing.CHUNK_SIZES``, or fixed by ``python -m conformance run --chunk N``); ``max_events``: the trace
    slots of each rank and API (``Scenario.trace_slots``; at a scale ``sized_by_model``, ``harness.sizing``);
    ``num_warps``: what every launch that gives none runs with (drawn per example at a scale that draws it, from
    ``Scale.num_warps``, or fixed by ``run --num-warps N``; None: each launch as written, Triton's default 4);
    ``scale``: the name of the scale the params were drawn at (``conformance.kit.scale``). Built once per example on
    the host (``Scenario.settings``), sent to every rank beside the params (``rank_side.run_example`` enables
    tracing and launches with them), and given to a model that takes a third argument (``Scenario.expected``).
    """

    chunk: int
    max_events: int
    num_warps: int | None = None
    scale: str = "small"
