"""The rank pools and the compile-ahead pool of a test process: one owner each, closed when the session ends."""

import pytest

from conformance.harness.compile_ahead import Compiler
from iris.ranks import Pools


@pytest.fixture(scope="session")
def pools():
    """One world's ranks per backend at a time (the cases come world size by world size: test_conformance.py)."""
    with Pools(one_at_a_time=True) as owner:
        yield owner


@pytest.fixture(scope="session")
def compiler():
    """Compiles a GPU case's variants ahead (its processes start on a GPU case's first use; CPU cases use none)."""
    with Compiler() as owner:
        yield owner
