"""The scenario API's per-API launch arguments and the compiled-variant count the harness reports.

One compile serves every rank: no Gluon kernel in a scenario takes ``rank``/``world`` constexprs, and no Triton
kernel either but those of ``COMPILE_TIME_RANK`` (which keep upstream's compile-time-rank form, and say why);
``Rank.world_constexprs`` hands them to the launch of a kernel that takes them only, and the report counts the
compiled variants of each kernel across ranks per configuration from the ranks' kernel hashes.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import os
import sys
from types import SimpleNamespace

import pytest
from hypothesis import Phase, find, settings

from conformance.cli import main
from conformance.harness.example import variants_per_config
from conformance.harness.rank_side import LaunchRecorder, Rank
from conformance.harness.replay_params import ParamsError
from conformance.harness.replay_params import check as replay_check
from conformance.kit.example_settings import ExampleSettings
from conformance.kit.scaffold import MAX_NAME_LENGTH, TEMPLATE, WAITING_TEMPLATE, scaffold
from conformance.kit.scenario import (
    PACKAGES_ENV,
    WORLD_CONSTEXPRS,
    Scenario,
    ScenarioError,
    all_scenarios,
    check,
    first_sentence,
    is_scenario,
    load,
    names,
    package_scenarios,
    scenario_packages,
)
from conformance.kit.strategies import WAITING_PROGRAMS
from conformance.report.output import summary_table, variants_cell
from conformance.results import CaseResult, ExampleResult
from iris.tracing.core import DEFAULT_CHUNK
from tests.cpu_unit.observations import api_observation, rank_observation

pytestmark = pytest.mark.cpu_unit


def _params(kernel) -> list[str]:
    return list(inspect.signature(getattr(kernel, "fn", kernel)).parameters)


# Scenarios whose Triton kernel keeps the compile-time-rank form (``rank``/``world`` constexprs, one compile per
# rank), each saying why in its module docstring; every other Triton kernel reads both from the context.
COMPILE_TIME_RANK = ("tracing_1d_address",)


@pytest.mark.parametrize("scenario", all_scenarios(), ids=lambda s: s.name)
def test_gluon_kernel_takes_the_triton_parameters_but_rank_and_world(scenario):
    triton_params, gluon_params = _params(scenario.triton_kernel), _params(scenario.gluon_kernel)
    taken = [p for p in WORLD_CONSTEXPRS if p in triton_params]
    should = list(WORLD_CONSTEXPRS) if scenario.name in COMPILE_TIME_RANK else []
    assert taken == should, (f"{scenario.name}: triton_kernel takes {taken}, but should take {should} "
                             "(tests/cpu_unit/test_scenario_api.py COMPILE_TIME_RANK)")
    expected = [p for p in triton_params if p not in WORLD_CONSTEXPRS]
    assert gluon_params == expected, f"{scenario.name}: gluon_kernel parameters={gluon_params}, should be {expected}"


def test_a_scenario_whose_kernels_wait_for_their_peers_says_so():
    """A kernel that spins on what a peer's kernel writes bounds its spins by ``spin_limit``: exactly the scenarios
    that do declare ``waits_on_peers`` (a sanitizer that runs the ranks' kernels in turn cannot run them)."""
    spinning = {s.name for s in all_scenarios()
                if "spin_limit(" in inspect.getsource(sys.modules[s.triton_kernel.fn.__module__])}
    declared = {s.name for s in all_scenarios() if s.waits_on_peers}
    assert spinning == declared and {"fused_gather_compute", "message_passing"} <= declared, (spinning, declared)


@pytest.mark.parametrize("name", COMPILE_TIME_RANK)
def test_a_compile_time_rank_scenario_says_why(name):
    doc = importlib.import_module(f"conformance.scenarios.{name}").__doc__
    assert "rank: tl.constexpr, world: tl.constexpr" in doc, f"{name}: the module docstring does not say why its " \
                                                             "Triton kernel takes rank/world constexprs"


def _drafts(tmp_path, monkeypatch, name: str = "x", template: str = "store", package: str = "drafts") -> Scenario:
    """The scaffold of ``name`` (from ``template``) written into a scenario package ``package`` under ``tmp_path``,
    loaded (a package name once imported stays in ``sys.modules``: a test of another name takes another)."""
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    assert scaffold(name, folder, template) == 0
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(PACKAGES_ENV, package)
    return load(f"{package}.{name}")


def test_scaffold_follows_the_rules(tmp_path, monkeypatch, capsys):
    """CONTRIBUTING.md's rules: rank and world read at run time, auto-tracing a drawn TRACE_OPS that both kernels take
    and initialize with, every draw labelled; and it points to a scenario that follows them too."""
    source = TEMPLATE.format(name="x")
    assert "tl.constexpr, world" not in source and "rank: gl.constexpr" not in source, source
    assert "DeviceContext.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)" in source
    assert "IrisDeviceCtx.initialize(ctx_t, tracing=True, trace_ops=TRACE_OPS)" in source
    assert source.count("conformance/scenarios/store.py") == 2, "the docstring and model() name the scenario to copy"
    kernels = {f.name: [(a.arg, ast.unparse(a.annotation) if a.annotation else None) for a in f.args.args]
               for f in ast.parse(source).body if isinstance(f, ast.FunctionDef) and f.name.endswith("_kernel")}
    assert ("TRACE_OPS", "tl.constexpr") in kernels["triton_kernel"], kernels
    assert ("TRACE_OPS", "gl.constexpr") in kernels["gluon_kernel"], kernels
    assert [a for a, _ in kernels["triton_kernel"]] == [a for a, _ in kernels["gluon_kernel"]], kernels
    scenario = _drafts(tmp_path, monkeypatch)  # the written module is a scenario (``check`` passes)
    assert capsys.readouterr().out.startswith(f"wrote {tmp_path / 'drafts' / 'x.py'}\n")
    assert scenario.description == ("TODO: one sentence saying what x exercises (``python -m conformance list`` shows "
                                    "it).")
    first = settings(database=None, max_examples=1, phases=[Phase.generate])
    assert find(scenario.params(2), lambda p: True, settings=first)["TRACE_OPS"] is True
    assert find(scenario.params(2), lambda p: not p["TRACE_OPS"])["TRACE_OPS"] is False
    drawn = find(scenario.params(2), lambda p: True, settings=first)
    assert list(drawn) == ["n", "BLOCK", "dtype", "TRACE_OPS", "offset", "bits"], drawn
    with pytest.raises(ParamsError) as e:  # a replay is checked against the draw labelled TRACE_OPS
        replay_check(scenario, 2, drawn | {"TRACE_OPS": 2}, 3)
    assert str(e.value) == "--params for x on 2 rank(s): TRACE_OPS=2: expected a bool like True", str(e.value)
    with pytest.raises(NotImplementedError, match=r"^conformance/scenarios/x\.py: model\(\) is not written yet\. "):
        scenario.model({}, 2)
    store = load("store")  # the scenario it points to takes the switch and draws it too
    assert "TRACE_OPS" in _params(store.triton_kernel) and "TRACE_OPS" in _params(store.gluon_kernel)
    assert list(find(store.params(2), lambda p: True, settings=first)) == list(drawn)


def test_the_waiting_scaffold_follows_the_rules_of_a_kernel_that_waits(tmp_path, monkeypatch):
    """``new NAME --template waiting``: CONTRIBUTING.md's rules for a kernel that waits on its peers (at most
    ``WAITING_PROGRAMS`` blocks, each spin bounded by ``spin_limit``, ``waits_on_peers``, polls by plain atomics and
    one traced acquire inside the ``wait`` range, so ``TRACE_OPS`` stays drawn); it points to
    ``fused_gather_compute``, a scenario that follows them."""
    source = WAITING_TEMPLATE.format(name="w")
    assert source.count("conformance/scenarios/fused_gather_compute.py") == 2, "the docstring and model() name it"
    for api in ("tl", "gl"):
        assert f"seen = {api}.atomic_cas(flag, 1, 1, sem=\"relaxed\", scope=\"sys\")  # a poll" in source
    assert source.count('ctx.atomic_cas(flag, 1, 1, ctx.') == 2, "one traced acquire a wait, in each kernel"
    kernels = {f.name: [a.arg for a in f.args.args]
               for f in ast.parse(source).body if isinstance(f, ast.FunctionDef) and f.name.endswith("_kernel")}
    assert kernels["triton_kernel"] == kernels["gluon_kernel"] and "TRACE_OPS" in kernels["triton_kernel"], kernels
    scenario = _drafts(tmp_path, monkeypatch, "w", "waiting", "waiting_drafts")
    assert scenario.waits_on_peers is True
    first = settings(database=None, max_examples=1, phases=[Phase.generate])
    drawn = find(scenario.params(2), lambda p: True, settings=first)
    assert list(drawn) == ["n", "BLOCK", "TRACE_OPS", "order"] and drawn["TRACE_OPS"] is True, drawn
    big = find(scenario.params(2), lambda p: p["n"] > 3 * p["BLOCK"])
    assert big["n"] <= WAITING_PROGRAMS * big["BLOCK"], big
    with pytest.raises(NotImplementedError, match=r"^conformance/scenarios/w\.py: model\(\) is not written yet\. "):
        scenario.model({}, 2)


def test_the_scaffold_refuses_an_unknown_template_before_writing(tmp_path, capsys):
    assert scaffold("x", tmp_path, "spin") == 2
    assert capsys.readouterr().err == "python -m conformance new: template 'spin': expected one of store, waiting\n"
    assert os.listdir(tmp_path) == []


def test_the_scaffold_refuses_a_name_it_cannot_write_before_writing(tmp_path, capsys):
    assert scaffold("a" * (MAX_NAME_LENGTH + 1), tmp_path) == 2
    assert capsys.readouterr().err == (f"python -m conformance new: scenario name {'a' * 49!r}: 49 characters; "
                                       "expected at most 48\n")
    assert scaffold("a" * MAX_NAME_LENGTH, tmp_path) == 0 and os.listdir(tmp_path) == ["a" * 48 + ".py"]


def test_a_name_is_a_scenario_only_in_a_scenario_package_and_nothing_else_is_imported(monkeypatch):
    monkeypatch.delenv(PACKAGES_ENV)
    assert scenario_packages() == ("conformance.scenarios",)
    assert is_scenario("store") and is_scenario("conformance.scenarios.store")
    assert load("conformance.scenarios.store").ref == "conformance.scenarios.store"
    assert not is_scenario("tests.conformance.faulty.healthy")  # its package is not listed here
    for ref in ("os.path", "json.tool", "conformance.kit.helpers", "conformance.scenarios._atomics", "nope"):
        monkeypatch.delitem(sys.modules, ref, raising=False)
        assert not is_scenario(ref), ref
        with pytest.raises(KeyError) as e:
            load(ref)
        known = f"unknown scenario {ref!r}; known scenarios: all_gather, all_scatter, "
        assert e.value.args[0].startswith(known), e.value
        assert ref == "os.path" or ref not in sys.modules, f"{ref} was imported to be refused"
    monkeypatch.setenv(PACKAGES_ENV, " tests.conformance.faulty ,, conformance.scenarios")
    assert scenario_packages() == ("conformance.scenarios", "tests.conformance.faulty")
    assert is_scenario("tests.conformance.faulty.healthy") and not is_scenario("tests.conformance.faulty._base")
    assert package_scenarios("tests.conformance.faulty")[:3] == ["buffer_twice", "diverging", "draw_raises"]


def test_every_description_is_one_whole_sentence_and_list_prints_it(capsys, monkeypatch):
    assert first_sentence("""A first sentence, wrapped
    over two lines. A second one.

    A paragraph.""") == "A first sentence, wrapped over two lines."
    assert first_sentence("No full stop\n\nat all") == "No full stop"
    monkeypatch.delenv(PACKAGES_ENV)  # conformance.scenarios alone
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(all_scenarios())
    for scenario, line in zip(all_scenarios(), lines, strict=True):
        assert "\n" not in scenario.description and scenario.description.endswith("."), scenario.description
        assert line.split(None, 3)[3] == scenario.description, line  # no constraint: every R
    chunked = load("chunked_claims").description
    assert chunked.endswith("the second on its own stream on a GPU (so two kernels record at once), every slot "
                            "accounted for."), chunked


def _shmem(rank=2, world=4):
    return SimpleNamespace(get_rank=lambda: rank, get_num_ranks=lambda: world, get_device_context=lambda: "ctx")


def test_world_constexprs_follow_the_kernel():
    compile_time, run_time = load("tracing_1d_address"), load("store")
    assert Rank(_shmem(), "triton", compile_time.triton_kernel).world_constexprs == {"rank": 2, "world": 4}
    assert Rank(_shmem(), "gluon", compile_time.gluon_kernel).world_constexprs == {}
    assert Rank(_shmem(), "triton", run_time.triton_kernel).world_constexprs == {}
    assert Rank(_shmem(), "gluon", run_time.gluon_kernel).world_constexprs == {}
    with pytest.raises(ValueError, match="api='cuda', expected one of"):
        Rank(_shmem(), "cuda", run_time.triton_kernel)


def _pair(triton_kernel, gluon_kernel) -> Scenario:
    nothing = lambda *args: None  # noqa: E731
    return Scenario("x", "", triton_kernel, gluon_kernel, nothing, nothing, nothing, nothing)


def test_check_takes_a_triton_kernel_with_or_without_rank_and_world():
    def gluon(ctx_t, buf, BLOCK): ...
    def triton_run_time(ctx_t, buf, BLOCK): ...
    def triton_compile_time(ctx_t, buf, rank, world, BLOCK): ...
    def triton_rank_only(ctx_t, buf, rank, BLOCK): ...
    def triton_other(ctx_t, buf, n, BLOCK): ...

    check(_pair(triton_run_time, gluon), "x.py")
    check(_pair(triton_compile_time, gluon), "x.py")
    with pytest.raises(ScenarioError, match="x.py: triton_kernel takes rank but not the other of rank, world"):
        check(_pair(triton_rank_only, gluon), "x.py")
    with pytest.raises(ScenarioError, match="x.py: triton_kernel and gluon_kernel must take the same parameters"):
        check(_pair(triton_other, gluon), "x.py")
    with pytest.raises(ScenarioError, match="must take the same parameters"):  # Gluon never takes them
        check(_pair(triton_compile_time, triton_compile_time), "x.py")


def test_trace_slots_come_from_the_settings_not_from_the_params():
    store, overflow = load("store"), load("overflow")
    p = {"n": 5, "max_events": 7}  # a max_events key means nothing to a scenario that does not draw it
    assert store.settings(p, 3) == ExampleSettings(chunk=3, max_events=1024 + 256 * 3)
    assert store.settings(p) == ExampleSettings(DEFAULT_CHUNK, 1024 + 256 * DEFAULT_CHUNK)  # a replay's default
    assert overflow.settings(p, 64) == ExampleSettings(chunk=64, max_events=7)  # overflow_at: its own draw
    with pytest.raises(ScenarioError, match="x.py: overflow_at must be a function of the params, got 7"):
        check(dataclasses.replace(_pair(store.triton_kernel, store.gluon_kernel), overflow_at=7), "x.py")


def test_a_model_that_takes_a_third_argument_gets_the_settings():
    seen = []
    two = dataclasses.replace(load("store"), model=lambda p, world_size: seen.append((p, world_size)))
    three = dataclasses.replace(two, model=lambda p, world_size, settings: seen.append((p, world_size, settings)))
    settings = ExampleSettings(chunk=16, max_events=5)
    two.expected({"n": 1}, 2, settings)
    three.expected({"n": 1}, 2, settings)
    assert seen == [({"n": 1}, 2), ({"n": 1}, 2, settings)]


def _obs(*variants_per_rank):
    return [rank_observation({"gluon": api_observation(variants=list(v))}, rank=r)
            for r, v in enumerate(variants_per_rank)]


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


def test_list_shows_the_scenarios_of_the_listed_packages_by_the_path_scenario_takes(capsys, monkeypatch):
    """``--scenario`` accepts ``tests.conformance.faulty.healthy``: ``list`` shows it so; a module that cannot be
    loaded is listed with why, and makes the exit code 1; a variable naming no package is refused in one line."""
    monkeypatch.setenv(PACKAGES_ENV, "tests.conformance.faulty")
    assert main(["list"]) == 1
    lines = capsys.readouterr().out.splitlines()
    refs = [line.split()[0] for line in lines]
    assert refs == names() + [f"tests.conformance.faulty.{n}" for n in package_scenarios("tests.conformance.faulty")]
    healthy = lines[refs.index("tests.conformance.faulty.healthy")].split()
    assert healthy[1:4] == ["ranks", "1,2,4", "faulty"], healthy
    broken = lines[refs.index("tests.conformance.faulty.mismatched_params")]
    assert broken.split(None, 1)[1].startswith("cannot be loaded: tests/conformance/faulty/mismatched_params.py: "
                                               "triton_kernel and gluon_kernel must take the same parameters"), broken
    monkeypatch.setenv(PACKAGES_ENV, "os.path")
    assert main(["list"]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", "python -m conformance list: IRIS_SCENARIO_PACKAGES lists 'os.path', a module; "
                              "expected a comma list of packages of scenario modules\n")
