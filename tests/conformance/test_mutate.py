"""The mutation self-test's own tests, and the CI subset of the catalogue.

The catalogue, ``--list``, ``--only`` and stale mutants need no kernels (cpu_unit). A handful of representative
mutants run end to end on the CPU interpreter and must each die by a named scenario and check; a harmless probe
mutant (kept out of the real catalogue) must survive; the working tree must be byte-for-byte unchanged
(cpu_interpret). ``python -m conformance mutate`` runs the whole catalogue (nightly).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from conformance import cli
from conformance.kit.scenario import names
from conformance.mutation import report as mutation_report
from conformance.mutation import runner as mutation
from conformance.mutation.catalogue import CATALOGUE, TRITON_TRACING, Mutant
from iris.layout import RECORD_WORDS
from iris.tracing.events import FIELDS, LOGICAL

# Every logical field a record stores has a twin mutant in each tracing; the ones no record stores (cur_rank, op_index:
# the decoder supplies them) have a decoder mutant.
DEVICE_FIELDS = tuple(f.name for f in FIELDS if f.word is not None and f.role == LOGICAL)
HOST_FIELDS = tuple(f.name for f in FIELDS if f.word is None)
REPORT_FIELDS = {"name", "file", "breaks", "status", "kills", "cases_run", "seconds", "message"}
KILL_FIELDS = {"scenario", "world_size", "checks", "detail"}

# mutant -> (scenario, world size, checks that must be among those that failed)
REPRESENTATIVE = {
    "triton-trace-record-slot": ("store", 1, {"triton vs model"}),
    "triton-trace-capacity-past-end": ("overflow", 1, {"triton vs model"}),
    "triton-get-wrong-rank": ("get", 2, {"triton vs model", "triton vs gluon"}),
    "gluon-atomic_cas-swapped": ("atomic_cas", 1, {"gluon vs model", "triton vs gluon"}),
    "decoder-unfinished-as-range": ("unfinished_ranges", 1, {"triton vs model", "gluon vs model"}),
}
HARMLESS = Mutant("probe-harmless-docstring", TRITON_TRACING, "Triton device tracing:",
                  "Triton device tracing (a probe):", "changes the module docstring only: must survive", ("store@1",))


def _tree_digest() -> dict[str, str]:
    out = {}
    for package in mutation.PACKAGES:
        for path in sorted((mutation.ROOT / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                out[str(path.relative_to(mutation.ROOT))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


# ------------------------------------------------------------------------------------------ no kernels


@pytest.mark.cpu_unit
def test_catalogue_is_sound():
    assert mutation.catalogue_problems(CATALOGUE, names()) == []
    assert len(CATALOGUE) >= 30, f"catalogue has {len(CATALOGUE)} mutants, expected at least 30"
    by_name = {m.name for m in CATALOGUE}
    assert set(DEVICE_FIELDS) >= {"event_id", "pid", "pid_m", "pid_n", "target_rank", "address", "payload"}
    for api in ("triton", "gluon"):
        for field in DEVICE_FIELDS:
            hits = [n for n in by_name if n == f"{api}-trace-{field}" or n.startswith(f"{api}-trace-{field}-")]
            assert hits, (f"no {api} tracing mutant of field {field} "
                          f"({api}-trace-{field} in conformance/mutation/catalogue.py)")
    for api in ("triton", "gluon"):
        for word in range(RECORD_WORDS):
            assert f"{api}-trace-guard-word{word}" in by_name, (
                f"no {api} tracing mutant writing word {word} of the guard slot past max_events "
                f"({api}-trace-guard-word{word} in conformance/mutation/catalogue.py)")
    assert set(HOST_FIELDS) == {"cur_rank", "op_index"}
    for field in HOST_FIELDS:
        assert f"decoder-{field}" in by_name, f"no decoder mutant of field {field} (decoder-{field})"
    files = {m.file for m in CATALOGUE}
    for expected in ("iris/device/tracing.py", "iris/device/context.py", "iris/experimental/context.py",
                     "iris/tracing/records.py"):
        assert expected in files, f"no mutant in {expected}"


@pytest.mark.cpu_unit
def test_list_prints_every_mutant(capsys):
    assert cli.main(["mutate", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(CATALOGUE)
    for line, m in zip(lines, CATALOGUE, strict=True):
        assert line.split()[:2] == [m.name, m.file], line
        assert line.endswith(m.breaks), line


@pytest.mark.cpu_unit
def test_only_selects_in_catalogue_order():
    a, b, c = CATALOGUE[0], CATALOGUE[3], CATALOGUE[7]
    got = mutation.select([f"{c.name},{a.name}", b.name])
    assert [m.name for m in got] == [a.name, b.name, c.name]
    assert mutation.select(None) == list(CATALOGUE)


@pytest.mark.cpu_unit
def test_unknown_only_is_a_one_line_error(capsys):
    assert cli.main(["mutate", "--only", f"{CATALOGUE[0].name},no-such-mutant"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "mutate: unknown mutant 'no-such-mutant'; see python -m conformance mutate --list"


@pytest.mark.cpu_unit
def test_stale_mutants_fail_the_run_with_their_name_and_file(capsys, monkeypatch, tmp_path):
    stale = (
        Mutant("probe-moved-text", TRITON_TRACING, "text that is not in the file", "x", "nothing"),
        Mutant("probe-twice", TRITON_TRACING, "words = tl.where(w == L.WORD_", "x", "nothing"),
        Mutant("probe-missing-file", "iris/experimental/no_such_file.py", "a", "b", "nothing"),
    )
    monkeypatch.setattr(mutation, "CATALOGUE", stale)
    out = tmp_path / "mutate.json"
    assert cli.main(["mutate", "--out", str(out)]) == 1
    text = capsys.readouterr().out
    report = {m["name"]: m for m in json.loads(out.read_text())["mutants"]}
    assert [m["status"] for m in report.values()] == ["stale"] * 3
    assert report["probe-moved-text"]["message"] == (
        "stale mutant probe-moved-text: its old text 'text that is not in the file' is not found in "
        "iris/device/tracing.py (expected once)")
    times = (Path(__file__).parents[2] / TRITON_TRACING).read_text().count("words = tl.where(w == L.WORD_")
    assert times > 1
    assert f"is found {times} times in iris/device/tracing.py (expected once)" in report["probe-twice"]["message"]
    assert report["probe-missing-file"]["message"] == (
        "stale mutant probe-missing-file: iris/experimental/no_such_file.py does not exist")
    for name in report:
        assert f"stale mutant {name}:" in text


@pytest.mark.cpu_unit
def test_a_mutant_the_backend_cannot_show_is_skipped_with_the_reason(capsys, monkeypatch, tmp_path):
    """A GPU-only mutant (its bug needs programs that run at once) is skipped on the CPU: no case runs, the run
    passes, and the report says why."""
    gpu_only = Mutant("probe-gpu-only", TRITON_TRACING, "Triton device tracing:", "Triton device tracing (gpu):",
                      "a bug only concurrent programs show", ("store@1",), backends=("gpu",),
                      why_not_cpu="programs run one after another under the interpreter")
    monkeypatch.setattr(mutation, "CATALOGUE", (gpu_only,))
    out = tmp_path / "mutate.json"
    assert cli.main(["mutate", "--out", str(out)]) == 0
    (m,) = json.loads(out.read_text())["mutants"]
    assert (m["status"], m["cases_run"], m["kills"]) == ("skipped", 0, [])
    assert m["message"] == "not on cpu: programs run one after another under the interpreter"
    assert "skip probe-gpu-only: not on cpu" in capsys.readouterr().out


@pytest.mark.cpu_unit
def test_every_gpu_only_mutant_says_why():
    for m in CATALOGUE:
        assert set(m.backends) <= {"cpu", "gpu"} and m.backends, (m.name, m.backends)
        if "cpu" not in m.backends:
            assert m.why_not_cpu, f"{m.name}: a mutant skipped on the CPU must say why (why_not_cpu)"


@pytest.mark.cpu_unit
def test_plan_runs_killers_first():
    cases = mutation.all_cases(["store", "get"])
    assert cases == [("get", 2), ("store", 2), ("get", 1), ("store", 1), ("get", 4), ("store", 4)]
    m = Mutant("probe", TRITON_TRACING, "a", "b", "nothing", ("store@1", "get"))
    assert mutation.plan(m, cases) == [("store", 1), ("get", 2), ("get", 1), ("get", 4), ("store", 2), ("store", 4)]


@pytest.mark.cpu_unit
def test_any_world_size_a_scenario_accepts_is_a_case():
    assert mutation.all_cases(["store"], [8, 3]) == [("store", 3), ("store", 8)]
    even = "tests.conformance.faulty.even_ranks"
    assert mutation.all_cases([even, "store"], [2, 3, 6]) == [
        ("store", 2), (even, 2), ("store", 3), ("store", 6), (even, 6)]


# ------------------------------------------------------------------------------------------ end to end


def reads_representative(test):
    """Mark a test of the representative run: cpu_interpret; the tests sharing that minute-long run go to one
    pytest-xdist worker, first (tests/xdist_sharing.py)."""
    for mark in (pytest.mark.cpu_interpret, pytest.mark.long, pytest.mark.shares_setup):
        test = mark(test)
    return test


@pytest.fixture(scope="module")
def representative(tmp_path_factory):
    """The CI subset run through the CLI: (exit code, JSON report, tree digest before, after)."""
    out = tmp_path_factory.mktemp("mutate") / "mutate.json"
    before = _tree_digest()
    rc = cli.main(["mutate", "--only", ",".join(REPRESENTATIVE), "--out", str(out)])
    return rc, json.loads(out.read_text()), before, _tree_digest()


@reads_representative
def test_representative_mutants_are_killed_by_their_check(representative):
    rc, report, _, _ = representative
    assert rc == 0, [(m["name"], m["status"], m["message"]) for m in report["mutants"]]
    got = {m["name"]: m for m in report["mutants"]}
    assert list(got) == [m.name for m in CATALOGUE if m.name in REPRESENTATIVE]
    for name, (scenario, world_size, checks) in REPRESENTATIVE.items():
        m = got[name]
        assert m["status"] == "killed", (name, m["status"], m["message"])
        first = m["kills"][0]
        assert (first["scenario"], first["world_size"]) == (scenario, world_size), (name, first)
        assert checks <= set(first["checks"]), (name, first["checks"])


@reads_representative
def test_report_has_the_documented_fields(representative):
    _, report, _, _ = representative
    assert set(report["meta"]) == {"backend", "scale", "profile", "seed", "seconds", "scenarios", "ranks", "matrix",
                                   "argv"}
    assert (report["meta"]["backend"], report["meta"]["scale"], report["meta"]["seed"]) == ("cpu", "small",
                                                                                           mutation.SEED)
    for m in report["mutants"]:
        assert set(m) == REPORT_FIELDS, sorted(m)
        assert m["cases_run"] >= 1 and m["seconds"] > 0
        for kill in m["kills"]:
            assert set(kill) == KILL_FIELDS, sorted(kill)


@reads_representative
def test_working_tree_is_unchanged(representative):
    _, _, before, after = representative
    assert after == before


@pytest.mark.cpu_interpret
def test_a_harmless_mutant_survives():
    outcomes = mutation.run_mutants([HARMLESS], scenarios=["store"], ranks=(1,), echo=lambda line: None)
    (o,) = outcomes
    assert (o.status, o.kills, o.cases_run) == ("survived", [], 1), o
    assert mutation_report.exit_code(outcomes) == 1
    assert mutation_report.exit_code(outcomes, survivors_allowed=True) == 0
