"""``python -m conformance gate`` driven by real runs on 2-rank cpu worlds, with the faulty test-only scenarios.

``diverging`` fails ``gluon vs model`` and ``triton vs gluon`` on purpose; ``healthy`` passes. The JUnit file is
read back with the standard library's XML parser, independently of how it was written.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from conformance.cli import main

from .hang_stacks import check_hang_stacks

pytestmark = pytest.mark.cpu_interpret

FAULTY = "tests.conformance.faulty."
DIVERGING, HEALTHY, BROKEN = FAULTY + "diverging", FAULTY + "healthy", FAULTY + "mismatched_params"
NONE_RUN, HANGS = FAULTY + "rejects_every_draw", FAULTY + "hangs"
DIV_ID, HEALTHY_ID, BROKEN_ID, NONE_RUN_ID, HANGS_ID = (
    f"cpu-{FAULTY}{n}-2r" for n in ("diverging", "healthy", "mismatched_params", "rejects_every_draw", "hangs"))
REPLAY = "python -m conformance run --scenario tests.conformance.faulty.diverging --ranks 2 --backend cpu "


def _known(path, entries: dict[tuple[str, str], str]):
    path.write_text("".join(f'["{cid}"."{check}"]\nreason = "{reason}"\nlink = "https://example.org/issues/7"\n'
                            for (cid, check), reason in entries.items()))
    return path


def _gate(out, known, *scenarios, extra=()):
    argv = ["gate", "--backend", "cpu", "--ranks", "2", "--seed", "5", "--known", str(known), "--out", str(out)]
    return main(argv + [a for s in scenarios for a in ("--scenario", s)] + list(extra))


def _junit(out) -> tuple[dict, dict]:
    """The suite's counts and, per (classname, name), (kind of result child or 'passed', its message, its text)."""
    root = ET.parse(out / "junit.xml").getroot()
    suites = root.findall("testsuite")
    assert len(suites) == 1, f"testsuites={len(suites)}, but should be 1"
    suite = suites[0]
    counts = {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
    cases = {}
    for tc in suite.findall("testcase"):
        children = list(tc)
        assert len(children) <= 1, f"{tc.get('classname')} {tc.get('name')}: {len(children)} result elements"
        kind = children[0].tag if children else "passed"
        cases[(tc.get("classname"), tc.get("name"))] = (kind, children[0].get("message") if children else None,
                                                        children[0].text if children else None)
    return counts, cases


@pytest.fixture(scope="module")
def unlisted(tmp_path_factory):
    """A gate with an empty known-divergences file: diverging, healthy, a module that cannot be loaded and one that
    runs no example."""
    base = tmp_path_factory.mktemp("unlisted")
    code = _gate(base / "out", _known(base / "known.toml", {}), DIVERGING, HEALTHY, BROKEN, NONE_RUN)
    return code, base / "out"


def test_an_unlisted_divergence_is_a_junit_failure_and_fails_the_gate(unlisted):
    code, out = unlisted
    assert code == 1, f"exit code={code}, but should be 1 (an unlisted failure fails the gate)"
    counts, cases = _junit(out)
    assert counts == {"tests": 12, "failures": 2, "errors": 6, "skipped": 0}, counts
    div = f"test_conformance[{DIV_ID}]"
    assert cases[(div, "triton vs model")] == ("passed", None, None)
    for check in ("gluon vs model", "triton vs gluon"):
        kind, message, text = cases[(div, check)]
        assert kind == "failure", f"{check}: {kind}, but should be failure"
        assert message.startswith("value=2, but should be 1 [gluon vs model" if check == "gluon vs model" else
                                  "value: triton=1, gluon=2 [triton vs gluon"), message
        assert "(reproduced on replay); replay: " + REPLAY + "--chunk 3 --params '{\"BLOCK\":32}'" in message, message
        assert "value=2, but should be 1 [gluon vs model, rank 1, buffer out[0]]" in text, text
        assert text.endswith("replayed once: reproduced"), text
    assert all(cases[(f"test_conformance[{HEALTHY_ID}]", c)][0] == "passed"
               for c in ("triton vs model", "gluon vs model", "triton vs gluon"))


def test_a_module_that_cannot_be_loaded_errors_its_own_case_and_the_run_goes_on(unlisted):
    _, out = unlisted
    _, cases = _junit(out)
    for check in ("triton vs model", "gluon vs model", "triton vs gluon"):
        kind, message, _ = cases[(f"test_conformance[{BROKEN_ID}]", check)]
        assert kind == "error", f"{check}: {kind}, but should be error"
        assert message.startswith("error: ScenarioError: tests/conformance/faulty/mismatched_params.py: "
                                  "triton_kernel and gluon_kernel must take the same parameters"), message


def test_a_case_that_ran_no_example_errors_every_check_and_fails_the_gate(unlisted):
    """No example ran (its strategy rejects every draw): no verdict, so every report says error, never pass."""
    code, out = unlisted
    assert code == 1, f"exit code={code}, but should be 1"
    _, cases = _junit(out)
    for check in ("triton vs model", "gluon vs model", "triton vs gluon"):
        kind, message, _ = cases[(f"test_conformance[{NONE_RUN_ID}]", check)]
        assert kind == "error" and message.startswith("error: Unsatisfiable: Unable to satisfy assumptions of "
                                                      "check."), (check, kind, message)
    records = {c["case_id"]: c for c in json.loads((out / "results.json").read_text())["cases"]}
    errored = {"triton": "error", "gluon": "error", "triton vs gluon": "error"}
    none_run, broken = records[NONE_RUN_ID], records[BROKEN_ID]
    assert (none_run["ok"], none_run["examples"], none_run["verdict"]) == (False, 0, errored), none_run
    assert {k: v["status"] for k, v in none_run["checks"].items()} == {
        "triton vs model": "error", "gluon vs model": "error", "triton vs gluon": "error"}
    assert (broken["ok"], broken["verdict"]) == (False, errored), broken  # the verdict said pass before
    summary = (out / "summary.md").read_text()
    assert f"| `{NONE_RUN_ID}` | **ERROR** | **ERROR** | **ERROR** | 0 | 0.0 |" in summary, summary


def test_results_json_holds_verdicts_checks_replay_and_the_trace_of_the_failure(unlisted):
    _, out = unlisted
    data = json.loads((out / "results.json").read_text())
    assert data["meta"]["gate"] == "failed" and data["meta"]["seed"] == 5, data["meta"]
    assert data["meta"]["counts"] == {"passed": 4, "failed": 2, "xfailed": 0, "xpassed": 0, "error": 6,
                                      "hang": 0, "skipped": 0}
    cases = {c["case_id"]: c for c in data["cases"]}
    assert list(cases) == [DIV_ID, HEALTHY_ID, BROKEN_ID, NONE_RUN_ID], list(cases)
    div = cases[DIV_ID]
    assert div["verdict"] == {"triton": "pass", "gluon": "FAIL", "triton vs gluon": "FAIL"}, div["verdict"]
    assert {k: v["status"] for k, v in div["checks"].items()} == {
        "triton vs model": "passed", "gluon vs model": "failed", "triton vs gluon": "failed"}
    assert div["failing_params"] == {"BLOCK": 32} and div["replay_outcome"] == "reproduced", div
    assert div["failing_settings"] == {"chunk": 3, "max_events": 1024 + 256 * 3, "num_warps": None, "scale": "small"}, \
        div["failing_settings"]
    assert data["meta"]["scale"] == "small", data["meta"]
    assert div["replay"] == REPLAY + "--chunk 3 --params '{\"BLOCK\":32}'", div["replay"]
    assert div["trace"] == f"traces/{DIV_ID}.json", div.get("trace")
    trace = json.loads((out / div["trace"]).read_text())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert "store" in names, sorted(map(str, names))
    assert "trace" not in cases[HEALTHY_ID] and cases[HEALTHY_ID]["ok"], cases[HEALTHY_ID]
    summary = (out / "summary.md").read_text()
    assert summary.startswith("# Conformance gate: FAILED\n"), summary[:80]
    assert f"| `{DIV_ID}` | pass | **FAIL** | **FAIL** |" in summary, summary
    assert f"| `{HEALTHY_ID}` | pass | pass | pass |" in summary, summary


def test_a_hang_fails_the_gate_in_every_report_and_the_next_case_passes(tmp_path, capsys):
    """A hang, listed or not, fails the gate; the hung ranks are replaced and the next case runs and passes."""
    listed = {(HANGS_ID, check): "listed, still a hang" for check in ("triton vs model", "gluon vs model")}
    code = _gate(tmp_path / "out", _known(tmp_path / "known.toml", listed), HANGS, HEALTHY, extra=["--timeout", "2"])
    assert code == 1, f"exit code={code}, but should be 1 (a hang fails the gate)"
    out = tmp_path / "out"
    replay = "python -m conformance run --scenario tests.conformance.faulty.hangs --ranks 2 --backend cpu --chunk 3 " \
             "--params '{\"BLOCK\":32}'"
    at = {0: f"{FAULTY}hangs: barrier after the kernels (this rank's finished; waiting for the others)",
          1: f"{FAULTY}hangs: launch (triton kernel)"}
    hung = f"ranks 0, 1 did not finish within the example's budget of 2 s (rank 0 at: {at[0]}; rank 1 at: {at[1]})"
    message = f"hang: {hung} (reproduced on replay); replay: {replay}"
    counts, cases = _junit(out)
    assert counts == {"tests": 6, "failures": 3, "errors": 0, "skipped": 0}, counts
    for check in ("triton vs model", "gluon vs model", "triton vs gluon"):
        kind, got, text = cases[(f"test_conformance[{HANGS_ID}]", check)]
        assert (kind, got) == ("failure", message), (check, kind, got)
        assert text.startswith(f"hang: {hung}\nRankTimeout: RankPool(2 ranks, cpu, generation "), text
        assert text.endswith(f"\nreplay: {replay}\nreplayed once: reproduced"), text
        assert cases[(f"test_conformance[{HEALTHY_ID}]", check)][0] == "passed", check
    data = json.loads((out / "results.json").read_text())
    assert data["meta"]["counts"] == {"passed": 3, "failed": 0, "xfailed": 0, "xpassed": 0, "error": 0,
                                      "hang": 3, "skipped": 0}
    records = {c["case_id"]: c for c in data["cases"]}
    hangs, healthy = records[HANGS_ID], records[HEALTHY_ID]
    assert (hangs["status"], hangs["ok"], hangs["examples"], hangs["replay_outcome"]) == (
        "hang", False, 0, "reproduced"), hangs
    assert hangs["verdict"] == {"triton": "hang", "gluon": "hang", "triton vs gluon": "hang"}, hangs["verdict"]
    stacks = hangs["hang"].pop("stacks")
    assert hangs["hang"] == {"ranks": [0, 1], "doing": {"0": at[0], "1": at[1]}, "timeout": 2.0, "replay": replay}
    check_hang_stacks(stacks, spinning="1", waiting="0")
    assert {k: v["status"] for k, v in hangs["checks"].items()} == dict.fromkeys(
        ("triton vs model", "gluon vs model", "triton vs gluon"), "hang")
    assert (healthy["status"], healthy["ok"], healthy["examples"]) == ("pass", True, 4), healthy
    summary = (out / "summary.md").read_text()
    assert summary.startswith("# Conformance gate: FAILED\n"), summary[:80]
    assert "| 3 | 0 | 0 | 0 | 0 | 3 |" in summary, summary
    assert (f"| `{HANGS_ID}` | 0, 1 | rank 0: {at[0]}; rank 1: {at[1]} | 2 s | reproduced | "
            f"`{replay}` |") in summary, summary
    assert f"| `{HANGS_ID}` | **HANG** | **HANG** | **HANG** | 0 |" in summary, summary
    printed = capsys.readouterr().out
    assert "gate FAILED: 3 passed, 0 failed, 0 xfailed, 0 xpassed, 0 error, 3 hang, 0 skipped\n" in printed, printed
    assert f"  hang: {HANGS_ID} triton vs model: {message}\n" in printed, printed


def test_a_listed_divergence_is_an_expected_failure_and_the_gate_passes(tmp_path):
    known = _known(tmp_path / "known.toml", {(DIV_ID, "gluon vs model"): "stores offs + 2",
                                              (DIV_ID, "triton vs gluon"): "follows from gluon vs model"})
    code = _gate(tmp_path / "out", known, DIVERGING, HEALTHY)
    assert code == 0, f"exit code={code}, but should be 0 (every failure is listed)"
    counts, cases = _junit(tmp_path / "out")
    assert counts == {"tests": 6, "failures": 0, "errors": 0, "skipped": 2}, counts
    kind, message, _ = cases[(f"test_conformance[{DIV_ID}]", "gluon vs model")]
    assert (kind, message) == ("skipped", "expected failure: stores offs + 2 (https://example.org/issues/7)")
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert summary.startswith("# Conformance gate: PASSED\n"), summary[:80]
    assert f"- `{DIV_ID}` gluon vs model: stores offs + 2 (https://example.org/issues/7)" in summary, summary


def test_a_listed_check_that_passes_fails_the_gate_remove_it(tmp_path, capsys):
    known = _known(tmp_path / "known.toml", {(HEALTHY_ID, "gluon vs model"): "was broken once"})
    code = _gate(tmp_path / "out", known, HEALTHY)
    assert code == 1, f"exit code={code}, but should be 1 (strict XPASS)"
    counts, cases = _junit(tmp_path / "out")
    assert counts == {"tests": 3, "failures": 1, "errors": 0, "skipped": 0}, counts
    kind, message, _ = cases[(f"test_conformance[{HEALTHY_ID}]", "gluon vs model")]
    assert kind == "failure" and message.endswith("lists it as a known divergence (was broken once): remove it "
                                                  "from the file"), message
    assert f"xpassed: {HEALTHY_ID} gluon vs model: {HEALTHY_ID} gluon vs model passes" in capsys.readouterr().out


def test_a_mutation_run_that_cannot_start_fails_the_gate(tmp_path, monkeypatch):
    # the gate refuses an unknown mutant before anything runs (test_cli_errors); here it lets one through, so that
    # the mutation run it starts after the cases exits 2
    from conformance import cli

    monkeypatch.setattr(cli, "_check_mutants", lambda names: None)
    code = _gate(tmp_path / "out", _known(tmp_path / "known.toml", {}), HEALTHY, extra=["--mutants", "no-such"])
    assert code == 1, f"exit code={code}, but should be 1 (the mutation run failed)"
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["mutation"]["exit_code"] == 2, data["mutation"]
    assert "## Mutation score\n\nthe mutation self-test did not finish" in (tmp_path / "out" / "summary.md").read_text()


@pytest.mark.parametrize(("entry", "problem"), [
    ('["tpu-store-2r"."gluon vs model"]', "unknown backend 'tpu'; backends: cpu, gpu"),
    ('["cpu-nope-2r"."gluon vs model"]', "unknown scenario 'nope'; known scenarios: all_gather, all_scatter, "),
    ('["cpu-os.path-2r"."gluon vs model"]', "unknown scenario 'os.path'; known scenarios: all_gather, all_scatter, "),
    ('["cpu-store-2r"."gluon vs triton"]', "unknown check 'gluon vs triton'; checks: triton vs model, gluon vs "
                                           "model, triton vs gluon"),
    ('["cpu-store-two"."gluon vs model"]', "case id 'cpu-store-two' is not of the form <backend>-<scenario>-<R>r"),
    (f'["cpu-{FAULTY}even_ranks-3r"."gluon vs model"]', "even_ranks refuses 3 rank(s): pairs rank 2k with 2k+1"),
])
def test_an_entry_that_names_no_case_is_an_error_before_anything_runs(tmp_path, capsys, entry, problem):
    known = tmp_path / "known.toml"
    known.write_text(f'{entry}\nreason = "r"\nlink = "l"\n')
    code = _gate(tmp_path / "out", known, HEALTHY)
    err = capsys.readouterr().err
    assert code == 2, f"exit code={code}, but should be 2"
    assert err.count("\n") == 1 and problem in err and str(known) in err, err
    assert not (tmp_path / "out").exists(), "the gate wrote output before refusing its input"


def test_an_entry_without_a_link_is_an_error(tmp_path, capsys):
    known = tmp_path / "known.toml"
    known.write_text(f'["{DIV_ID}"."gluon vs model"]\nreason = "r"\n')
    assert _gate(tmp_path / "out", known, HEALTHY) == 2
    err = capsys.readouterr().err
    assert "link must be a non-empty string, got None" in err and err.count("\n") == 1, err
