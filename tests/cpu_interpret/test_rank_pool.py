"""The rank pool (iris.ranks): jobs on live rank processes, state across jobs, failures that never hang.

Guarantees checked here: a rank that raises while the others finish keeps the pool (same generation, same
processes, rank state kept); a rank that raises while the others are stuck in a collective, a timeout and a
dead rank each kill the ranks, and the next job runs on a new generation with empty rank state.
"""

from __future__ import annotations

import gc
import inspect
import json
import multiprocessing as mp
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from iris.ranks import (
    MAX_TIMEOUT_S,
    MAX_WORLD_SIZE,
    Pools,
    RankDied,
    RankError,
    RankPool,
    RankTimeout,
    launch,
    xdist_worker_index,
)
from iris.ranks.child import alive

from . import pool_jobs as jobs

pytestmark = [pytest.mark.cpu_interpret, pytest.mark.shares_setup]  # one module pool: one worker, in order

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pool():
    with RankPool(2, "cpu") as p:
        yield p


def _children(pid: int) -> list[int]:
    """Live rank processes of ``pid`` (from /proc): its children and its fork server's, except the fork server
    itself and multiprocessing's resource tracker (helpers that live as long as ``pid``)."""
    parent, helper = {}, set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if fields[0] == "Z":
            continue
        parent[int(entry)] = int(fields[1])
        if int(fields[1]) == pid and (b"resource_tracker" in cmdline or b"multiprocessing.forkserver" in cmdline):
            helper.add(int(entry))
    return [p for p, pp in parent.items() if p not in helper and (pp == pid or pp in helper)]


def _wait_gone(pids: list[int], within: float) -> list[int]:
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def test_lazy_start_results_in_rank_order(pool):
    assert (pool.world_size, pool.backend, pool.started, pool.generation) == (2, "cpu", False, 0)
    results = pool.run(jobs.whoami, "hello", scale=10, timeout=120)
    assert [(r["tag"], r["rank"], r["world_size"], r["value"]) for r in results] == [
        ("hello", 0, 2, 0),
        ("hello", 1, 2, 10),
    ]
    for r in results:
        assert r["env"] == {"TRITON_INTERPRET": "1", "IRIS_FORCE_CPU": "1", "IRIS_DEVICE_OFFSET": "0"}
    assert [r["pid"] for r in results] == pool.pids
    assert (pool.started, pool.generation) == (True, 1)


def test_state_persists_across_jobs(pool):
    pids = pool.pids
    first = pool.run(jobs.count)
    assert pool.run(jobs.count) == [first[0] + 1] * 2
    assert pool.run(jobs.count) == [first[0] + 2] * 2
    assert pool.pids == pids


def test_collective_over_the_gloo_group(pool):
    assert pool.run(jobs.all_reduce_rank) == [3, 3]  # (0 + 1) + (1 + 1)


def test_rank_error_keeps_the_pool(pool):
    before = pool.run(jobs.count)  # starts the pool if no earlier test on this worker did
    generation, pids = pool.generation, pool.pids
    with pytest.raises(RankError) as e:
        pool.run(jobs.raise_on, 1)
    assert e.value.ranks == [1] and e.value.killed == []
    assert "rank 1 raised" in str(e.value) and "ValueError: deliberate failure on rank 1" in str(e.value)
    assert "ValueError: deliberate failure on rank 1" in e.value.tracebacks[1]
    assert e.value.job == "tests.cpu_interpret.pool_jobs.raise_on"
    # Every rank answered, so nothing was rebuilt: same processes, state kept.
    assert (pool.started, pool.generation, pool.pids) == (True, generation, pids)
    assert pool.run(jobs.count) == [before[0] + 1] * 2
    assert pool.run(jobs.all_reduce_rank) == [3, 3]


def test_unpicklable_result_is_a_rank_error(pool):
    pool.start()  # a no-op if an earlier test started it; the generation counts from here
    generation = pool.generation
    with pytest.raises(RankError, match="could not be pickled") as e:
        pool.run(jobs.unpicklable_result)
    assert e.value.ranks == [0, 1]
    assert pool.generation == generation and pool.run(jobs.all_reduce_rank) == [3, 3]


