"""Compile a run's kernel variants ahead of its examples, on a pool of processes as wide as the machine.

On a GPU, every example of a case used to compile the variants it needed one after another, on the rank
processes, while the other CPUs waited. Before a case runs, the harness knows its examples (drawn from the
case's seed, ``drawing.drawn_examples``); :class:`Compiler` then

1. captures, on its worker processes, every launch each example makes (``stand_in.captured_launches``: the
   scenario's setup and launch on a stand-in rank, for every rank whose launch differs: one when the Triton
   kernel reads rank and world size at run time; with the example's ``num_warps`` where a launch gives none),
2. keeps one launch per distinct variant (``variant_key``: the kernel and the specialization and options Triton's
   binder computes for the launch),
3. compiles those in parallel with ``JITFunction.warmup``, which writes Triton's disk cache: the rank processes
   then load each variant from it instead of compiling it.

A run submits every case at its start (``Compiler.submit``) and each case waits only for its own variants
(``Compiler.wait``): later cases compile while earlier ones run, and a variant an earlier case compiles is not
compiled again. A variant two processes would compile at once (two pytest-xdist workers, or two runs) is compiled
by one, under a lock file next to Triton's cache; the other compiles what else it has first, then waits for that
one and loads it (``variant_lock``). A variant this misses (an example Hypothesis replays from its database, or
shrinks to) is compiled by the ranks as before: the pool only ever saves time. Nothing is compiled under the
interpreter (``backend="cpu"``), so the pool exists on GPUs only, or for a ``target`` named to cross-compile for.
"""

from __future__ import annotations

import concurrent.futures as futures
import dataclasses
import fcntl
import hashlib
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from conformance.harness.stand_in import Launch, captured_launches
from iris.env_vars import env_int

WORKERS_ENV = "IRIS_COMPILE_WORKERS"  # processes of the pool; 0 turns compiling ahead off
TIMEOUT_S = 900.0  # one case's compiling ahead; past it the pool is stopped for the run and the ranks compile


