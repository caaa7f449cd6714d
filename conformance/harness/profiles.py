"""Hypothesis profiles for the conformance suite: ``dev`` (fast), ``ci``, ``nightly`` (thorough).

Chosen by ``--conformance-profile`` (pytest), ``--profile`` (CLI) or ``IRIS_CONFORMANCE_PROFILE``;
the example database is Hypothesis's default folder unless ``IRIS_HYPOTHESIS_DB`` names another
(``none`` turns it off).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

EXAMPLES = {"dev": 6, "ci": 10, "nightly": 60}
DEFAULT = "dev"


def _database():
    path = os.environ.get("IRIS_HYPOTHESIS_DB")
    if path is None:
        return settings.default.database
    return None if path.lower() == "none" else DirectoryBasedExampleDatabase(path)


def register() -> None:
    """Register every profile with Hypothesis (idempotent)."""
    for name, examples in EXAMPLES.items():
        settings.register_profile(
            f"conformance-{name}",
            max_examples=examples,
            deadline=None,
            database=_database(),
            print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )


def chosen(name: str | None = None) -> str:
    """The profile name to use: ``name``, else ``IRIS_CONFORMANCE_PROFILE``, else ``dev``."""
    name = name or os.environ.get("IRIS_CONFORMANCE_PROFILE", DEFAULT)
    if name not in EXAMPLES:
        raise ValueError(f"profile={name!r}; expected one of {sorted(EXAMPLES)} (IRIS_CONFORMANCE_PROFILE)")
    return name


def load(name: str | None = None) -> settings:
    """Register the profiles and return the settings of the chosen one."""
    register()
    return settings.get_profile(f"conformance-{chosen(name)}")
