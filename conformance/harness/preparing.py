"""Making a case ready ahead of its turn: its examples drawn under its seed and their kernel variants submitted to
the compile-ahead pool (``compile_ahead.Compiler``), so that the case only waits for what is left of them."""

from __future__ import annotations

import concurrent.futures as futures
import random
from typing import NamedTuple

from conformance.harness.compile_ahead import Compiler
from conformance.harness.drawing import drawn_examples, launch_key
from conformance.harness.run_settings import RunSettings
from conformance.kit.scenario import APIS, Scenario


class Prepared(NamedTuple):
    """A case made ready ahead of its turn (``prepare``): the seed its examples are drawn under, what they launch
    (``drawing.launch_key``), the future of their variants compiling ahead (``Compiler.submit``) and the
    ``compiler`` it was submitted to."""

    seed: int
    launch_keys: frozenset[str]
    compiling: futures.Future
    compiler: Compiler


def prepare(scenario: Scenario, world_size: int, run: RunSettings, compiler: Compiler) -> Prepared:
    """Draw the case's examples under its seed (``run.seed``, else a fresh one) and submit their kernel variants to
    ``compiler``, without waiting: ``run_case(..., ahead=prepared)`` then runs exactly those examples and waits only
    for what of their compiles is left. Raises what drawing raises (a broken strategy)."""
    case_seed = random.getrandbits(64) if run.seed is None else run.seed
    drawn = drawn_examples(scenario, world_size, run, case_seed, sizing=False)
    pending = compiler.submit(scenario.ref or scenario.name, world_size, [e.params for e in drawn], APIS,
                              tuple(range(world_size)), [e.settings.num_warps for e in drawn])
    return Prepared(case_seed, frozenset(launch_key(e) for e in drawn), pending, compiler)
