"""Root pytest configuration: the test tiers as markers, the gpu tier's skip rule, how pytest-xdist shares a run
among its workers (``tests/xdist_sharing.py``) and the time a test may run (``tests/time_limit.py``).

The tests' test-only scenarios are registered through ``IRIS_SCENARIO_PACKAGES`` (``TEST_SCENARIO_PACKAGES``).

Kernels never run in the pytest process itself: worlds start rank processes with the right
environment (``TRITON_INTERPRET=1`` for cpu worlds). The pytest process compiles kernels for the
cpu-compile tier, so the interpreter must be off here; it is removed from this process's
environment before Triton is imported.
"""

import os

import pytest

pytest_plugins = ["tests.xdist_sharing", "tests.time_limit"]

os.environ.pop("TRITON_INTERPRET", None)

from conformance.kit.scenario import PACKAGES_ENV, scenario_packages  # noqa: E402 (imports no Triton)

# The tests' own scenarios, named by dotted path, are the modules of these packages (added to any the environment
# lists); the rank processes and the command lines the tests start inherit the variable.
TEST_SCENARIO_PACKAGES = ("tests.conformance.faulty",)
os.environ[PACKAGES_ENV] = ",".join(dict.fromkeys([*scenario_packages()[1:], *TEST_SCENARIO_PACKAGES]))

MARKERS = {
    "cpu_unit": "pure-Python / torch-cpu unit tests, no kernels",
    "cpu_interpret": "kernels executed under the Triton interpreter on multi-rank cpu worlds",
    "cpu_compile": "kernels cross-compiled for sm_90, sm_100, gfx942, gfx950 (no GPU needed)",
    "gpu": "kernels executed on a GPU host (skipped where no GPU is visible)",
    "shares_setup": "shares an expensive setup (a cached world, a module fixture) with the tests of its module whose "
    "backend, world_size and api parameters are equal; under pytest-xdist those run on one worker",
    "long": "runs for a minute or more where it runs; under pytest-xdist it is handed out first",
}


def pytest_addoption(parser):
    group = parser.getgroup("iris")
    group.addoption("--ranks", type=lambda t: tuple(int(x) for x in t.split(",")), default=None,
                    help="conformance world sizes to run, any R >= 1, e.g. 1,2,8 (default: each scenario's: 1,2,4 "
                    "plus the GPU count when it is 8 or more)")
    group.addoption("--conformance-profile", default=None, choices=("dev", "ci", "nightly"),
                    help="Hypothesis profile of the conformance suite (default: IRIS_CONFORMANCE_PROFILE or dev)")


def pytest_configure(config):
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def pytest_collection_modifyitems(config, items):
    if not any("gpu" in item.keywords for item in items) or _gpu_count() > 0:
        return
    skip = pytest.mark.skip(reason="gpu tier: no GPU visible to torch (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
