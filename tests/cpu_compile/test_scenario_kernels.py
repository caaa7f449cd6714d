"""cpu-compile tier: every conformance scenario's Triton and Gluon kernels compile (NVIDIA or AMD target), and
one compiled variant of each serves every rank.

The launch is captured, not run (``conformance.harness.stand_in``): the scenario sets up its buffers on a stand-in
rank (CPU tensors of the drawn dtypes) and launches through a recorder, whose arguments give the signature (pointer
and scalar types) and the constexprs. The example is Hypothesis's simplest for 2 ranks, so the compile is the same
on every run.
A launch's compiled variant is keyed on its specialization and options (``triton.runtime.jit``'s binder, made
here for a target's backend, as a launch on that GPU makes it): where rank 0's and rank 1's launches agree, one
compile serves both.
"""

from __future__ import annotations

import inspect

import pytest
import torch
from hypothesis import Phase, find, settings
from triton.compiler import make_backend
from triton.runtime.jit import create_function_from_signature

from conformance.harness.stand_in import captured_launches
from conformance.kit.scenario import APIS, WORLD_CONSTEXPRS, all_scenarios, world_constexprs
from tests.cpu_compile.compile_helpers import MACHINE_CODE, TARGETS, compile_function

pytestmark = pytest.mark.cpu_compile

COMPILE_TARGETS = ("sm_90", "gfx942")
WORLD = 2
_TYPES = {torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64", torch.float16: "fp16",
          torch.bfloat16: "bf16", torch.float32: "fp32", torch.float64: "fp64"}


def _scalar_type(value) -> str:
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, float):
        return "fp32"
    return "i32" if -(2**31) <= value < 2**31 else "i64"


def _signature(fn, args: tuple, kwargs: dict) -> tuple[dict, dict]:
    """(signature, constexprs) of one captured launch of the jit function ``fn``."""
    params = inspect.signature(getattr(fn, "fn", fn)).parameters
    bound = dict(zip(params, args, strict=False)) | {k: v for k, v in kwargs.items() if k in params}
    signature, constexprs = {}, {}
    for name, param in params.items():
        value = bound.get(name, param.default)
        if "constexpr" in str(param.annotation):
            signature[name], constexprs[name] = "constexpr", value
        elif isinstance(value, torch.Tensor):
            signature[name] = "*" + _TYPES[value.dtype]
        else:
            signature[name] = _scalar_type(value)
    return signature, constexprs


# Hypothesis's simplest example: the first one it generates (tests/cpu_unit/test_strategies.py), without shrinking
# or the explain phase, which ran the strategy a hundred more times (30 of the 32 s an atomic scenario's case took).
_SIMPLEST = settings(database=None, max_examples=1, phases=(Phase.generate,))


def _launches(scenario, api: str, rank: int = 0) -> list[tuple[tuple, dict]]:
    params = find(scenario.params(WORLD), lambda p: True, settings=_SIMPLEST)
    launches = captured_launches(scenario, api, params, rank, WORLD)
    assert launches, f"{scenario.name}: launch() launched nothing"
    return [(launch.args, launch.kwargs) for launch in launches]


def _captured(scenario, api: str):
    return _launches(scenario, api)[0]


# Each scenario on one target, alternating NVIDIA and AMD along the sorted names (both APIs on that target): every
# kernel is compiled once per run, and each backend sees half of the scenarios.
CASES = [pytest.param(s, api, COMPILE_TARGETS[i % 2], id=f"{s.name}-{api}-{COMPILE_TARGETS[i % 2]}")
         for i, s in enumerate(all_scenarios()) for api in APIS]


@pytest.mark.parametrize(("scenario", "api", "target"), CASES)
def test_scenario_kernel_compiles(scenario, api, target):
    args, kwargs = _captured(scenario, api)
    kernel = scenario.kernel(api)
    signature, constexprs = _signature(kernel, args, kwargs)
    asm = compile_function(api, kernel, target, constexprs, signature)
    code = MACHINE_CODE[TARGETS[target].backend]
    assert asm.get(code), f"{scenario.name} ({api}) on {target}: no {code} in the compile's stages {sorted(asm)}"


def _rank_dependent(scenario, api: str, target: str) -> list[str]:
    """The parameters (and "options") whose specialization differs between rank 0's and rank 1's launches of
    ``api``'s kernel on ``target``: empty when one compiled variant serves both ranks."""
    kernel = scenario.kernel(api)
    binder = create_function_from_signature(kernel.signature, kernel.params, make_backend(TARGETS[target]))
    names = list(kernel.signature.parameters)
    ranks = [_launches(scenario, api, r) for r in (0, 1)]
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
