"""The gate's judgement on hand-made case results: statuses, baseline comparison, the mutation score section."""

from __future__ import annotations

import json

import pytest

from conformance.report import gate
from conformance.report.known import Known
from conformance.report.summary import summary
from conformance.results import CaseResult, Hang

pytestmark = pytest.mark.cpu_unit


def _case(scenario: str, failing: tuple[str, ...] = (), error: str = "", seconds: float = 3.0) -> CaseResult:
    c = CaseResult(scenario, 2, "cpu", examples=2, seconds=seconds, error=error)
    for key in failing:
        c.verdict[key] = "FAIL"
    if failing:
        c.failure = f"{scenario}: 1 divergence(s)\nvalue=2, but should be 1 [{failing[0]} vs model, rank 0, buffer " \
                    f"out[0]]\nreplay: python -m conformance run --scenario {scenario}"
    return c


def test_statuses_of_every_check():
    cases = [_case("a", ("gluon",)), _case("b"), _case("c", error="RankDied: rank 1 died")]
    known = {("cpu-a-2r", "gluon vs model"): Known("cpu-a-2r", "gluon vs model", "why", "link"),
             ("cpu-b-2r", "triton vs gluon"): Known("cpu-b-2r", "triton vs gluon", "old", "link"),
             ("cpu-c-2r", "triton vs model"): Known("cpu-c-2r", "triton vs model", "flaky", "link")}
    outcomes = gate.judge(cases, known, "known.toml")
    assert [(o.case_id, o.check, o.status) for o in outcomes] == [
        ("cpu-a-2r", "triton vs model", "passed"), ("cpu-a-2r", "gluon vs model", "xfailed"),
        ("cpu-a-2r", "triton vs gluon", "passed"),
        ("cpu-b-2r", "triton vs model", "passed"), ("cpu-b-2r", "gluon vs model", "passed"),
        ("cpu-b-2r", "triton vs gluon", "xpassed"),
        ("cpu-c-2r", "triton vs model", "error"), ("cpu-c-2r", "gluon vs model", "error"),
        ("cpu-c-2r", "triton vs gluon", "error")]
    assert outcomes[6].message == "error: RankDied: rank 1 died", outcomes[6].message  # listed, still an error
    assert gate.counts(outcomes) == {"passed": 4, "failed": 0, "xfailed": 1, "xpassed": 1, "error": 3,
                                     "hang": 0, "skipped": 0}
    assert not gate.passes(outcomes)
    assert gate.passes(outcomes[:3]) and not gate.passes(outcomes[:3], mutation_ok=False)


def test_newly_failing_and_fixed_against_a_baseline():
    cases = [_case("a", ("gluon",)), _case("b"), _case("c", error="RankDied"), _case("d", ("triton vs gluon",))]
    baseline = {"cpu-a-2r": {"verdict": {"triton": "pass", "gluon": "pass", "triton vs gluon": "pass"}, "error": ""},
                "cpu-b-2r": {"verdict": {"triton": "pass", "gluon": "pass", "triton vs gluon": "FAIL"}, "error": ""},
                "cpu-c-2r": {"verdict": {"triton": "pass", "gluon": "FAIL", "triton vs gluon": "pass"}, "error": ""},
                "cpu-z-2r": {"verdict": {"triton": "FAIL", "gluon": "pass", "triton vs gluon": "pass"}, "error": ""}}
    newly, fixed = gate.compare(cases, baseline)
    assert newly == [("cpu-a-2r", "gluon vs model"), ("cpu-c-2r", "triton vs model"),
                     ("cpu-c-2r", "triton vs gluon"), ("cpu-d-2r", "triton vs gluon")], newly
    assert fixed == [("cpu-b-2r", "triton vs gluon")], fixed


def test_a_baseline_that_is_not_a_results_file_is_named(tmp_path):
    bad = tmp_path / "results.json"
    bad.write_text(json.dumps({"cases": [{"scenario": "x"}]}))
    with pytest.raises(ValueError, match=f"--baseline {bad}: not a conformance results.json .KeyError: 'case_id'"):
        gate.load_baseline(bad)
    with pytest.raises(ValueError, match="no such file"):
        gate.load_baseline(tmp_path / "missing.json")


