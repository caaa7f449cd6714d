"""cpu-compile tier: every GPU-only mutant of the device tracing code cross-compiles, and changes the machine code
of its first killer's kernels.

Such a mutant only ever runs on a GPU: one that did not compile there would be killed for the wrong reason (an
error, not its bug), and one that left the machine code as it was could not be killed at all. Each is applied to a
copy of the packages (``conformance.mutation.runner``) and compiled in a child process that imports the copy
(``tests.cpu_compile.mutant_machine_code``, forked as the mutation probes are), for sm_90, or gfx942 for a mutant of
the hip path only; the unmutated kernels compile here. A harmless mutant (a docstring) leaves the machine code as it
was: "changed" is the mutant's doing, not the copy's paths.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from conformance.kit.scenario import APIS, load
from conformance.mutation.catalogue import CATALOGUE, GLUON_TRACING, TRITON_TRACING, Mutant
from conformance.mutation.probe_starter import ProbeStarter
from conformance.mutation.runner import ROOT, apply, copy_tree, probe_env
from tests.cpu_compile.compile_helpers import compile_scenario, first_difference, sass_tool
from tests.cpu_compile.mutant_machine_code import machine_code

pytestmark = [pytest.mark.cpu_compile, pytest.mark.long]

HW = "iris/tracing/hw.py"
DEVICE_FILES = {TRITON_TRACING: ("triton",), GLUON_TRACING: ("gluon",), HW: APIS}  # the APIs a file's mutant changes
GPU_MUTANTS = [m for m in CATALOGUE if not m.shows_on("cpu") and m.file in DEVICE_FILES]
HARMLESS = Mutant("probe-harmless-docstring", TRITON_TRACING, "Triton device tracing:",
                  "Triton device tracing (a probe):", "changes the module docstring only", ("chunked_claims@1",))
CHILD_TIMEOUT_S = 900.0


def mutant_target(mutant: Mutant) -> str:
    return "sm_90" if mutant.shows_on("gpu-cuda") else "gfx942"


def killer(mutant: Mutant) -> str:
    return mutant.killers[0].partition("@")[0]


@pytest.fixture(scope="module")
def starter():
    """Forks the compile children as ``conformance mutate`` forks its probes (torch and Triton imported once)."""
    with ProbeStarter(probe_env(None)) as s:
        yield s


def _mutated_code(mutant: Mutant, tmp_path: Path, apis: tuple[str, ...], starter) -> dict[str, list[str]]:
    """The machine code of ``mutant``'s first killer's ``apis`` kernels, compiled from a mutated copy in a child that
    imports the copy (and this repository's ``tests``)."""
    tree = copy_tree(tmp_path / "copy")
    apply(mutant, tree)
    out, log_path = tmp_path / "code.json", tmp_path / "child.log"
    env = dict(probe_env(None), PYTHONPATH=os.pathsep.join([str(tree), str(ROOT)]))
    with open(log_path, "w") as log:
        pid = starter.start("tests.cpu_compile.mutant_machine_code",
                            [killer(mutant), mutant_target(mutant), str(out), *apis], str(tree), env, log.fileno(),
                            log.fileno())
    code, timed_out = starter.finish(pid, CHILD_TIMEOUT_S)
    assert code == 0 and not timed_out, (f"{mutant.name} does not compile for {mutant_target(mutant)} (exit code "
                                         f"{code}{', ended past its time limit' if timed_out else ''}):\n"
                                         f"{log_path.read_text()[-4000:]}")
    data = json.loads(out.read_text())
    assert Path(data["iris"]) == tree / "iris", f"the child compiled {data['iris']}, not the mutated copy"
    return data["code"]


def test_the_catalogue_has_gpu_only_device_mutants():
    names = {m.name for m in GPU_MUTANTS}
    assert {"hw-load_lane0-cuda-plain-load", "hw-load_lane0-hip-no-readlane"} <= names, sorted(names)
    for api in ("triton", "gluon"):
        assert any(n.startswith(f"{api}-trace-") for n in names), f"no GPU-only {api} tracing mutant"


@pytest.mark.parametrize("mutant", GPU_MUTANTS, ids=lambda m: m.name)
def test_a_gpu_only_mutant_compiles_and_changes_the_machine_code(mutant, tmp_path, starter):
    apis = DEVICE_FILES[mutant.file]
    mutated = _mutated_code(mutant, tmp_path, apis, starter)
    for api in apis:
        here = machine_code(killer(mutant), api, mutant_target(mutant))
        assert mutated[api] != here, (f"{mutant.name}: {killer(mutant)}'s {api} kernel compiles to the same "
                                      f"{mutant_target(mutant)} machine code as without it (an equivalent mutant)")


def test_a_harmless_mutant_leaves_the_machine_code_as_it_was(tmp_path, starter):
    mutated = _mutated_code(HARMLESS, tmp_path, ("triton",), starter)
    here = machine_code("chunked_claims", "triton", "sm_90")
    assert mutated["triton"] == here, first_difference(here, mutated["triton"], ("here", "mutated copy"))


@pytest.mark.parametrize("api", APIS)
def test_counted_loops_counter_stays_in_a_warps_uniform_registers(api):
    """``counted_loop`` kills the cursor-read mutants (``*-plain-load``) only while ptxas keeps its loop counter in a
    warp's uniform registers and leaves the loop on an equality test against ``n``: a warp split on the refill branch
    then advances the one counter twice and can step past ``n``. A per-thread counter (what a trip count
    loaded from memory gives) ends the loop whatever the cursor read does, and those mutants could not die."""
    if sass_tool() is None:
        pytest.skip("no cuobjdump to disassemble sm_90 code")
    lines = [line.split("\t")[-1].strip().rstrip(" ;") for line in
             compile_scenario(load("counted_loop"), api, "sm_90", sass=True)["sass"].splitlines()]
    counters = {m.group(1) for line in lines if (m := re.fullmatch(r"UIADD3 (UR\d+), UP\d, \1, 0x1, URZ", line))}
    exits = [line for line in lines for ur in counters
             if re.fullmatch(rf"U?ISETP\.NE\.U32\.AND U?P\d, U?PT, U?R\d+, {ur}, U?PT", line)]
    assert counters and exits, f"{api}: no loop counter in uniform registers with a != exit:\n" + "\n".join(
        line for line in lines if re.search(r"IADD3|ISETP|BRA", line))
