"""Host errors that need no world: a bad heap size, and no process group to join (each says how to fix it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import iris
import iris.world
from tests.cpu_unit.checks import check, check_raises, check_that

pytestmark = pytest.mark.cpu_unit

REPO = Path(__file__).resolve().parents[2]
# Variables that would let iris find (or start) a world; the subprocesses below run without them.
WORLD_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
              "TRITON_INTERPRET", "IRIS_FORCE_CPU")


@pytest.fixture
def no_world(monkeypatch):
    """Any look-up of the world fails the test: heap-size checks must come first."""

    def fail(*args, **kwargs):
        pytest.fail("current_world() was called before heap_size was validated")

    # ``iris.iris`` is the factory function; the module it comes from is reached through sys.modules.
    monkeypatch.setattr(sys.modules["iris.iris"], "current_world", fail)


@pytest.mark.parametrize("heap_size", [0, -5, 1.5, True], ids=repr)
@pytest.mark.parametrize("make", ["iris.iris", "iris.Iris"])
def test_bad_heap_size(no_world, make, heap_size):
    fn = iris.iris if make == "iris.iris" else iris.Iris
    where = f"{make}({heap_size!r})"
    check_raises(ValueError, lambda: fn(heap_size), mentions=[f"heap_size={heap_size!r}"], where=where)


def _run(code: str, **extra_env: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with no torch.distributed rendezvous variables."""
    env = {k: v for k, v in os.environ.items() if k not in WORLD_VARS}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra_env)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=REPO)


def _check_fails_with(proc: subprocess.CompletedProcess, mentions: list[str], where: str) -> None:
    __tracebackhide__ = True
    check_that("exit code", proc.returncode, proc.returncode != 0, "non-zero", where)
    last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    check_that("last line of stderr", last, last.startswith("RuntimeError: "), "a RuntimeError", where)
    for m in mentions:
        check_that("stderr", proc.stderr[-2000:], m in proc.stderr, f"a message mentioning {m!r}", where)


def test_no_process_group_says_how_to_create_one():
    proc = _run("import iris; iris.iris(1024)", TRITON_INTERPRET="1", IRIS_FORCE_CPU="1")
    _check_fails_with(proc, ["no torch.distributed process group", "init_process_group", "torchrun",
                             "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT", "iris.launch"], "no rendezvous variables")


def test_partial_rendezvous_names_the_missing_variables():
    proc = _run("import iris; iris.iris(1024)", TRITON_INTERPRET="1", IRIS_FORCE_CPU="1", RANK="0", WORLD_SIZE="2")
    _check_fails_with(proc, ["MASTER_ADDR, MASTER_PORT not set", "torchrun"], "RANK and WORLD_SIZE only")


@pytest.mark.skipif(iris.world._device_type() != "cpu", reason="a GPU is visible: kernels need no interpreter")
def test_cpu_without_the_interpreter_says_to_set_it():
    proc = _run("import iris; iris.iris(1024)")
    _check_fails_with(proc, ["TRITON_INTERPRET", "TRITON_INTERPRET=1"], "no GPU, TRITON_INTERPRET unset")


def test_bad_heap_size_fails_before_any_world_lookup_in_a_fresh_process():
    """Without a world at all, a bad size is still reported as a bad size (ValueError), not a missing group."""
    proc = _run("import iris; iris.iris(-5)")
    check("last line of stderr", proc.stderr.strip().splitlines()[-1][:18], "ValueError: heap_s")
    check_that("stderr", proc.stderr[-500:], "heap_size=-5" in proc.stderr, "mentioning heap_size=-5")
