"""The scenario API's per-API launch arguments and the compiled-variant count the harness reports.

One Gluon compile serves every rank: no Gluon kernel in a scenario takes the ``rank``/``world`` constexprs
its Triton twin takes, ``Rank.world_constexprs`` hands them to the Triton launch only, and the report
counts the compiled variants of each kernel across ranks per configuration from the ranks' kernel hashes.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from conformance.harness.host_side import variants_per_config
from conformance.harness.rank_side import LaunchRecorder, Rank
from conformance.kit.scaffold import TEMPLATE
from conformance.kit.scenario import WORLD_CONSTEXPRS, all_scenarios
from conformance.report.output import summary_table, variants_cell
from conformance.results import CaseResult, ExampleResult

pytestmark = pytest.mark.cpu_unit


def _params(kernel) -> list[str]:
    return list(inspect.signature(getattr(kernel, "fn", kernel)).parameters)


@pytest.mark.parametrize("scenario", all_scenarios(), ids=lambda s: s.name)
def test_gluon_kernel_takes_the_triton_parameters_but_rank_and_world(scenario):
    triton_params, gluon_params = _params(scenario.triton_kernel), _params(scenario.gluon_kernel)
    missing = [p for p in WORLD_CONSTEXPRS if p not in triton_params]
    assert not missing, f"{scenario.name}: triton_kernel parameters={triton_params} lack {missing}"
    expected = [p for p in triton_params if p not in WORLD_CONSTEXPRS]
    assert gluon_params == expected, f"{scenario.name}: gluon_kernel parameters={gluon_params}, should be {expected}"


def test_scaffold_follows_the_rule():
    source = TEMPLATE.format(name="x")
    assert "rank: tl.constexpr, world: tl.constexpr" in source
    assert "rank: gl.constexpr" not in source and "world: gl.constexpr" not in source
    assert "**rank.world_constexprs" in source


def _shmem(rank=2, world=4):
    return SimpleNamespace(get_rank=lambda: rank, get_num_ranks=lambda: world, get_device_context=lambda: "ctx")


def test_world_constexprs_by_api():
    assert Rank(_shmem(), "triton").world_constexprs == {"rank": 2, "world": 4}
    assert Rank(_shmem(), "gluon").world_constexprs == {}
    with pytest.raises(ValueError, match="api='cuda', expected one of"):
        Rank(_shmem(), "cuda")


def _obs(*variants_per_rank):
    return [{"apis": {"gluon": {"variants": list(v)}}} for v in variants_per_rank]


def test_variants_per_config():
    assert variants_per_config(_obs(["a"], ["a"], ["a"], ["a"]), "gluon") == 1
    assert variants_per_config(_obs(["a"], ["b"], ["c"], ["d"]), "gluon") == 4
    assert variants_per_config(_obs(["a", "b"], ["a", "b"]), "gluon") == 1  # two configurations, shared
    assert variants_per_config(_obs(["a", "b"], ["c", "d"]), "gluon") == 2
    assert variants_per_config(_obs([], []), "gluon") is None  # the interpreter compiles nothing


class _Compiled:
    def __init__(self, hash_):
        self.hash = hash_


class _Kernel:
    """Stands in for a jit function: ``kernel[grid](*args)`` returns a compiled kernel named by its args."""

    arg_names = ["x"]

    def __init__(self):
        self.calls = []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.calls.append((grid, args, kwargs))
            return _Compiled(f"h{kwargs.get('BLOCK')}") if kwargs.get("BLOCK") else None

        return launch


def test_launch_recorder_notes_compiled_variants_and_forwards():
    kernel = _Kernel()
    recorded = LaunchRecorder(kernel)
    recorded[(2,)](1, BLOCK=32)
    recorded[(3,)](2, BLOCK=32)
    recorded[(1,)](3, BLOCK=64)
    recorded[(1,)](4)  # nothing compiled (interpreter): no variant
    assert recorded.hashes == {"h32", "h64"}
    assert kernel.calls[0] == ((2,), (1,), {"BLOCK": 32})
    assert recorded.arg_names == ["x"]


def test_report_prints_variants_per_configuration():
    case = CaseResult("store", 4, "gpu")
    result = ExampleResult("store", 4, "gpu", {}, [], 0.1, {"triton": 0, "gluon": 0}, {"triton": 4, "gluon": 1})
    case.add(result, ())
    assert case.variants_per_config == {"triton": 4, "gluon": 1}
    table = summary_table([case])
    assert "variants t/g" in table.splitlines()[0]
    assert table.splitlines()[2].rstrip().endswith("4/1"), table
    assert variants_cell({"triton": None, "gluon": None}) == "-/-"