def test_bad_job_is_refused_before_running(pool):
    with pytest.raises(ValueError, match="module-level"):
        pool.run(lambda: None)
    with pytest.raises(ValueError, match="picklable"):
        pool.run(jobs.whoami, lambda: None)
    with pytest.raises(ValueError, match="timeout"):
        pool.run(jobs.noop, timeout=0)


def test_rank_error_before_a_collective_rebuilds(pool):
    generation, old = pool.generation, pool.pids
    t0 = time.monotonic()
    with pytest.raises(RankError) as e:
        pool.run(jobs.raise_before_all_reduce, 0, timeout=1.5)  # rank 1 (in the collective) is waited for this long
    elapsed = time.monotonic() - t0
    assert e.value.ranks == [0] and e.value.killed == [1]
    assert "rank 1 had not answered" in str(e.value) and "before all_reduce" in e.value.tracebacks[0]
    assert elapsed < 10, elapsed
    assert not pool.started and _wait_gone(old, 5) == []
    assert pool.run(jobs.count) == [1, 1]  # new processes, empty rank state
    assert pool.generation == generation + 1
    assert pool.run(jobs.all_reduce_rank) == [3, 3]


def test_timeout_names_the_hung_rank_and_rebuilds(pool):
    pool.run(jobs.noop)
    assert not pool.fresh and not pool.sanitizer  # a job finished on these processes
    generation, old = pool.generation, pool.pids
    t0 = time.monotonic()
    with pytest.raises(RankTimeout) as e:
        pool.run(jobs.sleep_on, 1, 1000, timeout=2)
    elapsed = time.monotonic() - t0
    print(f"timeout raised after {elapsed:.2f} s")
    assert 2 <= elapsed < 10, elapsed
    assert isinstance(e.value, TimeoutError) and e.value.ranks == [1]
    assert "rank 1 had not answered" in str(e.value) and "tests.cpu_interpret.pool_jobs.sleep_on" in str(e.value)
    assert "within 2 s" in str(e.value)
    assert e.value.doing == {1: "job sleep_on"}, e.value.doing  # what the hung rank last said (its progress)
    # where it was: its stack, from the job's function inwards, asked for before the kill
    sleeping = inspect.getsourcelines(jobs.sleep_on)[1] + 2  # the time.sleep line
    assert list(e.value.stacks) == [1], e.value.stacks
    assert e.value.stacks[1] == f'File "{jobs.__file__}", line {sleeping} in sleep_on', e.value.stacks
    assert f"rank 1's stack, innermost first:\n      {e.value.stacks[1]}" in str(e.value)
    again = pickle.loads(pickle.dumps(e.value))
    assert (str(again), again.ranks, again.timeout, again.doing, again.stacks) == (
        str(e.value), [1], 2, {1: "job sleep_on"}, e.value.stacks)
    assert not pool.started and _wait_gone(old, 5) == []
    assert pool.fresh  # the next job is the first of new processes
    assert [r["rank"] for r in pool.run(jobs.whoami, "after")] == [0, 1]
    assert pool.generation == generation + 1 and not pool.fresh


def test_dead_rank_names_its_exit_code_and_rebuilds(pool):
    pool.run(jobs.noop)
    generation = pool.generation
    with pytest.raises(RankDied) as e:
        pool.run(jobs.exit_on, 0, 7, timeout=30)
    assert isinstance(e.value, RuntimeError) and e.value.ranks == [0] and e.value.exitcodes[0] == 7
    assert "rank 0 died (exit code 7)" in str(e.value)
    assert pool.run(jobs.all_reduce_rank) == [3, 3]
    assert pool.generation == generation + 1


def test_rank_killed_between_jobs_is_replaced(pool):
    pool.run(jobs.noop)
    generation, victim = pool.generation, pool.pids[1]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 5  # until it is reaped (a zombie leader may still have exiting threads)
    while victim in {c.pid for c in mp.active_children()} and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.run(jobs.all_reduce_rank) == [3, 3]
    assert pool.generation == generation + 1 and victim not in pool.pids


def test_job_latency(pool):
    pool.run(jobs.noop)
    n = 50
    t0 = time.monotonic()
    for _ in range(n):
        assert pool.run(jobs.noop) == [None, None]
    total = time.monotonic() - t0
    print(f"{n} trivial jobs on 2 ranks: {total:.3f} s, {1e3 * total / n:.3f} ms per job")
    assert total < 5.0


