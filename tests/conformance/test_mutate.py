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
from conformance.kit.scale import GPU, SMALL
from conformance.kit.scenario import names
from conformance.mutation import report as mutation_report
from conformance.mutation import runner as mutation
from conformance.mutation.catalogue import CATALOGUE, PLATFORMS, SCALES, TRITON_TRACING, Mutant
from iris.context_layout import RECORD_WORDS
from iris.tracing.events import FIELDS, LOGICAL

# Every logical field a record stores has a twin mutant in each tracing; the ones no record stores (cur_rank, op_index:
# the decoder supplies them) have a decoder mutant.
DEVICE_FIELDS = tuple(f.name for f in FIELDS if f.word is not None and f.role == LOGICAL)
HOST_FIELDS = tuple(f.name for f in FIELDS if f.word is None)
REPORT_FIELDS = {"name", "file", "breaks", "status", "kills", "cases_run", "seconds", "message"}
KILL_FIELDS = {"scenario", "world_size", "checks", "detail"}

# mutant -> (scenario, world size, checks that must be among those that failed): one mutant per mutated file
# (Triton tracing, Triton ops, Gluon ops, the decoder), together failing every check at 1 and 2 ranks. The full
# catalogue runs nightly (``python -m conformance mutate``); triton-trace-capacity-past-end (the same file and check,
# killed by overflow@1) left this set, as a second Triton tracing mutant at 1 rank, and triton-put-wrong-rank stands
# for triton-get-wrong-rank (the same bug in the twin op, failing the same checks at 2 ranks, with one killer case
# for the baseline to run, not two).
REPRESENTATIVE = {
    "triton-trace-record-slot": ("store", 1, {"triton vs model"}),
    "triton-put-wrong-rank": ("put", 2, {"triton vs model", "triton vs gluon"}),
    "gluon-atomic_cas-swapped": ("atomic_cas", 1, {"gluon vs model", "triton vs gluon"}),
    "decoder-unfinished-as-range": ("unfinished_ranges", 1, {"triton vs model", "gluon vs model"}),
}
HARMLESS = Mutant("probe-harmless-docstring", TRITON_TRACING, "Triton device tracing:",
                  "Triton device tracing (a probe):", "changes the module docstring only: must survive", ("store@1",))
BARRIER = 'progress(f"{name}: barrier after the kernels (this rank\'s finished; waiting for the others)")'
HANGING = Mutant("probe-hang", "conformance/harness/rank_side.py", BARRIER, BARRIER + "\n        time.sleep(3600)",
                 "every rank sleeps once its kernels ran: a hang", ("store@1",))


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
                      why_skipped="programs run one after another under the interpreter")
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
        assert set(m.backends) <= set(PLATFORMS) and m.backends, (m.name, m.backends)
        if set(m.backends) != {"cpu", "gpu"}:
            assert m.why_skipped, f"{m.name}: a mutant skipped on some platform must say why (why_skipped)"


@pytest.mark.cpu_unit
def test_every_scaled_mutant_names_its_scale_and_the_dimension_that_kills_it():
    scaled = [m for m in CATALOGUE if m.scale is not None]
    assert len(scaled) >= 12, [m.name for m in scaled]
    for m in scaled:
        assert m.scale in SCALES, (m.name, m.scale)
        assert m.dimension, f"{m.name}: a mutant run at scale {m.scale} must say which drawn dimension kills it"
        assert not m.shows_on("cpu"), f"{m.name}: the CPU has no scale but its own"


@pytest.mark.cpu_unit
def test_every_mutant_leaves_its_file_valid_python():
    for m in CATALOGUE:
        text = (mutation.ROOT / m.file).read_text()
        compile(text.replace(m.old, m.new, 1), m.file, "exec")  # a SyntaxError names the mutant's file and line


def _fake_probe(calls: list, *, mutants_fail: bool):
    """A stand-in for ``run_probe`` that notes each call (copy, cases, stop_at_first, scale): the unmutated copy
    passes every case; a mutated one fails its first case (``mutants_fail``) or passes every one."""

    def probe(tree, cases, *, stop_at_first, scale=None, **_):
        calls.append((tree.name, [tuple(c) for c in cases], stop_at_first, scale))
        ok = tree.name == "baseline" or not mutants_fail
        records = [{"scenario": n, "world_size": w, "ok": ok, "checks": [] if ok else ["triton vs model"],
                    "detail": "" if ok else "differs"} for n, w in (cases if ok else cases[:1])]
        return mutation.ProbeRun(records, False, 0, "")

    return probe