def test_the_summary_gives_the_mutation_score_and_the_slowest_cases():
    cases = [_case("a", seconds=1.0), _case("b", seconds=9.5), _case("c", ("gluon",), seconds=4.0)]
    outcomes = gate.judge(cases, {}, "known.toml")
    mutation = {"mutants": [{"name": f"m{i}", "status": "killed", "breaks": "x"} for i in range(3)]
                + [{"name": "m-survivor", "status": "survived", "breaks": "drops op_index"}], "exit_code": 1}
    meta = {"backend": "cpu", "profile": "dev", "world_sizes": "2", "seed": 4, "seconds": 14.5}
    text = summary(cases, outcomes, meta, passed=False, comparison=([("cpu-c-2r", "gluon vs model")], []),
                   mutation=mutation)
    assert text.startswith("# Conformance gate: FAILED\n\nbackend cpu, profile dev, world sizes 2, seed 4: 3 cases, "
                           "9 checks in 14 s\n"), text[:200]
    assert "| 8 | 1 | 0 | 0 | 0 | 0 |" in text, text
    assert "## Mutation score\n\n3/4 mutants killed (75%)\n- `m-survivor` survived: drops op_index\n" in text, text
    assert "newly failing: 1, fixed: 0\n\n- newly failing: `cpu-c-2r` gluon vs model\n" in text, text
    slowest = text.split("## Slowest cases")[1].split("## Every case")[0]
    assert [line.split("`")[1] for line in slowest.splitlines() if line.startswith("| `")] == [
        "cpu-b-2r", "cpu-c-2r", "cpu-a-2r"], slowest


def test_a_divergence_between_the_apis_names_both_values():
    """Against the model the model is right; between Triton and Gluon neither is: both values are shown."""
    from conformance.check.divergence import Divergence
    from conformance.results import ExampleResult

    between = Divergence("triton vs gluon", 1, "buffer out[17]", "value", 513, 1)
    assert str(between) == "value: triton=513, gluon=1 [triton vs gluon, rank 1, buffer out[17]]"
    modelled = Divergence("gluon vs model", 1, "buffer out[17]", "value", 1, 513)
    assert str(modelled) == "value=1, but should be 513 [gluon vs model, rank 1, buffer out[17]]"
    case = _case("a", ("gluon", "triton vs gluon"))
    case.failure = ExampleResult("a", 2, "cpu", {"n": 1}, [modelled, between], 0.0).report()
    outcomes = {o.check: o.message for o in gate.judge([case], {}, "known.toml")}
    assert outcomes["triton vs gluon"].startswith("value: triton=513, gluon=1 [triton vs gluon, rank 1"), outcomes
    assert outcomes["gluon vs model"].startswith("value=1, but should be 513 [gluon vs model, rank 1"), outcomes


def _reports(tmp_path, cases: list[CaseResult]) -> tuple[list[dict], list[str], list, dict, str]:
    """What every report says of ``cases``: the results.json records, the summary table's lines, the gate's
    outcomes, the JUnit totals and summary.md."""
    from conformance.report import junit
    from conformance.report.output import summary_table, write_results

    outcomes = gate.judge(cases, {}, "known.toml")
    write_results(tmp_path / "results.json", cases, {})
    records = json.loads((tmp_path / "results.json").read_text())["cases"]
    totals = dict(junit.junit_tree(outcomes, "2024-01-01T00:00:00+00:00", 1.0).getroot().attrib)
    meta = {"backend": "cpu", "profile": "dev", "world_sizes": "2", "seed": 4, "seconds": 1.0}
    return records, summary_table(cases).splitlines(), outcomes, totals, summary(cases, outcomes, meta,
                                                                                   passed=gate.passes(outcomes))


