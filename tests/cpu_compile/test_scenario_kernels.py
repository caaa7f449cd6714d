"""cpu-compile tier: every conformance scenario's Triton and Gluon kernels compile (NVIDIA or AMD target), and
one compiled variant of each serves every rank.

The launch is captured, not run (``conformance.harness.stand_in``): the scenario sets up its buffers on a stand-in
rank (CPU tensors of the drawn dtypes) and launches through a recorder, whose arguments give the signature (pointer
and scalar types), the constexprs and ``num_warps`` (``compile_helpers.compile_scenario``). The example is
Hypothesis's simplest for 2 ranks, so the compile is the same on every run, and the same as
``test_gpu_mutants_compile``'s unmutated compile of a scenario on the same target: the two share it (``compile_helpers``
caches it on disk for every process of the run).
A launch's compiled variant is keyed on its specialization and options (``triton.runtime.jit``'s binder, made
here for a target's backend, as a launch on that GPU makes it): where rank 0's and rank 1's launches agree, one
compile serves both.
"""

from __future__ import annotations

from collections import Counter

import pytest
from triton.compiler import make_backend
from triton.runtime.jit import create_function_from_signature

from conformance.kit.scenario import APIS, WORLD_CONSTEXPRS, all_scenarios, world_constexprs
from tests.cpu_compile.compile_helpers import (
    MACHINE_CODE,
    SCENARIO_WORLD,
    TARGETS,
    compile_scenario,
    simplest_launches,
)
from tests.cpu_compile.test_gpu_mutants_compile import GPU_MUTANTS, killer, mutant_target

pytestmark = pytest.mark.cpu_compile

COMPILE_TARGETS = ("sm_90", "gfx942")
WORLD = SCENARIO_WORLD


def _targets() -> dict[str, str]:
    """Each scenario's one target: a GPU-only mutant's killer on the target its unmutated kernels compile for there
    (one compile serves both tests), the others alternating along the sorted names so that each backend sees about
    half of the scenarios. Every kernel is compiled once per run here."""
    names = [s.name for s in all_scenarios()]
    chosen: dict[str, str] = {}
    for mutant in GPU_MUTANTS:
        if killer(mutant) in names:
            chosen.setdefault(killer(mutant), mutant_target(mutant))
    counts = Counter(chosen.values())
    for name in names:
        if name not in chosen:
            chosen[name] = min(COMPILE_TARGETS, key=lambda t: counts[t])
            counts[chosen[name]] += 1
    return chosen


TARGET_OF = _targets()
CASES = [pytest.param(s, api, TARGET_OF[s.name], id=f"{s.name}-{api}-{TARGET_OF[s.name]}")
         for s in all_scenarios() for api in APIS]


@pytest.mark.parametrize(("scenario", "api", "target"), CASES)
def test_scenario_kernel_compiles(scenario, api, target):
    asm = compile_scenario(scenario, api, target)
    code = MACHINE_CODE[TARGETS[target].backend]
    assert asm.get(code), f"{scenario.name} ({api}) on {target}: no {code} in the compile's stages {sorted(asm)}"


def test_each_backend_compiles_about_half_of_the_scenarios():
    counts = Counter(TARGET_OF.values())
    assert set(TARGET_OF) == {s.name for s in all_scenarios()} and set(counts) == set(COMPILE_TARGETS), counts
    assert abs(counts["sm_90"] - counts["gfx942"]) <= 1, counts


def _rank_dependent(scenario, api: str, target: str) -> list[str]:
    """The parameters (and "options") whose specialization differs between rank 0's and rank 1's launches of
    ``api``'s kernel on ``target``: empty when one compiled variant serves both ranks."""
    kernel = scenario.kernel(api)
    binder = create_function_from_signature(kernel.signature, kernel.params, make_backend(TARGETS[target]))
    names = list(kernel.signature.parameters)
    ranks = [simplest_launches(scenario, api, r) for r in (0, 1)]
    assert len(ranks[0]) == len(ranks[1]), f"{scenario.name} ({api}): ranks 0 and 1 launch different counts"
    differ = set()
    for (args0, kwargs0), (args1, kwargs1) in zip(*ranks, strict=True):
        _, spec0, options0 = binder(*args0, **kwargs0)
        _, spec1, options1 = binder(*args1, **kwargs1)
        differ |= {name for name, a, b in zip(names, spec0, spec1, strict=True) if a != b}
        differ |= {"options"} if options0 != options1 else set()
    return sorted(differ)


@pytest.mark.parametrize("scenario", all_scenarios(), ids=lambda s: s.name)
def test_one_compiled_variant_serves_every_rank(scenario):
    """Rank 0's and rank 1's launches compile the same variant, in both APIs (both read rank and world size from
    the context), except where the Triton kernel takes them as constexprs: there they differ at ``rank``."""
    compile_time_rank = "rank" in world_constexprs(scenario.triton_kernel, 0, WORLD)
    for target in COMPILE_TARGETS:
        for api in APIS:
            differ = _rank_dependent(scenario, api, target)
            expected = ["rank"] if api == "triton" and compile_time_rank else []
            assert differ == expected, (
                f"{scenario.name} ({api}) on {target}: rank 0's and rank 1's launches specialize differently at "
                f"{differ}, but should differ at {expected} (one compiled variant serves every rank: list the "
                f"kernel's run-time ints in do_not_specialize; only a kernel taking {', '.join(WORLD_CONSTEXPRS)} "
                "compiles one per rank)")
