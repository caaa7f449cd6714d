"""Under pytest-xdist (tests/xdist_sharing.py): tests of one world share a worker, ``long`` tests go first, and what
waits behind a long test is the smallest unit left.

A small test module in a temporary folder runs with ``-n 2`` and the repository's conftest loaded as a plugin; each
test writes which worker ran it and when, and the checks read those records back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pytest_runs import run_pytest

pytestmark = pytest.mark.cpu_unit

RECORD = '''
import os
import time

import pytest

OUT = {out!r}


def _record(name):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(f"{{os.environ['PYTEST_XDIST_WORKER']}} {{time.monotonic_ns()}}")
'''  # what each test module starts with: each test records which worker ran it, and when
SAMPLE = RECORD + '''
pytestmark = pytest.mark.shares_setup


@pytest.mark.parametrize("api", ["triton", "gluon"])
@pytest.mark.parametrize("world_size", [1, 2])
@pytest.mark.parametrize("backend", ["cpu"])
@pytest.mark.parametrize("case", range(4))
def test_world(case, backend, world_size, api):
    _record(f"world-{{backend}}-{{world_size}}-{{api}}-{{case}}")


@pytest.mark.long
def test_long_collected_last():
    _record("long")
'''


SINGLE = RECORD + '''

def test_alone():
    _record("alone")
'''


def _records(out: Path) -> dict[str, tuple[str, int]]:
    records = {}
    for path in out.iterdir():
        worker, stamp = path.read_text().split()
        records[path.name] = (worker, int(stamp))
    return records


def test_tests_of_one_world_share_a_worker_and_long_tests_start_first(tmp_path):
    out = tmp_path / "records"
    out.mkdir()
    (tmp_path / "test_sample.py").write_text(SAMPLE.format(out=str(out)))
    (tmp_path / "test_single.py").write_text(SINGLE.format(out=str(out)))
    run = run_pytest(tmp_path, ["test_sample.py", "test_single.py"], "-n", "2", timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    records = _records(out)
    assert len(records) == 18, sorted(records)
    for world_size in (1, 2):
        for api in ("triton", "gluon"):
            workers = {records[f"world-cpu-{world_size}-{api}-{case}"][0] for case in range(4)}
            assert len(workers) == 1, f"the world cpu/{world_size}/{api} ran on workers {sorted(workers)}"
    long_worker, long_stamp = records["long"]
    same_worker = [stamp for worker, stamp in records.values() if worker == long_worker]
    assert long_stamp == min(same_worker), "the long test was collected last but did not run first on its worker"
    after_long = min((stamp, name) for name, (worker, stamp) in records.items()
                     if worker == long_worker and stamp > long_stamp)[1]
    assert after_long == "alone", (
        f"behind the long test its worker ran {after_long!r}, but should have run the smallest unit left ('alone', "
        f"collected last), not a world's group")


CRASHING = RECORD + '''

@pytest.mark.parametrize("case", range(24))
def test_alone(case):
    _record(f"alone-{{case}}")


@pytest.mark.shares_setup
@pytest.mark.parametrize("world_size", [1, 2])
@pytest.mark.parametrize("case", range(4))
def test_world(case, world_size):
    crashed = OUT + "-crashed"  # beside the records
    if (case, world_size) == (1, 2) and not os.path.exists(crashed):
        open(crashed, "w").close()
        os._exit(1)  # the worker dies, once
    _record(f"world-{{world_size}}-{{case}}")
'''


def test_a_worker_that_dies_fails_its_test_and_the_run_ends_with_every_other_test_run(tmp_path):
    """The dead worker's test fails as crashed, once; pytest-xdist gave a dead worker's finished units back with its
    unfinished ones, and a finished unit handed out sent a worker no test: the run waited for ever."""
    out = tmp_path / "records"
    out.mkdir()
    (tmp_path / "test_crashing.py").write_text(CRASHING.format(out=str(out)))
    run = run_pytest(tmp_path, ["test_crashing.py"], "-n", "2", timeout=60)
    assert run.returncode == 1, run.stdout + run.stderr
    assert (tmp_path / "records-crashed").exists()
    records = _records(out)
    expected = {f"alone-{case}" for case in range(24)} | {f"world-{w}-{c}" for w in (1, 2) for c in range(4)}
    assert set(records) == expected - {"world-2-1"}, sorted(set(records) ^ expected)
    assert "crashed while running 'test_crashing.py::test_world[1-2]'" in run.stdout, run.stdout
    assert run.stdout.splitlines()[-1].startswith("1 failed, 31 passed in "), run.stdout.splitlines()[-1]
