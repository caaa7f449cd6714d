"""The rank pools of a test process: one owner, closed when the session ends."""

import pytest

from iris.ranks import Pools


@pytest.fixture(scope="session")
def pools():
    with Pools() as owner:
        yield owner
