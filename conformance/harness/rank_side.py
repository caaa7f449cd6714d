"""What runs on each rank process for one example: set up, launch both APIs, observe.

``run_example`` is the pool job. It lets the scenario allocate each API's named buffers (separate regions of the
heap, the same offsets on every rank), waits for every rank once, then per API launches the kernel between two
clock readings and reads its events back (this rank's trace buffers are only written by its own kernels), waits
for every rank once more and reads the final memory. Two barriers per example, whatever the number of APIs; under a
sanitizer tool that runs the ranks' kernels in turn (``iris.ranks.sanitizer.ranks_in_turn``), one more after each
rank's turn of each API. It returns a ``RankObservation`` (``conformance.harness.observation``): per API the
decoded records as ``events()`` returned them, every counter as ``shmem.tracing`` reports it, the events
``tracing.export`` writes, read back from the file (``conformance.check.exported``), the buffer contents, heap
layout, launch window, and the hashes of the compiled kernel variants it launched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
import triton

from conformance.check import exported
from conformance.check.observation import ApiObservation, HostCounters, RankObservation
from conformance.kit.example_settings import ExampleSettings
from conformance.kit.scenario import APIS, ScenarioError, load, world_constexprs
from iris.ranks import progress
from iris.ranks.sanitizer import ranks_in_turn
from iris.world import is_interpreter, synchronize

_DTYPES = {
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
}  # fmt: skip
# Heap bytes of every rank: the CPU's shared-memory heaps hold SMALL examples (every rank maps every rank's); a GPU
# heap holds the largest GPU-scale example of every scenario too, both APIs' buffers at once (tests/cpu_unit/
# test_scale.py checks it)
HEAP_BYTES = {"cpu": 1 << 24, "gpu": 1 << 28}


def heap_bytes(backend: str) -> int:
    """The symmetric heap's bytes on every rank of a ``backend`` world (``cpu`` or ``gpu``)."""
    if backend not in HEAP_BYTES:
        raise ValueError(f"backend={backend!r}, expected one of {sorted(HEAP_BYTES)}")
    return HEAP_BYTES[backend]


def launch_options(kwargs: dict, num_warps: int | None) -> dict:
    """A launch's keywords with ``num_warps`` added where the launch gives none (``ExampleSettings.num_warps``;
    None adds nothing: the launch as written)."""
    if num_warps is None or "num_warps" in kwargs:
        return kwargs
    return {**kwargs, "num_warps": num_warps}


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype called ``name`` (params carry dtypes by name)."""
    if name not in _DTYPES:
        raise ValueError(f"dtype={name!r}, expected one of {sorted(_DTYPES)}")
    return _DTYPES[name]


class Rank:
    """One rank's side of an example for one API, the ``RankView`` (``conformance.kit.rank_view``) its scenario's
    setup and launch get: the host object, its context tensor and the named buffers; ``kernel`` is the API's
    kernel of the scenario (what ``world_constexprs`` looks at)."""

    def __init__(self, shmem, api: str, kernel) -> None:
        if api not in APIS:
            raise ValueError(f"api={api!r}, expected one of {APIS}")
        self.shmem = shmem
        self.api = api
        self.kernel = kernel
        self.rank = shmem.get_rank()
        self.world_size = shmem.get_num_ranks()
        self.ctx = shmem.get_device_context()
        self.buffers: dict[str, torch.Tensor] = {}

    @property
    def world_constexprs(self) -> dict[str, int]:
        """The rank and world-size constexprs the kernel takes, as keyword arguments of its launch
        (``conformance.kit.scenario.world_constexprs``): ``{"rank": r, "world": R}`` for a Triton kernel in the
        compile-time-rank form, ``{}`` for one that reads both from the context (one compile serves every rank).
        Launch with ``kernel[grid](..., **rank.world_constexprs, BLOCK=...)``.
        """
        return world_constexprs(self.kernel, self.rank, self.world_size)

    def buffer(self, name: str, shape: int | Sequence[int], dtype: str, fill: object = 0) -> torch.Tensor:
        """Allocate heap buffer ``name`` (same offset on every rank) filled with ``fill`` (scalar or values)."""
        if name in self.buffers:
            raise ValueError(f"buffer {name!r} allocated twice")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        t = self.shmem.zeros(*shape, dtype=torch_dtype(dtype))
        if isinstance(fill, (list, tuple)):
            t.copy_(torch.tensor(fill, dtype=t.dtype).reshape(shape))
        elif fill != 0:
            t.fill_(fill)
        self.buffers[name] = t
        return t

    def layout(self) -> dict[str, tuple[int, int, int]]:
        """``{buffer: (heap offset, element bytes, elements)}``."""
        base = self.shmem.heap.bases[self.rank]
        return {n: (t.data_ptr() - base, t.element_size(), t.numel()) for n, t in self.buffers.items()}


def _shmem(name: str):
    """This rank's ``Iris``, made on its first example (of scenario ``name``: what its progress says meanwhile)."""
    from iris.ranks import rank_state

    state = rank_state()
    if "shmem" not in state:
        import iris

        size = heap_bytes("cpu" if is_interpreter() else "gpu")
        progress(f"{name}: start-up, this rank's first example: its symmetric heap ({size >> 20} MiB) and tracing")
        state["shmem"] = iris.iris(size)
    return state["shmem"]


