"""What a gate compiles on an empty cache, read on the CPU: the distinct kernel variants its examples launch on
sm_90, the time to cross-compile them on one core, and the largest stack frames among them. No GPU needed.

    python -m benchmarks.bench_gate_compiles [--scale small|gpu] [--ranks 1,2,4] [--scenario NAME ...] [--seed N]

Each case's examples are drawn as a gate draws them (``drawing.drawn_examples``; the case's seed is ``--seed``
plus its index) and their launches captured and told apart as compiling ahead tells them apart (``stand_in``,
``compile_ahead.variant_key``); each distinct variant is then compiled once, one after another, into an empty
Triton cache. Prints the cases, the events their examples record per API (what their models say, over every rank),
the variants, the seconds in all and per variant, the slowest variant, and the variants with the largest stack
frames (bytes of local memory a thread: its frame and what it spills). CUDA sizes a context's local memory for every
thread the GPU can hold, and keeps it: a rank process that launches such a variant holds that frame times
``SMS * THREADS_PER_SM`` bytes of GPU memory from then on (the GiB column, for one H200).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass

import triton

from benchmarks.cross_compile import TARGETS, cubin_resources, run_script
from conformance.kit.scale import SMS
from iris.cli_args import ExtendOnce, OneLineParser, choice_list, int_at_least, int_list
from iris.ranks.pool import MAX_WORLD_SIZE

TARGET = "sm_90"
THREADS_PER_SM = 2048  # resident threads an SM of one H200 (``SMS`` of them) holds at most
LARGEST = 5  # stack frames listed
HEADER = (f"{'cases':>5s} {'events/API':>10s} {'variants':>8s} {'seconds':>8s} {'per variant':>11s} "
          f"{'slowest (s)':>11s}  slowest variant")


@dataclass(frozen=True)
class Variant:
    """One distinct compile: the first case that launches it, its API, and the launch."""

    scenario: str
    world_size: int
    api: str
    kernel: object
    launch: object


@dataclass(frozen=True)
class Compiled:
    variant: Variant
    seconds: float
    num_warps: int
    registers: int
    stack: int  # bytes a thread

    def held_gib(self) -> float:
        """GiB of local memory a context holds once it has launched this variant on one H200."""
        return self.stack * SMS * THREADS_PER_SM / 2**30


def variants(scenarios: list[str] | None, ranks: tuple[int, ...], scale: str,
             seed: int) -> tuple[int, int, dict[str, Variant]]:
    """(cases, events, {variant key: Variant}) of the gate over ``scenarios`` (default all) on ``ranks`` at
    ``scale``: ``events`` is what its examples' models say each API records, over every rank."""
    from conformance.harness.budget import Size
    from conformance.harness.compile_ahead import variant_key
    from conformance.harness.drawing import drawn_examples
    from conformance.harness.profiles import load_profile
    from conformance.harness.run_settings import RunSettings
    from conformance.harness.stand_in import captured_launches
    from conformance.harness.suite import plan
    from conformance.kit.scale import SCALES
    from conformance.kit.scenario import APIS

    cases = [c for c in plan(scenarios, ranks)[0] if c.scenario is not None]
    found: dict[str, Variant] = {}
    events = 0
    run = RunSettings("gpu", load_profile(), scale=SCALES[scale])
    for i, case in enumerate(cases):
        drawn = drawn_examples(case.scenario, case.world_size, run, seed + i)
        for example in drawn:
            model = example.model or case.scenario.expected(example.params, case.world_size, example.settings)
            events += Size.of(model).events
            for api in APIS:
                kernel = case.scenario.kernel(api)
                for rank in range(case.world_size):
                    for launch in captured_launches(case.scenario, api, example.params, rank, case.world_size,
                                                    num_warps=example.settings.num_warps):
                        key = variant_key(kernel, launch, TARGETS[TARGET])
                        found.setdefault(key, Variant(case.name, case.world_size, api, kernel, launch))
    return len(cases), events, found


def compile_each(found: dict, progress=None) -> list[Compiled]:
    """Compile every variant once, one after another, into an empty Triton cache; what each took and needs."""
    from conformance.harness.compile_ahead import cross_compiling

    done: list[Compiled] = []
    with tempfile.TemporaryDirectory() as cache, triton.knobs.cache.scope(), cross_compiling(TARGETS[TARGET]):
        triton.knobs.cache.dir = cache
        for i, v in enumerate(found.values()):
            start = time.perf_counter()
            kernel = v.kernel.warmup(*v.launch.args, grid=(1,), **v.launch.kwargs)
            seconds = time.perf_counter() - start
            usage = cubin_resources(kernel.asm["cubin"])
            done.append(Compiled(v, seconds, kernel.metadata.num_warps, usage["REG"], usage["STACK"]))
            if progress is not None and (i + 1) % 100 == 0:
                progress(f"{i + 1} of {len(found)} variants compiled")
    return done


def _name(v: Variant) -> str:
    return f"{v.scenario}@{v.world_size} {v.api}"


def main(argv: list[str] | None = None) -> list[Compiled]:
    """Print the figures; return what was compiled. Bad input is refused in one line on stderr, exit code 2."""
    from conformance.harness.suite import SelectionError
    from conformance.kit.scale import SCALES
    from conformance.kit.scenario import names

    p = OneLineParser(prog="python -m benchmarks.bench_gate_compiles", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", choices=tuple(SCALES), default="gpu", help="what the examples are drawn at (default gpu)")
    p.add_argument("--ranks", type=int_list("--ranks", 1, MAX_WORLD_SIZE, why="world sizes", item="world size"),
                   default=(1, 2, 4, 8),
                   help="comma list of world sizes (default 1,2,4,8)")
    p.add_argument("--scenario", type=choice_list("--scenario", tuple(names()), item="scenario"), action=ExtendOnce,
                   default=None,
                   help="comma list of scenarios (repeatable; default all)")
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=0, help="the first case's seed (default 0)")
    args = p.parse_args(argv)

    def progress(text: str) -> None:
        print(f"bench_gate_compiles: {text}", flush=True, file=sys.stderr)

    try:
        cases, events, found = variants(args.scenario, tuple(args.ranks), args.scale, args.seed)
    except SelectionError as e:  # a world size a chosen scenario refuses
        p.error(str(e))
    progress(f"{cases} cases launch {len(found)} distinct variants; compiling each once for {TARGET}")
    done = compile_each(found, progress)
    total = sum(c.seconds for c in done)
    slowest = max(done, key=lambda c: c.seconds)
    print(f"gate compiles: scale {args.scale}, ranks {','.join(map(str, args.ranks))}, seed {args.seed}, "
          f"{TARGET}, triton {triton.__version__}, one core, empty cache")
    print(HEADER)
    print(f"{cases:5d} {events:10d} {len(done):8d} {total:8.1f} {total / len(done):11.2f} {slowest.seconds:11.2f}  "
          f"{_name(slowest.variant)}")
    print(f"largest stack frames (bytes a thread), and the local memory a rank process then holds on one H200 "
          f"({SMS} SMs x {THREADS_PER_SM} threads):")
    for c in sorted(done, key=lambda c: -c.stack)[:LARGEST]:
        print(f"  {c.stack:6d} B  {c.held_gib():5.2f} GiB  {_name(c.variant)}, num_warps {c.num_warps}, "
              f"{c.registers} registers")
    return done


if __name__ == "__main__":
    run_script(main, __spec__.name)
