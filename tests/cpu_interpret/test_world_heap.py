"""The rank world, the launcher and the symmetric heap, on cpu worlds of 1, 2 and 4 ranks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from iris.heap import SymmetricHeap
from iris.ranks import RankError, backend_env, launch
from iris.world import World

from . import world_jobs as workers

pytestmark = [pytest.mark.cpu_interpret, pytest.mark.shares_setup]  # a module fixture: one group

ENV = backend_env("cpu")
HEAP_SIZE = 4096
CYCLES = 20
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", params=[1, 2, 4], ids=lambda n: f"{n}ranks")
def world(request) -> list[dict]:
    """One launch per world size; every heap test below reads its observations."""
    return launch(workers.heap_scenario, request.param, HEAP_SIZE, CYCLES, env=ENV, timeout=120)


def test_world_and_environment(world):
    n = len(world)
    for rank, r in enumerate(world):
        assert (r["rank"], r["world_size"], r["device"]) == (rank, n, "cpu")
        assert r["env"] == {"RANK": str(rank), "WORLD_SIZE": str(n), "LOCAL_RANK": str(rank), "TRITON_INTERPRET": "1"}
        assert r["interpreter"] is True


def test_bases(world):
    n = len(world)
    for rank, r in enumerate(world):
        assert len(r["bases"]) == n
        assert len(set(r["bases"])) == n
        assert r["bases"][rank] == r["buffer_ptr"]
        assert r["buffer_len"] == HEAP_SIZE
        assert r["initially_zero"]


def test_every_rank_reads_every_peer_heap(world):
    expected = [workers.pattern(r, HEAP_SIZE) for r in range(len(world))]
    assert len(set(expected)) == len(world)
    for r in world:
        assert r["peer_bytes"] == expected


def test_typed_views_at_the_same_offset(world):
    n = len(world)
    expected = [[[100.0 * p + 5 * i + j for j in range(5)] for i in range(2)] for p in range(n)]
    for r in world:
        assert r["typed_offset"] == 0
        assert r["peer_typed"] == expected


def test_allocation_alignment(world):
    for r in world:
        assert r["offsets"] == [0, 64, 256, 259, 264]
        assert r["used_after_offsets"] == 269


def test_out_of_space(world):
    for r in world:
        name, message = r["oom"]
        assert name == "HeapOutOfMemoryError"
        assert "200 bytes" in message and "100 bytes free" in message and str(HEAP_SIZE) in message
        assert r["oom_used"] == (HEAP_SIZE - 100, HEAP_SIZE - 100)
        assert "90 bytes" in r["oom_padding"] and "100 bytes free" in r["oom_padding"]
        assert r["after_oom_alloc"] == HEAP_SIZE - 100


def test_argument_errors(world):
    for r in world:
        e = r["errors"]
        assert e["size=0"] == "ValueError: SymmetricHeap: size must be an int > 0 (bytes), got 0"
        assert e["size=-1"].startswith("ValueError") and e["size=-1"].endswith("got -1")
        assert e["size=1.5"].startswith("ValueError") and e["size=1.5"].endswith("got 1.5")
        assert e["size='4096'"].startswith("ValueError") and e["size='4096'"].endswith("got '4096'")
        assert e["size=True"].startswith("ValueError") and e["size=True"].endswith("got True")
        assert e["nbytes=-1"].startswith("ValueError") and "-1" in e["nbytes=-1"]
        assert e["nbytes=2.0"].startswith("ValueError") and "2.0" in e["nbytes=2.0"]
        assert e["alignment=3"].startswith("ValueError") and "power of two" in e["alignment=3"]
        assert e["alignment=0"].startswith("ValueError") and "power of two" in e["alignment=0"]
        assert e["tensor past end"].startswith("ValueError") and "past the end" in e["tensor past end"]
        assert e["tensor misaligned"].startswith("ValueError") and "multiple of 4" in e["tensor misaligned"]
        assert e["peer rank"].startswith("ValueError") and str(len(world)) in e["peer rank"]
        assert r["used_after_errors"] == 0


def test_close(world):
    for r in world:
        assert r["view_after_close"] == [7, 7, 7, 7]
        assert r["closed_allocate"] == "RuntimeError: SymmetricHeap: the heap is closed"


def test_create_close_cycles_do_not_leak(world):
    for r in world:
        assert r["segments"] == ([], [])
        assert r["fds"][0] == r["fds"][1]


@pytest.mark.parametrize("size", [0, -1, 1.5, "8", True, None])
def test_size_is_validated_before_any_collective(size):
    with pytest.raises(ValueError, match=re.escape(f"got {size!r}")):
        SymmetricHeap(size, World(rank=0, world_size=1, device=torch.device("cpu"), group=None))


def test_current_world_without_process_group():
    script = textwrap.dedent(
        """
        import os
        from iris.world import current_world
        for interpret in ("1", None):
            if interpret is None:
                os.environ.pop("TRITON_INTERPRET", None)
            try:
                current_world()
            except RuntimeError as e:
                print("ERROR:", e)
        import torch.distributed as dist
        print("INITIALIZED:", dist.is_initialized())
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update(ENV, PYTHONPATH=os.pathsep.join([str(REPO), *sys.path]))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    no_group, no_interpreter, initialized = proc.stdout.strip().splitlines()
    assert "no torch.distributed process group exists" in no_group
    assert "torch.distributed.init_process_group" in no_group and "torchrun" in no_group
    assert "iris.launch" in no_group
    assert "TRITON_INTERPRET" in no_interpreter and "before triton is imported" in no_interpreter
    assert initialized == "INITIALIZED: False"