def test_a_case_that_ran_no_example_is_no_pass_in_any_report(tmp_path):
    empty = CaseResult("a", 2, "cpu")  # no error, no failure, and nothing that ran: nothing to pass on
    assert (empty.ok, empty.problem) == (False, "no example ran to a verdict")
    assert empty.reported_verdict == {"triton": "error", "gluon": "error", "triton vs gluon": "error"}
    records, table, outcomes, totals, text = _reports(tmp_path, [empty, _case("b")])
    assert [(r["case_id"], r["ok"], r["verdict"], r["error"], r["examples"]) for r in records] == [
        ("cpu-a-2r", False, {"triton": "error", "gluon": "error", "triton vs gluon": "error"},
         "no example ran to a verdict", 0),
        ("cpu-b-2r", True, {"triton": "pass", "gluon": "pass", "triton vs gluon": "pass"}, "", 2)]
    assert table[2].split() == ["a", "2", "ERROR", "ERROR", "ERROR", "0", "0.0", "-", "-/-"], table
    assert table[-1] == "1 passed, 1 failed", table
    assert [(o.case_id, o.check, o.status, o.message) for o in outcomes[:3]] == [
        ("cpu-a-2r", check, "error", "error: no example ran to a verdict")
        for check in ("triton vs model", "gluon vs model", "triton vs gluon")]
    assert gate.counts(outcomes) == {"passed": 3, "failed": 0, "xfailed": 0, "xpassed": 0, "error": 3,
                                     "hang": 0, "skipped": 0}
    assert not gate.passes(outcomes)
    assert (totals["tests"], totals["failures"], totals["errors"], totals["skipped"]) == ("6", "0", "3", "0"), totals
    assert text.startswith("# Conformance gate: FAILED\n"), text[:100]
    assert "| `cpu-a-2r` | **ERROR** | **ERROR** | **ERROR** | 0 | 0.0 |" in text, text
    known = {("cpu-a-2r", "gluon vs model"): Known("cpu-a-2r", "gluon vs model", "why", "link")}
    assert gate.judge([empty], known, "known.toml")[1].status == "error"  # a known divergence does not excuse it


def test_an_errored_case_says_error_for_every_check_that_did_not_fail(tmp_path):
    errored = _case("c", ("gluon",), error="RankDied: rank 1 died")  # one check failed, then a rank died
    assert not errored.ok and errored.problem == "RankDied: rank 1 died" and errored.status == "error"
    records, table, outcomes, totals, _ = _reports(tmp_path, [errored])
    assert (records[0]["ok"], records[0]["verdict"], records[0]["error"]) == (
        False, {"triton": "error", "gluon": "FAIL", "triton vs gluon": "error"}, "RankDied: rank 1 died")
    assert table[2].split()[2:5] == ["ERROR", "ERROR", "ERROR"], table
    assert [o.status for o in outcomes] == ["error", "error", "error"]
    assert gate.compare([errored], {"cpu-c-2r": records[0]}) == ([], [])  # against itself: nothing new, nothing fixed


def test_an_example_that_started_and_never_ran_to_a_verdict_is_no_pass():
    case = _case("d")  # two examples ran to a verdict ...
    case.started = 3  # ... of three started, and no error says why
    assert (case.ok, case.problem) == (False, "1 of 3 examples did not run to a verdict")
    assert [o.status for o in gate.judge([case], {}, "known.toml")] == ["error"] * 3
    case.started = 2
    assert case.ok and case.problem == "" and case.reported_verdict == {"triton": "pass", "gluon": "pass",
                                                                         "triton vs gluon": "pass"}


