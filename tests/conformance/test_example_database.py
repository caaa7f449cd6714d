"""Hypothesis's example database keeps each case's saved failures apart: a failure one case saved is replayed by that
case, never as the first example of another (every case runs through the same test function, which Hypothesis would
otherwise take for one test)."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

from conformance.harness.case import run_case
from conformance.harness.profiles import database_key, load_profile
from conformance.harness.run_settings import RunSettings
from conformance.kit.scale import GPU, SMALL
from conformance.kit.scenario import load

pytestmark = pytest.mark.cpu_interpret

DIVERGING = "tests.conformance.faulty.diverging"  # its Gluon kernel stores what the model does not: it always fails


def _keys(folder) -> set[str]:
    """The database's keys as its folders (one a key: Hypothesis's layout of ``DirectoryBasedExampleDatabase``)."""
    return {p.name for p in folder.iterdir() if p.is_dir()}


def test_a_failure_saved_for_one_case_is_kept_under_that_case_alone(pools, tmp_path):
    profile = settings(load_profile("dev"), database=DirectoryBasedExampleDatabase(tmp_path))
    first, _ = run_case(pools, load(DIVERGING), 1, RunSettings("cpu", profile, chunk=3))
    assert not first.ok and first.failure, first
    saved = _keys(tmp_path)
    assert saved, "the failing case saved nothing"
    again, _ = run_case(pools, load(DIVERGING), 1, RunSettings("cpu", profile, chunk=3))
    assert not again.ok and again.failing_params == first.failing_params, (again, first)
    assert _keys(tmp_path) == saved, "the same case ran again under another key"
    # the same scenario, another world size
    other, _ = run_case(pools, load(DIVERGING), 2, RunSettings("cpu", profile, chunk=3))
    assert not other.ok, other
    assert _keys(tmp_path) - saved, "the 2-rank case saved its failure under the 1-rank case's key"


def test_every_input_of_a_cases_draws_is_in_its_key():
    base = dict(ref="store", world_size=2, backend="cpu", scale=SMALL, chunk=None, num_warps=None)
    changed = [dict(ref="load"), dict(world_size=4), dict(backend="gpu"), dict(scale=GPU), dict(chunk=3),
               dict(num_warps=8)]
    keys = [database_key(**base)] + [database_key(**(base | c)) for c in changed]
    assert len(set(keys)) == len(keys), keys