def test_spawned_now_the_pool_is_the_one_its_first_job_runs_on():
    before = set(_children(os.getpid()))
    with RankPool(2, "cpu") as p:
        p.spawn_now()
        spawned = p.pids
        assert len(spawned) == 2 and p.generation == 1
        p.spawn_now()  # no-op: already spawned
        assert p.pids == spawned
        assert [r["pid"] for r in p.run(jobs.whoami, "x", timeout=120)] == spawned
        assert p.generation == 1
        p.spawn_now()  # no-op: up
        assert (p.pids, p.generation) == (spawned, 1)
    with RankPool(1, "cpu") as q:
        q.spawn_now()
        q.start()
        assert (q.started, q.generation, q.run(jobs.all_reduce_rank, timeout=120)) == (True, 1, [1])
    with RankPool(1, "cpu") as r:
        r.spawn_now()  # closed before it was ever waited for: nothing is left behind
    assert set(_children(os.getpid())) <= before


def test_close_leaves_no_child_processes():
    before = set(_children(os.getpid()))
    with RankPool(2, "cpu", device_offset=5) as p:
        assert {r["env"]["IRIS_DEVICE_OFFSET"] for r in p.run(jobs.whoami, "x")} == {"5"}
        pids = p.pids
        assert set(pids) <= set(_children(os.getpid()))
    t0 = time.monotonic()
    p.close()  # idempotent
    assert time.monotonic() - t0 < 1
    assert not p.started and p.pids == []
    assert not any(alive(pid) for pid in pids)
    assert not {c.pid for c in mp.active_children()} & set(pids)
    assert set(_children(os.getpid())) <= before
    with pytest.raises(RuntimeError, match="closed"):
        p.run(jobs.noop)


def test_the_ranks_stack_files_are_removed_with_the_pool_closed_or_dropped():
    """Each rank's stack file (iris.ranks.stacks) lives in a folder of its pool's, gone when the pool is closed or
    dropped unclosed (and, left to the end, at the interpreter's exit)."""
    for drop in (False, True):
        p = RankPool(1, "cpu")
        p.run(jobs.noop)
        folder = p._stack_dir
        assert folder is not None and os.listdir(folder) == ["iris-cpu1-g1-rank0.txt"], folder
        if drop:
            del p
            gc.collect()
        else:
            p.close()
        assert not os.path.exists(folder), (drop, folder)


def test_what_a_rank_s_state_holds_is_closed_when_the_pool_stops_its_ranks():
    """A rank closes what its state holds when the pool stops it (the conformance export folder: a rank process
    ends without running exit handlers)."""
    p = RankPool(2, "cpu")
    folders = p.run(jobs.export_folder)
    assert p.run(jobs.export_folder) == folders and all(os.path.isdir(f) for f in folders), folders
    p.close()
    assert [f for f in folders if os.path.exists(f)] == []


def test_ranks_have_the_environment_of_their_start_not_the_fork_servers(monkeypatch):
    """Ranks are forked from a server that may have started under other variables: each rank still sees exactly
    the pool's environment at its start, and imports Triton under its own TRITON_INTERPRET."""
    monkeypatch.setenv("IRIS_TEST_DROPPED", "1")
    with RankPool(1, "cpu") as p:  # starts this process's fork server if nothing did before
        assert p.run(jobs.environ_of, "IRIS_TEST_DROPPED") == [{"env": {"IRIS_TEST_DROPPED": "1"},
                                                                 "cdiv": "InterpretedFunction"}]
    monkeypatch.delenv("IRIS_TEST_DROPPED")
    monkeypatch.setenv("IRIS_TEST_ADDED", "2")
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # the pool's backend sets it back to 1 for its ranks
    with RankPool(2, "cpu", env={"IRIS_TEST_POOL": "3"}) as p:
        assert p.run(jobs.environ_of, "IRIS_TEST_DROPPED", "IRIS_TEST_ADDED", "IRIS_TEST_POOL", "TRITON_INTERPRET") == [
            {"env": {"IRIS_TEST_DROPPED": None, "IRIS_TEST_ADDED": "2", "IRIS_TEST_POOL": "3", "TRITON_INTERPRET": "1"},
             "cdiv": "InterpretedFunction"}] * 2


