"""The launcher: run one function on ``world_size`` local rank processes and collect the results.

Each rank is a fresh ``spawn`` process with RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR /
MASTER_PORT (plus caller-supplied variables) in its environment from the start, so variables
such as TRITON_INTERPRET are in effect before anything in the child imports triton.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from multiprocessing.connection import Connection, wait
from typing import Any

__all__ = ["launch"]

# Serializes the temporary os.environ patch around Process.start() (spawn inherits os.environ).
_ENV_LOCK = threading.Lock()
_KILL_JOIN_S = 10.0
_FAILURE_GRACE_S = 2.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _patched_environ(env: Mapping[str, str]) -> Iterator[None]:
    with _ENV_LOCK:
        saved = {k: os.environ.get(k) for k in env}
        try:
            os.environ.update(env)
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _watch_parent(parent_pid: int) -> None:
    """Exit this child if the launching process disappears (so orphans never linger)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(70)


def _child_main(
    rank: int, env: dict[str, str], payload: bytes, timeout: float, parent_pid: int, conn: Connection
) -> None:
    os.environ.update(env)  # already inherited at exec time; repeated in case something reset it
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    message: tuple[str, Any]
    try:
        import datetime

        import torch.distributed as dist

        try:
            fn, args, kwargs = pickle.loads(payload)
            dist.init_process_group(
                "gloo",
                init_method="env://",
                rank=rank,
                world_size=int(env["WORLD_SIZE"]),
                timeout=datetime.timedelta(seconds=timeout),
            )
            message = ("ok", fn(*args, **kwargs))
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
    except BaseException:
        message = ("error", traceback.format_exc())
    try:
        data = pickle.dumps(message)
    except BaseException:
        data = pickle.dumps(("error", "the return value could not be pickled:\n" + traceback.format_exc()))
    conn.send_bytes(data)
    conn.close()


def _check_importable(fn: Callable[..., Any]) -> None:
    qualname = getattr(fn, "__qualname__", "")
    if not callable(fn) or "<lambda>" in qualname or "<locals>" in qualname:
        raise ValueError(
            f"launch: fn must be a module-level (importable) function so spawned ranks can import it; got {fn!r}"
        )


def _kill(procs: list[mp.process.BaseProcess]) -> None:
    for p in procs:
        if p.is_alive():
            p.kill()
    for p in procs:
        p.join(_KILL_JOIN_S)


def _ranks(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, sorted(ranks)))


def launch(
    fn: Callable[..., Any],
    world_size: int,
    *args: Any,
    timeout: float = 300.0,
    env: dict[str, str] | None = None,
    **kwargs: Any,
) -> list[Any]:
    """Run ``fn(*args, **kwargs)`` on ``world_size`` spawned local ranks; return results in rank order.

    Every rank gets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, a free MASTER_PORT and
    ``env`` in its environment, joins a gloo process group (destroyed before it exits) and calls
    ``fn``, which must be an importable module-level function; arguments and return values must
    be picklable.

    Raises ``TimeoutError`` (naming the unfinished ranks) if not all ranks finish within
    ``timeout`` seconds, and ``RuntimeError`` naming the rank if a rank raises (with its
    traceback) or dies without reporting (with its exit code). On any failure every rank
    process is killed; this function never hangs.
    """
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"launch: world_size must be an int >= 1, got {world_size!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"launch: timeout must be a positive number of seconds, got {timeout!r}")
    if env is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in dict(env).items()):
        raise ValueError(f"launch: env must map str to str, got {env!r}")
    _check_importable(fn)
    try:
        payload = pickle.dumps((fn, args, kwargs))
    except Exception as e:
        raise ValueError(f"launch: fn, args and kwargs must be picklable (fn must be importable): {e}") from e

    ctx = mp.get_context("spawn")
    port = _free_port()
    deadline = time.monotonic() + timeout
    procs: list[mp.process.BaseProcess] = []
    readers: list[Connection] = []
    try:
        for rank in range(world_size):
            child_env = {
                **(env or {}),
                "RANK": str(rank),
                "WORLD_SIZE": str(world_size),
                "LOCAL_RANK": str(rank),
                "LOCAL_WORLD_SIZE": str(world_size),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
            }
            reader, writer = ctx.Pipe(duplex=False)
            p = ctx.Process(
                target=_child_main,
                args=(rank, child_env, payload, float(timeout), os.getpid(), writer),
                name=f"iris-rank-{rank}",
            )
            with _patched_environ(child_env):
                p.start()
            writer.close()
            procs.append(p)
            readers.append(reader)
        results = _collect(procs, readers, deadline, timeout)
    finally:
        _kill(procs)
        for r in readers:
            r.close()
    return results


