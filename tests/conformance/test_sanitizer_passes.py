"""``--sanitize memcheck,racecheck``: the selection runs once per tool, each pass on rank pools under its tool, and
each case's record names the tool; a finding fails the case quoting the tool, with a replay line that runs it again.

The ranks are cpu ranks spawned through the real wrapper script, with a stand-in for compute-sanitizer that runs the
program as its child (as the tool does) and, under racecheck, has written a race to the rank's log first.
"""

from __future__ import annotations

import os
import re
import tempfile

import pytest
from hypothesis import settings

from conformance.harness.run_settings import RunSettings
from conformance.harness.suite import plan, run_cases
from iris.ranks import RankPool, sanitizer

pytestmark = pytest.mark.cpu_interpret

HEALTHY = "tests.conformance.faulty.healthy"
RACE = ("========= Error: Race reported between Write access at k+0x90 in k.py:41\\n"
        "=========     and Read access at k+0x100 in k.py:51 [508 hazards]\\n=========\\n")
FAKE_TOOL = f"""#!/bin/sh
while [ "$1" != "--log-file" ]; do shift; done
log="$2"; shift 2
if [ "$IRIS_SANITIZER_TOOL" = racecheck ]; then printf '{RACE}' > "$log"; fi
"$@"
"""


@pytest.fixture(autouse=True)
def _fake_tool(tmp_path, monkeypatch):
    """compute-sanitizer is the stand-in (``FAKE_TOOL``) for every test here."""
    tool = tmp_path / "compute-sanitizer"
    tool.write_text(FAKE_TOOL)
    tool.chmod(0o755)
    monkeypatch.setattr(sanitizer, "find_tool", lambda: str(tool))


def test_each_tool_runs_the_selection_and_its_finding_fails_the_case_with_a_replay_under_it(tmp_path, monkeypatch):
    log_folders: list[str] = []  # every pool's, as it makes it
    made = tempfile.mkdtemp

    def mkdtemp(*args, **kwargs) -> str:
        path = made(*args, **kwargs)
        if os.path.basename(path).startswith("iris-sanitize-"):
            log_folders.append(path)
        return path

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    cases, _ = plan([HEALTHY], (1,))
    said: list[str] = []
    done = run_cases(cases, RunSettings("cpu", settings(max_examples=1, deadline=None, database=None), seed=3,
                                        sanitizers=("memcheck", "racecheck"), max_runs=1), echo=said.append)
    records = [c for c, _ in done]
    assert [(c.record_id, c.sanitizer, c.ok, c.examples) for c in records] == [
        (f"cpu-{HEALTHY}-1r@memcheck", "memcheck", True, 1), (f"cpu-{HEALTHY}-1r@racecheck", "racecheck", False, 0)]
    assert [line for line in said if line.startswith("[")] == [
        f"[1/2] {HEALTHY} on 1 rank(s) under memcheck ...", f"[2/2] {HEALTHY} on 1 rank(s) under racecheck ..."]
    raced = records[1]
    assert "compute-sanitizer racecheck reported 1 shared-memory race (rank log " in raced.error, raced.error
    assert ("========= Error: Race reported between Write access at k+0x90 in k.py:41\n"
            "=========     and Read access at k+0x100 in k.py:51 [508 hazards]") in raced.error, raced.error
    replay = f"python -m conformance run --scenario {HEALTHY} --ranks 1 --backend cpu --sanitize racecheck --chunk "
    assert raced.replay.startswith(replay) and raced.error.endswith(f"replay: {raced.replay}"), raced.error
    assert raced.replay_outcome == "reproduced", "the replay ran on new ranks, under racecheck again"
    assert raced.control_outcome == "pass", "the control ran the example on ranks under no tool: no race there"
    assert f"    FAIL (0 examples, {raced.seconds:.1f} s, replayed: reproduced; without racecheck: pass)" in said, said
    assert records[0].replay == "" and records[0].not_ours == [] == raced.not_ours
    assert records[0].control_outcome == "", "a case that passed is not replayed"
    # Each pass's pool removed its log folder when it closed, but for the log a finding names.
    (log,) = re.findall(r"\(rank log (\S+)\)", raced.error)
    assert [os.path.basename(p).split("-")[2] for p in log_folders] == ["memcheck", "racecheck"]
    assert [p for p in log_folders if os.path.exists(p)] == [os.path.dirname(log)] and os.path.isfile(log)


