"""``ci/sanitize.sh``: one gate per compute-sanitizer tool, the four at once or in waves, then each verdict; bad input
refused.

The script runs with a stand-in interpreter that records the command line each gate would start with, and plays
the gate: it writes the output a gate writes (its verdict line, ``summary.md``) or refuses its arguments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import _parser

pytestmark = pytest.mark.cpu_unit

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
STAND_IN = """#!{python}
import json, os, pathlib, sys, time
argv = sys.argv[1:]
tool, out = argv[argv.index("--sanitize") + 1], pathlib.Path(argv[argv.index("--out") + 1])
started = pathlib.Path({record!r}, "started")
started.mkdir(exist_ok=True)
(started / tool).touch()
tools, width = {tools!r}, int(os.environ.get("IRIS_SANITIZE_PARALLEL", "4"))
first = tools.index(tool) // width * width
wave, until = set(tools[first:first + width]), time.monotonic() + 60
while not wave <= {{p.name for p in started.iterdir()}} and time.monotonic() < until:  # this gate's wave has started
    time.sleep(0.01)
grace = time.monotonic() + 1  # time for a gate that should not run yet to show
while len(list(started.iterdir())) < len(tools) and time.monotonic() < grace:
    time.sleep(0.01)
pathlib.Path({record!r}, tool + ".json").write_text(json.dumps({{"argv": argv, "env": dict(os.environ),
                                                                 "seen": sorted(p.name for p in started.iterdir())}}))
if os.environ["PLAY"] == "refuse":
    print("python -m conformance gate: unknown scenario 'nope'; known scenarios: ...", file=sys.stderr)
    sys.exit(2)
failing = tool == os.environ["PLAY"]
out.mkdir(parents=True)
print(f"[1/2] store on 1 rank(s) under {{tool}} ...")
if failing:
    print(f"    compute-sanitizer {{tool}} reported 1 uninitialized read (rank log l):\\n    ========= Uninitialized")
print(f"gate {{'FAILED' if failing else 'PASSED'}}: 5 passed, {{int(failing)}} error")
(out / "summary.md").write_text(
    "# Conformance gate\\n\\n## What fails the gate\\n\\n| case | check |\\n| `gpu-store-2r@" + tool + "` | x |\\n\\n"
    "## Not run\\n\\n| `gpu-wait-2r@" + tool + "` | in turn |\\n\\n"
    "## Sanitizer reports that are not ours\\n\\n| `gpu-load-2r@" + tool + "` | 12 |\\n\\n## Slowest cases\\n\\nx\\n"
    if failing else "# Conformance gate\\n\\n## Slowest cases\\n\\nx\\n")
