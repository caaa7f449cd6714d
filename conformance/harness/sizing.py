"""An example's trace buffers sized for the scale it was drawn at: ``sized``.

At ``SMALL`` a scenario's declared ``max_events`` and ``max_programs`` hold every example it draws. At a scale
``sized_by_model`` (the GPU scale) one example may record tens of thousands of events on thousands of programs,
so the buffers hold at least what the example needs: on the rank that needs most, every event its model expects
plus the slots the model says its programs claim, and a chunk for every program its launches start (counted on
the stand-in rank, ``stand_in.launched_programs``, every launch counted). A program claims at most its events plus
one chunk per tracing view (``two_views``' model gives its claims), so a scenario that does not overflow on purpose
keeps every event at any drawn size; an overflow scenario keeps its own ``overflow_at``, close to what its programs
attempt (``strategies.trace_max_events``). The model built for this is the example's: ``run_example`` takes it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from conformance.harness.stand_in import launched_programs
from conformance.kit.example_settings import ExampleSettings
from conformance.kit.scale import scale_named
from conformance.kit.scenario import Scenario, ScenarioError

if TYPE_CHECKING:
    from conformance.check.model import Model


def sized(scenario: Scenario, world_size: int, params: dict,
          settings: ExampleSettings) -> tuple[ExampleSettings, Model | None]:
    """``settings`` with the trace slots of the example of ``params`` on ``world_size`` ranks at the scale it was
    drawn at (``settings.scale``; see the module docstring), and the model built to size them (None where none
    was: a scale sized by declaration, or an overflow scenario). ScenarioError when the model or the stand-in's
    setup or launch raises. A model may read the settings' ``chunk`` and ``num_warps``, never ``max_events``."""
    if not scale_named(settings.scale).sized_by_model or scenario.overflow_at is not None:
        return settings, None
    where = scenario.where or scenario.ref or scenario.name
    try:
        model = scenario.expected(params, world_size, settings)
    except Exception as e:
        raise ScenarioError(f"{where}: model raised {type(e).__name__}: {e}") from e
    claimed = model.claimed or {}
    events = max(model.attempted(r) + claimed.get(r, 0) for r in range(world_size))
    try:
        programs = launched_programs(scenario, params, world_size)
    except Exception as e:
        raise ScenarioError(f"{where}: setup or launch on the stand-in rank raised {type(e).__name__}: {e}") from e
    slots = scenario.trace_slots(params, settings.chunk, room=(events, programs))
    return dataclasses.replace(settings, max_events=slots), model