@pytest.mark.parametrize("world_size", [0, -1, 1.5, True, "2", None])
def test_launch_rejects_bad_world_size(world_size):
    with pytest.raises(ValueError, match=re.escape(repr(world_size))):
        launch(workers.echo, world_size)


def test_launch_rejects_unimportable_function():
    with pytest.raises(ValueError, match="module-level"):
        launch(lambda: 1, 1)


def test_launch_passes_arguments_and_environment(monkeypatch):
    # The parent's TRITON_INTERPRET is overridden by env=; the parent's environment is left unchanged.
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    results = launch(workers.echo, 2, 1, "a", key=[2, 3], env={**ENV, "IRIS_TEST_VAR": "x"})
    assert results == [((1, "a"), {"key": [2, 3]}, "1", "x")] * 2
    assert os.environ["TRITON_INTERPRET"] == "0"
    assert "IRIS_TEST_VAR" not in os.environ and "RANK" not in os.environ


@pytest.mark.parametrize("how", ["raise", "raise_barrier"])
def test_launch_rank_raises(how):
    """A raise is reported as such, not as the timeout, even while rank 0 is stuck in a barrier (it is killed)."""
    with pytest.raises(RankError) as info:
        launch(workers.fail_on_rank, 2, 1, how, env=ENV, timeout=600)
    message = str(info.value)
    assert "launch (2 ranks): job tests.cpu_interpret.world_jobs.fail_on_rank: rank 1 raised" in message
    assert "ValueError: boom from rank 1" in message and "Traceback" in message
    assert info.value.killed == ([0] if how == "raise_barrier" else []), f"killed={info.value.killed}"


def test_launch_rank_hangs():
    start = time.monotonic()
    with pytest.raises(TimeoutError) as info:
        launch(workers.fail_on_rank, 2, 1, "hang", env=ENV, timeout=2)
    elapsed = time.monotonic() - start
    assert re.search(r"did not finish within 2 s: ranks? (0, )?1 had not answered", str(info.value)), str(info.value)
    assert 2 <= elapsed < 30


def test_launch_rank_exits():
    with pytest.raises(RuntimeError) as info:
        launch(workers.fail_on_rank, 2, 1, "exit", env=ENV, timeout=60)
    assert "rank 1 died (exit code 3)" in str(info.value), str(info.value)


def test_launch_sets_the_cpu_backend_itself_where_there_is_no_gpu(monkeypatch):
    """``iris.launch(fn, 1)`` with no env on a machine without a GPU runs kernels under the interpreter: the
    launcher gives its ranks what the CPU backend needs (no "set TRITON_INTERPRET=1" from the child)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: launch gives its ranks the gpu backend")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    results = launch(workers.run_time_trip_counts, 1, 4, timeout=300)
    assert results == [{"triton": 6, "gluon": 6}], f"sums={results}, but should be 0+1+2+3 = 6 for both APIs"


def test_binary_ops_on_one_type_promote_as_triton_says_under_the_interpreter():
    """The interpreter's shortcut for two tensors of one type keeps Triton's promotions, value by value."""
    (results,) = launch(workers.same_type_ops, 1, 64, env=ENV, timeout=300)
    for name, (got, want) in results.items():
        assert got == want, f"{name}: the kernel computed {got[:4]}..., Triton's rules give {want[:4]}..."


def test_run_time_trip_counts_run_under_the_interpreter():
    """The interpreter fixes applied where worlds start make ``range(n)`` with a run-time n work in both APIs."""
    results = launch(workers.run_time_trip_counts, 1, 7, env=ENV, timeout=300)
    assert results == [{"triton": 21, "gluon": 21}], f"sums={results}, but should be 0+1+...+6 = 21 for both APIs"
