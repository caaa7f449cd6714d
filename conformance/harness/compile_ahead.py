"""Compile a case's kernel variants ahead of its examples, on a pool of processes as wide as the machine.

On a GPU, every example of a case used to compile the variants it needed one after another, on the rank
processes, while the other CPUs waited. Before a case runs, the harness knows its examples (drawn from the
case's seed, ``host_side.drawn_examples``); :class:`Compiler` then

1. captures, on its worker processes, every launch each example makes (``stand_in.captured_launches``: the
   scenario's setup and launch on a stand-in rank, for every rank whose launch differs: one when the Triton
   kernel reads rank and world size at run time; with the example's ``num_warps`` where a launch gives none),
2. keeps one launch per distinct variant (``variant_key``: the kernel and the specialization and options Triton's
   binder computes for the launch),
3. compiles those in parallel with ``JITFunction.warmup``, which writes Triton's disk cache: the rank processes
   then load each variant from it instead of compiling it.

A variant two processes would compile at once (two pytest-xdist workers, or two runs) is compiled by one, under a
lock file next to Triton's cache; the other compiles its other variants first, then waits for that one and loads
it (``variant_lock``). A variant this misses (an example Hypothesis replays from its database) is compiled by the
ranks as before: the pool only ever saves time. Nothing is compiled under the interpreter (``backend="cpu"``), so
the pool exists on GPUs only.
"""

from __future__ import annotations

import concurrent.futures as futures
import dataclasses
import fcntl
import hashlib
import multiprocessing
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from conformance.harness.stand_in import Launch, captured_launches

WORKERS_ENV = "IRIS_COMPILE_WORKERS"  # processes of the pool; 0 turns compiling ahead off
TIMEOUT_S = 900.0  # one case's compiling ahead; past it the pool is stopped for the run and the ranks compile


def default_workers() -> int:
    """``IRIS_COMPILE_WORKERS``, else the CPUs this process may use, shared among pytest-xdist workers."""
    if os.environ.get(WORKERS_ENV):
        value = os.environ[WORKERS_ENV]
        if not value.isdigit():
            raise ValueError(f"{WORKERS_ENV}={value!r}; expected a number of processes (0 turns it off)")
        return int(value)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    sharing = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return max(1, cpus // max(1, sharing))


def variant_key(kernel, launch: Launch, target) -> str:
    """What Triton compiles for ``launch`` of the jit function ``kernel`` on ``target`` (a ``GPUTarget``), as a
    digest: equal for two launches exactly when one compile serves both.

    The launch's specialization and options come from Triton's own binder for that target's backend (what a launch
    on that GPU computes: argument types, ``== 1`` and divisibility by 16 unless turned off, constexprs, num_warps).
    """
    binder = _binder(kernel, target)
    _, specialization, options = binder(*launch.args, **launch.kwargs)
    parts = (kernel.fn.__module__, kernel.fn.__qualname__, specialization, sorted(options.items()))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


_BINDERS: dict = {}


def _binder(kernel, target):
    key = (id(kernel), repr(target))
    if key not in _BINDERS:
        from triton.compiler import make_backend
        from triton.runtime.jit import create_function_from_signature

        _BINDERS[key] = create_function_from_signature(kernel.signature, kernel.params, make_backend(target))
    return _BINDERS[key]


@dataclass(frozen=True)
class Job:
    """One example of one API on one rank: what a worker captures and, for ``index``, compiles."""

    scenario: str  # the ref load() takes
    api: str
    params: dict
    rank: int
    world_size: int
    index: int = -1  # the launch to compile (-1: capture only)
    num_warps: int | None = None  # the example's, for launches that give none (``ExampleSettings.num_warps``)


@dataclass
class Ahead:
    """What compiling a case ahead did: distinct variants, of them compiled (not already in the cache), seconds."""

    variants: int = 0
    compiled: int = 0
    seconds: float = 0.0
    error: str = ""


def _worker_init() -> None:
    os.environ["TRITON_INTERPRET"] = "0"


def _get_ready() -> None:
    """Worker: import what a job needs and find the GPU now (while the rank pools start), and compile the harness's
    own kernel (``device_clock``'s) once, so that the ranks compile nothing."""
    from triton.runtime import driver

    from conformance.kit.scenario import all_scenarios
    from iris.tracing.export import compile_device_clock

    all_scenarios()
    driver.active.get_current_target()
    with variant_lock("device_clock", wait=True):
        compile_device_clock()


def _launches(job: Job) -> tuple[object, list[Launch]]:
    from conformance.kit.scenario import load

    scenario = load(job.scenario)
    return scenario.kernel(job.api), captured_launches(scenario, job.api, job.params, job.rank, job.world_size,
                                                       num_warps=job.num_warps)


def _capture(job: Job) -> list[str]:
    """Worker: the variant key of each launch of ``job`` on this process's GPU, in order."""
    from triton.runtime import driver

    kernel, launches = _launches(job)
    target = driver.active.get_current_target()
    return [variant_key(kernel, launch, target) for launch in launches]


def _lock_path(key: str) -> str:
    from triton import knobs

    folder = os.path.join(knobs.cache.dir, "iris-compile-ahead-locks")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, key + ".lock")


