"""A scenario ``python -m conformance new`` writes runs on the ranks as it stands (both kernels, auto-tracing on) and
fails with the message that says to write ``model()``; a user meets it through the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.kit.scaffold import scaffold
from conformance.kit.scenario import PACKAGES_ENV

pytestmark = pytest.mark.cpu_interpret

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("template, ranks", [("store", "1"), ("waiting", "2")])
def test_a_new_scenario_runs_and_fails_asking_for_its_model(template, ranks, tmp_path):
    """Either template (the waiting one on 2 ranks, whose programs wait on each other's flags)."""
    package = tmp_path / "drafts"  # a scenario package of its own: the checkout's conformance/scenarios stays as is
    package.mkdir()
    (package / "__init__.py").write_text("")
    assert scaffold("my_draft", package, template) == 0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]), **{PACKAGES_ENV: "drafts"})
    out = tmp_path / "out"
    command = ["run", "--scenario", "drafts.my_draft", "--ranks", ranks, "--backend", "cpu", "--examples", "1",
               "--out", str(out)]
    result = subprocess.run([sys.executable, "-m", "conformance", *command], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 1, f"exit code={result.returncode}, but should be 1: {result.stderr}"
    (record,) = json.loads((out / "results.json").read_text())["cases"]
    # the kernels ran (the first example draws TRACE_OPS on); the model is what is missing
    assert (record["started"], record["examples"], record["ok"]) == (1, 0, False), record
    assert record["failing_params"]["TRACE_OPS"] is True, record["failing_params"]
    assert record["error"].startswith("ScenarioError: drafts/my_draft.py: model raised NotImplementedError: "
                                      "conformance/scenarios/my_draft.py: model() is not written yet. Return "
                                      "Model(events, memory)"), record["error"]
    assert "model() is not written yet" in result.stdout, result.stdout