def _step(scenario, what: str, api: str, fn, *args):
    """A scenario function, its failure reported as the scenario module's (``ScenarioError``), not the harness's."""
    progress(f"{scenario.ref or scenario.name}: {what} ({api} kernel)")
    try:
        return fn(*args)
    except Exception as e:
        raise ScenarioError(f"{scenario.where}: {what} ({api} kernel) raised {type(e).__name__}: {e}") from e


def run_example(name: str, params: dict, settings: ExampleSettings, apis: tuple[str, ...]) -> RankObservation:
    """Pool job: run scenario ``name`` with ``params`` through each API on this rank, tracing and launching as
    ``settings`` say (``max_events`` slots in chunks of ``chunk``; ``num_warps`` for launches that give none); what
    this rank observed."""
    from iris.tracing.hw import cu_id_limit

    clock = PhaseClock()
    progress(f"{name}: loading the scenario module")
    scenario = load(name)
    name = scenario.ref or scenario.name
    shmem = _shmem(name)
    out = RankObservation(shmem.get_rank(), list(shmem.heap.bases), cu_id_limit(shmem.tracing.backend, shmem.device),
                          shmem.tracing.backend, shmem.tracing.ticks_per_second)
    with clock("reset"):
        progress(f"{name}: resetting the heap")
        shmem.heap.reset()
        ranks = {api: Rank(shmem, api, scenario.kernel(api)) for api in apis}
    with clock("setup"):
        for api in apis:  # each API gets its own buffers, at the same offsets on every rank
            _step(scenario, "setup", api, scenario.setup, ranks[api], params)
    with clock("barriers"):
        shmem.barrier()  # every rank's buffers are ready before any kernel can touch a peer's
    world = shmem.get_num_ranks()
    in_turn = world > 1 and bool(ranks_in_turn())  # rank 0's kernels, then rank 1's, ..., a barrier after each
    for api in apis:
        for turn in range(world) if in_turn else (out.rank,):
            if turn == out.rank:
                out.apis[api] = _launch(shmem, scenario, ranks[api], api, params, settings, clock)
            if in_turn:
                with clock("barriers"):
                    progress(f"{name}: in turn under a sanitizer, after rank {turn}'s {api} kernel")
                    shmem.barrier()
    with clock("barriers"):
        progress(f"{name}: barrier after the kernels (this rank's finished; waiting for the others)")
        shmem.barrier()  # every rank's kernels of every API are done: memory is final
    with clock("readback"):
        for api in apis:
            out.apis[api].memory = {n: t.cpu().tolist() for n, t in ranks[api].buffers.items()}
        shmem.tracing.disable()
    out.seconds = clock.seconds
    return out


def _launch(shmem, scenario, rank: Rank, api: str, params: dict, settings: ExampleSettings,
            clock: PhaseClock) -> ApiObservation:
    """Launch ``api``'s kernels of the example on this rank, wait for them, and read back what they recorded."""
    from iris.tracing.export import device_clock

    name = scenario.ref or scenario.name
    kernel = scenario.kernel(api)
    with clock("reset"):
        shmem.tracing.enable(settings.max_events, settings.chunk)  # local: this rank's buffers, every slot a hole
    with clock("launch"), CompilerTime() as compiler:
        t0 = device_clock(shmem.device)
        compiles_before = _compiles(kernel)
        launched = LaunchRecorder(kernel, settings.num_warps)
        _step(scenario, "launch", api, scenario.launch, launched, rank, params)
    clock.move("launch", "compile", compiler.seconds)
    with clock("kernel"):
        progress(f"{name}: waiting for the {api} kernel to finish on this rank's device")
        synchronize(shmem.device)
        t1 = device_clock(shmem.device)
    with clock("readback"):
        return ApiObservation(
            records=shmem.tracing.events(),  # only this rank's kernels write its trace buffers
            host=_host_counters(shmem.tracing),
            exported=_exported(shmem),
            layout=rank.layout(),
            window=(t0, t1),
            compiles=_compiles(kernel) - compiles_before,
            jit_compiled=compiler.compiled,
            jit_loaded=compiler.loaded,
            variants=sorted(launched.hashes),
        )


