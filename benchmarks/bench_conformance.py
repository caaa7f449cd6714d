"""Conformance throughput and JIT compiles per example after warm-up (goal: 0).

    python -m benchmarks.bench_conformance [--backend cpu|gpu] [--ranks 2] [--examples 20] [--scenario NAME ...]

For each scenario: N drawn examples on one pooled world (after a first example that starts the pool).
An example is warm once an earlier one had the same compile-time values (``Scenario.compile_key``:
block sizes, dtypes); the compile column is kernel variants compiled per warm example, summed over
ranks and both APIs. The variants column is the most compiled variants of the Triton / Gluon kernel
across the ranks for one configuration (``runner.variants_per_config``): Gluon must be 1 (one compile
serves every rank), Triton is R (rank and world size are constexprs). Under the interpreter nothing is
compiled ("-"), so both columns are meaningful on a GPU.

Milliseconds per example by phase, on the rank whose kernels took longest: ``compile`` is the time inside
Triton's compiler (cold compiles and loads from its disk cache, through its compilation listener), carved out
of ``launch``, which keeps the rest of the launch calls (specialization, module load, enqueue).
"""

import argparse
import time

from hypothesis import HealthCheck, given, settings

from conformance.harness.host_side import detect_backend, example_params, run_example
from conformance.kit.scenario import load, names
from conformance.report.output import variants_cell
from iris.ranks import Pools

PHASES = ("dispatch", "reset", "setup", "barriers", "compile", "launch", "kernel", "readback", "model", "compare")


def bench(pools: Pools, name: str, backend: str, world_size: int, examples: int) -> tuple[float, str, str, int, dict]:
    scenario = load(name)
    results, keys = [], []

    @settings(max_examples=examples + 1, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(params=example_params(scenario, world_size))
    def run(params):
        keys.append(scenario.compile_key(params))
        results.append(run_example(pools, scenario, world_size, params, backend))

    pools.get(world_size, backend).start()  # the pool's start-up is nobody's example time
    start = time.perf_counter()
    run()
    elapsed = time.perf_counter() - start - results[0].seconds
    rate = (len(results) - 1) / max(elapsed, 1e-9)
    warm = [r for i, r in enumerate(results) if keys[i] in keys[:i]]
    compiles = f"{sum(sum(r.compiles.values()) for r in warm) / len(warm):.2f}" if warm else "-"
    failures = sum(not r.ok for r in results)
    variants = {api: max((r.variants[api] for r in results if r.variants.get(api) is not None), default=None)
                for api in ("triton", "gluon")}
    timed = results[1:] or results
    phases = {k: 1e3 * sum(r.timings.get(k, 0.0) for r in timed) / len(timed) for k in PHASES}
    return rate, f"{compiles} ({len(warm)} warm)", variants_cell(variants), failures, phases


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--backend", choices=("cpu", "gpu"), default=None)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--examples", type=int, default=20)
    p.add_argument("--scenario", action="append")
    args = p.parse_args()
    backend = args.backend or detect_backend()
    print(f"backend {backend}, {args.ranks} ranks, {args.examples} examples after one warm-up")
    print(f"{'scenario':28s} {'examples/s':>10s} {'compiles/example':>17s} {'variants t/g':>12s} {'failures':>8s}   "
          "ms per example: " + " ".join(f"{k:>8s}" for k in PHASES))
    totals = dict.fromkeys(PHASES, 0.0)
    count = 0
    with Pools() as pools:
        for name in args.scenario or names():
            if load(name).refusal(args.ranks):
                continue
            rate, compiles, variants, failures, phases = bench(pools, name, backend, args.ranks, args.examples)
            print(f"{name:28s} {rate:10.2f} {compiles:>17s} {variants:>12s} {failures:8d}   {'':15s}"
                  + " ".join(f"{phases[k]:8.1f}" for k in PHASES), flush=True)
            totals = {k: totals[k] + phases[k] for k in PHASES}
            count += 1
    if count:
        print(f"{'mean over scenarios':87s}   {'':15s}" + " ".join(f"{totals[k] / count:8.1f}" for k in PHASES))


if __name__ == "__main__":
    main()
