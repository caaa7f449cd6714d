"""cpu-compile tier: every scenario's Gluon kernel compiles for what the GPU scale draws (``conformance.kit.scale``)
on the widest target, gfx942 (a 64-wide warp): ``num_warps`` 16, 1024 threads a program, the most a program may
have; and the 1024-element block at ``num_warps`` 1, 16 elements a thread.

Each layout is built from ``gl.num_warps()`` (CONTRIBUTING.md), so a layout wider than its block is replicated, and
none may assume a warp count. Triton 3.6 cannot compile ``atomic_cas`` for AMD with more than one element per
thread (triton-lang/triton#8867): the scenarios calling it draw ``block_size(large=False)``, which the second test
keeps honest. The launch is captured as in ``test_scenario_kernels``, from the simplest GPU-scale example.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, find, settings
from hypothesis.errors import NoSuchExample

from conformance.harness.stand_in import captured_launches
from conformance.kit.scale import GPU, drawing_at
from conformance.kit.scenario import all_scenarios
from tests.cpu_compile.compile_helpers import SCENARIO_WORLD as WORLD
from tests.cpu_compile.compile_helpers import compile_function, launch_signature

pytestmark = pytest.mark.cpu_compile

TARGET = "gfx942"
WIDEST = max(GPU.num_warps)
LARGE = max(GPU.block_sizes)


def _gpu_example(scenario, condition=lambda p: True, examples: int = 1) -> dict:
    with drawing_at(GPU):
        return find(scenario.params(WORLD), condition,
                    settings=settings(database=None, max_examples=examples, phases=(Phase.generate,)))


def _compiles(scenario, params: dict, num_warps: int) -> None:
    for launch in captured_launches(scenario, "gluon", params, 0, WORLD, num_warps=num_warps)[:1]:
        signature, constexprs = launch_signature(scenario.gluon_kernel, launch.args, launch.kwargs)
        compile_function("gluon", scenario.gluon_kernel, TARGET, constexprs, signature,
                         num_warps=launch.kwargs["num_warps"])


@pytest.mark.parametrize("scenario", all_scenarios(), ids=lambda s: s.name)
def test_gluon_kernel_compiles_at_the_widest_num_warps(scenario):
    _compiles(scenario, _gpu_example(scenario), WIDEST)  # call_shapes keeps its own num_warps (1 to 8)


@pytest.mark.parametrize("scenario", all_scenarios(), ids=lambda s: s.name)
def test_gluon_kernel_compiles_the_large_block_at_one_warp(scenario):
    """The search stops at the first example with no ``BLOCK`` (a scenario of tiles or loops, which draws none): only
    a scenario that draws a ``BLOCK`` is searched for the large one."""
    try:
        params = _gpu_example(scenario, lambda p: p.get("BLOCK", LARGE) == LARGE, examples=200)
    except NoSuchExample:
        pytest.skip(f"{scenario.name} draws no {LARGE}-element block")
    if "BLOCK" not in params:
        pytest.skip(f"{scenario.name} draws no BLOCK")
    _compiles(scenario, params, 1)
