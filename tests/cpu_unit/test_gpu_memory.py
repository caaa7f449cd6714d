"""A gpu world that runs out of GPU memory says who held it: pids, MiB and command lines, largest first."""

from __future__ import annotations

import pytest

from tests import gpu_memory, worlds

pytestmark = pytest.mark.cpu_unit

MIB = 1 << 20
HELD = {11: 600 * MIB, 12: 2048 * MIB, 13: 600 * MIB, 14: 5 * MIB}
COMMANDS = {11: "python -m iris.ranks.child", 12: "compute-sanitizer --tool memcheck python -m iris.ranks.child",
            13: "python -m iris.ranks.child", 14: "x" * 300}


def test_holders_lists_the_largest_first_then_the_count_and_total():
    text = gpu_memory.holders(HELD, COMMANDS.__getitem__, limit=3)
    assert text.splitlines() == [
        "  pid 12: 2048 MiB: compute-sanitizer --tool memcheck python -m iris.ranks.child",
        "  pid 11: 600 MiB: python -m iris.ranks.child",
        "  pid 13: 600 MiB: python -m iris.ranks.child",
        "  ... 1 more",
        "  4 processes, 3253 MiB in all",
    ]
    assert gpu_memory.holders({14: 5 * MIB}, COMMANDS.__getitem__).splitlines()[0] == f"  pid 14: 5 MiB: {'x' * 100}"


def _placement_job():  # never runs: launch is replaced below
    raise AssertionError


@pytest.mark.parametrize(("error", "noted"), [("CUDA error: out of memory", True), ("CUDA error: misaligned", False)])
def test_a_gpu_world_out_of_memory_notes_who_held_it(monkeypatch, error, noted):
    def launch(*args, **kwargs):
        raise RuntimeError(f"launch (8 ranks): rank 1 raised: torch.AcceleratorError: {error}")

    monkeypatch.setattr(worlds, "launch", launch)
    monkeypatch.setattr(gpu_memory, "bytes_by_pid", lambda: {12: 2048 * MIB})
    monkeypatch.setattr(gpu_memory, "command_line", lambda pid: f"rank {pid}")
    with pytest.raises(RuntimeError) as info:
        worlds.run_world(_placement_job, "gpu", 8, error)  # the error as an arg: a world of its own in the cache
    notes = getattr(info.value, "__notes__", [])
    if noted:
        assert notes == ["GPU memory just after, by process:\n  pid 12: 2048 MiB: rank 12\n"
                         "  1 processes, 2048 MiB in all"], notes
    else:
        assert notes == [], notes


def test_without_nvml_the_note_says_why_memory_is_unknown(monkeypatch):
    def no_nvml():
        raise ImportError("No module named 'pynvml'")

    monkeypatch.setattr(gpu_memory, "bytes_by_pid", no_nvml)
    assert gpu_memory.out_of_memory_note() == "GPU memory by process unknown: ImportError: No module named 'pynvml'"
