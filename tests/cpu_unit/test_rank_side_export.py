"""cpu-unit tier: a rank exports its trace to one folder of its own, read back after each export, and removes the
folder when it closes its state (a rank process ends without running exit handlers)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

import iris.ranks
from conformance.harness import rank_side

pytestmark = pytest.mark.cpu_unit


def shmem_writing(written: list[str], text: str):
    """A stand-in ``shmem`` whose ``tracing.export`` writes ``text`` and notes the path."""
    def export(path: str) -> str:
        with open(path, "w") as f:
            f.write(text)
        written.append(path)
        return path

    return SimpleNamespace(tracing=SimpleNamespace(export=export))


def test_each_export_is_read_back_from_the_rank_s_folder_removed_when_its_state_closes(monkeypatch):
    monkeypatch.setattr(rank_side.exported, "read", lambda path: open(path).read())
    state: dict = {}
    monkeypatch.setattr(iris.ranks, "rank_state", lambda: state)  # the rank's state, as a rank process holds it
    written: list[str] = []
    assert rank_side._exported(shmem_writing(written, '{"rank": 3}')) == '{"rank": 3}'
    assert rank_side._exported(shmem_writing(written, '{"rank": 4}')) == '{"rank": 4}'
    folder = state["export_folder"]
    assert [os.path.dirname(p) for p in written] == [folder.path] * 2, "one folder for the rank's exports"
    assert os.path.basename(folder.path).startswith("iris-conformance-export-")
    folder.close()
    assert not os.path.exists(folder.path)
