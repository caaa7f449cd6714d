"""The Triton and Gluon tracing implementations are independent: a bug in one shows up on that side only.

Each case copies ``iris/`` and ``conformance/`` into a temporary folder, plants one bug in one tracing
implementation there (never in the working tree), and replays one fixed conformance example on a 1-rank
CPU world from that copy. The buggy side must fail against the model and against the other side; the
other side must still pass against the model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cpu_interpret

ROOT = Path(__file__).resolve().parents[2]
PARAMS = {"n": 40, "BLOCK": 32, "dtype": "int32", "TRACE_OPS": False, "offset": 0, "payload": 5,
          "bits": [[1, 0, 1, 1] * 16]}
PAYLOAD_LINE = "(w == L.WORD_PAYLOAD, payload, words)"
BUGS = {  # api whose tracing gets the bug: (file, the line, the buggy line)
    "gluon": ("iris/experimental/tracing.py", PAYLOAD_LINE, PAYLOAD_LINE.replace("payload,", "payload + 1,")),
    "triton": ("iris/device/tracing.py", PAYLOAD_LINE, PAYLOAD_LINE.replace("payload,", "payload + 1,")),
}


def _copy_with_bug(dest: Path, api: str) -> None:
    for package in ("iris", "conformance"):
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
    path, line, buggy = BUGS[api]
    source = (dest / path).read_text()
    assert source.count(line) == 1, f"{path}: expected the line {line!r} exactly once; update BUGS"
    (dest / path).write_text(source.replace(line, buggy))


@pytest.mark.parametrize("api", sorted(BUGS))
def test_a_bug_in_one_tracing_shows_on_that_side_only(api, tmp_path):
    copy = tmp_path / "copy"
    _copy_with_bug(copy, api)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(copy)}
    env.pop("TRITON_INTERPRET", None)
    cmd = [sys.executable, "-m", "conformance", "run", "--scenario", "tracing_1d_address", "--ranks", "1",
           "--backend", "cpu", "--params", json.dumps(PARAMS), "--out", str(out)]
    proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    results = out / "results.json"
    assert results.exists(), f"no results from the copy:\n{proc.stdout}\n{proc.stderr}"
    (case,) = json.loads(results.read_text())["cases"]
    other = "triton" if api == "gluon" else "gluon"
    expected = {api: "FAIL", other: "pass", "triton vs gluon": "FAIL"}
    assert case["verdict"] == expected, f"verdict={case['verdict']}, but should be {expected}\n{case['failure']}"
    assert "payload=6, but should be 5" in case["failure"] or "payload=5, but should be 6" in case["failure"], (
        case["failure"]
    )
    assert proc.returncode == 1, f"exit status={proc.returncode}, but should be 1 (a failing case)"
    assert PAYLOAD_LINE in (ROOT / BUGS[api][0]).read_text(), "the working tree was changed"
