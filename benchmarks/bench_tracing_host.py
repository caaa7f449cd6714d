"""Host-side trace read-back and export throughput: ``Tracing.events()`` and ``Tracing.export()`` on N events.

Not a test: prints figures. The trace buffers are filled with realistic synthetic records (what a kernel
leaves: 1024 programs, each recording mixed ops one after another, ranges with a few instants and
unfinished ranges) through a stand-in owner, so no world and no kernel are needed. With a GPU visible the
same runs with the buffers on the GPU, so ``events()`` includes the device-to-host copy.

Printed per device: ``events()``; per format (JSON, binary Perfetto) the export with and without
``events()`` (wall time, and CPU time summed over the encoding threads), and the file's bytes per event;
then the CPU time of each step of a binary export on one thread (timeline, packet encoding, deflate),
which with the thread count tells what a bigger machine will take. Goals for 1,000,000 events on a GPU
host: ``events()`` plus the binary export within 0.5 s, the JSON export within 2 s, the binary file within
40 bytes per event.

Needs iris importable (``pip install -e .``, or ``PYTHONPATH=.`` from the repository root):

    python -m benchmarks.bench_tracing_host                 # 1,000,000 events, cpu (+ cuda if available)
    python -m benchmarks.bench_tracing_host --events 200000 --device cpu

``--events`` is at most what one rank's tracing holds (``iris.tracing.core.MAX_EVENTS``: slots are 32-bit) and what
the machine's memory holds at the run's peak (``PEAK_BYTES_PER_EVENT``, about 560 bytes per event).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import torch

from iris import context_layout
from iris.cli_args import OneLineParser, folder, int_at_least, int_in
from iris.tracing import chunks, deflate, pftrace, timeline
from iris.tracing.core import MAX_EVENTS, Tracing
from iris.tracing.events import DURATION_INSTANT, DURATION_OPEN, EVENT_IDS, FIELD_INDEX, TRACE_FIELDS
from iris.tracing.export import write_trace
from iris.tracing.records import encode_records
from iris.tracing.timeline import RankTrace

# Peak resident bytes per event of a run on the CPU (synthetic records, the trace buffers, the decoded events, the
# timeline and the encoded file together): measured from 200,000 to 800,000 events, 557 bytes per event.
PEAK_BYTES_PER_EVENT = 560


class _Owner:
    """What ``Tracing`` needs from ``Iris``: rank, world size, device, and a sink for the published tracing block."""

    def __init__(self, device: torch.device) -> None:
        self.rank = 0
        self.num_ranks = 8  # the records are rank 0's of an 8-rank world (synthetic_records)
        self.device = device
        self.api = "triton"

    def _write_tracing_block(self, block) -> None:
        pass


def synthetic_records(n: int, seed: int = 0) -> np.ndarray:
    """``[len(TRACE_FIELDS), n]`` int64 records as a busy 8-rank kernel would leave them on rank 0."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((len(TRACE_FIELDS), n), dtype=np.int64)

    def put(field, values):
        rows[FIELD_INDEX[field]] = values

    programs = 1024
    pid = np.arange(n) % programs
    duration = rng.integers(200, 20_000, n)
    kind = rng.random(n)
    duration[kind < 0.10] = DURATION_INSTANT.value
    duration[kind > 0.999] = DURATION_OPEN.value
    # Each program's events follow one another: start = the program's previous start + its length + a gap.
    step = np.maximum(duration, 0) + rng.integers(10, 400, n)
    start = np.zeros(n, dtype=np.int64)
    for p0 in range(0, programs):  # cumulative sum along each program's events (a strided view per program)
        start[p0::programs] = np.cumsum(step[p0::programs]) - step[p0::programs] + rng.integers(0, 1000)
    slot = np.argsort(start, kind="stable")  # slots are drawn in time order
    put("event_id", rng.choice(np.array(list(EVENT_IDS.values())), n))
    put("pid", pid[slot])
    put("pid_m", pid[slot] // 32)
    put("pid_n", pid[slot] % 32)
    put("cur_rank", 0)
    put("target_rank", rng.integers(0, 8, n))
    put("xcc_id", rng.integers(0, 8, n))
    put("cu_id", rng.integers(0, 304, n))
    put("timestamp", 1_700_000_000_000_000_000 + start[slot])
    put("address", 0x7F3A_0000_0000 + rng.integers(0, 1 << 30, n) * 4)
    put("duration_cycles", duration[slot])
    put("op_index", np.arange(n))
    put("payload_size", rng.choice(np.array([4, 128, 256, 512, 1024]), n))
    put("payload", rng.integers(0, 1000, n))
    return rows


def _time(fn, repeat: int) -> tuple[float, float, object]:
    """Median wall seconds and median CPU seconds (all threads) of ``repeat`` calls, and the last result."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), result


def _line(what: str, n: int, seconds: float, cpu: float | None = None, extra: str = "") -> str:
    rate = f"{n / seconds / 1e6:7.2f} M events/s   {seconds / n * 1e9:7.1f} ns/event"
    cpu_text = "" if cpu is None else f"   cpu {cpu * 1e3:7.1f} ms"
    return f"  {what:<14} {seconds * 1e3:9.1f} ms   {rate}{cpu_text}{extra}"


def binary_steps(records, repeat: int) -> None:
    """CPU seconds of each step of a binary export, one after another on one thread (median of ``repeat``;
    torch's sorts, which run on every core in an export, on one thread here)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _binary_steps(records, repeat)
    finally:
        torch.set_num_threads(threads)


def _binary_steps(records, repeat: int) -> None:
    traces = [RankTrace(records, 0)]
    _, build, line = _time(lambda: timeline.build(traces), repeat)
    encoder = pftrace.Encoder(line)
    _, encode, packets = _time(lambda: [encoder.packets(lo) for lo in encoder.starts], repeat)
    _, squeeze, _ = _time(lambda: [deflate.compress(p) for p in packets], repeat)
    raw = sum(len(p) for p in packets)
    print(f"  one thread:    timeline {build * 1e3:.0f} ms, packets {encode * 1e3:.0f} ms "
          f"({raw / len(records):.1f} B/event), deflate ({deflate.COMPRESSOR}) {squeeze * 1e3:.0f} ms; "
          f"encoding threads: {chunks.workers()} (and as many deflating)")


def bench(device: torch.device, n: int, repeat: int, out_dir: str) -> None:
    tracing = Tracing(_Owner(device))
    tracing.enable(n)
    tracing._records.copy_(torch.from_numpy(encode_records(synthetic_records(n))))  # slot-major, as kernels write
    tracing._counters[context_layout.COUNTER_CLAIMED] = n
    print(f"{device.type}: {n:,} events ({tracing.backend} clock), median of {repeat}")

    seconds, _, records = _time(tracing.events, repeat)
    print(_line("events()", n, seconds))
    assert len(records) == n and records.dropped == 0, (len(records), records.dropped)

    # export() = events() + timeline + formatting + writing; also timed on the decoded records alone.
    for fmt, suffix in (("json", "json"), ("pftrace", "pftrace")):
        path = os.path.join(out_dir, f"trace-{device.type}.{suffix}")
        seconds, cpu, _ = _time(lambda p=path: write_trace(p, [RankTrace(records, 0)]), repeat)
        print(_line(f"{fmt} write", n, seconds, cpu, "   (write_trace of decoded records)"))
        seconds, cpu, written = _time(lambda p=path: tracing.export(p), repeat)  # this rank's file
        size = os.path.getsize(written)
        extra = f"   events() + write: file {size / 1e6:.1f} MB, {size / n:.1f} B/event"
        print(_line(f"{fmt} export", n, seconds, cpu, extra))
        os.unlink(path)
        os.unlink(written)
    binary_steps(records, repeat)


def physical_memory() -> int | None:
    """Bytes of memory of this machine, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def main(argv: list[str] | None = None) -> None:
    """Print the figures. Bad input is refused in one line on stderr, exit code 2, before anything is allocated."""
    parser = OneLineParser(prog="python -m benchmarks.bench_tracing_host", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int_in("--events", 1, MAX_EVENTS, "the events one rank's tracing holds: "
                                                "slots are 32-bit"),
                        default=1_000_000, help="events in the buffers (default 1,000,000)")
    parser.add_argument("--repeat", type=int_at_least("--repeat", 1), default=3,
                        help="timed runs of each step; the median is printed")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="auto: cpu, then cuda if torch sees a GPU")
    parser.add_argument("--out", type=folder("--out"), default=None,
                        help="folder for the exported file (default: a new temp folder)")
    args = parser.parse_args(argv)
    memory = physical_memory()
    if memory is not None and args.events * PEAK_BYTES_PER_EVENT > memory:
        parser.error(f"--events {args.events}: a run holds about {args.events * PEAK_BYTES_PER_EVENT / 2**30:.0f} GiB "
                     f"at its peak ({PEAK_BYTES_PER_EVENT} bytes per event), this machine has {memory / 2**30:.0f} "
                     f"GiB of memory; expected at most {memory // PEAK_BYTES_PER_EVENT} events")
    devices = ["cpu"] if args.device == "cpu" else ["cuda"] if args.device == "cuda" else ["cpu"]
    if args.device == "auto" and torch.cuda.is_available():
        devices.append("cuda")
    if "cuda" in devices and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no GPU (torch.cuda.is_available() is False)")
    print(f"torch {torch.__version__}, {os.cpu_count()} cpus, {torch.get_num_threads()} torch threads" +
          (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ", no GPU"))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="iris-bench-", dir=args.out) as out_dir:
        for d in devices:
            bench(torch.device(d), args.events, args.repeat, out_dir)

if __name__ == "__main__":
    main()
