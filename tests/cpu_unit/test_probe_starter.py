"""cpu-unit tier: ``conformance.mutation.probe_starter`` forks each probe from one process that imported the probes'
third-party packages once; a forked probe runs as ``python -m`` would in its copy (working folder, environment,
first ``sys.path`` entries, its own imports), reports its exit code as ``subprocess`` does, and leads a session the
runner can kill."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from conformance.mutation.probe_starter import ProbeStarter
from conformance.mutation.runner import probe_env

pytestmark = pytest.mark.cpu_unit

MODULE = '''
import json, os, sys, time
print(json.dumps({"cwd": os.getcwd(), "path0": sys.path[0], "argv": sys.argv[1:], "probe": os.environ["PROBE"],
                  "name": __name__, "sid": os.getsid(0) == os.getpid(), "torch": "torch" in sys.modules,
                  "iris": "iris" in sys.modules}), flush=True)
print("to stderr", file=sys.stderr, flush=True)
if sys.argv[1] == "sleep":
    time.sleep(60)
sys.exit(int(sys.argv[1]) if sys.argv[1].isdigit() else 0)
'''


@pytest.fixture(scope="module")
def starter():
    with ProbeStarter(probe_env(None)) as s:
        yield s


def _start(starter, tree, *argv):
    (tree / "copy_probe.py").write_text(MODULE)
    read, write = os.pipe()
    err = open(tree / "err.log", "w")
    try:
        pid = starter.start("copy_probe", list(argv), str(tree), {**probe_env(tree), "PROBE": "yes"}, write,
                            err.fileno())
    finally:
        os.close(write)
        err.close()
    return pid, os.fdopen(read)


def test_a_probe_runs_in_its_copy_and_exits_with_its_code(starter, tmp_path):
    pid, out = _start(starter, tmp_path, "3")
    seen = json.loads(out.readline())
    assert starter.wait(pid, 60) == 3
    assert seen == {"cwd": str(tmp_path), "path0": str(tmp_path), "argv": ["3"], "probe": "yes", "name": "__main__",
                    "sid": True, "torch": True, "iris": False}
    assert (tmp_path / "err.log").read_text() == "to stderr\n"
    out.close()


def test_a_probe_killed_with_its_session_reports_the_signal_and_the_next_one_starts(starter, tmp_path):
    pid, out = _start(starter, tmp_path, "sleep")
    assert json.loads(out.readline())["argv"] == ["sleep"]
    assert starter.wait(pid, 0.2) is None, "still sleeping"
    os.killpg(pid, signal.SIGKILL)
    start = time.monotonic()
    assert starter.wait(pid, 30) == -signal.SIGKILL and time.monotonic() - start < 30
    out.close()
    (again := tmp_path / "again").mkdir()
    pid, out = _start(starter, again, "0")
    assert json.loads(out.readline())["cwd"] == str(again) and starter.wait(pid, 60) == 0
    out.close()


def test_finish_ends_a_probe_past_its_time_limit_and_says_so(starter, tmp_path):
    pid, out = _start(starter, tmp_path, "sleep")
    assert json.loads(out.readline())["argv"] == ["sleep"]
    assert starter.finish(pid, 0.3) == (-signal.SIGKILL, True)
    out.close()
    (again := tmp_path / "again").mkdir()
    pid, out = _start(starter, again, "5")
    assert starter.finish(pid, 60) == (5, False)
    out.close()


def test_a_probe_that_cannot_import_its_module_exits_1_with_the_traceback(starter, tmp_path):
    read, write = os.pipe()
    with open(tmp_path / "err.log", "w") as err:
        pid = starter.start("no_such_module_here", [], str(tmp_path), probe_env(tmp_path), write, err.fileno())
    os.close(write)
    assert starter.wait(pid, 60) == 1
    assert "No module named no_such_module_here" in (tmp_path / "err.log").read_text()
    os.close(read)
