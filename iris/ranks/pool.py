"""A pool of rank processes kept alive across jobs (process start-up, device init and JIT compiles paid once).

``RankPool(world_size, backend)`` spawns ``world_size`` rank processes (:mod:`iris.ranks.child`) lazily on
the first job. Each joins a gloo process group over a free local port and runs jobs until stopped.
``run(fn, *args, timeout=..., **kwargs)`` runs one job on every rank at once and returns the results in rank
order. ``fn`` must be a module-level (importable) function; arguments and results must be picklable. A pool
holds at most ``MAX_WORLD_SIZE`` ranks, and waits at most ``MAX_TIMEOUT_S`` at a time (every timeout is checked).

Failures never hang the caller:

* a rank raises: :class:`RankError` naming it, with its traceback. If every other rank answers within a
  grace period (``min(timeout, FAILURE_GRACE_S)`` after the failure, and never past the job's deadline)
  the pool keeps its processes (same ``generation``); otherwise the ranks still running (typically stuck
  in a collective the failed rank never reached) are killed and the next ``run`` rebuilds the pool.
* the job does not finish within ``timeout``: :class:`RankTimeout` naming the ranks that had not
  answered; every rank is killed and the next ``run`` rebuilds the pool.
* a rank process dies (segfault, ``os._exit``): :class:`RankDied` naming it and its exit code; every
  rank is killed (the process group is broken) and the next ``run`` rebuilds the pool.

A rank found dead between jobs is replaced transparently by the next ``run``. ``generation`` counts the
times rank processes were started (0 before the first job). Rank processes are daemons that also exit when
their parent disappears, so none outlives its owner; :class:`iris.ranks.Pools` owns the pools of a run.
"""

from __future__ import annotations

import contextlib
import glob
import multiprocessing as mp
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
import textwrap
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from multiprocessing.connection import Connection, wait
from typing import Any

from iris.checks import is_int, is_positive_number
from iris.ranks import sanitizer as compute_sanitizer
from iris.ranks import stacks
from iris.ranks.child import PROGRESS_BYTES, rank_main
from iris.ranks.env import backend_env, free_port, patched_environ, rank_env
from iris.ranks.forkserver import rank_context

__all__ = ["MAX_TIMEOUT_S", "MAX_WORLD_SIZE", "START_JOB", "RankDied", "RankError", "RankPool", "RankTimeout",
           "UnguardedMain", "check_timeout"]

# The longest wait a pool honours (its timeouts, start-up and grace included): it waits through poll(), whose
# timeout is a C int of milliseconds (2**31 - 1 ms, about 24.8 days; past that multiprocessing's wait() raises
# OverflowError), so one day, comfortably under it.
MAX_TIMEOUT_S = 86_400.0
# The most ranks one pool starts: each is a process of its own on this host (an interpreter, pipes, a heap), and a
# world is one host's (8 ranks fit on one GPU; 64 are 8 per GPU on an 8-GPU node).
MAX_WORLD_SIZE = 64
FAILURE_GRACE_S = 30.0  # how long the other ranks may still take once one rank has raised
DEATH_GRACE_S = 1.0  # once a rank died, how long to collect the other ranks' reports before killing them
STOP_JOIN_S = 5.0  # close(): how long ranks may take to exit after the stop message
KILL_JOIN_S = 10.0
START_JOB = "<pool start>"  # the job name of the ranks' start-up in a failure's ``job`` (no job of the caller's)
# A rank process that, starting up, ran the main script again and reached a pool start at its top level exits with
# this code (sysexits' EX_CONFIG) and says nothing: the pool's process says why, once.
UNGUARDED_EXIT = 78
_RANK_NAME = re.compile(r"iris-\w+-g\d+-rank\d+")  # the process name of a rank (RankPool._spawn)


def _job_name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _ranks(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, sorted(ranks)))


class RankError(RuntimeError):
    """One or more ranks raised. ``ranks``: those ranks; ``tracebacks``: rank -> formatted traceback;
    ``killed``: ranks that had not answered after the grace period and were killed (pool rebuilt next run)."""

    def __init__(
        self, message: str, ranks: list[int], tracebacks: dict[int, str], job: str, killed: list[int] | None = None
    ):
        super().__init__(message)
        self.ranks, self.tracebacks, self.job, self.killed = list(ranks), dict(tracebacks), job, list(killed or [])

    def __reduce__(self):
        return (type(self), (str(self), self.ranks, self.tracebacks, self.job, self.killed))


