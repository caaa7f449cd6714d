"""``--seed N``: two runs of the suite with the same seed choose the same examples and reach the same verdicts.

Real runs on cpu worlds of 1 and 2 ranks; ``results.json`` holds per case a digest of every example's params in
order (``params_digest``), so equal digests mean equal examples. Another seed must choose other examples.
"""

from __future__ import annotations

import json

import pytest

from conformance.cli import main

pytestmark = pytest.mark.cpu_interpret

SCENARIOS = ("store", "atomic_add")
EXAMPLES = 2  # per case: what the seed decides shows in the first examples as in all six (test_conformance runs those)


def _run(out, seed: int, ranks: str = "1,2") -> dict[str, tuple]:
    argv = ["run", "--backend", "cpu", "--ranks", ranks, "--seed", str(seed), "--examples", str(EXAMPLES), "--out",
            str(out)]
    assert main(argv + [a for s in SCENARIOS for a in ("--scenario", s)]) == 0, f"seed {seed}: a case failed"
    data = json.loads((out / "results.json").read_text())
    assert data["meta"]["seed"] == seed, data["meta"]
    return {c["case_id"]: (c["params_digest"], c["examples"], c["verdict"], c["ok"]) for c in data["cases"]}


def test_the_same_seed_chooses_the_same_examples_and_verdicts(tmp_path, monkeypatch):
    monkeypatch.setenv("IRIS_HYPOTHESIS_DB", "none")  # no saved example may be tried first in either run
    first, second = _run(tmp_path / "a", 11), _run(tmp_path / "b", 11)
    assert list(first) == [f"cpu-{s}-{r}r" for s in SCENARIOS for r in (1, 2)], list(first)
    assert all(len(digest) == 64 and examples == EXAMPLES for digest, examples, _, _ in first.values()), first
    assert second == first, {k: (first[k], second.get(k)) for k in first if second.get(k) != first[k]}
    other = _run(tmp_path / "c", 12, ranks="1")  # another seed: its 1-rank cases are enough to differ
    assert list(other) == [f"cpu-{s}-1r" for s in SCENARIOS], list(other)
    changed = [k for k in other if other[k][0] != first[k][0]]
    assert changed, "seed 12 chose the same examples as seed 11 in every case"


@pytest.mark.parametrize("examples", [1, 3])
def test_examples_sets_the_count_per_case(tmp_path, monkeypatch, examples):
    monkeypatch.setenv("IRIS_HYPOTHESIS_DB", "none")
    out = tmp_path / str(examples)
    argv = ["run", "--backend", "cpu", "--ranks", "1", "--scenario", "store", "--examples", str(examples), "--seed",
            "3", "--out", str(out)]
    assert main(argv) == 0
    data = json.loads((out / "results.json").read_text())
    assert data["meta"]["examples"] == examples, data["meta"]
    assert [c["examples"] for c in data["cases"]] == [examples], data["cases"]