def _host_counters(tracing) -> HostCounters:
    """The counters as the host ``Tracing`` reports them itself (``conformance.check.compare._host_counters``
    compares each with ``events()``'s and the model's)."""
    return HostCounters(tracing.attempted, tracing.dropped, tracing.claimed, int(tracing.trace_counter.item()),
                        tracing.guard_changes())


def _exported(shmem) -> exported.ExportedTrace:
    """This rank's events as ``shmem.tracing.export`` writes them (JSON), read back (``conformance.check.exported``)."""
    return exported.read(shmem.tracing.export(os.path.join(export_folder().path, "trace.json")))  # this rank's file


def export_folder() -> ExportFolder:
    """This rank's :class:`ExportFolder`, made at its first export and kept in its state."""
    from iris.ranks import rank_state

    state = rank_state()
    if "export_folder" not in state:
        state["export_folder"] = ExportFolder()
    return state["export_folder"]


class ExportFolder:
    """The folder a rank exports its trace to, one per rank process: removed when the pool stops its ranks (a rank
    closes what its state holds, ``iris.ranks.rank_state``; it ends without running exit handlers)."""

    def __init__(self) -> None:
        self.path = tempfile.mkdtemp(prefix="iris-conformance-export-")

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


class PhaseClock:
    """Seconds spent per named phase (``with clock("setup"): ...``), summed over repeats."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - start

    def move(self, source: str, target: str, seconds: float) -> None:
        """Count ``seconds`` of phase ``source`` under ``target`` instead (a part measured inside it)."""
        if seconds:
            self.seconds[source] -= seconds
            self.seconds[target] = self.seconds.get(target, 0.0) + seconds


class CompilerTime:
    """Seconds Triton's compiler spends inside the block, and how many kernels it compiled (``compiled``) or loaded
    from its disk cache (``loaded``), through its compilation listener (the listener in place before is still
    called). All zero under the interpreter."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.compiled = 0
        self.loaded = 0
        self._before = None

    def __enter__(self) -> CompilerTime:
        self._before = before = triton.knobs.compilation.listener

        def listener(**event) -> None:
            self.seconds += event["times"].total / 1e6
            if event.get("cache_hit"):
                self.loaded += 1
            else:
                self.compiled += 1
            if before is not None:
                before(**event)

        triton.knobs.compilation.listener = listener
        return self

    def __exit__(self, *exc) -> None:
        triton.knobs.compilation.listener = self._before


class LaunchRecorder:
    """``kernel`` as a scenario's ``launch`` sees it, noting the hash of every compiled variant launched, and
    launching with ``num_warps`` where the launch gives none (``launch_options``).

    ``kernel[grid](...)`` returns the compiled kernel (``CompiledKernel.hash`` names the variant: source,
    constexprs, specialization, options, target); under the interpreter nothing is compiled and it returns None.
    """

    def __init__(self, kernel, num_warps: int | None = None) -> None:
        self.kernel = kernel
        self.num_warps = num_warps
        self.hashes: set[str] = set()

    def __getitem__(self, grid):
        launcher = self.kernel[grid]

        def launch(*args, **kwargs):
            compiled = launcher(*args, **launch_options(kwargs, self.num_warps))
            variant = getattr(compiled, "hash", None)
            if variant:
                self.hashes.add(variant)
            return compiled

        return launch

    def __getattr__(self, name):
        return getattr(self.kernel, name)


def _compiles(kernel) -> int:
    """Compiled variants of ``kernel`` cached in this process (0 under the interpreter)."""
    caches = getattr(kernel, "device_caches", None)
    if not caches:
        return 0
    return sum(len(entry[0]) for entry in caches.values())