class RankTimeout(TimeoutError):
    """The job did not finish in time. ``ranks``: those that had not answered (all ranks were killed); ``doing``:
    rank -> what each of them last said it was doing (``iris.ranks.progress``; "start-up" if nothing); ``stacks``:
    rank -> the frames of its Python stack when it was killed (:mod:`iris.ranks.stacks`), for each that wrote them."""

    def __init__(self, message: str, ranks: list[int], job: str, timeout: float, doing: dict[int, str] | None = None,
                 stacks: dict[int, str] | None = None):
        super().__init__(message)
        self.ranks, self.job, self.timeout, self.doing = list(ranks), job, timeout, dict(doing or {})
        self.stacks = dict(stacks or {})

    def __reduce__(self):
        return (type(self), (str(self), self.ranks, self.job, self.timeout, self.doing, self.stacks))


class RankDied(RuntimeError):
    """A rank process exited without answering. ``ranks``; ``exitcodes``: rank -> exit code (negative: signal)."""

    def __init__(self, message: str, ranks: list[int], exitcodes: dict[int, int | None], job: str):
        super().__init__(message)
        self.ranks, self.exitcodes, self.job = list(ranks), dict(exitcodes), job

    def __reduce__(self):
        return (type(self), (str(self), self.ranks, self.exitcodes, self.job))


class UnguardedMain(RankDied, SystemExit):
    """The rank processes died at start-up because the main script starts ranks at its top level, outside an
    ``if __name__ == "__main__":`` block: each rank process, as multiprocessing starts it, runs the main script again
    and reached that start. A :class:`RankDied`; also a ``SystemExit`` whose code is the message, so that the script
    ends with that one line on stderr (exit code 1) rather than a traceback."""

    def __init__(self, message: str, ranks: list[int], exitcodes: dict[int, int | None], job: str):
        super().__init__(message, ranks, exitcodes, job)
        self.code = message


def exit_if_rerunning_main() -> None:
    """In a rank process that is still starting up, and is running the main script again (multiprocessing does so
    to recreate the main module): the script starts ranks from its top level. Exit at once with
    :data:`UNGUARDED_EXIT`, quietly (the pool's process raises :class:`UnguardedMain`); a no-op anywhere else."""
    process = mp.current_process()
    if getattr(process, "_inheriting", False) and _RANK_NAME.fullmatch(process.name):
        os._exit(UNGUARDED_EXIT)


def _main_script() -> str:
    main = sys.modules.get("__main__")
    return getattr(main, "__file__", None) or "the main script"


