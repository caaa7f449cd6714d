"""What a rank says it is doing while it runs an example: the words a hang or a death quotes ("rank 0 was at: ...").
A rank's first example makes its symmetric heap and tracing (a step of its own, long under compute-sanitizer), so a
rank that never gets past it says so; later examples skip it."""

from __future__ import annotations

import pytest

from iris.ranks import backend_env, launch

from . import progress_jobs

pytestmark = pytest.mark.cpu_interpret

HEALTHY = "tests.conformance.faulty.healthy"
STEPS = [f"{HEALTHY}: resetting the heap", f"{HEALTHY}: setup (triton kernel)", f"{HEALTHY}: launch (triton kernel)",
         f"{HEALTHY}: waiting for the triton kernel to finish on this rank's device",
         f"{HEALTHY}: barrier after the kernels (this rank's finished; waiting for the others)"]


def test_a_new_ranks_first_example_says_it_makes_the_heap_and_later_ones_do_not():
    (said,) = launch(progress_jobs.run_examples_saying, 1, HEALTHY, {"BLOCK": 32}, 2, env=backend_env("cpu"),
                     timeout=300)
    loading = f"{HEALTHY}: loading the scenario module"
    first = f"{HEALTHY}: start-up, this rank's first example: its symmetric heap (16 MiB) and tracing"
    assert said == [[loading, first, *STEPS], [loading, *STEPS]], said
