"""A test that runs past its time limit ends its process, with every thread's stack (a plugin of the root conftest).

``IRIS_TEST_LIMIT_S``: the seconds a test's setup, call and teardown may take together (default 600, 0 for no
limit). Past them, ``faulthandler`` writes the stack of every thread of the test's process to its stderr and ends
that process: under pytest-xdist the worker dies, the test fails as crashed and is not run again, and a new worker
runs the rest (``tests/xdist_sharing.py``); without it, the run ends there. A test that hangs then costs a run its
limit, with the place it hung, instead of the CI job's time.
"""

from __future__ import annotations

import faulthandler
import os
import sys

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
        faulthandler.cancel_dump_traceback_later()
        os.close(fd)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    limit = item.config.stash[_LIMIT]
    if limit:
        faulthandler.dump_traceback_later(limit, exit=True, file=item.config.stash[_STDERR])
    try:
        yield
    finally:
        if limit:
            faulthandler.cancel_dump_traceback_later()