def default_workers() -> int:
    """``IRIS_COMPILE_WORKERS``, else the CPUs this process may use, shared among pytest-xdist workers."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    sharing = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return env_int(WORKERS_ENV, max(1, cpus // max(1, sharing)), "a number of compile processes (0 turns "
                   "compiling ahead off)")


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


class _CrossCompiling:
    """Triton's active driver in a worker that compiles for ``target`` with no GPU: what ``JITFunction.warmup``
    asks a driver for, and nothing that launches."""

    def __init__(self, target) -> None:
        self.target = target

    def get_current_target(self):
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0


@contextmanager
def cross_compiling(target) -> Iterator[None]:
    """Within it, Triton's launches and ``warmup`` in this process compile for ``target`` (a ``GPUTarget``), with no
    GPU needed; nothing can launch."""
    from triton.runtime.driver import driver

    before = driver._active  # None until first use (Triton then finds the GPU's driver)
    driver.set_active(_CrossCompiling(target))
    try:
        yield
    finally:
        driver._active = before


# What hides every GPU from a process (torch's CUDA and ROCm builds, Triton's drivers), read when it first touches one
GPU_HIDING_ENV = {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}


def _worker_init(target) -> None:
    """For the worker's life: no GPU (a process that touched one would hold a CUDA context, about 0.5 GiB of GPU
    memory, for nothing: a scenario's launch captured on a stand-in may make a stream), and Triton compiling for
    ``target``."""
    from triton.runtime.driver import driver

    os.environ.update(TRITON_INTERPRET="0", **GPU_HIDING_ENV)
    driver.set_active(_CrossCompiling(target))


def _this_gpu():
    """The ``GPUTarget`` of the GPU this process would launch on (Triton's driver; no kernel runs)."""
    from triton.runtime.driver import driver

    return driver.active.get_current_target()


def _get_ready() -> None:
    """Worker: import what a job needs now (while the rank pools start), and compile the harness's own kernel
    (``device_clock``'s) once, so that the ranks compile nothing."""
    from conformance.kit.scenario import all_scenarios
    from iris.tracing.export import compile_device_clock

    all_scenarios()
    with variant_lock("device_clock", wait=True):
        compile_device_clock()


def _launches(job: Job) -> tuple[object, list[Launch]]:
    from conformance.kit.scenario import load

    scenario = load(job.scenario)
    return scenario.kernel(job.api), captured_launches(scenario, job.api, job.params, job.rank, job.world_size,
                                                       num_warps=job.num_warps)


def _capture(job: Job) -> list[str]:
    """Worker: the variant key of each launch of ``job`` on this process's GPU (or target), in order."""
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


def _failed(f: futures.Future) -> BaseException | None:
    """Why the done future ``f`` has no result (its exception, or that it was cancelled); None when it has one."""
    if f.cancelled():
        return futures.CancelledError("the compile was cancelled: the pool was stopped or closed")
    return f.exception()


def _settle(done: futures.Future, f: futures.Future) -> None:
    """Give ``done`` the outcome of the done future ``f``."""
    failure = _failed(f)
    if failure is not None:
        done.set_exception(failure)
    else:
        done.set_result(f.result())


class Compiler:
    """A pool of ``workers`` processes that compile cases' variants ahead (see the module docstring).

    ``submit`` hands a case's examples to the pool and returns at once; ``wait`` gives the case's :class:`Ahead`
    once every variant it needs is in Triton's cache; ``ahead`` does both. The processes start on first use and live
    until ``close()``; ``workers=0`` compiles nothing. A case that waits longer than ``timeout`` seconds for its
    variants (a hung compile) stops the pool for the rest of the run. The workers never touch a GPU: they compile
    for ``target`` (a ``GPUTarget``), by default this process's GPU as Triton's driver finds it; another target
    is a cross-compile, with no GPU needed.
    """

    def __init__(self, workers: int | None = None, timeout: float = TIMEOUT_S, target=None) -> None:
        self.workers = default_workers() if workers is None else workers
        self.timeout = timeout
        self.target = target
        self._pool: futures.ProcessPoolExecutor | None = None
        self._ready: list[futures.Future] = []
        self._feeder: futures.ThreadPoolExecutor | None = None  # hands each submitted case to the pool, in order
        self._variants: dict[str, futures.Future] = {}  # key -> done once in the cache (True: this pool compiled it)

    def _executor(self) -> futures.ProcessPoolExecutor:
        if self._pool is None:
            if self.target is None:
                self.target = _this_gpu()
            self._pool = futures.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                                     initializer=_worker_init, initargs=(self.target,))
            self._ready = [self._pool.submit(_get_ready) for _ in range(self.workers)]
        return self._pool

    @property
    def pids(self) -> list[int]:
        """The worker processes' ids (none before the first use or after a stop)."""
        return [] if self._pool is None else list(getattr(self._pool, "_processes", {}))

    def start(self) -> None:
        """Start the processes now, in the background (they import and compile the harness's own kernel), instead
        of at the first case; no-op with no workers. A GPU that cannot be found is reported by each case's wait."""
        if self.workers:
            try:
                self._executor()
            except Exception:  # no GPU to compile for: the first case's feed raises it again, into its Ahead
                pass

    def submit(self, scenario_ref: str, world_size: int, examples: list[dict], apis: tuple[str, ...],
               ranks: tuple[int, ...], num_warps: list[int | None] | None = None) -> futures.Future:
        """Start compiling every variant ``examples`` launch through ``apis`` on ``ranks`` and return at once: a
        future of the case's :class:`Ahead` (``wait``). ``num_warps``: each example's, for launches that give none
        (default: none). Cases are captured in the order submitted; a variant an earlier case already compiles is
        waited for, not compiled again, and counts as compiled only in that case."""
        out: futures.Future = futures.Future()
        if not self.workers or not examples:
            out.set_result(Ahead())
            return out
        warps = [None] * len(examples) if num_warps is None else num_warps
        jobs = [Job(scenario_ref, api, p, r, world_size, num_warps=w)
                for p, w in zip(examples, warps, strict=True) for api in apis for r in ranks]
        if self._feeder is None:
            self._feeder = futures.ThreadPoolExecutor(1, thread_name_prefix="compile-ahead")
        self._feeder.submit(self._feed, jobs, out)
        return out

    def wait(self, pending: futures.Future) -> Ahead:
        """``pending``'s :class:`Ahead` (a future ``submit`` returned), waiting at most ``timeout`` seconds; past
        that the pool is stopped for the rest of the run and the Ahead says so (the ranks compile)."""
        try:
            return pending.result(timeout=self.timeout)
        except futures.TimeoutError:
            self._stop()
            return Ahead(error=f"compiling ahead took over {self.timeout:g} s; stopped for this run (the ranks "
                               "compile)")

    def ahead(self, scenario_ref: str, world_size: int, examples: list[dict], apis: tuple[str, ...],
              ranks: tuple[int, ...], num_warps: list[int | None] | None = None) -> Ahead:
        """``submit``, then ``wait``: never raises (see ``Ahead.error``)."""
        return self.wait(self.submit(scenario_ref, world_size, examples, apis, ranks, num_warps))

    def _feed(self, jobs: list[Job], out: futures.Future) -> None:
        """The feeder thread: capture one case's launches, hand its new variants to the pool, and resolve ``out``
        once all of its variants are in the cache (without waiting for that: the next case is fed meanwhile)."""
        start = time.perf_counter()
        try:
            if not self.workers:  # stopped after this case was submitted
                out.set_result(Ahead())
                return
            pool = self._executor()
            for ready in self._ready:  # a worker that cannot start says so here, with its error
                ready.result()
            unique: dict[str, Job] = {}
            for job, keys in zip(jobs, pool.map(_capture, jobs), strict=True):
                for i, key in enumerate(keys):
                    unique.setdefault(key, dataclasses.replace(job, index=i))
            mine = [key for key in unique if key not in self._variants]
            for key in mine:
                self._variants[key] = self._compile_once(pool, unique[key], key)
        except Exception as e:  # the ranks compile whatever this did not: report, do not fail the case
            out.set_result(Ahead(seconds=time.perf_counter() - start, error=f"{type(e).__name__}: {e}"))
            return
        needed = [self._variants[key] for key in unique]
        if not needed:  # its examples launch nothing
            out.set_result(Ahead(seconds=time.perf_counter() - start))
            return
        left = [len(needed)]
        lock = threading.Lock()

        def one_done(_: futures.Future) -> None:
            with lock:
                left[0] -= 1
                if left[0]:
                    return
            failed = [e for e in map(_failed, needed) if e is not None]
            error = f"{type(failed[0]).__name__}: {failed[0]}" if failed else ""
            compiled = 0 if failed else sum(bool(self._variants[key].result()) for key in mine)
            out.set_result(Ahead(len(unique), compiled, time.perf_counter() - start, error))

        for f in needed:
            f.add_done_callback(one_done)

    def _compile_once(self, pool: futures.ProcessPoolExecutor, job: Job, key: str) -> futures.Future:
        """A future done once variant ``key`` is in Triton's cache: True if this pool compiled it. A variant another
        process is compiling (its lock is held) is tried again, waiting, after the work queued before it."""
        done: futures.Future = futures.Future()

        def first_try(f: futures.Future) -> None:
            if _failed(f) is None and f.result() is None:  # another process compiles it: a waiting try, queued
                try:
                    self._feeder.submit(self._again, pool, job, key, done)
                except Exception as e:  # closed meanwhile
                    done.set_exception(e)
            else:  # compiled, cached, raised, or cancelled by a stop or close
                _settle(done, f)

        pool.submit(_compile, job, key, False).add_done_callback(first_try)
        return done

    @staticmethod
    def _again(pool: futures.ProcessPoolExecutor, job: Job, key: str, done: futures.Future) -> None:
        try:
            again = pool.submit(_compile, job, key, True)
        except Exception as e:
            done.set_exception(e)
            return
        again.add_done_callback(lambda f: _settle(done, f))

    def _stop(self) -> None:
        """Kill the processes (one may hang in a compile) and compile nothing more in this run."""
        self.workers = 0
        if self._pool is not None:
            for process in list(getattr(self._pool, "_processes", {}).values()):
                process.kill()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._feeder is not None:
            self._feeder.shutdown(wait=True, cancel_futures=True)
            self._feeder = None

    def __enter__(self) -> Compiler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