@contextmanager
def variant_lock(key: str, wait: bool) -> Iterator[bool]:
    """Hold the lock file of variant ``key`` next to Triton's cache; yields False, holding nothing, when another
    process holds it and ``wait`` is False (that process is compiling the variant: do another one first)."""
    with open(_lock_path(key), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


def _compile(job: Job, key: str, wait: bool) -> bool | None:
    """Worker: compile launch ``job.index`` into Triton's cache; True if it compiled, False if it was cached, None
    if another process is compiling it and ``wait`` is False."""
    import triton

    kernel, launches = _launches(job)
    launch = launches[job.index]
    compiled = []
    before = triton.knobs.compilation.listener

    def listener(**event) -> None:
        compiled.append(not event.get("cache_hit"))

    with variant_lock(key, wait) as held:
        if not held:
            return None
        triton.knobs.compilation.listener = listener
        try:
            kernel.warmup(*launch.args, grid=(1,), **launch.kwargs)
        finally:
            triton.knobs.compilation.listener = before
    return any(compiled)


class Compiler:
    """A pool of ``workers`` processes that compile a case's variants ahead (see the module docstring).

    The processes start on first use and live until ``close()``; ``workers=0`` compiles nothing. A case whose
    compiling ahead takes longer than ``timeout`` seconds (a hung compile) stops the pool for the rest of the run.
    """

    def __init__(self, workers: int | None = None, timeout: float = TIMEOUT_S) -> None:
        self.workers = default_workers() if workers is None else workers
        self.timeout = timeout
        self._pool: futures.ProcessPoolExecutor | None = None
        self._ready: list[futures.Future] = []

    def _executor(self) -> futures.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = futures.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                                     initializer=_worker_init)
            self._ready = [self._pool.submit(_get_ready) for _ in range(self.workers)]
        return self._pool

    def start(self) -> None:
        """Start the processes now, in the background (they import, find the GPU, and compile the harness's own
        kernel), instead of at the first case; no-op with no workers."""
        if self.workers:
            self._executor()

    def ahead(self, scenario_ref: str, world_size: int, examples: list[dict], apis: tuple[str, ...],
              ranks: tuple[int, ...], num_warps: list[int | None] | None = None) -> Ahead:
        """Compile every variant ``examples`` launch through ``apis`` on ``ranks``; ``num_warps``: each example's, for
        launches that give none (default: none); never raises (see ``error``)."""
        result = Ahead()
        if not self.workers or not examples:
            return result
        start = time.perf_counter()
        deadline = time.monotonic() + self.timeout

        def left() -> float:
            return max(0.0, deadline - time.monotonic())

        try:
            pool = self._executor()
            for ready in self._ready:  # a worker that cannot start says so here, with its error
                ready.result(timeout=left())
            warps = [None] * len(examples) if num_warps is None else num_warps
            jobs = [Job(scenario_ref, api, p, r, world_size, num_warps=w)
                    for p, w in zip(examples, warps, strict=True) for api in apis for r in ranks]
            unique: dict[str, Job] = {}
            for job, keys in zip(jobs, pool.map(_capture, jobs, timeout=left()), strict=True):
                for i, key in enumerate(keys):
                    unique.setdefault(key, dataclasses.replace(job, index=i))
            result.variants = len(unique)
            # first every variant nobody else is compiling; then, waiting, those another process was (now loads)
            first = {key: pool.submit(_compile, job, key, False) for key, job in unique.items()}
            busy = [key for key, f in first.items() if f.result(timeout=left()) is None]
            then = [pool.submit(_compile, unique[key], key, True) for key in busy]
            result.compiled = sum(bool(f.result(timeout=left())) for f in [*first.values(), *then])
        except futures.TimeoutError:
            result.error = f"compiling ahead took over {self.timeout:g} s; stopped for this run (the ranks compile)"
            self._stop()
        except Exception as e:  # the ranks compile whatever this did not: report, do not fail the case
            result.error = f"{type(e).__name__}: {e}"
        result.seconds = time.perf_counter() - start
        return result

    def _stop(self) -> None:
        """Kill the processes (one may hang in a compile) and compile nothing more in this run."""
        if self._pool is not None:
            for process in list(getattr(self._pool, "_processes", {}).values()):
                process.kill()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self.workers = 0

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Compiler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
