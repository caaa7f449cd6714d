"""What tracing costs the collectives users trace, at the sizes they run, both APIs, beside Proton's scopes.

    python -m benchmarks.bench_collectives [--backend gpu|cpu] [--sizes 65536,...] [--ranks 8,4,2]
                                           [--kernels all_gather,...] [--variants untraced,auto,...] [--reps 10]
                                           [--min-ms 1.0] [--chunk 64] [--proton-buffer shared|global]
                                           [--proton-data tree|trace] [--eager]
    python -m benchmarks.bench_collectives --resources sm_90,gfx942 [--kernels ...] [--variants ...]

The kernels (``benchmarks/collective_kernels.py``): all-gather (pulls by ``get``), reduce-scatter (loads, a sum, a
store), all-to-all (``put``) and an all-gather fused with a matmul (per peer: wait for its flag, fetch its block of
A, compute the block of C = A B: ``tl.dot`` in Triton, the target's matrix instruction in Gluon). ``--sizes`` are
bytes per rank: the input each rank holds (float32 for the collectives, the float16 shard of A, K = N = 64, for the
fused kernel). Each world of ``--ranks`` ranks shares one GPU; rank 0 times while the others wait (kernels of several
processes on one GPU are time-sliced, so a peer's launch would land in the timing), reading and writing every rank's
heap. On a GPU every rank first compiles its share of the kernels (the first world, the largest by default, pays
the compiles; the others load them). Variants, each timed against ``untraced`` in turn in one call:

  untraced   tracing compiled off
  auto       every op records its own range (``trace_ops``)
  bracketed  a manual range around each phase (``fetch``, ``reduce``, ``put``; fused: ``wait``, ``fetch``,
             ``compute``), each given its tile's pointer block and mask: the library reduces it at every record
  both       auto and bracketed together
  span       bracketed, each range given its tile's span (``ctx.tracing.span``) made once before the peer loop
  offsets    bracketed, given a span made once from 32-bit offsets (an int32 min) and the mask's count
  bounds     bracketed, given ``ctx.tracing.contiguous_span`` of the bounds the mask was made of (no reduction)
  claimed    tracing compiled in and on, nothing recorded: each program's chunk claim alone (the floor of any record)
  proton     the same phases as Proton intra-kernel scopes (instrumentation mode, ``--proton-buffer`` buffer),
             tracing compiled off; GPU only; a sample holds at most 10 launches (``xN`` beside its cell), and
             Proton's launch hooks are on Triton's hook chains only around its samples

On a GPU a sample's launches are replayed as one CUDA graph (``--eager``: launched one by one): at the smaller sizes
a launch is shorter than Triton's launcher on the host, which would otherwise be what is timed. Proton's launches
run its hooks on the host and cannot be captured: they are launched one by one and compared with untraced launched
one by one (timed in turn with the rest).

Per world, kernel, API and size it prints the launches a sample holds (enough for ``--min-ms`` of untraced work),
the untraced milliseconds per launch (min/median/max over ``--reps`` samples) and, per variant, traced/untraced of the
medians with the variant's own min/median/max; then, per variant, the smallest size from which it costs at most 5%
(traced/untraced <= 1.05 there and at every larger size) and its cost per launch at the smallest size (microseconds,
median minus untraced median). The span variants record the same events as ``bracketed``: one launch of each at the
smallest size is read back and compared field by field (every logical field, per program in program order). A static
table says what iris and Proton record. Not a test: it prints figures and asserts nothing.

``--resources`` times nothing: it cross-compiles each variant for the named targets (any machine) and prints its
registers a thread, the programs an SM (CU) holds at 4 warps, and its instructions: what a cheaper tile record saves
before it runs.

``--backend cpu`` (the default where torch sees no GPU) runs the kernels of both APIs on CPU ranks under the Triton
interpreter at a tiny size (9 KB a rank: a second program masked; one sample of one launch each; the fused
kernel's Gluon matmul is ``gl.dot_fma`` there),
timed with ``time.perf_counter``: the test command runs it so; its figures say nothing about a GPU's.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import math
import statistics
import sys
import tempfile
import textwrap
import time

import numpy as np
import torch
import triton

import iris
from benchmarks import collective_kernels as C
from iris import context_layout as layout
from iris.cli_args import OneLineParser, add_chunk, choice_list, chosen_backend, int_at_least, int_list, positive_number
from iris.ranks import backend_env, launch
from iris.tracing.core import MAX_EVENTS
from iris.tracing.events import TRACE_FIELDS

KERNELS = ("all_gather", "reduce_scatter", "all_to_all", "gather_matmul")
PHASES = {"all_gather": ("fetch",), "reduce_scatter": ("fetch", "reduce"), "all_to_all": ("put",),
          "gather_matmul": ("wait", "fetch", "compute")}
# variant -> (TRACING, AUTO, BRACKET, RECORD, PROTON)
VARIANTS = {
    "untraced": (False, False, False, 0, False),
    "auto": (True, True, False, 0, False),
    "bracketed": (True, False, True, C.RECORDS["block"], False),
    "both": (True, True, True, C.RECORDS["block"], False),
    "span": (True, False, True, C.RECORDS["span"], False),
    "offsets": (True, False, True, C.RECORDS["offsets"], False),
    "bounds": (True, False, True, C.RECORDS["bounds"], False),
    "claimed": (True, False, False, 0, False),
    "proton": (False, False, False, 0, True),
}
SPANS = ("span", "offsets", "bounds")  # bracketed records given a span: each must record what bracketed records
STORED = tuple(f for f in TRACE_FIELDS if f not in ("cur_rank", "op_index"))  # the host supplies these two
LOGICAL = tuple(f for f in STORED if f not in ("timestamp", "duration_cycles", "cu_id", "xcc_id"))
BLOCK = 2048  # float32 elements a program of the collectives moves per peer (8 KB)
K = N = 64  # the fused kernel's A is [M, K], B [K, N], C [R M, N], float16
BM = 64  # rows of A a program of the fused kernel fetches per peer
NUM_WARPS = 4
MAX_RANKS = 8  # ranks sharing one GPU
GOAL = 1.05
KB = 1024
GPU_SIZES = tuple(64 * KB * 4**i for i in range(7))  # 64 KB .. 256 MB
SIZE_STEP = 1024  # every size is a multiple (whole float32 chunks per rank, whole rows of A)
RESOURCE_TARGETS = ("sm_90", "gfx942")


@dataclasses.dataclass(frozen=True)
class Settings:
    """What one run measures."""

    sizes: tuple[int, ...]
    kernels: tuple[str, ...]
    variants: tuple[str, ...]
    reps: int  # samples per variant
    min_ms: float  # untraced work per sample (0: one launch)
    chunk: int
    proton_buffer: str
    warmup: int  # untimed samples before the timed ones
    proton_data: str = "tree"  # Proton's data: per-scope totals (tree) or every record (trace)
    graphs: bool = True  # on a GPU, a sample replays its launches as one CUDA graph (not proton's)
    max_launches: int = 1000  # launches per sample at most
    proton_launches: int = 10  # the proton variant's launches per sample at most (each costs about a millisecond)


# gpu: the largest world first, whose ranks share the compiles (the later worlds load them from the cache); cpu: a
# second program of the collectives and the fused kernel masked (9 KB: 2304 float32, 72 rows of A)
DEFAULTS = {"gpu": {"sizes": GPU_SIZES, "ranks": (8, 4, 2), "reps": 10, "min_ms": 1.0, "warmup": 2},
            "cpu": {"sizes": (9 * KB,), "ranks": (2,), "reps": 1, "min_ms": 0.0, "warmup": 0}}


def plain_sizes(option: str):
    """An argparse type: a comma list of byte counts, each plain digits, a multiple of ``SIZE_STEP``, no repeats."""

    def parse(text: str) -> tuple[int, ...]:
        pieces = text.split(",")
        ok = all(p.isascii() and p.isdigit() for p in pieces)
        values = tuple(int(p) for p in pieces) if ok else ()
        if not ok or any(v < SIZE_STEP or v % SIZE_STEP for v in values) or len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"{option} {text!r}: expected a comma list of distinct byte counts, "
                                             f"plain digits, each a multiple of {SIZE_STEP}, such as 65536,1048576")
        return values

    return parse


# ----------------------------------------------------------------------------------------------------- shapes


def elements(kernel: str, size: int, world: int) -> int:
    """What a launch's extent argument is: elements (all-gather), elements per chunk (reduce-scatter, all-to-all),
    rows of A (fused)."""
    if kernel == "all_gather":
        return size // 4
    if kernel == "gather_matmul":
        return size // (2 * K)
    return size // 4 // world


def programs(kernel: str, size: int, world: int) -> int:
    return triton.cdiv(elements(kernel, size, world), BM if kernel == "gather_matmul" else BLOCK)


def events_per_launch(kernel: str, size: int, world: int) -> int:
    """The most events one launch records (``both``): per program, per peer, a range per phase and one per op."""
    per_peer = {"all_gather": 2, "reduce_scatter": 2, "all_to_all": 2, "gather_matmul": 6}[kernel]
    extra = 2 if kernel == "reduce_scatter" else 0
    return programs(kernel, size, world) * (world * per_peer + extra)


def slots_per_launch(kernel: str, size: int, world: int, chunk: int) -> int:
    """Trace slots one launch may claim: its events and a chunk per program."""
    return events_per_launch(kernel, size, world) + programs(kernel, size, world) * chunk


def largest_size(world: int) -> int:
    """The largest size a rank whose offsets all fit in 32 bits: the fused kernel's output, ``world`` x size / 2
    float16 elements, is the largest buffer a kernel indexes."""
    return (2**32 - 2) // world // SIZE_STEP * SIZE_STEP


def heap_bytes(size: int, world: int) -> int:
    """A rank's heap: an input of ``size`` bytes, an output of ``world`` of them, B and the flags."""
    return (world + 1) * size + 2 * K * N + 4 * world + (4 << 20)


