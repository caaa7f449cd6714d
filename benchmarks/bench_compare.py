"""Host-side comparison time of one large example: ``conformance.check.compare`` on N events, no kernel.

Not a test: prints figures. The example is built on the host (``benchmarks.synthetic_example``): a model of N
events over ``--ranks`` ranks of ``--programs`` programs each, ranges with a few instants and unfinished ranges,
masked calls, addresses over named buffers of every rank, and both APIs' observations as the ranks send them back
(the decoded records in slot order, chunks claimed in an interleaved order with holes, the counters, the exported
trace read back, the final memory). Each ``--capacity`` gives every rank slots for that percentage of the events
a rank records (100: a slot for every chunk, everything is kept; below: the last claims find the buffer full and
their programs keep a prefix, the overflow path). The observations agree with the model, so ``compare`` walks
every check to the end.

Printed per capacity: the seconds of ``compare`` (median of ``--repeat``), model events per second, the seconds
of it spent turning the model's ``Event`` lists into columns, the peak memory it allocates (``tracemalloc``, in a
run of its own), the records both APIs kept and the divergences (0). After the first, what a rank pays for the
exported trace the comparison reads: ``tracing.export``'s JSON of one rank's events of one API written and read
back (``conformance.check.exported.read``), and the file's size. Goal: ``compare`` of 1,000,000 events within 2 s.

Needs iris importable (``pip install -e .``, or ``PYTHONPATH=.`` from the repository root):

    python -m benchmarks.bench_compare                       # 1,000,000 events, 4 ranks x 1000 programs
    python -m benchmarks.bench_compare --events 100000 --ranks 2 --programs 100 --capacity 100,90
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import tracemalloc

from benchmarks import synthetic_example
from benchmarks.bench_tracing_host import physical_memory
from conformance.check import exported
from conformance.check.columns import Codes, model_columns
from conformance.check.compare import compare
from iris.cli_args import OneLineParser, add_chunk, int_at_least, int_list, world_size
from iris.tracing.export import write_trace
from iris.tracing.timeline import RankTrace

# Peak resident bytes per event of a run (the model's Event objects, both APIs' records and exported traces, what
# the comparison allocates, the exported file read back): 1,000,000 events on 4 ranks peaked at 1.5 GB.
PEAK_BYTES_PER_EVENT = 1600
HEADER = (f"  {'capacity':>8} {'seconds':>8} {'M events/s':>10} {'of it model':>11} {'peak MB':>8} {'kept':>10} "
          f"{'divergences':>11}")


def timed(example: synthetic_example.Example, repeat: int) -> tuple[float, list]:
    """Median wall seconds of ``repeat`` comparisons of ``example``, and the last one's divergences."""
    seconds, found = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        found = compare(example.model, example.observations, synthetic_example.APIS, example.heap_bytes,
                        example.chunk, example.max_events)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), found


def model_seconds(example: synthetic_example.Example, repeat: int) -> float:
    """Median wall seconds of the part of a comparison that turns the model's events into columns (every rank)."""
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        codes = Codes()
        for events in example.model.events.values():
            model_columns(events, codes)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def peak_bytes(example: synthetic_example.Example) -> int:
    """The most memory one comparison of ``example`` holds at once beyond what existed before (``tracemalloc``)."""
    tracemalloc.start()
    try:
        compare(example.model, example.observations, synthetic_example.APIS, example.heap_bytes, example.chunk,
                example.max_events)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def bench(events: int, ranks: int, programs: int, chunk: int, capacities: tuple[int, ...], repeat: int,
          seed: int) -> None:
    print(f"compare: {events:,} events, {ranks} ranks x {programs} programs, chunk {chunk}, "
          f"{len(synthetic_example.APIS)} APIs; median of {repeat}")
    print(HEADER)
    exported_line = ""
    for capacity in capacities:
        example = synthetic_example.build(events, ranks, programs, chunk, capacity, seed)
        seconds, found = timed(example, repeat)
        if found:
            raise SystemExit(f"the synthetic example diverges: {found[0]}")
        kept = sum(len(o.apis[api].records) for o in example.observations for api in synthetic_example.APIS)
        model = model_seconds(example, repeat)
        print(f"  {capacity:>7}% {seconds:>8.3f} {events / seconds / 1e6:>10.2f} {model:>11.3f} "
              f"{peak_bytes(example) / 1e6:>8.1f} {kept:>10,} {len(found):>11}", flush=True)
        exported_line = exported_line or exported_trace(example)
        del example
    print(exported_line)


def exported_trace(example: synthetic_example.Example) -> str:
    """What writing and reading back rank 0's exported trace of the first API costs, as a line to print."""
    rank0 = example.observations[0].apis[synthetic_example.APIS[0]]
    with tempfile.TemporaryDirectory(prefix="iris-bench-compare-") as folder:
        path = os.path.join(folder, "trace.json")
        start = time.perf_counter()
        write_trace(path, [RankTrace(rank0.records, rank0.window[0], synthetic_example.APIS[0])])
        wrote = time.perf_counter() - start
        start = time.perf_counter()
        back = exported.read(path)
        read = time.perf_counter() - start
        size = os.path.getsize(path)
    n = len(rank0.records)
    held = rank0.exported.columns
    assert (back.events, back.dropped, back.rows) == (n, rank0.records.dropped, [held.row(i) for i in range(n)]), \
        "the example's exported trace is not what its file reads back as"
    return (f"exported trace of one rank and API ({n:,} events), written and read back on its rank: JSON write "
            f"{wrote:.3f} s, read {read:.3f} s, {size / 1e6:.1f} MB ({size / max(n, 1):.0f} B/event)")


def main(argv: list[str] | None = None) -> None:
    """Print the figures. Bad input is refused in one line on stderr, exit code 2, before anything is built."""
    parser = OneLineParser(prog="python -m benchmarks.bench_compare", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int_at_least("--events", 1), default=1_000_000,
                        help="model events of the example, over every rank (default 1,000,000)")
    parser.add_argument("--ranks", type=world_size(), default=4, help="world size (default 4)")
    parser.add_argument("--programs", type=int_at_least("--programs", 1), default=1000,
                        help="programs per rank (default 1000)")
    add_chunk(parser)
    parser.add_argument("--capacity", type=int_list("--capacity", 1, 100, why="percent of the events a rank "
                                                    "records", example="100,95", item="capacity"),
                        default=(100, 95),
                        help="slots per rank, in percent of the events a rank records; one row each (default 100,95)")
    parser.add_argument("--repeat", type=int_at_least("--repeat", 1), default=3,
                        help="timed comparisons per row; the median is printed (default 3)")
    parser.add_argument("--seed", type=int_at_least("--seed", 0), default=0, help="seed of the example (default 0)")
    args = parser.parse_args(argv)
    if args.events < args.ranks * args.programs:
        parser.error(f"--events {args.events}: fewer than --ranks {args.ranks} x --programs {args.programs}; "
                     f"expected at least {args.ranks * args.programs} (every program records an event)")
    memory = physical_memory()
    if memory is not None and args.events * PEAK_BYTES_PER_EVENT > memory:
        parser.error(f"--events {args.events}: a run holds about {args.events * PEAK_BYTES_PER_EVENT / 2**30:.0f} GiB "
                     f"at its peak ({PEAK_BYTES_PER_EVENT} bytes per event), this machine has {memory / 2**30:.0f} "
                     f"GiB of memory; expected at most {memory // PEAK_BYTES_PER_EVENT} events")
    bench(args.events, args.ranks, args.programs, args.chunk, args.capacity, args.repeat, args.seed)


if __name__ == "__main__":
    main()