@pytest.mark.cpu_unit
@pytest.mark.parametrize(("hip", "platform", "runs", "skipped"), [
    (None, "gpu-cuda", "probe-cuda", "probe-hip"),
    ("6.4.0", "gpu-hip", "probe-hip", "probe-cuda"),
])
def test_a_gpu_skips_the_mutants_of_the_other_vendors_path(monkeypatch, hip, platform, runs, skipped):
    """A mutant of one vendor's code path (hw.py branches on the target) is skipped on a GPU of the other vendor
    (told apart by torch.version.hip), with its reason; one of any GPU's path runs on both."""
    import torch

    monkeypatch.setattr(torch.version, "hip", hip)
    assert mutation.platform("gpu") == platform and mutation.platform("cpu") == "cpu"
    probes = [Mutant(f"probe-{vendor}", TRITON_TRACING, "Triton device tracing:", "Triton device tracing (x):",
                     "nothing", ("store@1",), backends=(f"gpu-{vendor}",), why_skipped=f"only {vendor} takes it")
              for vendor in ("cuda", "hip")]
    ran = []
    monkeypatch.setattr(mutation, "run_probe", _fake_probe(ran, mutants_fail=False))
    lines = []
    outcomes = {o.name: o for o in mutation.run_mutants(probes, scenarios=["store"], ranks=(1,), backend="gpu",
                                                        echo=lines.append)}
    vendor = skipped.removeprefix("probe-")
    assert (outcomes[skipped].status, outcomes[skipped].message) == ("skipped", f"not on {platform}: only {vendor} "
                                                                                f"takes it")
    assert f"skip {skipped}: not on {platform}: only {vendor} takes it" in lines
    assert outcomes[runs].status == "survived" and len(ran) == 2  # its baseline, then the mutant itself
    assert [m.shows_on(platform) for m in (Mutant("any", "f", "a", "b", "x", backends=("gpu",)),
                                           Mutant("cpu", "f", "a", "b", "x", backends=("cpu",)))] == [True, False]


@pytest.mark.cpu_unit
def test_a_scaled_mutant_runs_at_its_scale_against_a_baseline_at_that_scale(monkeypatch):
    """Each scale gets its own baseline of the cases its mutants name; each mutant's probe runs at its scale."""
    plain = Mutant("probe-plain", TRITON_TRACING, "Triton device tracing:", "Triton device tracing (a):", "nothing",
                   ("store@1",))
    scaled = Mutant("probe-scaled", TRITON_TRACING, "Triton device tracing:", "Triton device tracing (b):",
                    "nothing", ("store@1",), scale="gpu")
    calls = []
    monkeypatch.setattr(mutation, "run_probe", _fake_probe(calls, mutants_fail=True))
    outcomes = mutation.run_mutants([plain, scaled], scenarios=["store"], ranks=(1,), echo=lambda line: None)
    assert calls == [("baseline", [("store", 1)], False, "small"), ("baseline", [("store", 1)], False, "gpu"),
                     ("probe-plain", [("store", 1)], True, "small"), ("probe-scaled", [("store", 1)], True, "gpu")]
    assert [(o.name, o.status, o.killed_by) for o in outcomes] == [
        ("probe-plain", "killed", "store@1 (triton vs model)"), ("probe-scaled", "killed", "store@1 (triton vs model)")]


@pytest.mark.cpu_unit
@pytest.mark.parametrize(("scale", "passed"), [(None, SMALL), ("small", SMALL), ("gpu", GPU)])
def test_the_probe_runs_a_case_at_the_spec_scale(monkeypatch, scale, passed):
    """The spec's scale name becomes the ``scale`` of run_case's settings, the scale of that name
    (conformance.kit.scale); none: the small scale."""
    from types import SimpleNamespace

    from conformance.harness import case
    from conformance.mutation import probe

    seen = []

    def run_case(pools, scenario, world_size, run, ahead=None, on_example=None):
        seen.append(run.scale)
        return SimpleNamespace(examples=1, problem=None), None

    monkeypatch.setattr(case, "run_case", run_case)
    spec = {"backend": "cpu", "profile": "dev", "seed": 1, "job_timeout": 5.0, "scale": scale}
    record = probe.run_one(None, "store", 1, spec)
    assert (record["ok"], record["checks"], seen) == (True, [], [passed])


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


@pytest.fixture(scope="module")
def probes():
    """The harmless and the hanging probe mutants, run as one mutation run: one baseline for both. The example's
    budget is capped at 3 s (a store@1 example takes about 0.5 s): the hang is killed within it, not by a per-mutant
    time limit."""
    outcomes = mutation.run_mutants([HARMLESS, HANGING], scenarios=["store"], ranks=(1,), job_timeout=3.0,
                                    echo=lambda line: None)
    return dict(zip((HARMLESS.name, HANGING.name), outcomes, strict=True))


def reads_probes(test):
    """Mark a test of the probe run: cpu_interpret; the two share that run on one pytest-xdist worker."""
    return pytest.mark.cpu_interpret(pytest.mark.shares_setup(test))


@reads_probes
def test_a_harmless_mutant_survives(probes):
    o = probes[HARMLESS.name]
    assert (o.status, o.kills, o.cases_run) == ("survived", [], 1), o
    assert mutation_report.exit_code([o]) == 1
    assert mutation_report.exit_code([o], survivors_allowed=True) == 0


@reads_probes
def test_a_mutant_that_hangs_a_rank_is_killed_by_hang(probes):
    """Within the example's budget (capped at 3 s here), not a per-mutant time limit; the report says hang."""
    o = probes[HANGING.name]
    outcomes = [o]
    assert (o.status, o.cases_run, o.message) == ("killed", 1, ""), o
    (kill,) = o.kills
    assert (kill["scenario"], kill["world_size"], kill["checks"]) == ("store", 1, ["hang"]), kill
    assert kill["detail"].startswith("hang: rank 0 did not finish within the example's budget of 3 s (rank 0 at: "
                                     "store: barrier after the kernels (this rank's finished; waiting for the "
                                     "others))\nRankTimeout: "), kill["detail"]
    assert o.killed_by == "store@1 (hang)" and mutation_report.exit_code(outcomes) == 0