def test_a_case_under_two_tools_is_a_record_each_and_a_known_divergence_applies_under_both(tmp_path):
    """Under ``--sanitize memcheck,racecheck`` a case runs once per tool: every report names the record
    (``<case id>@<tool>``), the known divergence (a case id) covers both, and a tool's finding is an error."""
    from conformance.report import junit
    from conformance.report.output import summary_table, write_results

    under = [_case("a", ("gluon",)), _case("a", ("gluon",)), _case("b"), _case("b", error="RankError: rank 0 ...")]
    for c, tool in zip(under, ("memcheck", "racecheck", "memcheck", "racecheck"), strict=True):
        c.sanitizer = tool
    under[2].not_ours = [{"tool": "memcheck", "why": "a reason", "report": "========= X\n=========     at k+0x10",
                          "count": 7}]
    known = {("cpu-a-2r", "gluon vs model"): Known("cpu-a-2r", "gluon vs model", "why", "link")}
    outcomes = gate.judge(under, known, "known.toml")
    assert [(o.case_id, o.status) for o in outcomes if o.check == "gluon vs model"] == [
        ("cpu-a-2r@memcheck", "xfailed"), ("cpu-a-2r@racecheck", "xfailed"), ("cpu-b-2r@memcheck", "passed"),
        ("cpu-b-2r@racecheck", "error")]
    write_results(tmp_path / "results.json", under, {"sanitize": ["memcheck", "racecheck"]},
                  {"cpu-b-2r@racecheck": {"checks": {"triton vs model": "x"}}})
    records = json.loads((tmp_path / "results.json").read_text())["cases"]
    assert [(r["case_id"], r["record_id"], r["sanitizer"], r.get("checks")) for r in records] == [
        ("cpu-a-2r", "cpu-a-2r@memcheck", "memcheck", None), ("cpu-a-2r", "cpu-a-2r@racecheck", "racecheck", None),
        ("cpu-b-2r", "cpu-b-2r@memcheck", "memcheck", None),
        ("cpu-b-2r", "cpu-b-2r@racecheck", "racecheck", {"triton vs model": "x"})]
    assert records[2]["not_ours"] == under[2].not_ours
    table = summary_table(under).splitlines()
    assert [row.split()[:4] for row in table[:1] + table[2:-1]] == [
        ["scenario", "ranks", "tool", "triton"], ["a", "2", "memcheck", "pass"], ["a", "2", "racecheck", "pass"],
        ["b", "2", "memcheck", "pass"], ["b", "2", "racecheck", "ERROR"]], table
    classnames = [case.get("classname") for case in junit.junit_tree(outcomes, "t", 1.0).getroot().iter("testcase")]
    assert classnames[::3] == ["test_conformance[cpu-a-2r@memcheck]", "test_conformance[cpu-a-2r@racecheck]",
                               "test_conformance[cpu-b-2r@memcheck]", "test_conformance[cpu-b-2r@racecheck]"]
    meta = {"backend": "cpu", "profile": "dev", "world_sizes": "2", "seed": 4, "seconds": 1.0,
            "sanitize": ["memcheck", "racecheck"]}
    text = summary(under, outcomes, meta, passed=False)
    assert text.startswith("# Conformance gate: FAILED\n\nbackend cpu, profile dev, world sizes 2, seed 4, under "
                           "compute-sanitizer memcheck, racecheck: 4 cases, 12 checks in 1 s\n"), text[:200]
    assert "| `cpu-b-2r@racecheck` | **ERROR** | **ERROR** | **ERROR** | 2 | 3.0 |" in text, text
    assert ("## Sanitizer reports that are not ours\n\n| case | reports | the tool's words | why |\n"
            "| --- | --- | --- | --- |\n"
            "| `cpu-b-2r@memcheck` | 7 | `========= X =========     at k+0x10` | a reason |\n") in text, text
    baseline = {"cpu-b-2r@racecheck": {"verdict": {"triton": "pass", "gluon": "pass", "triton vs gluon": "pass"},
                                       "error": ""},
                "cpu-b-2r": {"verdict": {"triton": "FAIL", "gluon": "pass", "triton vs gluon": "pass"}, "error": ""}}
    newly, fixed = gate.compare(under[2:], baseline)
    assert (newly, fixed) == ([("cpu-b-2r@racecheck", c) for c in ("triton vs model", "gluon vs model",
                                                                   "triton vs gluon")], []), (newly, fixed)
    (tmp_path / "old.json").write_text(json.dumps({"cases": [{"case_id": "cpu-b-2r", "error": ""}]}))
    assert list(gate.load_baseline(tmp_path / "old.json")) == ["cpu-b-2r"], "a results.json before record ids"


def _hung(scenario: str = "h", failing: tuple[str, ...] = ()) -> CaseResult:
    """A case whose second example hung on rank 1 (as ``run_case`` leaves it), replayed and hung again."""
    c = _case(scenario, failing)
    c.examples, c.started, c.seconds = 1, 2, 21.5
    replay = f"python -m conformance run --scenario {scenario} --ranks 2 --backend cpu --chunk 3 --params '{{\"n\":1}}'"
    c.hang = Hang([0, 1], {0: f"{scenario}: barrier after the kernels", 1: f"{scenario}: launch (triton kernel)"},
                  20.0, replay, {1: 'File "k.py", line 3 in kernel'})
    c.replay, c.replay_outcome = replay, "reproduced"
    c.error = f"hang: {c.hang.summary()}\nRankTimeout: RankPool(2 ranks, cpu, generation 1): ...\nreplay: {replay}"
    return c


