"""A test that runs past its time limit ends its process, with every thread's stack (a plugin of the root conftest).

``IRIS_TEST_LIMIT_S``: the seconds a test's setup, call and teardown may take together (default 600, 0 for no
limit). Past them, a timer thread writes a line naming the test and the stack of every thread of its process to that
process's stderr, and ends the process: under pytest-xdist the worker dies, the test fails as crashed and is not run
again, and a new worker runs the rest (``tests/xdist_sharing.py``); without it, the run ends there. A test that hangs
then costs a run its limit, with the place it hung, instead of the CI job's time.

The timer is a Python thread, not ``faulthandler.dump_traceback_later``: a process forked while that one is armed
hangs when it exits (CPython waits for a watchdog thread the child does not have). A test stuck in native code that
holds the GIL is not ended.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading

import pytest

from iris.env_vars import EnvVarError, env_int

LIMIT_ENV = "IRIS_TEST_LIMIT_S"
DEFAULT_LIMIT_S = 600
_LIMIT = pytest.StashKey[int]()
_STDERR = pytest.StashKey[int]()  # a copy of the process's stderr, made before any test's output is captured


def pytest_configure(config: pytest.Config) -> None:
    try:
        config.stash[_LIMIT] = env_int(LIMIT_ENV, DEFAULT_LIMIT_S, "the whole seconds a test may run, or 0 for no "
                                       "limit")
    except EnvVarError as bad:
        raise pytest.UsageError(str(bad)) from None
    try:
        stderr = sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):  # a stand-in without a file (io.UnsupportedOperation is an OSError)
        stderr = 2
    config.stash[_STDERR] = os.dup(stderr)


def pytest_unconfigure(config: pytest.Config) -> None:
    fd = config.stash.get(_STDERR, None)
    if fd is not None:
        os.close(fd)


def _expire(fd: int, nodeid: str, limit: int) -> None:
    os.write(fd, f"\n{nodeid} ran past its limit of {limit} s ({LIMIT_ENV}); the stack of every thread:\n".encode())
    faulthandler.dump_traceback(file=fd, all_threads=True)
    os._exit(1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    limit = item.config.stash[_LIMIT]
    timer = None
    if limit:
        timer = threading.Timer(limit, _expire, (item.config.stash[_STDERR], item.nodeid, limit))
        timer.daemon = True
        timer.name = "iris-test-limit"
        timer.start()
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()
