"""The interpreter shortcuts of :mod:`iris.interpreter` give what Triton's own typing rules give.

``tests/cpu_unit/interpreter_rules.py`` runs, in a fresh interpreter process, Triton's binary-op typing and
broadcasting on every pair of many operands (tensors of 13 types and 3 shapes, pointers included, and Python
numbers) with the flags Triton's operators pass, and ``+ - *`` on blocks that overflow with ``debug`` off and on,
then the same with the shortcuts installed, and reports each call whose result (types, dtypes, bytes, or the error
raised) differs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cpu_unit

ROOT = Path(__file__).resolve().parents[2]


def test_interpreter_shortcuts_type_operands_as_triton_does():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-m", "tests.cpu_unit.interpreter_rules"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["compared"] > 20_000, report["compared"]
    assert report["differ_count"] == 0, f"{report['differ_count']} calls differ, first ones [index, Triton, iris]: " \
                                        f"{report['differ']}"