@pytest.mark.parametrize("name, control", [("hangs_under_a_tool", "pass"), ("hangs", "hang")])
def test_a_hang_under_a_tool_says_whether_its_control_without_the_tool_hangs_too(name, control):
    """The control replay runs the hung example on ranks under no tool: a hang only the tool's run shows passes there
    (``hangs_under_a_tool`` waits only where the tool's variable is set); a kernel that never ends hangs there too.
    Either way the case is a hang."""
    scenario = f"tests.conformance.faulty.{name}"
    cases, _ = plan([scenario], (2,))
    said: list[str] = []
    ((case, _),) = run_cases(cases, RunSettings("cpu", settings(max_examples=1, deadline=None, database=None), seed=3,
                                                sanitizers=("memcheck",), max_runs=1, timeout=1.5), echo=said.append)
    assert (case.status, case.sanitizer, case.replay_outcome, case.control_outcome) == (
        "hang", "memcheck", "reproduced", control), (case.status, case.replayed, case.problem)
    assert case.replayed == f"reproduced; without memcheck: {control}"
    progress = said[said.index(f"[1/1] {scenario} on 2 rank(s) under memcheck ...") + 1]
    assert progress == f"    HANG (0 examples, {case.seconds:.1f} s, replayed: {case.replayed})", said


def test_rank_pools_start_ahead_of_their_first_job_only_when_no_sanitizer_runs(monkeypatch):
    """Ranks spawned ahead under compute-sanitizer hung in their first CUDA call: under a tool each pool starts at
    its first job; without one every world's pool is spawned at the pass's start."""
    spawned: list[tuple[int, str]] = []
    spawn_now = RankPool.spawn_now

    def record(pool: RankPool) -> None:
        spawned.append((pool.world_size, pool.sanitizer))
        spawn_now(pool)

    monkeypatch.setattr(RankPool, "spawn_now", record)
    cases, _ = plan([HEALTHY], (1, 2))
    for tools, ahead in (((), [(1, ""), (2, "")]), (("memcheck",), [])):
        spawned.clear()
        done = run_cases(cases, RunSettings("cpu", settings(max_examples=1, deadline=None, database=None), seed=3,
                                            sanitizers=tools, max_runs=1), echo=lambda _: None)
        assert [(c.world_size, c.sanitizer, c.ok, c.examples) for c, _ in done] == [
            (1, "".join(tools), True, 1), (2, "".join(tools), True, 1)], [c.problem for c, _ in done]
        assert spawned == ahead, (tools, spawned)


def test_under_initcheck_the_ranks_kernels_run_in_turn_and_a_scenario_that_waits_on_its_peers_is_not_run():
    """initcheck hung 2-rank kernels that accessed each other's memory at once: under it each API's kernels run on
    rank 0, then on rank 1 (their launch windows, read on the host's monotonic clock on the CPU, do not overlap),
    and a scenario whose kernels wait for their peers' (``message_passing``) is not run at 2 ranks, saying why; at
    1 rank it runs, and under memcheck at 2 ranks too."""
    cases, _ = plan([HEALTHY, "message_passing"], (2,))
    profile = settings(max_examples=1, deadline=None, database=None)
    said: list[str] = []
    run = RunSettings("cpu", profile, seed=3, sanitizers=("initcheck",), max_runs=1)
    done = run_cases(cases, run, echo=said.append)
    (healthy, last), (waits, none) = done
    assert (healthy.status, healthy.examples) == ("pass", 1), healthy.problem
    for api in ("triton", "gluon"):
        first, second = (o.apis[api].window for o in sorted(last.observations, key=lambda o: o.rank))
        assert first[1] <= second[0], (api, first, second)
    assert (waits.status, waits.examples, waits.sanitizer, none) == ("skipped", 0, "initcheck", None)
    assert waits.skipped == ("its kernels wait for their peers' kernels, so its ranks must run at once, and initcheck "
                             f"runs them in turn: {sanitizer.TOOLS['initcheck'].ranks_in_turn}")
    assert said[-2:] == ["[2/2] message_passing on 2 rank(s) under initcheck ...",
                         f"    skipped under initcheck: {waits.skipped}"], said
    for tools, ranks in ((("initcheck",), 1), (("memcheck",), 2)):
        ((case, _),) = run_cases(plan(["message_passing"], (ranks,))[0],
                                 RunSettings("cpu", profile, seed=3, sanitizers=tools, max_runs=1), echo=lambda _: None)
        assert (case.status, case.examples, case.skipped) == ("pass", 1, ""), (tools, ranks, case.problem)