_SERVER_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import multiprocessing as mp
    from iris.ranks import RankPool
    from tests.cpu_interpret import pool_jobs as jobs

    if __name__ == "__main__":
        if sys.argv[1] == "other":  # something other than a pool starts the fork server, in an environment of its own
            ctx = mp.get_context("forkserver")
            child = ctx.Process(target=jobs.environ_of, args=("TRITON_INTERPRET",))
            child.start()
            child.join()
        seen, uninterpreted = [], (None, {"TRITON_INTERPRET": "0"})
        worlds = [("cpu", {})] if sys.argv[1] == "other" else [uninterpreted, ("cpu", {}), uninterpreted]
        for backend, env in worlds:
            with RankPool(1, backend, env=env) as pool:
                seen.append(pool.run(jobs.environ_of, "TRITON_INTERPRET")[0])
        print(json.dumps(seen))
    """
)


@pytest.mark.parametrize("first", ["pool", "other"])
def test_a_rank_imports_triton_under_its_own_interpret_whoever_started_the_fork_server(tmp_path, first):
    """A forked rank imports iris and Triton before it adopts its environment, so under the fork server's
    TRITON_INTERPRET: an uninterpreted world, then an interpreted one, then an uninterpreted one again, in one process
    whose first pool started the server, each sees its own; so does an interpreted world after something other than a
    pool started the server."""
    script = tmp_path / "worlds.py"
    script.write_text(_SERVER_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, str(script), first], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    uninterpreted = {"env": {"TRITON_INTERPRET": "0"}, "cdiv": "JITFunction"}
    interpreted = {"env": {"TRITON_INTERPRET": "1"}, "cdiv": "InterpretedFunction"}
    expected = [interpreted] if first == "other" else [uninterpreted, interpreted, uninterpreted]
    assert json.loads(out.stdout) == expected, out.stdout


def test_pools_owner_and_xdist_offset(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert xdist_worker_index() == 0
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    assert xdist_worker_index() == 3
    with Pools() as pools:
        pool = pools.get(4, "cpu")
        assert pool is pools.get(4, "cpu") and pool is not pools.get(4, "gpu")
        assert (pool.world_size, pool.backend, pool.device_offset, pool.started) == (4, "cpu", 12, False)
        pool.close()
        assert pools.get(4, "cpu") is not pool  # a closed pool is replaced
        kept = pools.get(2, "cpu")
    assert kept.closed, "leaving the Pools block must close every pool it made"
    assert Pools(worker_index=5).device_offset(8) == 40
    with pytest.raises(ValueError, match=r"backend='tpu', expected one of \('cpu', 'gpu'\)"):
        RankPool(2, "tpu")


def test_pools_one_at_a_time_keep_one_world_per_backend():
    with Pools(one_at_a_time=True) as pools:
        one, gpu_two = pools.get(1, "cpu"), pools.get(2, "gpu")
        assert pools.get(1, "cpu") is one, "asking again for the pool it holds keeps it"
        four = pools.get(4, "cpu")
        assert (one.closed, gpu_two.closed, four.closed) == (True, False, False), "only the other cpu world closes"
        again = pools.get(1, "cpu")
        assert again is not one and (four.closed, again.closed, gpu_two.closed) == (True, False, False)
    with Pools() as pools:  # by default every world stays
        one, four = pools.get(1, "cpu"), pools.get(4, "cpu")
        assert (one.closed, four.closed) == (False, False)


_PAST_POLL = ("must be a positive number of seconds, at most 86400 (MAX_TIMEOUT_S: a pool waits through poll(), whose "
              "timeout overflows past about 24 days), got ")


@pytest.mark.parametrize("timeout", [float("inf"), float("nan"), 1e10, MAX_TIMEOUT_S * 1.01, 0, -5])
def test_a_timeout_the_pool_cannot_wait_for_is_refused_before_the_job(pool, timeout):
    """poll() takes its timeout as a C int of milliseconds: past it, waiting would overflow (or never end)."""
    before = (pool.generation, pool.pids)
    with pytest.raises(ValueError) as e:
        pool.run(jobs.noop, timeout=timeout)
    assert str(e.value) == f"RankPool: timeout {_PAST_POLL}{timeout!r}", str(e.value)
    assert (pool.generation, pool.pids) == before, "a refused job must leave the ranks as they were"
    assert pool.run(jobs.noop, timeout=MAX_TIMEOUT_S) == [None, None]  # the ceiling itself is honoured


def test_a_pool_refuses_more_ranks_or_longer_waits_than_it_can_hold_before_it_starts():
    with pytest.raises(ValueError) as e:
        RankPool(MAX_WORLD_SIZE + 1, "cpu")
    assert str(e.value) == ("RankPool: world_size must be an int in 1..64 (MAX_WORLD_SIZE: the rank processes one host "
                            "runs), got 65"), str(e.value)
    with pytest.raises(ValueError) as e:
        RankPool(2, "cpu", start_timeout=float("inf"))
    assert str(e.value) == f"RankPool: start_timeout {_PAST_POLL}inf", str(e.value)
    with pytest.raises(ValueError) as e:
        launch(jobs.noop, 1, timeout=1e10)
    assert str(e.value) == f"launch: timeout {_PAST_POLL}10000000000.0", str(e.value)


_ORPHAN_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from iris.ranks import RankPool
    from tests.cpu_interpret import pool_jobs as jobs

    if __name__ == "__main__":
        pool = RankPool(2, "cpu")
        pool.run(jobs.noop)
        print(" ".join(map(str, pool.pids)), flush=True)
        if sys.argv[1] == "crash":
            os._exit(0)  # no atexit: the ranks must notice that their parent is gone
        if sys.argv[1] == "term":
            os.kill(os.getpid(), signal.SIGTERM)  # killed: no atexit, no finally
        # normal exit without close(): multiprocessing stops its daemon ranks at exit
    """
)