def _collect(
    procs: list[mp.process.BaseProcess], readers: list[Connection], deadline: float, timeout: float
) -> list[Any]:
    results: dict[int, Any] = {}
    failures: list[str] = []  # in the order they were observed
    waiting = set(range(len(procs)))  # ranks that have not reported
    by_reader = {id(r): i for i, r in enumerate(readers)}
    by_sentinel = {p.sentinel: i for i, p in enumerate(procs)}
    stop = deadline  # moved closer once a rank fails: a short grace period collects concurrent failures
    while waiting:
        remaining = stop - time.monotonic()
        if remaining <= 0:
            break
        objs: list[Any] = [readers[i] for i in waiting] + [procs[i].sentinel for i in waiting]
        ready = wait(objs, timeout=remaining)
        # Handle messages before exits: a rank that reported then exited is ready on both.
        ready_ranks = sorted({by_reader[id(o)] for o in ready if isinstance(o, Connection)})
        exited = sorted({by_sentinel[o] for o in ready if not isinstance(o, Connection)})
        for i in ready_ranks + [i for i in exited if i not in ready_ranks]:
            if i not in waiting:
                continue
            waiting.discard(i)
            ok, value = _receive(procs[i], readers[i], i)
            if ok:
                results[i] = value
            else:
                failures.append(value)
                stop = min(stop, time.monotonic() + _FAILURE_GRACE_S)
    if failures:
        unfinished = f"\n\n{_ranks(sorted(waiting))} had not finished and were killed." if waiting else ""
        raise RuntimeError("launch: " + "\n\n".join(failures) + unfinished)
    if waiting:
        raise TimeoutError(
            f"launch: {_ranks(sorted(waiting))} of {len(procs)} did not finish within {timeout:g} s "
            f"(ranks that did not finish: {sorted(waiting)}); all ranks were killed"
        )
    # All ranks reported; they exit right after. A rank that crashes in teardown is reported.
    for i, p in enumerate(procs):
        p.join(max(_KILL_JOIN_S, deadline - time.monotonic()))  # a short grace period for teardown
        if p.exitcode is None:
            raise TimeoutError(f"launch: rank {i} reported its result but did not exit")
        if p.exitcode != 0:
            raise RuntimeError(f"launch: rank {i} reported its result but then exited with code {p.exitcode}")
    return [results[i] for i in range(len(procs))]


def _receive(proc: mp.process.BaseProcess, reader: Connection, rank: int) -> tuple[bool, Any]:
    """(True, result) or (False, description of the failure) for a rank that is ready."""
    try:
        data = reader.recv_bytes() if reader.poll() else None
    except (EOFError, OSError):
        data = None
    if data is None:
        proc.join(_KILL_JOIN_S)
        code = proc.exitcode
        signal = f", i.e. killed by signal {-code}" if code is not None and code < 0 else ""
        return False, f"rank {rank} died without reporting a result (exit code {code}{signal})"
    try:
        status, value = pickle.loads(data)
    except Exception as e:
        return False, f"the result of rank {rank} could not be unpickled: {e!r}"
    if status == "ok":
        return True, value
    return False, f"rank {rank} raised an exception:\n{value}"
