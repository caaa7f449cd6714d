"""tests/time_limit.py: a test past ``IRIS_TEST_LIMIT_S`` ends its worker with every thread's stack, fails as crashed,
and the run goes on; a process the test forks exits; a limit that is not a whole number is refused in one line.

A small test module in a temporary folder runs with the repository's conftest loaded as a plugin.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.pytest_runs import run_pytest

pytestmark = pytest.mark.cpu_unit

LIMITED = '''
import ctypes
import os
import time

import pytest


def test_hangs():
    time.sleep(120)


@pytest.mark.parametrize("case", range(6))
def test_quick(case):
    open(os.path.join({out!r}, f"quick-{{case}}"), "w").close()


def test_forks_a_process_that_exits():
    pid = os.fork()
    if pid == 0:
        ctypes.pythonapi.Py_Exit(0)  # finalizes as an exiting Python does (pytest would catch a SystemExit here)
    assert os.waitpid(pid, 0)[1] == 0
'''


def _run(tmp_path: Path, limit: str, *args: str) -> subprocess.CompletedProcess:
    out = tmp_path / "records"
    out.mkdir(exist_ok=True)
    (tmp_path / "test_limited.py").write_text(LIMITED.format(out=str(out)))
    return run_pytest(tmp_path, ["test_limited.py"], *args, timeout=90, env={**os.environ, "IRIS_TEST_LIMIT_S": limit})


def test_a_test_past_its_limit_fails_with_every_threads_stack_and_the_run_goes_on(tmp_path):
    run = _run(tmp_path, "3", "-n", "2")
    said = run.stdout + run.stderr
    assert run.returncode == 1, said
    assert "crashed while running 'test_limited.py::test_hangs'" in run.stdout, said
    dump = said[said.index("test_limited.py::test_hangs ran past its limit of 3 s (IRIS_TEST_LIMIT_S); the stack of "
                           "every thread:\n"):]
    assert 'line 10 in test_hangs' in dump, dump
    assert run.stdout.splitlines()[-1].startswith("1 failed, 7 passed in "), run.stdout.splitlines()[-1]
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == [f"quick-{case}" for case in range(6)]


@pytest.mark.parametrize("limit", ["ten", "-1", "1.5"])
def test_a_limit_that_is_not_whole_seconds_is_refused_in_one_line(tmp_path, limit):
    run = _run(tmp_path, limit)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    assert run.stderr.strip() == (f"ERROR: IRIS_TEST_LIMIT_S={limit!r}: not a whole number in plain digits; expected "
                                  "the whole seconds a test may run, or 0 for no limit"), run.stderr
    assert not any((tmp_path / "records").iterdir()), "no test ran"
