"""The Hypothesis profiles a case draws its examples under, and the key of a case in Hypothesis's example database.

Profiles ``dev`` (fast), ``ci``, ``nightly`` (thorough), by examples per case; chosen by ``--conformance-profile``
(pytest), ``--profile`` (CLI) or ``IRIS_CONFORMANCE_PROFILE``. The example database is Hypothesis's default folder
unless ``IRIS_HYPOTHESIS_DB`` names another (``none`` turns it off).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from conformance.kit.scale import Scale
from iris.env_vars import env_folder

PROFILES = {"dev": 6, "ci": 10, "nightly": 60}
DEFAULT_PROFILE = "dev"


def example_database():
    """The Hypothesis example database ``IRIS_HYPOTHESIS_DB`` names: a folder (``none``: no database; unset:
    Hypothesis's default); ``iris.env_vars.EnvVarError`` for a value that names no folder that can be written."""
    if os.environ.get("IRIS_HYPOTHESIS_DB") is None:
        return settings.default.database
    path = env_folder("IRIS_HYPOTHESIS_DB", "the folder of Hypothesis's example database (made if missing), or "
                      "none to keep no database", off="none")
    return None if path is None else DirectoryBasedExampleDatabase(str(path))


def database_key(ref: str, world_size: int, backend: str, scale: Scale, chunk: int | None,
                 num_warps: int | None) -> bytes:
    """What tells a case's examples apart in Hypothesis's database: every input of what its examples draw."""
    return f"{ref}@{world_size}:{backend}:{scale.name}:chunk={chunk}:num_warps={num_warps}".encode()


def register_profiles() -> None:
    """Register every profile with Hypothesis (idempotent)."""
    for name, examples in PROFILES.items():
        settings.register_profile(
            f"conformance-{name}",
            max_examples=examples,
            deadline=None,
            database=example_database(),
            print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )


def chosen_profile(name: str | None = None) -> str:
    """The profile name to use: ``name``, else ``IRIS_CONFORMANCE_PROFILE``, else ``dev``."""
    name = name or os.environ.get("IRIS_CONFORMANCE_PROFILE", DEFAULT_PROFILE)
    if name not in PROFILES:
        raise ValueError(f"profile={name!r}; expected one of {sorted(PROFILES)} (IRIS_CONFORMANCE_PROFILE)")
    return name


def load_profile(name: str | None = None) -> settings:
    """Register the profiles and return the settings of the chosen one."""
    register_profiles()
    return settings.get_profile(f"conformance-{chosen_profile(name)}")
