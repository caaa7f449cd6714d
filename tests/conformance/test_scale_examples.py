"""GPU-scale examples run end to end: a few small ones under the interpreter, on CPU rank processes.

``python -m conformance run --scale gpu`` is refused on the CPU (whole GPU-scale cases would take hours there), but
one small example of GPU-scale params goes through the same path as on a GPU: params with long lists as patterns
sent to the ranks, ``num_warps`` added to every launch, trace slots sized from the example, the model and the
three-way comparison, and a replay line that says all of it.
"""

from __future__ import annotations

import shlex

import pytest

from conformance.cli import _parser
from conformance.harness.case import run_case
from conformance.harness.profiles import load_profile
from conformance.harness.run_settings import RunSettings
from conformance.harness.suite import parse_params
from conformance.kit import patterns
from conformance.kit.scale import GPU
from conformance.kit.scenario import load
from iris.ranks import Pools

pytestmark = pytest.mark.cpu_interpret

_BITS = [patterns.make({"pattern": "periodic", "length": 3072, "period": 5, "phase": 2, "duty": 3}),
         patterns.make({"pattern": "random", "length": 3072, "seed": 4, "density": 100})]
EXAMPLES = [
    # a 1024-element block (GPU scale only), masks as patterns, auto-traced ops
    ("store", 2, {"n": 3000, "BLOCK": 1024, "dtype": "int64", "TRACE_OPS": True, "offset": 1, "bits": _BITS}),
    # 2 programs looping 40 times over two records each, the buffers full before they end
    ("overflow", 2, {"BLOCK": 1024, "programs": 2, "per_program": 40, "n": 1500, "max_events": 100, "offset": 1,
                     "payload": 7}),
    # 150 iterations into two views: each view refills its chunk of 3 fifty times; more than its declared slots
    ("two_views", 1, {"counts": [150, 0, 7], "offset": 0, "base": 3}),
]


@pytest.mark.parametrize(("name", "world_size", "params"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_a_gpu_scale_example_passes_under_the_interpreter_and_replays_as_drawn(name, world_size, params):
    scenario = load(name)
    with Pools() as pools:
        run = RunSettings("cpu", load_profile("dev"), params=params, chunk=3, scale=GPU, num_warps=16)
        case, last = run_case(pools, scenario, world_size, run)
    assert case.ok, case.failure or case.error
    settings = last.settings
    assert (settings.chunk, settings.num_warps, settings.scale) == (3, 16, "gpu"), settings
    if name == "two_views":  # sized from the example: 314 events, 324 slots claimed, 3 programs
        assert settings.max_events == 314 + 324 + 3 * 3 > scenario.trace_slots(params, 3), settings
    args = _parser().parse_args(shlex.split(last.replay)[3:])  # python -m conformance <run ...>
    assert (args.scale, args.chunk, args.num_warps, args.ranks) == ("gpu", 3, 16, (world_size,)), last.replay
    assert parse_params(args.params) == params, last.replay
    assert len(last.replay) < 600, last.replay  # the masks as their specs, not 6144 bits
