"""cpu-unit tier: a rank reads its export back from a folder it removes before the example returns (a rank process
ends without running exit handlers, so nothing kept for the process's life would be removed)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from conformance.harness import rank_side

pytestmark = pytest.mark.cpu_unit


def _shmem(written: list[str], fail: bool = False):
    def export(path: str) -> str:
        with open(path, "w") as f:
            f.write('{"rank": 3}')
        written.append(path)
        if fail:
            raise RuntimeError("export failed")
        return path

    return SimpleNamespace(tracing=SimpleNamespace(export=export))


def test_the_export_is_read_and_its_folder_removed(monkeypatch):
    monkeypatch.setattr(rank_side.exported, "read", lambda path: open(path).read())
    written: list[str] = []
    assert rank_side._exported(_shmem(written)) == '{"rank": 3}'
    assert rank_side._exported(_shmem(written)) == '{"rank": 3}'
    (first, second) = written
    assert os.path.dirname(first) != os.path.dirname(second)  # no folder shared between calls
    assert not os.path.exists(os.path.dirname(first)) and not os.path.exists(os.path.dirname(second))


def test_a_failed_export_leaves_no_folder():
    written: list[str] = []
    with pytest.raises(RuntimeError, match="export failed"):
        rank_side._exported(_shmem(written, fail=True))
    assert not os.path.exists(os.path.dirname(written[0]))