sys.exit(int(failing))
"""


def _run(tmp_path: Path, play: str, args: list[str],
         env_more: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, dict[str, dict], Path]:
    record = tmp_path / "record"
    record.mkdir()
    stub = tmp_path / "python"
    stub.write_text(STAND_IN.format(python=sys.executable, record=str(record), tools=list(TOOLS)))
    stub.chmod(0o755)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("IRIS_COMPILE_WORKERS", "IRIS_SANITIZE_PARALLEL")}
    result = subprocess.run([str(ROOT / "ci" / "sanitize.sh"), *args], capture_output=True, text=True, timeout=120,
                            env=env | {"PYTHON": str(stub), "IRIS_SANITIZE_OUT": str(out), "PLAY": play}
                            | (env_more or {}))
    gates = {p.stem: json.loads(p.read_text()) for p in record.glob("*.json")}
    return result, gates, out


def test_it_runs_a_gate_per_tool_on_1_and_2_ranks_and_passes_when_every_gate_passes(tmp_path):
    result, gates, out = _run(tmp_path, "none", ["--examples", "2"])
    assert (result.returncode, result.stderr) == (0, ""), result
    assert sorted(gates) == sorted(TOOLS)
    for tool, gate in gates.items():
        assert gate["argv"] == ["-m", "conformance", "gate", "--backend", "gpu", "--ranks", "1,2", "--examples", "1",
                                "--sanitize", tool, "--out", f"{out}/{tool}", "--examples", "2"], gate["argv"]
        args = _parser().parse_args(gate["argv"][2:])  # the gate's own parser takes it; the later --examples wins
        assert (args.sanitize, args.ranks, args.examples, args.backend) == ((tool,), (1, 2), 2, "gpu")
        assert gate["env"]["IRIS_COMPILE_WORKERS"] == str(max(1, len(os.sched_getaffinity(0)) // 4)), gate["env"]
    assert result.stdout.splitlines() == [
        line for tool in TOOLS for line in (f"== {tool}: exit code 0; gate PASSED: 5 passed, 0 error",
                                            f"   ({out}/{tool}/summary.md, {out}/{tool}.log)")], result.stdout
    assert sorted(os.listdir(out)) == sorted([*TOOLS, *(f"{t}.log" for t in TOOLS)])


def test_a_tool_whose_gate_fails_fails_the_run_and_says_what_fails_it(tmp_path):
    result, _, out = _run(tmp_path, "initcheck", [])
    assert result.returncode == 1, result
    said = result.stdout.split("== initcheck: ")[1].splitlines()
    assert said == ["exit code 1; gate FAILED: 5 passed, 1 error", "| case | check |",
                    "| `gpu-store-2r@initcheck` | x |",
                    "    compute-sanitizer initcheck reported 1 uninitialized read (rank log l):",
                    "    ========= Uninitialized", "gate FAILED: 5 passed, 1 error",
                    "| `gpu-wait-2r@initcheck` | in turn |", "| `gpu-load-2r@initcheck` | 12 |",
                    f"   ({out}/initcheck/summary.md, {out}/initcheck.log)"], said
    assert "== racecheck: exit code 0; gate PASSED" in result.stdout, result.stdout


def test_arguments_the_gates_refuse_are_one_line_exit_code_2_and_leave_nothing(tmp_path):
    result, gates, out = _run(tmp_path, "refuse", ["--scenario", "nope"])
    assert (result.returncode, result.stdout) == (2, ""), result
    assert result.stderr == "python -m conformance gate: unknown scenario 'nope'; known scenarios: ...\n", result.stderr
    assert sorted(gates) == sorted(TOOLS) and not out.exists(), "the folder the script made is removed"


@pytest.mark.parametrize("parallel", ["1", "2"])
def test_fewer_gates_at_once_run_in_waves_in_the_tools_order_and_share_the_cpus(tmp_path, parallel):
    result, gates, out = _run(tmp_path, "none", [], {"IRIS_SANITIZE_PARALLEL": parallel})
    assert (result.returncode, result.stderr) == (0, ""), result
    width = int(parallel)
    for i, tool in enumerate(TOOLS):  # a gate ends with the gates of its wave and those before it started, no later
        assert gates[tool]["seen"] == sorted(TOOLS[: i - i % width + width]), (tool, gates[tool]["seen"])
        assert gates[tool]["env"]["IRIS_COMPILE_WORKERS"] == str(max(1, len(os.sched_getaffinity(0)) // width))
    assert "== initcheck: exit code 0; gate PASSED" in result.stdout, result.stdout


@pytest.mark.parametrize("parallel", ["0", "5", "two", "-1"])
def test_a_bad_number_of_gates_at_once_is_refused_before_any_gate_starts(tmp_path, parallel):
    result, gates, out = _run(tmp_path, "none", [], {"IRIS_SANITIZE_PARALLEL": parallel})
    assert (result.returncode, result.stdout, gates) == (2, "", {}), result
    expected = f"IRIS_SANITIZE_PARALLEL={parallel}; expected how many gates run at once, 1 to 4\n"
    assert result.stderr == expected, result
    assert not out.exists()


@pytest.mark.parametrize(("value", "expected"), [
    ("", "IRIS_SANITIZE_OUT=''; expected the output folder, or the variable unset for conformance-sanitize\n"),
    ("{tmp}/afile", "IRIS_SANITIZE_OUT={tmp}/afile: exists and is not a folder; expected the output folder (new or "
                    "existing)\n"),
    ("{tmp}/afile/out", "IRIS_SANITIZE_OUT={tmp}/afile/out: cannot be made or written; expected an output folder that "
                        "can be written\n"),
])
def test_an_output_folder_that_cannot_be_used_is_refused_before_any_gate_starts(tmp_path, value, expected):
    """Was: set empty, the default folder was used silently; naming a file, mkdir's own message."""
    (tmp_path / "afile").write_text("not a folder")
    result, gates, _ = _run(tmp_path, "none", [], {"IRIS_SANITIZE_OUT": value.replace("{tmp}", str(tmp_path))})
    assert (result.returncode, result.stdout, gates) == (2, "", {}), result
    assert result.stderr == expected.replace("{tmp}", str(tmp_path)), result.stderr
    assert sorted(os.listdir(tmp_path)) == ["afile", "python", "record"]
