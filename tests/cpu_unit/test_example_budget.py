"""The budget an example gets on the ranks (``conformance.harness.budget``): its size, the rule, the cap, the floor,
and the margin over examples measured healthy."""

from __future__ import annotations

from dataclasses import astuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.check.model import Event, Model
from conformance.harness.budget import RULES, Size, example_budget
from conformance.kit.scenario import load

pytestmark = pytest.mark.cpu_unit

CAP = 300.0  # the default --timeout (run_settings.JOB_TIMEOUT_S)

# The slowest example of each case measured on the CPU (seconds on the ranks; 1,368 examples of every scenario at
# 1, 2 and 4 ranks, a shared 2-core machine): (scenario, ranks, seconds, events, programs, elements).
MEASURED_CPU = [
    ("call_shapes", 4, 2.19, 828, 48, 0),
    ("copy_options", 4, 1.73, 540, 36, 1172),
    ("call_shapes", 2, 1.59, 414, 24, 0),
    ("two_views", 4, 1.59, 592, 24, 24),
    ("chunked_claims", 4, 1.58, 692, 100, 108),
    ("auto_ops", 4, 1.00, 64, 4, 0),
    ("overflow", 4, 0.71, 240, 20, 640),
    ("atomic_cas", 4, 0.63, 192, 24, 784),
    ("all_scatter", 4, 0.56, 144, 36, 1504),
    ("message_passing", 4, 0.56, 16, 4, 516),
    ("call_shapes", 1, 0.51, 250, 9, 0),
    ("tile_2d", 2, 0.39, 6, 6, 6144),
]
MARGIN_CPU = 10  # every measured example has at least ten times its time

sizes = st.builds(Size, st.integers(0, 10**7), st.integers(0, 10**6), st.integers(0, 10**8))


def _event(rank: int, pid: int) -> Event:
    return Event("store", "range", pid, 0, pid, rank, rank, None, 4)


def test_the_size_of_a_model_counts_every_rank():
    model = Model({0: [_event(0, 0), _event(0, 0), _event(0, 3)], 1: [_event(1, 0)], 2: []},
                  {0: {"out": [1, 2, 3], "flag": [1]}, 1: {"out": [4, 5, 6]}})
    assert Size.of(model) == Size(events=4, programs=3, elements=7)
    assert Size.of(Model({})) == Size(0, 0, 0)


def test_an_empty_example_gets_the_base_and_one_off_work_adds_first():
    for backend, rule in RULES.items():  # a loop: a test parametrized by backend gpu needs a GPU (conftest.py)
        assert example_budget(Size(0, 0, 0), backend, CAP, first=False) == rule.base
        assert example_budget(Size(0, 0, 0), backend, CAP) == rule.base + rule.first  # first by default


def test_the_rule_is_base_plus_each_term():
    assert example_budget(Size(1000, 100, 10_000), "cpu", CAP) == 51.5  # 30 + 20 + 1 + 0.5
    assert example_budget(Size(1000, 100, 10_000), "gpu", CAP, first=False) == 20.4  # 20.301, up to a tenth
    assert example_budget(Size(1000, 100, 10_000), "gpu", CAP) == 120.4  # and a fresh pool or compiles
    assert example_budget(Size(10**6, 4096, 10**6), "gpu", CAP, first=False) == 275.1  # 20 + 250 + 0.041 + 5


@given(a=sizes, b=sizes)
def test_the_budget_grows_with_the_size(a, b):
    smaller, larger = Size(*map(min, astuple(a), astuple(b))), Size(*map(max, astuple(a), astuple(b)))
    for backend in RULES:
        for first in (False, True):
            low, high = (example_budget(s, backend, 86_400.0, first=first) for s in (smaller, larger))
            assert low <= high, (backend, first, smaller, larger)


@given(size=sizes, cap=st.floats(0.001, 86_400.0))
def test_the_cap_bounds_every_budget_and_the_base_is_the_floor_below_it(size, cap):
    for backend, rule in RULES.items():
        budget = example_budget(size, backend, cap, first=False)
        assert budget <= cap
        assert budget >= min(cap, rule.base)
        assert example_budget(size, backend, cap, sanitizer="memcheck") == cap  # a sanitizer's slowdown: the cap


def test_a_large_example_gets_the_cap():
    assert example_budget(Size(10**7, 0, 0), "cpu", CAP) == CAP
    assert example_budget(Size(10**7, 0, 0), "gpu", 100.0) == 100.0


@pytest.mark.parametrize(("scenario", "ranks", "seconds", "events", "programs", "elements"), MEASURED_CPU)
def test_no_measured_example_comes_within_the_margin_of_its_budget(scenario, ranks, seconds, events, programs,
                                                                  elements):
    budget = example_budget(Size(events, programs, elements), "cpu", CAP, first=False)
    assert budget >= MARGIN_CPU * seconds, f"{scenario} on {ranks} ranks took {seconds} s of a {budget:g} s budget"


def test_on_a_gpu_a_million_events_get_over_three_times_the_host_work_measured_for_them():
    # the ranks' host work per event, both APIs: decode, export, read back, pickle (74 us on 2 cores, 1 rank)
    assert example_budget(Size(10**6, 1024, 0), "gpu", 86_400.0, first=False) >= 3 * 74.0
    # a cold call_shapes example compiled on the ranks in about 12 s before compiling ahead
    assert example_budget(Size(828, 48, 0), "gpu", CAP) >= 10 * 12.0


def test_the_hanging_test_scenario_gets_the_base_and_little_more():
    """tests/conformance/faulty/hangs.py: one 32-lane store event per rank (the test scenarios' one example)."""
    scenario = load("tests.conformance.faulty.hangs")
    params = {"BLOCK": 32}
    size = Size.of(scenario.expected(params, 2, scenario.settings(params)))
    assert size == Size(events=2, programs=2, elements=64)
    assert example_budget(size, "cpu", CAP) == 30.1  # 30 + 2 x 0.02 + 2 x 0.01 + 64 x 50e-6, up to a tenth


@pytest.mark.parametrize(("call", "message"), [
    (lambda: example_budget(Size(0, 0, 0), "cpu", 1e10),
     "example budget: cap (--timeout) must be a positive number of seconds, at most 86400 (MAX_TIMEOUT_S: a pool "
     "waits through poll(), whose timeout overflows past about 24 days), got 10000000000.0"),
    (lambda: example_budget(Size(0, 0, 0), "cpu", 0),
     "example budget: cap (--timeout) must be a positive number of seconds, at most 86400 (MAX_TIMEOUT_S: a pool "
     "waits through poll(), whose timeout overflows past about 24 days), got 0"),
    (lambda: example_budget(Size(0, 0, 0), "tpu", CAP),
     "example budget: backend 'tpu' is unknown; expected one of cpu, gpu"),
])
def test_a_bad_cap_or_backend_is_refused_by_name(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message
