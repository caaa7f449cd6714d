"""Conformance throughput and JIT compiles per example after warm-up (goal: 0).

    python -m benchmarks.bench_conformance [--backend cpu|gpu] [--ranks 2] [--examples 20] [--scenario NAME ...]
                                           [--cold-warm N]

For each scenario that accepts the world size (``--ranks``; a scenario named with ``--scenario`` that refuses it is
refused before anything runs): a first example, then ``--examples`` more, drawn as the harness draws them
(``drawing.examples``: the scenario's params and the trace chunk of their settings), on one pooled world started
beforehand (start-up is nobody's example time). A line per scenario as it finishes, then the mean of the phases:

  examples/s        the examples after the first, per second;
  compiles/example  kernel variants compiled per warm example, summed over ranks and both APIs (an example is
                    warm once an earlier one had the same compile-time values, ``Scenario.compile_key``: block
                    sizes, dtypes), and how many examples were warm;
  variants t/g      the most compiled variants of the Triton / Gluon kernel across the ranks for one configuration
                    (``example.variants_per_config``): 1 where one compile serves every rank, R for a kernel that
                    takes the rank as a constexpr (Triton's of ``tracing_1d_address``);
  failures          failing examples, those of ``--cold-warm`` included;
  cold/warm s       with ``--cold-warm N``: the wall seconds of the scenario's first N examples (the same params)
                    run again on fresh rank processes (no kernel in memory), pool start-up excluded: cold with an
                    empty Triton cache (``TRITON_CACHE_DIR``, a new temporary folder), then warm on the cache the
                    cold run filled; N is at most ``--examples`` + 1, the examples the scenario ran;
  ms per example    by phase (dispatch, reset, setup, barriers, compile, launch, kernel, readback, model, compare),
                    on the rank whose kernels took longest: ``compile`` is the time inside Triton's compiler (cold
                    compiles and loads from its disk cache, through its compilation listener), carved out of
                    ``launch``, which keeps the rest of the launch calls (specialization, module load, enqueue).

Under the interpreter (``--backend cpu``, the default where torch sees no GPU) nothing is compiled or cached:
compiles/example reads 0.00, variants -/-, the compile phase 0 and cold/warm are plain wall seconds; those figures
are meaningful on a GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from hypothesis import HealthCheck, given, settings

from conformance.harness.drawing import Example, examples
from conformance.harness.example import run_example
from conformance.harness.suite import SelectionError, plan
from conformance.kit.scenario import Scenario, load
from conformance.report.output import variants_cell
from conformance.results import ExampleResult
from iris.cli_args import ExtendOnce, OneLineParser, chosen_backend, int_at_least, world_size
from iris.ranks import Pools

PHASES = ("dispatch", "reset", "setup", "barriers", "compile", "launch", "kernel", "readback", "model", "compare")
COLUMNS = (("scenario", 28), ("examples/s", 10), ("compiles/example", 17), ("variants t/g", 12),
           ("failures", 8), ("cold/warm s", 13))
MS_LABEL = "ms per example:"


@dataclasses.dataclass(frozen=True)
class Row:
    """One scenario's figures (``cold``/``warm``: seconds, None when not measured)."""

    name: str
    rate: float
    compiles: str
    variants: str
    failures: int
    phases: dict[str, float]
    cold: float | None = None
    warm: float | None = None