# ----------------------------------------------------------------------------------------------------- timing


class Buffers:
    """A rank's heap buffers for the largest size, viewed per kernel and size."""

    def __init__(self, shmem, size: int, world: int):
        self.src = shmem.zeros(size // 4, dtype=torch.float32)
        self.out = shmem.zeros(world * size // 4, dtype=torch.float32)
        self.b = shmem.zeros(K * N, dtype=torch.float16)
        self.flags = shmem.ones(world, dtype=torch.int32)  # every producer has signalled: a wait is one acquire
        rank = shmem.get_rank()
        self.src.copy_(torch.arange(size // 4, dtype=torch.float32) % 251 + rank)
        self.b.copy_((torch.arange(K * N) % 7 - 3).to(torch.float16) / 8)

    def args(self, kernel: str, size: int, world: int) -> tuple:
        extent = elements(kernel, size, world)
        if kernel == "gather_matmul":
            a = self.src.view(torch.float16)[: size // 2]
            return (a, self.b, self.out.view(torch.float16), self.flags, extent)
        return (self.src, self.out, extent)


_COLLECTIVE = {"ctx_t": "*i64", "src": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}
_SWITCHES = {name: "constexpr" for name in ("TRACING", "AUTO", "BRACKET", "RECORD", "PROTON")}
SIGNATURES = {  # each kernel's parameters in order, typed as the benchmark launches them (for cross-compiles)
    "all_gather": _COLLECTIVE | _SWITCHES,
    "reduce_scatter": {"ctx_t": "*i64", "src": "*fp32", "out": "*fp32", "chunk": "i32", "BLOCK": "constexpr"}
    | _SWITCHES,
    "all_to_all": {"ctx_t": "*i64", "src": "*fp32", "dst": "*fp32", "chunk": "i32", "BLOCK": "constexpr"} | _SWITCHES,
    "gather_matmul": {"ctx_t": "*i64", "a": "*fp16", "b": "*fp16", "out": "*fp16", "flags": "*i32", "M": "i32",
                      "K": "constexpr", "N": "constexpr", "BM": "constexpr"} | _SWITCHES | {"MATH": "constexpr"},
}


def constexprs(kernel: str, variant: str, math_kind: str = "mma") -> dict:
    """The constexprs ``kernel``'s ``variant`` is launched with (``math_kind``: the Gluon matmul's, fused only)."""
    tracing, auto, bracket, record, proton = VARIANTS[variant]
    shape = {"K": K, "N": N, "BM": BM, "MATH": math_kind} if kernel == "gather_matmul" else {"BLOCK": BLOCK}
    return shape | {"TRACING": tracing, "AUTO": auto, "BRACKET": bracket, "RECORD": record, "PROTON": proton}


def launcher(api: str, kernel: str, variant: str, ctx, args: tuple, grid: int, launches: int, math_kind: str):
    """``launches`` launches of ``kernel``'s ``variant`` back to back."""
    jit = getattr(C, f"{api}_{kernel}")
    given = constexprs(kernel, variant, math_kind)

    def run():
        for _ in range(launches):
            run.kernel = jit[(grid,)](ctx, *args, **given, num_warps=NUM_WARPS)

    return run


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _elapsed_ms(device: torch.device, run) -> float:
    if device.type != "cuda":
        start = time.perf_counter()
        run()
        return (time.perf_counter() - start) * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


class ProtonSession:
    """Proton's instrumentation session on rank 0, active only around the proton variant's samples: outside them its
    launch hooks are taken off Triton's hook chains, so no other variant's launch passes through them."""

    def __init__(self, buffer: str, data: str):
        import triton.profiler as proton
        import triton.profiler.language as pl
        from triton import knobs
        from triton.profiler.hooks.hook import HookManager

        pl.enable_semantic("triton")  # Proton instruments Gluon only unless asked
        self.proton = proton
        self.hooks = ((knobs.runtime.kernel_load_end_hook, HookManager.init_handle),
                      (knobs.runtime.launch_enter_hook, HookManager.enter),
                      (knobs.runtime.launch_exit_hook, HookManager.exit))
        self.folder = tempfile.TemporaryDirectory(prefix="bench-collectives-proton-")
        self.session = proton.start(f"{self.folder.name}/proton", backend="instrumentation", data=data,
                                    mode=f"default:buffer_type={buffer}")
        self.__exit__()

    def __enter__(self):
        for chain, hook in self.hooks:
            chain.add(hook)
        self.proton.activate(self.session)

    def __exit__(self, *exc):
        self.proton.deactivate(self.session)
        for chain, hook in self.hooks:
            chain.remove(hook)

    def close(self):
        self.proton.finalize(self.session)
        self.folder.cleanup()


def as_graph(run, device: torch.device):
    """``run`` captured once as a CUDA graph, which a sample replays: no launch's host overhead lands in the timing
    (at the smaller sizes a launch is shorter than Triton's launcher on the host)."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):  # torch's rule: run once off the default stream before capturing
        run()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()

    def replay():
        graph.replay()

    replay.kernel = getattr(run, "kernel", None)
    replay.graph = graph
    return replay


CALIBRATION = 10  # untraced launches timed to choose a sample's launches
EAGER = "untraced_eager"  # untraced launched one by one: proton's baseline where the others replay graphs


def timed(shmem, launchers: dict, settings: Settings, proton) -> dict:
    """ms per sample of each launcher, taken in turn (``settings.warmup`` untimed rounds, then ``settings.reps``),
    trace buffers reset before each sample; the proton variant's samples inside Proton's session."""
    times: dict = {key: [] for key in launchers}
    for round_ in range(settings.warmup + settings.reps):
        for key, run in launchers.items():
            shmem.tracing.reset()
            if key == "proton":
                with proton:
                    ms = _elapsed_ms(shmem.device, run)
            else:
                ms = _elapsed_ms(shmem.device, run)
            if round_ >= settings.warmup:
                times[key].append(ms)
    return times


def same_events(shmem, runs: dict) -> dict[str, str]:
    """For each span variant of ``runs`` (variant -> one launch), whether its events equal ``bracketed``'s, every
    logical field, each program's events in program order: "same (n events)", or what differs first."""

    def events(run) -> np.ndarray:
        shmem.tracing.reset()
        run()
        _synchronize(shmem.device)  # rank 0 alone: no barrier, the other ranks wait in theirs
        records = shmem.tracing.events()
        order = np.argsort(records["pid"], kind="stable")  # slot order is program order within a program
        return np.stack([records[f][order] for f in LOGICAL])

    reference = events(runs["bracketed"])
    verdicts = {}
    for name in SPANS:
        if name in runs:
            got = events(runs[name])
            if got.shape != reference.shape:
                verdicts[name] = f"differs: {got.shape[1]} events, bracketed {reference.shape[1]}"
            elif (got == reference).all():
                verdicts[name] = f"same ({got.shape[1]} events)"
            else:
                field, at = (int(x[0]) for x in np.nonzero(got != reference))
                verdicts[name] = (f"differs: event {at} (pid {reference[LOGICAL.index('pid'), at]}) {LOGICAL[field]} "
                                  f"{got[field, at]}, bracketed {reference[field, at]}")
    return verdicts


def measure(settings: Settings, backend: str) -> dict:
    """Rank job: every figure of this world (rank 0's)."""
    world, rank = torch.distributed.get_world_size(), torch.distributed.get_rank()
    largest = max(settings.sizes)
    shmem = iris.iris(heap_bytes(largest, world))
    capacity = max(slots_per_launch(k, s, world, settings.chunk) for k in settings.kernels for s in settings.sizes)
    capacity = min(MAX_EVENTS, max(capacity, 1 << 16))
    shmem.tracing.enable(capacity, settings.chunk)
    buffers = Buffers(shmem, largest, world)
    ctx = shmem.get_device_context()
    math_kind = "mma" if shmem.device.type == "cuda" else "fma"
    variants = [v for v in settings.variants if v != "proton" or shmem.device.type == "cuda"]
    proton, proton_note = None, ""
    if "proton" in variants and rank == 0:
        try:
            proton = ProtonSession(settings.proton_buffer, settings.proton_data)
        except Exception as e:  # noqa: BLE001 - any failure is reported in one line
            proton_note = f"proton not measured: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if rank == 0 and "proton" in variants and proton is None:
        variants.remove("proton")
    figures: dict = {"device": torch.cuda.get_device_name(shmem.device) if shmem.device.type == "cuda" else "cpu",
                     "world": world, "capacity": capacity, "rows": [], "events": {}, "notes": [],
                     "proton_scratch": {}}
    if proton_note:
        figures["notes"].append(proton_note)
    if shmem.device.type == "cuda":
        _compile_share(shmem, buffers, ctx, settings, world, rank, variants, math_kind)
    shmem.barrier()
    for kernel in settings.kernels:
        for api in ("triton", "gluon"):
            for size in settings.sizes:
                if rank == 0:
                    _progress(f"{world} ranks, {kernel} {api}, {size} bytes")
                    row = _measure_one(shmem, buffers, ctx, settings, kernel, api, size, world, variants, proton,
                                       math_kind, figures)
                    figures["rows"].append(row)
                shmem.barrier()
    if proton is not None:
        proton.close()
    shmem.barrier()
    shmem.close()
    return figures


def _compile_share(shmem, buffers, ctx, settings, world, rank, variants, math_kind) -> None:
    """Every rank compiles its share of the kernels (one launch of one program each, before anything is timed), so
    rank 0 loads them from the compile cache instead of compiling them all; Proton's instrumented compiles stay
    rank 0's."""
    jobs = [(k, a, v) for k in settings.kernels for a in ("triton", "gluon") for v in variants if v != "proton"]
    if rank == 0:
        _progress(f"{world} ranks: compiling {len(jobs)} kernels, {world} ranks sharing them")
    size = min(settings.sizes)
    for kernel, api, variant in jobs[rank::world]:
        launcher(api, kernel, variant, ctx, buffers.args(kernel, size, world), 1, 1, math_kind)()
    _synchronize(shmem.device)


def _measure_one(shmem, buffers, ctx, settings, kernel, api, size, world, variants, proton, math_kind, figures):
    args = buffers.args(kernel, size, world)
    grid = programs(kernel, size, world)
    graphs = settings.graphs and shmem.device.type == "cuda"
    launches = 1
    if settings.min_ms > 0:  # enough launches for min_ms of untraced work, as a sample runs them
        probe = launcher(api, kernel, "untraced", ctx, args, grid, CALIBRATION, math_kind)
        if graphs:
            with contextlib.suppress(Exception):  # a kernel that cannot be captured is timed launch by launch
                probe = as_graph(probe, shmem.device)
        per_launch = [_elapsed_ms(shmem.device, probe) for _ in range(2)][-1] / CALIBRATION
        launches = math.ceil(settings.min_ms / max(per_launch, 1e-6))
    room = max(1, shmem.tracing.max_events // slots_per_launch(kernel, size, world, settings.chunk))
    launches = max(1, min(launches, room, settings.max_launches))
    counts = {v: min(launches, settings.proton_launches) if v == "proton" else launches for v in variants}
    if graphs and "proton" in variants:
        counts[EAGER] = counts["proton"]
    runs, notes = {}, []
    for v in counts:
        runs[v] = launcher(api, kernel, "untraced" if v == EAGER else v, ctx, args, grid, counts[v], math_kind)
    if graphs:
        for v in [v for v in runs if v not in ("proton", EAGER)]:
            try:
                runs[v] = as_graph(runs[v], shmem.device)
            except Exception as e:  # noqa: BLE001 - a variant that cannot be captured runs launch by launch
                torch.cuda.synchronize()
                notes.append(f"{kernel} {api} {v}: launched one by one, no CUDA graph: {type(e).__name__}: "
                             f"{(str(e).splitlines() or [''])[0]}")
    if "proton" in runs:
        try:
            with proton:
                runs["proton"]()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - Proton's failure on one kernel is a line, not a crash
            notes.append(f"proton {kernel} {api}: not measured: {type(e).__name__}: "
                         f"{(str(e).splitlines() or [''])[0]}")
            del runs["proton"]
    times = timed(shmem, runs, settings, proton)
    if size == min(settings.sizes) and "bracketed" in runs and any(s in runs for s in SPANS):
        singles = {v: launcher(api, kernel, v, ctx, args, grid, 1, math_kind) for v in ("bracketed", *SPANS)
                   if v in runs}
        figures["events"][(kernel, api)] = same_events(shmem, singles)
    registers = {v: getattr(getattr(run, "kernel", None), "n_regs", None) for v, run in runs.items()}
    if "proton" in runs:
        scratch = getattr(getattr(runs["proton"], "kernel", None), "metadata", None)
        figures["proton_scratch"][(kernel, api)] = getattr(scratch, "profile_scratch_size", None)
    figures["notes"] += notes
    return {"kernel": kernel, "api": api, "size": size, "launches": counts, "grid": grid,
            "ms": {v: sorted(t / counts[v] for t in ts) for v, ts in times.items()}, "registers": registers}


def _progress(what: str) -> None:
    print(f"bench_collectives: {what}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------------- printing


def human(size: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def spread(ms: list[float]) -> tuple[float, float, float]:
    return min(ms), statistics.median(ms), max(ms)


def baseline(row: dict, variant: str) -> str:
    """What ``variant`` is compared with: untraced, or for proton where the others replay graphs, untraced launched
    one by one as proton is."""
    return EAGER if variant == "proton" and EAGER in row["ms"] else "untraced"


def ratio(row: dict, variant: str) -> float:
    return statistics.median(row["ms"][variant]) / statistics.median(row["ms"][baseline(row, variant)])


def within_goal_from(rows: list[dict], variant: str) -> str:
    """The smallest size from which ``variant`` costs at most 5% (there and at every larger size), or ``never``."""
    found = "never"
    for row in sorted(rows, key=lambda r: r["size"], reverse=True):
        if variant not in row["ms"] or ratio(row, variant) > GOAL:
            break
        found = human(row["size"])
    return found


def table(rows: list[dict], variants: list[str]) -> list[str]:
    """One kernel and API's lines: a row per size, then the goal and per-launch cost lines."""
    traced = [v for v in variants if v != "untraced" and any(v in row["ms"] for row in rows)]
    out = [f"  {'size':>7s} {'programs':>8s} {'launches':>8s} {'untraced ms/launch min/med/max':>32s}  "
           + "  ".join(f"{v + ' t/u (ms min/med/max)':>36s}" for v in traced)]
    for row in rows:
        u = spread(row["ms"]["untraced"])
        cells = []
        for v in traced:
            if v not in row["ms"]:  # proton, where it could not run (a line above says why)
                cells.append("-".rjust(36))
                continue
            t = spread(row["ms"][v])
            fewer = "" if row["launches"][v] == row["launches"]["untraced"] else f" x{row['launches'][v]}"
            cells.append(f"{ratio(row, v):>7.3f} ({t[0]:.4f}/{t[1]:.4f}/{t[2]:.4f}){fewer}".rjust(36))
        out.append(f"  {human(row['size']):>7s} {row['grid']:8d} {row['launches']['untraced']:8d} "
                   f"{f'{u[0]:.4f}/{u[1]:.4f}/{u[2]:.4f}':>32s}  " + "  ".join(cells))
    out.append("  traced/untraced <= 1.05 from: " + ", ".join(f"{v} {within_goal_from(rows, v)}" for v in traced))
    smallest = rows[0]
    medians = {v: statistics.median(ms) for v, ms in smallest["ms"].items()}
    cost = ", ".join(f"{v} {(medians[v] - medians[baseline(smallest, v)]) * 1e3:.2f}" if v in medians else f"{v} -"
                     for v in traced)
    out.append(f"  cost per launch at {human(smallest['size'])}, us (median - untraced median): {cost}")
    regs = smallest["registers"]
    if any(r is not None for r in regs.values()):
        out.append("  registers per thread: " + ", ".join(f"{v} {r}" for v, r in regs.items()))
    return out


def record_table(proton_buffer: str) -> list[str]:
    """What iris and Proton record (iris's from its layout and field table; Proton's from its instrumentation
    mode as this run configures it)."""
    fields = textwrap.wrap(", ".join(STORED), 60)
    return [
        "what each records:",
        f"  {'':6s} {'bytes/event':>11s}  {'fields':60s}  {'cross-rank flows':18s}  survives a hung kernel",
        f"  {'iris':6s} {8 * layout.RECORD_WORDS:>11d}  {fields[0]:60s}  {'yes (target_rank)':18s}  "
        "yes: each record is in global memory once written; a range never ended reads as open",
        *(f"  {'':6s} {'':>11s}  {more}" for more in fields[1:]),
        f"  {'proton':6s} {8:>11d}  {'scope id and start/end (32 bits), clock (32 bits); per warp':60s}  "
        f"{'no':18s}  no: a {proton_buffer} buffer, read back when the launch ends",
    ]


RESOURCE_HEADER = f"{'kernel':14s} {'api':6s} {'target':6s}  variant: registers/programs per SM (CU)/instructions"


def resource_rows(kernels, targets, variants) -> list[str]:
    """What each variant of each kernel needs, cross-compiled for each of ``targets`` (no GPU): registers a thread,
    programs an SM (CU) holds at ``NUM_WARPS`` warps, instructions (``bench_tile_resources`` reads them)."""
    from benchmarks.bench_tile_resources import Resources, _cuda_figures, _hip_figures
    from benchmarks.cross_compile import TARGETS, compile_jit

    lines = []
    for kernel in kernels:
        signature = SIGNATURES[kernel]
        pointers = tuple(name for name, kind in signature.items() if kind.startswith("*"))
        for api in ("triton", "gluon"):
            for target in targets:
                cells = []
                for variant in (v for v in variants if v != "proton"):
                    _progress(f"cross-compiling {kernel} {api} {variant} for {target}")
                    compiled = compile_jit(api, getattr(C, f"{api}_{kernel}"), target, constexprs(kernel, variant),
                                           signature, divisible_by_16=pointers, num_warps=NUM_WARPS)
                    registers, count = (_cuda_figures(compiled.asm["cubin"]) if TARGETS[target].backend == "cuda"
                                        else _hip_figures(compiled.asm["amdgcn"]))
                    held = Resources(registers, compiled.metadata.shared, count).programs(target, NUM_WARPS)
                    cells.append(f"{variant} {registers}/{held}/{count}")
                lines.append(f"{kernel:14s} {api:6s} {target:6s}  " + ", ".join(cells))
    return lines


def main(argv: list[str] | None = None) -> list[dict]:
    """Print the tables; return every world's figures. Bad input is refused in one line on stderr, exit code 2,
    before any rank starts."""
    p = OneLineParser(prog="python -m benchmarks.bench_collectives", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=("gpu", "cpu"), default=None,
                   help="gpu, or cpu: the Triton interpreter on CPU ranks (default: gpu where torch sees one)")
    p.add_argument("--sizes", type=plain_sizes("--sizes"), default=None,
                   help="bytes per rank, comma list (gpu: 64 KB to 256 MB in powers of 4; cpu 9216)")
    p.add_argument("--ranks", type=int_list("--ranks", 2, MAX_RANKS, why="ranks sharing one GPU", example="2,4,8",
                                            item="world size"), default=None,
                   help="world sizes on one GPU, run in this order (gpu 8,4,2; cpu 2)")
    p.add_argument("--kernels", type=choice_list("--kernels", KERNELS, item="kernel"),
                   default=KERNELS, help=f"comma list of {', '.join(KERNELS)} (default all)")
    p.add_argument("--variants", type=choice_list("--variants", tuple(VARIANTS), item="variant"),
                   default=tuple(VARIANTS), help=f"comma list of {', '.join(VARIANTS)} (default all; untraced is "
                                                 "always timed)")
    p.add_argument("--reps", type=int_at_least("--reps", 1), default=None, help="timed samples (gpu 10, cpu 1)")
    p.add_argument("--min-ms", type=positive_number("--min-ms", "milliseconds", 1000.0), default=None,
                   help="untraced work per sample, in launches back to back (gpu 1.0; cpu: one launch)")
    add_chunk(p)
    p.add_argument("--proton-buffer", choices=("shared", "global"), default="shared",
                   help="where Proton's instrumentation keeps its records (default shared)")
    p.add_argument("--proton-data", choices=("tree", "trace"), default="tree",
                   help="what Proton keeps of its records: per-scope totals (tree, default) or each (trace)")
    p.add_argument("--eager", action="store_true",
                   help="launch one by one (default on a GPU: a sample replays its launches as one CUDA graph, so no "
                        "launch's host overhead is timed; proton always launches one by one)")
    p.add_argument("--resources", type=choice_list("--resources", RESOURCE_TARGETS), default=None,
                   help="instead of timing: what each variant needs, cross-compiled for these targets (comma list "
                        "of sm_90, gfx942; no GPU needed)")
    args = p.parse_args(argv)
    if args.resources:
        print(f"cross-compiled, num_warps {NUM_WARPS}, triton {triton.__version__}; BLOCK {BLOCK}, fused BM {BM}, "
              f"K = N = {K}")
        print(RESOURCE_HEADER)
        for line in resource_rows(args.kernels, args.resources,
                                   ("untraced", *(v for v in args.variants if v != "untraced"))):
            print(line)
        return []
    backend = chosen_backend(p, args.backend)
    defaults = DEFAULTS[backend]
    sizes = tuple(sorted(args.sizes or defaults["sizes"]))
    ranks = args.ranks or defaults["ranks"]
    variants = ("untraced", *(v for v in args.variants if v != "untraced"))
    settings = Settings(sizes, args.kernels, variants, args.reps or defaults["reps"],
                        args.min_ms if args.min_ms is not None else defaults["min_ms"], args.chunk, args.proton_buffer,
                        defaults["warmup"], proton_data=args.proton_data, graphs=not args.eager)
    for world in ranks:
        limit = largest_size(world)
        if max(sizes) > limit:
            p.error(f"--sizes {human(max(sizes))}, --ranks {world}: the kernels index elements with 32-bit offsets, "
                    f"and an output of {world} ranks' inputs would pass 2^31 elements; expected at most {limit} bytes "
                    f"a rank at {world} ranks")
        need = max(slots_per_launch(k, s, world, args.chunk) for k in settings.kernels for s in sizes)
        if need > MAX_EVENTS:
            p.error(f"--sizes {human(max(sizes))}, --ranks {world}, --chunk {args.chunk}: one launch would trace into "
                    f"{need} slots, more than tracing holds ({MAX_EVENTS}); expected smaller values")
    results = []
    printed_notes = set()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    for world in ranks:
        figures = launch(measure, world, settings, backend, timeout=3600, env=backend_env(backend))[0]
        results.append(figures)
        if world == ranks[0]:
            timer = "CUDA events" if backend == "gpu" else "perf_counter, Triton interpreter"
            print(f"{backend}: {figures['device']}, {date}, triton {triton.__version__}; sizes are bytes per rank; "
                  f"collectives float32, BLOCK {BLOCK}; fused: A [M, {K}] float16 per rank, B [{K}, {N}], BM {BM}, "
                  f"{'tl.dot / Gluon ' + ('mma_v2 or mfma' if backend == 'gpu' else 'dot_fma')}; num_warps "
                  f"{NUM_WARPS}; chunk {settings.chunk}; {settings.reps} samples of "
                  f"{f'>= {settings.min_ms} ms untraced' if settings.min_ms > 0 else 'one launch'} after "
                  f"{settings.warmup} warm-up; rank 0 timing alone ({timer}); ms per launch; "
                  + ("a sample's launches replayed as one CUDA graph, proton's launched one by one and compared with "
                     "untraced launched so" if backend == "gpu" and settings.graphs else "launched one by one"))
            if backend != "gpu" and "proton" in settings.variants:
                print("proton: skipped on the CPU (its instrumentation needs a GPU)")
        for note in figures["notes"]:
            if note not in printed_notes:
                print(note)
                printed_notes.add(note)
        for kernel in settings.kernels:
            for api in ("triton", "gluon"):
                rows = [r for r in figures["rows"] if r["kernel"] == kernel and r["api"] == api]
                if not rows:
                    continue
                print(f"{kernel} {api}, {world} ranks (phases {', '.join(PHASES[kernel])}):")
                for line in table(rows, list(settings.variants)):
                    print(line)
                scratch = figures["proton_scratch"].get((kernel, api))
                if scratch:
                    print(f"  proton profile scratch per program: {scratch} bytes")
                verdicts = figures["events"].get((kernel, api))
                if verdicts:
                    print(f"  events at {human(sizes[0])} against bracketed: "
                          + ", ".join(f"{v} {what}" for v, what in verdicts.items()))
    for line in record_table(args.proton_buffer):
        print(line)
    return results


if __name__ == "__main__":
    main()