HUNG = ("hang: ranks 0, 1 did not finish within the example's budget of 20 s (rank 0 at: h: barrier after the "
        "kernels; rank 1 at: h: launch (triton kernel))")
HUNG_REPLAY = "python -m conformance run --scenario h --ranks 2 --backend cpu --chunk 3 --params '{\"n\":1}'"


def test_a_hang_is_its_own_verdict_in_every_report(tmp_path):
    hung = _hung()
    assert (hung.ok, hung.status, hung.problem.splitlines()[0]) == (False, "hang", HUNG)
    assert hung.reported_verdict == {"triton": "hang", "gluon": "hang", "triton vs gluon": "hang"}
    records, table, outcomes, totals, text = _reports(tmp_path, [hung, _case("b")])
    record = records[0]
    assert (record["ok"], record["status"], record["verdict"], record["error"].splitlines()[0]) == (
        False, "hang", {"triton": "hang", "gluon": "hang", "triton vs gluon": "hang"}, HUNG)
    assert record["hang"] == {"ranks": [0, 1], "doing": {"0": "h: barrier after the kernels",
                                                          "1": "h: launch (triton kernel)"},
                              "timeout": 20.0, "replay": HUNG_REPLAY,
                              "stacks": {"1": 'File "k.py", line 3 in kernel'}}, record["hang"]
    assert (records[1]["status"], records[1]["hang"]) == ("pass", None)
    assert table[2].split() == ["h", "2", "HANG", "HANG", "HANG", "1", "21.5", "-", "-/-"], table
    assert table[-1] == "1 passed, 1 failed (1 hung)", table
    assert [(o.check, o.status, o.message) for o in outcomes[:3]] == [
        (check, "hang", f"{HUNG} (reproduced on replay); replay: {HUNG_REPLAY}")
        for check in ("triton vs model", "gluon vs model", "triton vs gluon")]
    assert outcomes[0].detail == hung.error + "\nreplayed once: reproduced"
    assert gate.counts(outcomes) == {"passed": 3, "failed": 0, "xfailed": 0, "xpassed": 0, "error": 0,
                                     "hang": 3, "skipped": 0}
    assert not gate.passes(outcomes)
    assert (totals["tests"], totals["failures"], totals["errors"], totals["skipped"]) == ("6", "3", "0", "0"), totals
    assert text.startswith("# Conformance gate: FAILED\n"), text[:100]
    assert ("| passed | failed | expected failures | strict XPASS | errors | hangs | skipped |\n"
            "| --- | --- | --- | --- | --- | --- | --- |\n| 3 | 0 | 0 | 0 | 0 | 3 | 0 |\n") in text, text
    assert (f"## Hangs\n\n| case | ranks that did not finish | where each was | budget | replayed | replay |\n"
            f"| --- | --- | --- | --- | --- | --- |\n| `cpu-h-2r` | 0, 1 | rank 0: h: barrier after the kernels; "
            f"rank 1: h: launch (triton kernel) | 20 s | reproduced | `{HUNG_REPLAY}` |\n") in text, text
    assert f"| `cpu-h-2r` | triton vs model | **HANG** | {HUNG} (reproduced on replay); replay: " in text, text
    assert "| `cpu-h-2r` | **HANG** | **HANG** | **HANG** | 1 | 21.5 |" in text, text
    assert "## Hangs" not in _reports(tmp_path, [_case("b")])[4]


def test_a_hang_is_a_junit_failure_of_type_hang():
    from conformance.report import junit

    root = junit.junit_tree(gate.judge([_hung()], {}, "known.toml"), "2024-01-01T00:00:00+00:00", 1.0).getroot()
    elements = [(tc.get("name"), [(e.tag, e.get("type"), e.get("message")) for e in tc])
                for tc in root.iter("testcase")]
    assert elements == [(check, [("failure", "hang", f"{HUNG} (reproduced on replay); replay: {HUNG_REPLAY}")])
                        for check in ("triton vs model", "gluon vs model", "triton vs gluon")], elements