class RankPool:
    """``world_size`` rank processes of one backend (``"cpu"`` or ``"gpu"``), started on the first job."""

    def __init__(self, world_size: int, backend: str | None = "cpu", *, env: Mapping[str, str] | None = None,
                 device_offset: int = 0, start_timeout: float = 120.0, failure_grace: float = FAILURE_GRACE_S,
                 persistent: bool = True, sanitizer: bool | str = False, name: str = "RankPool") -> None:
        """``backend``: "cpu", "gpu" or None (only ``env``); ``env``: extra variables of every rank;
        ``device_offset``: rank r uses GPU ``(device_offset + r) % count``; ``failure_grace``: how long the
        other ranks may still answer once one raised; ``sanitizer``: run every rank under a compute-sanitizer tool
        (a name of :data:`iris.ranks.sanitizer.TOOLS`; True: memcheck), failing a job on any finding of ours it
        reports; ``persistent=False`` for a pool that runs one job (its messages do not promise a rebuild);
        ``name`` labels its messages."""
        if not is_int(world_size) or not 1 <= world_size <= MAX_WORLD_SIZE:
            raise ValueError(f"{name}: world_size must be an int in 1..{MAX_WORLD_SIZE} (MAX_WORLD_SIZE: the rank "
                             f"processes one host runs), got {world_size!r}")
        self._env = backend_env(backend) if backend is not None else {}
        if env is not None:
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in dict(env).items()):
                raise ValueError(f"{name}: env must map str to str, got {env!r}")
            self._env.update(env)
        if not is_int(device_offset) or device_offset < 0:
            raise ValueError(f"{name}: device_offset must be an int >= 0, got {device_offset!r}")
        check_timeout(name, "start_timeout", start_timeout)
        check_timeout(name, "failure_grace", failure_grace)
        self._failure_grace = float(failure_grace)
        try:
            self._sanitizer = compute_sanitizer.tool_name(sanitizer)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        self._executable: str | None = None
        self._log_dir: str | None = None
        self._not_ours_read: dict[str, int] = {}  # a not-ours file beside a rank log -> bytes taken
        self._drop_log_dir: weakref.finalize | None = None
        if self._sanitizer:
            self._log_dir = tempfile.mkdtemp(prefix=f"iris-sanitize-{self._sanitizer}-")
            # removed at close, when the pool is dropped, or at exit; detached when a finding names a log in it
            self._drop_log_dir = weakref.finalize(self, shutil.rmtree, self._log_dir, True)
            self._executable = compute_sanitizer.wrapper(sys.executable, self._log_dir, self._sanitizer)
        self._world_size = world_size
        self._backend = backend
        self._device_offset = device_offset
        self._start_timeout = float(start_timeout)
        self._persistent = persistent
        self._name = name
        self._procs: list[mp.process.BaseProcess] = []
        self._conns: list[Connection] = []
        self._status: list[Any] = []  # per rank: what it said it was doing (iris.ranks.progress)
        self._stack_dir: str | None = None  # where the ranks write their stacks when asked (iris.ranks.stacks)
        self._stack_files: list[str] = []  # per rank of the current processes
        self._drop_stack_dir: Callable[[], Any] = lambda: None
        self._rank_pids: list[int] = []  # the rank processes' own pids (a wrapper's rank is its child)
        self._generation = 0
        self._seq = 0
        self._broken = False  # the current processes must be replaced before the next job
        self._spawned = False  # processes spawned by spawn_now(), not yet known to be ready
        self._ran = False  # a job finished on the current processes
        self._closed = False
        self._owner_pid = os.getpid()
        self._lock = threading.RLock()

    # -- properties

    @property
    def world_size(self) -> int:
        return self._world_size

    @property
    def backend(self) -> str | None:
        return self._backend

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def device_offset(self) -> int:
        return self._device_offset

    @property
    def sanitizer(self) -> str:
        """The compute-sanitizer tool the ranks run under ("" when none)."""
        return self._sanitizer

    @property
    def log_dir(self) -> str | None:
        """The folder of the ranks' sanitizer logs (one per rank process), None when not sanitized; removed when the
        pool closes, unless a rank reported a finding (its error names its log)."""
        return self._log_dir

    def take_not_ours(self) -> list[dict]:
        """The sanitizer reports that are not ours that the ranks noted since the last call (every generation's),
        merged: ``tool``, ``why``, ``report`` (the tool's first lines), ``count``
        (:func:`iris.ranks.sanitizer.note_not_ours`)."""
        if self._log_dir is None:
            return []
        entries = []
        for path in sorted(glob.glob(os.path.join(self._log_dir, "*" + compute_sanitizer.NOT_OURS_SUFFIX))):
            new, self._not_ours_read[path] = compute_sanitizer.new_not_ours(path, self._not_ours_read.get(path, 0))
            entries += new
        return compute_sanitizer.merge_not_ours(entries)

    @property
    def started(self) -> bool:
        """True while rank processes are up and usable for the next job."""
        return bool(self._procs) and not self._broken

    @property
    def fresh(self) -> bool:
        """True until a job finishes on the current rank processes: the next job is then their first (imports,
        device and heap set-up); so again after every rebuild."""
        return not self._ran

    @property
    def generation(self) -> int:
        """How many times rank processes were started (0 before the first job; +1 on each rebuild)."""
        return self._generation

    @property
    def pids(self) -> list[int]:
        """The rank processes' pids in rank order (empty when not started)."""
        return [p.pid for p in self._procs if p.pid is not None]

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("started" if self.started else "not started")
        return f"RankPool({self._world_size}, {self._backend!r}, generation={self._generation}, {state})"

    def _where(self) -> str:
        if not self._persistent:
            return f"{self._name} ({self._world_size} rank{'s' if self._world_size > 1 else ''})"
        return f"{self._name}({self._world_size} ranks, {self._backend}, generation {self._generation})"

    def _said(self, ranks) -> dict[int, str]:
        """What each of ``ranks`` last said it was doing (``iris.ranks.progress``), "start-up" if nothing yet."""
        return {i: self._status[i].value.decode(errors="replace") or "start-up" for i in sorted(ranks)
                if i < len(self._status)}

    def _doing(self, ranks) -> str:
        """``_said`` as lines of a message."""
        return "".join(f"\n    rank {i} was at: {text}" for i, text in self._said(ranks).items())

    def _stacks(self, ranks) -> dict[int, str]:
        """The Python stacks of ``ranks`` that started (:mod:`iris.ranks.stacks`), asked for now."""
        return stacks.take({i: (self._rank_pids[i], self._stack_files[i]) for i in sorted(ranks)
                            if i < min(len(self._rank_pids), len(self._stack_files))})

    def _rebuilt(self) -> str:
        return "; the pool will be rebuilt on the next run" if self._persistent else ""

    # -- lifecycle

    def __enter__(self) -> RankPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self._procs and os.getpid() == self._owner_pid:
                self._kill()
        except Exception:
            pass

    def close(self) -> None:
        """Stop the ranks: a stop message, then join (``STOP_JOIN_S``), then kill whatever is left."""
        with self._lock:
            self._closed = True
            if os.getpid() != self._owner_pid:  # a forked copy of the owner: not ours to stop
                return
            if not self._broken:
                for conn in self._conns:
                    try:
                        conn.send_bytes(pickle.dumps(("stop", 0, None)))
                    except (OSError, ValueError):
                        pass
                deadline = time.monotonic() + STOP_JOIN_S
                for p in self._procs:
                    p.join(max(0.0, deadline - time.monotonic()))
            self._kill()
            self._stack_dir = None
            self._drop_stack_dir()
            if self._drop_log_dir is not None:
                self._drop_log_dir()  # nothing where a finding detached it

    def _kill(self) -> None:
        """Kill every rank process (if alive), reap it and forget it."""
        for p in self._procs:
            if p.is_alive():
                p.kill()
        for p in self._procs:
            p.join(KILL_JOIN_S)
        for conn in self._conns:
            conn.close()
        for path in self._stack_files:
            with contextlib.suppress(OSError):
                os.remove(path)
        self._procs, self._conns, self._status, self._broken, self._spawned = [], [], [], False, False
        self._stack_files, self._rank_pids = [], []
        self._ran = False

    def start(self) -> None:
        """Start the rank processes now instead of at the first job (no-op when they are up)."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._where()} is closed")
            if self._spawned:
                self._start(spawned=True)
            elif not self.started:
                self._kill()
                self._start()

    def spawn_now(self) -> None:
        """Spawn the rank processes and return at once: they import and join their group while the caller goes on,
        and the next ``start()`` or job waits for them (no-op when they are up or closed)."""
        with self._lock:
            if not self._closed and not self._procs:
                self._spawn()
                self._spawned = True

    def _start(self, spawned: bool = False) -> None:
        """Start a new generation of rank processes (or take ``spawned`` ones); wait until all joined the group."""
        self._spawned = False
        for attempt in range(2):
            try:
                if not spawned:
                    self._spawn()
                spawned = False
                ready = self._collect(START_JOB, self._start_timeout, expect="ready", grace=0.0)
                if not all(isinstance(pid, int) for pid in ready):
                    raise RuntimeError(f"{self._where()}: unexpected start-up replies {ready!r}")
                self._rank_pids = ready
                return
            except RankError as e:
                self._kill()
                if attempt == 0 and "address already in use" in str(e).lower():
                    continue  # the free port was taken between picking it and binding it: pick another
                raise
            except BaseException:
                self._kill()
                raise

    def _spawn(self) -> None:
        exit_if_rerunning_main()
        ctx = rank_context(self._executable, self._env.get("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "")))
        forked = ctx.get_start_method() == "forkserver"
        port = free_port()
        self._generation += 1
        if self._stack_dir is None:  # removed at close, when the pool is dropped, or at the interpreter's exit
            self._stack_dir = tempfile.mkdtemp(prefix="iris-stacks-")
            self._drop_stack_dir = weakref.finalize(self, shutil.rmtree, self._stack_dir, True)
        for rank in range(self._world_size):
            env = rank_env(rank, self._world_size, port, {**self._env, "IRIS_DEVICE_OFFSET": str(self._device_offset)})
            parent_conn, child_conn = ctx.Pipe(duplex=True)
            status = ctx.Array("c", PROGRESS_BYTES, lock=False)
            name = f"iris-{self._backend or 'rank'}{self._world_size}-g{self._generation}-rank{rank}"
            stack_file = os.path.join(self._stack_dir, f"{name}.txt")
            with patched_environ(env), _spawn_executable(self._executable):
                p = ctx.Process(
                    target=rank_main,
                    args=(rank, self._world_size, dict(os.environ), forked, os.getpid(), child_conn, status,
                          stack_file),
                    name=name,
                    daemon=True,  # stopped by multiprocessing at interpreter exit if nobody closed the pool
                )
                p.start()
            child_conn.close()
            self._procs.append(p)
            self._conns.append(parent_conn)
            self._status.append(status)
            self._stack_files.append(stack_file)

    # -- jobs

    def run(self, fn: Callable[..., Any], *args: Any, timeout: float = 300.0, **kwargs: Any) -> list[Any]:
        """Run ``fn(*args, **kwargs)`` on every rank at once; return the results in rank order.

        Raises :class:`RankError`, :class:`RankTimeout` or :class:`RankDied` (see the module docstring);
        ``ValueError`` before anything runs if ``fn`` is not importable, the job is not picklable or ``timeout`` is not
        a number of seconds in (0, ``MAX_TIMEOUT_S``].
        """
        check_timeout(self._name, "timeout", timeout)
        job = _job_name(fn)
        payload = job_payload(self._where(), fn, args, kwargs)
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._where()} is closed")
            if os.getpid() != self._owner_pid:
                raise RuntimeError(f"{self._where()} belongs to process {self._owner_pid}, not {os.getpid()}")
            if self._spawned:
                self._start(spawned=True)
            if self._broken or any(not p.is_alive() for p in self._procs):
                self._kill()  # broken by an earlier job, or a rank died while idle: start afresh
            if not self._procs:
                self._start()
            self._seq += 1
            message = pickle.dumps(("job", self._seq, payload))
            try:
                for conn in self._conns:
                    try:
                        conn.send_bytes(message)
                    except OSError:
                        pass  # that rank is dead: _collect reports it through its sentinel
                results = self._collect(job, float(timeout), expect="ok", grace=min(float(timeout),
                                                                                   self._failure_grace))
                self._ran = True
                return results
            except (RankError, RankTimeout, RankDied):
                if self._broken:
                    self._kill()  # kill now, not at the next run: a hung rank must not keep running
                raise
            except BaseException:  # e.g. KeyboardInterrupt while waiting: the ranks are mid-job
                self._kill()
                raise

    def _collect(self, job: str, timeout: float, *, expect: str, grace: float) -> list[Any]:
        """Wait for one reply per rank; on failure raise (and mark the pool broken where needed)."""
        n = self._world_size
        deadline = time.monotonic() + timeout
        stop = deadline
        seq = self._seq if expect == "ok" else 0
        results: dict[int, Any] = {}
        errors: dict[int, str] = {}
        died: dict[int, int | None] = {}
        waiting = set(range(n))
        by_conn = {id(c): i for i, c in enumerate(self._conns)}
        by_sentinel = {p.sentinel: i for i, p in enumerate(self._procs)}
        while waiting:
            remaining = stop - time.monotonic()
            if remaining <= 0:
                break
            ready = wait([self._conns[i] for i in waiting] + [self._procs[i].sentinel for i in waiting], remaining)
            # Messages first: a rank that answered and then exited is ready on both.
            answered = sorted({by_conn[id(o)] for o in ready if isinstance(o, Connection)})
            exited = sorted({by_sentinel[o] for o in ready if not isinstance(o, Connection)} - set(answered))
            for i in answered + exited:
                if i not in waiting:
                    continue
                reply = self._receive(i, seq)
                if reply is None:  # no message: the process is gone
                    waiting.discard(i)
                    self._procs[i].join(KILL_JOIN_S)
                    died[i] = self._procs[i].exitcode
                    stop = min(stop, time.monotonic() + DEATH_GRACE_S)
                    continue
                status, reply_seq, value = reply
                if reply_seq != seq:
                    continue  # a stale reply (cannot happen while every job ends answered or killed)
                waiting.discard(i)
                if status == expect:
                    results[i] = value
                else:
                    errors[i] = value if status in ("error", "fatal") else f"unexpected reply {status!r}: {value!r}"
                    if status == "fatal":  # the rank leaves after this reply: replace the ranks before the next job
                        self._broken = True
                        if self._drop_log_dir is not None:  # its error names its log: kept for the user
                            self._drop_log_dir.detach()
                    stop = min(stop, time.monotonic() + grace)
        if died or waiting:
            self._broken = True
        if expect == "ready" and UNGUARDED_EXIT in died.values():
            script = _main_script()
            raise UnguardedMain(f"{self._where()}: the rank processes died at start-up: each runs {script} again, "
                                f"whose top level starts ranks again; put that code under "
                                f"if __name__ == \"__main__\": in {script}", sorted(died), died, job)
        if died:
            parts = [f"rank {i} died (exit code {_describe_exit(c)})" for i, c in sorted(died.items())]
            msg = f"{self._where()}: job {job}: " + "; ".join(parts)
            msg += "".join(f"\n\nrank {i} raised:\n{tb}" for i, tb in sorted(errors.items()))
            if waiting:
                msg += f"\n\n{_ranks(sorted(waiting))} had not answered and were killed"
            msg += self._rebuilt() + self._doing(set(died) | waiting)
            raise RankDied(msg, sorted(died), died, job)
        if errors:
            msg = f"{self._where()}: job {job}: {_ranks(sorted(errors))} raised"
            msg += "".join(f"\n\nrank {i} raised:\n{tb}" for i, tb in sorted(errors.items()))
            if waiting:
                msg += (
                    f"\n\n{_ranks(sorted(waiting))} had not answered {grace:g} s after the failure (stuck in a "
                    "collective the failed rank never reached?) and were killed" + self._rebuilt()
                )
            raise RankError(msg, sorted(errors), errors, job, sorted(waiting))
        if waiting:
            done = sorted(results)
            where = self._stacks(waiting)  # before the kill
            msg = (
                f"{self._where()}: job {job} did not finish within {timeout:g} s: {_ranks(sorted(waiting))} had not "
                f"answered" + (f" ({_ranks(done)} had)" if done else "") + "; all ranks were killed" + self._rebuilt()
                + self._doing(waiting)
                + "".join(f"\n    rank {i}'s stack, innermost first:\n" + textwrap.indent(text, " " * 6)
                          for i, text in sorted(where.items()))
            )
            raise RankTimeout(msg, sorted(waiting), job, timeout, self._said(waiting), where)
        return [results[i] for i in range(n)]

    def _receive(self, rank: int, seq: int) -> tuple[str, int, Any] | None:
        """The reply of a ready rank, or None if its connection is closed (the process is gone)."""
        conn = self._conns[rank]
        try:
            if not conn.poll():
                return None
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return None
        try:
            return pickle.loads(data)
        except Exception as e:
            return ("error", seq, f"the reply of rank {rank} could not be unpickled: {e!r}")


@contextmanager
def _spawn_executable(path: str | None) -> Iterator[None]:
    """Spawn children through ``path`` (a wrapper of Python) instead of Python itself, for one start."""
    if path is None:
        yield
        return
    from multiprocessing import spawn

    saved = spawn.get_executable()
    spawn.set_executable(path)
    try:
        yield
    finally:
        spawn.set_executable(saved)


def job_payload(where: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> bytes:
    """The pickled job; ``ValueError`` if ``fn`` is not importable by a rank or the job is not picklable."""
    qualname = getattr(fn, "__qualname__", "")
    if not callable(fn) or "<lambda>" in qualname or "<locals>" in qualname:
        raise ValueError(f"{where}: fn must be a module-level (importable) function, got {fn!r}")
    try:
        return pickle.dumps((fn, args, kwargs))
    except Exception as e:
        raise ValueError(f"{where}: job {_job_name(fn)}: fn, args and kwargs must be picklable: {e}") from e


def check_timeout(where: str, name: str, value: object) -> None:
    """ValueError naming ``where`` and ``name`` unless ``value`` is a number of seconds in (0, ``MAX_TIMEOUT_S``]."""
    if not (is_positive_number(value) and value <= MAX_TIMEOUT_S):  # nan and inf fail too
        raise ValueError(f"{where}: {name} must be a positive number of seconds, at most {MAX_TIMEOUT_S:g} "
                         f"(MAX_TIMEOUT_S: a pool waits through poll(), whose timeout overflows past about 24 days), "
                         f"got {value!r}")


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "unknown"
    if code < 0:
        try:
            return f"{code}, killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"{code}, killed by signal {-code}"
    return str(code)