@pytest.mark.parametrize("how", ["exit", "crash", "term"])
def test_no_orphans_when_the_parent_exits(tmp_path, how):
    script = tmp_path / "parent.py"
    script.write_text(_ORPHAN_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, str(script), how], env=env, capture_output=True, text=True, timeout=120)
    expected = -signal.SIGTERM if how == "term" else 0
    assert out.returncode == expected, f"parent exit code {out.returncode}, but should be {expected}: {out.stderr}"
    pids = [int(x) for x in out.stdout.split()]
    assert len(pids) == 2
    assert _wait_gone(pids, 5) == [], f"ranks {pids} outlived their parent ({how})"


FAKE_TOOL = """#!/bin/sh
# Stands in for compute-sanitizer: writes a memcheck report to --log-file, then runs the program as its child
# (as the real tool does: the program's process id is not the tool's).
while [ "$1" != "--log-file" ]; do shift; done
log="$2"; shift 2
if [ -n "$IRIS_FAKE_REPORT" ]; then
  printf '========= Invalid __global__ write of size 4 bytes\\n=========     Address 0x10 is out of bounds\\n' > "$log"
fi
"$@"
"""


@pytest.mark.parametrize("report", [False, True], ids=["clean", "error"])
def test_sanitized_pool_fails_the_job_that_the_checker_reported(tmp_path, monkeypatch, report):
    """Ranks spawned through the checker's wrapper; a reported error fails the job, quoting it, then a rebuild."""
    from iris.ranks import sanitizer

    tool = tmp_path / "compute-sanitizer"
    tool.write_text(FAKE_TOOL)
    tool.chmod(0o755)
    monkeypatch.setattr(sanitizer, "find_tool", lambda: str(tool))
    env = {"IRIS_FAKE_REPORT": "1"} if report else {}
    with RankPool(2, "cpu", env=env, sanitizer=True) as p:
        if not report:
            assert [r["rank"] for r in p.run(jobs.whoami, "x", timeout=120)] == [0, 1]
            return
        with pytest.raises(RankError) as info:
            p.run(jobs.whoami, "x", timeout=120)
        message = str(info.value)
        assert "compute-sanitizer memcheck reported" in message and "Invalid __global__ write of size 4" in message
        assert info.value.ranks == [0, 1], f"ranks={info.value.ranks}, but both ranks' logs hold the report"
        generation = p.generation
        with pytest.raises(RankError):  # the rebuilt ranks run under the checker again, and it reports again
            p.run(jobs.whoami, "x", timeout=120)
        assert p.generation == generation + 1, "ranks that reported must be replaced"