def draw_and_run(pools: Pools, scenario: Scenario, backend: str, world_size: int, count: int) -> list[ExampleResult]:
    """Run ``count`` examples drawn as the harness draws them, one after another, on ``pools``."""
    results: list[ExampleResult] = []

    @settings(max_examples=count, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(example=examples(scenario, world_size))
    def run(example):
        results.append(run_example(pools, scenario, world_size, example, backend))

    run()
    return results


@contextmanager
def triton_cache(path: str) -> Iterator[None]:
    """``TRITON_CACHE_DIR=path`` in this process's environment meanwhile: rank processes started meanwhile
    inherit it (a pool spawns its ranks with a copy of ``os.environ``)."""
    saved = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = path
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = saved


def fresh_run(scenario: Scenario, backend: str, world_size: int, drawn: Sequence[Example],
              cache_dir: str) -> tuple[float, int]:
    """Wall seconds of the ``drawn`` examples on a new pool whose ranks use the Triton cache ``cache_dir``
    (start-up excluded), and how many of them failed."""
    with triton_cache(cache_dir), Pools() as pools:
        pools.get(world_size, backend).start()
        start = time.perf_counter()
        results = [run_example(pools, scenario, world_size, e, backend) for e in drawn]
        return time.perf_counter() - start, sum(not r.ok for r in results)


def cold_warm(scenario: Scenario, backend: str, world_size: int,
              drawn: Sequence[Example]) -> tuple[float, float, int]:
    """Seconds of the ``drawn`` examples with an empty Triton cache, then with the cache that run filled; failures
    of both."""
    with tempfile.TemporaryDirectory(prefix="iris-triton-cache-") as cache_dir:
        cold, cold_failures = fresh_run(scenario, backend, world_size, drawn, cache_dir)
        warm, warm_failures = fresh_run(scenario, backend, world_size, drawn, cache_dir)
    return cold, warm, cold_failures + warm_failures


def bench(pools: Pools, name: str, backend: str, world_size: int, examples: int, cold_warm_examples: int = 0) -> Row:
    """One scenario's row: a first example and ``examples`` more; ``cold_warm_examples`` > 0 adds cold/warm."""
    scenario = load(name)
    pools.get(world_size, backend).start()  # the pool's start-up is nobody's example time
    start = time.perf_counter()
    results = draw_and_run(pools, scenario, backend, world_size, examples + 1)
    elapsed = time.perf_counter() - start - results[0].seconds
    keys = [scenario.compile_key(r.params) for r in results]
    warm = [r for i, r in enumerate(results) if keys[i] in keys[:i]]
    compiles = f"{sum(sum(r.compiles.values()) for r in warm) / len(warm):.2f}" if warm else "-"
    variants = {api: max((r.variants[api] for r in results if r.variants.get(api) is not None), default=None)
                for api in ("triton", "gluon")}
    timed = results[1:] or results
    phases = {k: 1e3 * sum(r.timings.get(k, 0.0) for r in timed) / len(timed) for k in PHASES}
    row = Row(name, (len(results) - 1) / max(elapsed, 1e-9), f"{compiles} ({len(warm)} warm)",
              variants_cell(variants), sum(not r.ok for r in results), phases)
    if cold_warm_examples > 0:
        first = [Example(r.params, r.settings) for r in results[:cold_warm_examples]]
        cold, warm_s, failures = cold_warm(scenario, backend, world_size, first)
        row = dataclasses.replace(row, failures=row.failures + failures, cold=cold, warm=warm_s)
    return row


def rows(scenarios: Sequence[str], backend: str, world_size: int, examples: int,
         cold_warm_examples: int = 0) -> Iterator[Row]:
    """A row per scenario of ``scenarios`` that accepts ``world_size``, in order, on one set of pools."""
    with Pools() as pools:
        for name in scenarios:
            if load(name).refusal(world_size) is None:
                yield bench(pools, name, backend, world_size, examples, cold_warm_examples)


def header() -> str:
    """The table's column titles."""
    return _cells([title for title, _ in COLUMNS]) + f"   {MS_LABEL} " + " ".join(f"{k:>8s}" for k in PHASES)


def line(row: Row) -> str:
    """One scenario's line of the table."""
    cold_warm_cell = "-" if row.cold is None else f"{row.cold:.2f}/{row.warm:.2f}"
    cells = (row.name, f"{row.rate:.2f}", row.compiles, row.variants, str(row.failures), cold_warm_cell)
    return _with_phases(cells, row.phases)


def mean_line(table: Sequence[Row]) -> str:
    """The phases' mean over the rows of ``table``."""
    phases = {k: sum(r.phases[k] for r in table) / len(table) for k in PHASES}
    return _with_phases(("mean over scenarios",) + ("",) * (len(COLUMNS) - 1), phases)


def _cells(cells: Sequence[str]) -> str:
    """``cells`` in the table's columns: the first left-aligned, the others right-aligned."""
    pairs = enumerate(zip(cells, [w for _, w in COLUMNS], strict=True))
    return " ".join(f"{c:<{w}s}" if i == 0 else f"{c:>{w}s}" for i, (c, w) in pairs)


def _with_phases(cells: Sequence[str], phases: dict[str, float]) -> str:
    return _cells(cells) + f"   {'':{len(MS_LABEL)}s} " + " ".join(f"{phases[k]:8.1f}" for k in PHASES)


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Print the table (a line per scenario as it finishes, then the mean); return its rows. Bad input is refused
    in one line on stderr, exit code 2, before any rank starts."""
    p = OneLineParser(prog="python -m benchmarks.bench_conformance", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=("cpu", "gpu"), default=None, help="default: gpu where torch sees one")
    p.add_argument("--ranks", type=world_size(), default=2, help="the world size (default 2)")
    p.add_argument("--examples", type=int_at_least("--examples", 1), default=20,
                   help="examples per scenario after the first (default 20)")
    p.add_argument("--scenario", action=ExtendOnce, help="scenario name or dotted module path (repeatable; default: "
                   "every scenario that accepts --ranks)")
    p.add_argument("--cold-warm", type=int_at_least("--cold-warm", 0), default=0, metavar="N",
                   help="also time the first N examples on fresh ranks, with an empty then a warm Triton cache "
                   "(default 0: not measured)")
    args = p.parse_args(argv)
    backend = chosen_backend(p, args.backend)
    if args.cold_warm > args.examples + 1:
        p.error(f"--cold-warm {args.cold_warm}: expected at most {args.examples + 1}, the examples a scenario runs "
                f"(--examples {args.examples} and the first)")
    try:
        cases, _ = plan(args.scenario, (args.ranks,))
    except SelectionError as e:
        p.error(str(e))
    if not cases:
        p.error(f"--ranks {args.ranks}: no scenario accepts {args.ranks} rank(s)")
    print(f"backend {backend}, {args.ranks} ranks, {args.examples} examples after a first one"
          + (f", cold/warm: the first {args.cold_warm}" if args.cold_warm > 0 else ""))
    print(header(), flush=True)
    table = []
    for row in rows([c.name for c in cases], backend, args.ranks, args.examples, args.cold_warm):
        print(line(row), flush=True)
        table.append(row)
    if table:
        print(mean_line(table))
    return table

if __name__ == "__main__":
    main()
