"""pytest run in a child on test modules of a temporary folder, with the repository's conftest loaded as a plugin:
how the tests of its own plugins (``tests/xdist_sharing.py``, ``tests/time_limit.py``) see a whole run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_pytest(folder: Path, modules: list[str], *args: str, timeout: float,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m pytest -p conftest -q`` on ``modules`` of ``folder`` (its rootdir), with ``args``; a run that has
    not ended within ``timeout`` seconds fails the calling test, quoting what it printed."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "conftest", "-q", "-p", "no:cacheprovider", *args,
             "--rootdir", str(folder), *(str(folder / m) for m in modules)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired as hung:
        said = hung.stdout.decode(errors="replace") if isinstance(hung.stdout, bytes) else hung.stdout
        pytest.fail(f"pytest {' '.join(args)} on {', '.join(modules)} did not end within {timeout:g} s:\n{said}")