def test_a_hang_fails_the_gate_listed_or_not_and_after_a_divergence_too():
    known = {("cpu-h-2r", check): Known("cpu-h-2r", check, "why", "link") for check in
             ("triton vs model", "gluon vs model", "triton vs gluon")}
    assert [o.status for o in gate.judge([_hung()], known, "known.toml")] == ["hang"] * 3
    diverged = _hung(failing=("gluon",))  # an example failed gluon vs model, then another hung
    assert diverged.reported_verdict == {"triton": "hang", "gluon": "FAIL", "triton vs gluon": "hang"}
    assert [o.status for o in gate.judge([diverged], {}, "known.toml")] == ["hang"] * 3


def test_a_hang_against_a_baseline_fails_every_check_there_and_here(tmp_path):
    from conformance.report.output import write_results

    passing = {"verdict": {"triton": "pass", "gluon": "pass", "triton vs gluon": "pass"}, "error": ""}
    newly, fixed = gate.compare([_hung()], {"cpu-h-2r": passing})
    assert (newly, fixed) == ([("cpu-h-2r", c) for c in ("triton vs model", "gluon vs model", "triton vs gluon")], [])
    write_results(tmp_path / "results.json", [_hung()], {})
    baseline = gate.load_baseline(tmp_path / "results.json")
    assert gate.compare([_case("h")], baseline) == ([], [("cpu-h-2r", c) for c in
                                                         ("triton vs model", "gluon vs model", "triton vs gluon")])


WHY = "its kernels wait for their peers' kernels, so its ranks must run at once, and initcheck runs them in turn: ..."


def test_a_case_not_run_under_its_tool_is_skipped_in_every_report_and_no_pass(tmp_path):
    """A case a tool cannot run (``CaseResult.skipped``) is neither a pass nor a failure: each report says
    ``skipped`` and why; a gate whose every check was skipped checked nothing, and fails."""
    from conformance.report import junit

    skipped = CaseResult("m", 2, "cpu", sanitizer="initcheck", skipped=WHY)
    assert (skipped.ok, skipped.status, skipped.problem) == (False, "skipped", "")
    assert skipped.reported_verdict == {"triton": "skipped", "gluon": "skipped", "triton vs gluon": "skipped"}
    records, table, outcomes, totals, text = _reports(tmp_path, [skipped, _case("b")])
    assert [(r["record_id"], r["ok"], r["status"], r["verdict"]["gluon"], r["error"], r["skipped"])
            for r in records] == [("cpu-m-2r@initcheck", False, "skipped", "skipped", "", WHY),
                                  ("cpu-b-2r", True, "pass", "pass", "", "")]
    assert table[2].split()[:6] == ["m", "2", "initcheck", "SKIPPED", "SKIPPED", "SKIPPED"], table
    assert table[-1] == "1 passed, 0 failed, 1 skipped", table
    assert [(o.status, o.message) for o in outcomes[:3]] == [("skipped", f"skipped: {WHY}")] * 3
    assert gate.counts(outcomes)["skipped"] == 3 and gate.passes(outcomes), "a skip fails nothing by itself"
    assert not gate.passes(outcomes[:3]), "a gate whose every check was skipped checked nothing"
    assert not gate.passes([]), "nor does one that judged no check"
    assert (totals["tests"], totals["failures"], totals["errors"], totals["skipped"]) == ("6", "0", "0", "3"), totals
    cases = junit.junit_tree(outcomes[:1], "2024-01-01T00:00:00+00:00", 1.0).getroot().iter("testcase")
    assert [(e.tag, e.get("type"), e.get("message")) for tc in cases for e in tc] == [
        ("skipped", "not run", f"skipped: {WHY}")]
    assert "| 3 | 0 | 0 | 0 | 0 | 0 | 3 |" in text, text
    assert f"## Not run\n\n| case | why |\n| --- | --- |\n| `cpu-m-2r@initcheck` | {WHY} |\n" in text, text
    assert "| `cpu-m-2r@initcheck` | skipped | skipped | skipped | 0 | 0.0 |" in text, text
    assert gate.compare([_case("m")], {"cpu-m-2r": records[0]}) == ([], []), "a skip failed no check of a baseline"
