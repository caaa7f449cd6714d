"""Drawing a case's examples: each one's params (its scenario's strategy, at the run's scale) and the harness's
settings beside them (``ExampleSettings``: the trace chunk and slots, and at the GPU scale ``num_warps``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, NamedTuple

from hypothesis import Phase, given, seed, settings
from hypothesis import strategies as st

from conformance.harness.sizing import sized
from conformance.kit.example_settings import ExampleSettings
from conformance.kit.scale import SMALL, Scale, drawing_at
from conformance.kit.scenario import Scenario

if TYPE_CHECKING:
    from conformance.check.model import Model
    from conformance.harness.run_settings import RunSettings

# The trace chunk every example draws (slots a program claims at a time, a run-time value): 3 first, so that the
# simplest example claims in mid-program.
CHUNK_SIZES = (3, 1, 16, 64)


class _Drawn(NamedTuple):
    params: dict
    settings: ExampleSettings


class Example(_Drawn):
    """One example to run: the params its scenario's strategy drew and the harness's settings beside them (it
    unpacks as ``params, settings``), and ``model``, the model where sizing its trace buffers built it already
    (``sizing.sized``; None: ``example.run_example`` builds it)."""

    model: Model | None = None


@st.composite
def examples(draw: st.DrawFn, scenario: Scenario, world_size: int, run: RunSettings | None = None,
             sizing: bool = True) -> Example:
    """A strategy of one example (what ``case.run_case`` draws): ``scenario.params(world_size)`` drawn at the run's
    scale under the label "params", the trace chunk of its settings under "chunk" (one of ``CHUNK_SIZES``, or the
    run's ``chunk`` if given) and, at a scale that draws it (or given), ``num_warps`` under "num_warps" (one of
    ``scale.num_warps``); ``run`` None: the defaults of ``RunSettings``. Its trace slots are sized for the scale
    (``sizing.sized``) unless ``sizing`` is False (then they are the declared ones: what compiling ahead needs, as
    it runs nothing)."""
    chunk, scale, num_warps = (None, SMALL, None) if run is None else (run.chunk, run.scale, run.num_warps)
    data = draw(st.data())  # the test's data object: a failing example prints every draw under its label
    with drawing_at(scale):
        p = data.draw(scenario.params(world_size), label="params")
    drawn_chunk = data.draw(st.sampled_from(CHUNK_SIZES) if chunk is None else st.just(chunk), label="chunk")
    warps = num_warps
    if num_warps is not None or scale.num_warps:  # SMALL draws nothing here: its examples stay what they were
        warps = data.draw(st.sampled_from(scale.num_warps) if num_warps is None else st.just(num_warps),
                          label="num_warps")
    return example_of(scenario, world_size, p, drawn_chunk, warps, scale, sizing)


def example_of(scenario: Scenario, world_size: int, params: dict, chunk: int | None = None,
               num_warps: int | None = None, scale: Scale = SMALL, sizing: bool = True) -> Example:
    """The example of ``params`` drawn at ``scale`` on ``world_size`` ranks, run with trace chunk ``chunk`` (None:
    the replay default) and ``num_warps``: its settings, trace slots sized for ``scale`` unless ``sizing`` is
    False (``sizing.sized``, which may build its model)."""
    settings = scenario.settings(params, chunk, num_warps=num_warps, scale=scale.name)
    if not sizing:
        return Example(params, settings)
    settings, model = sized(scenario, world_size, params, settings)
    example = Example(params, settings)
    example.model = model
    return example


def _collect(drawn: list[Example], example: Example) -> None:
    drawn.append(example)


def drawn_examples(scenario: Scenario, world_size: int, run: RunSettings, case_seed: int,
                   sizing: bool = True) -> list[Example]:
    """The examples ``case.run_case`` draws under ``case_seed`` with ``run``'s profile, chunk, scale and
    ``num_warps``, drawn without running them (``sizing``: as ``examples``).

    Those Hypothesis generates; an example it replays from its database first is not among them.
    """
    drawn: list[Example] = []
    draw = given(example=examples(scenario, world_size, run, sizing))(_collect)
    seed(case_seed)(settings(run.profile, database=None, phases=(Phase.explicit, Phase.generate))(draw))(drawn)
    return drawn


def launch_key(example: Example) -> str:
    """What an example launches, as a set member: its params and the ``num_warps`` the harness gives its launches
    (equal keys, equal kernel variants)."""
    return json.dumps([example.params, example.settings.num_warps], sort_keys=True)
