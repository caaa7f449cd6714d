"""The rank side of a pool: join the process group, then run jobs from the parent until told to stop.

Messages are pickled tuples ``(kind, seq, payload)``: the parent sends ``job`` (a pickled ``(fn, args,
kwargs)``) and ``stop``; the rank answers ``ready`` (its pid) once, then ``ok`` or ``error`` (a formatted
traceback) per job, or ``fatal`` (the sanitizer it runs under reported a finding of ours) before it exits. A
rank exits when its parent disappears, so no rank outlives the process that made it.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

from iris.ranks import stacks

_PR_SET_PDEATHSIG = 1  # prctl option: the signal a process gets when its parent exits
_PG_TIMEOUT_S = 3600.0  # gloo's own collective timeout; the pool's job timeouts act long before it

_RANK_STATE: dict[str, Any] = {}
_PROGRESS: Any = None  # a shared char array the parent reads when this rank does not answer
PROGRESS_BYTES = 200


def progress(where: str) -> None:
    """Say what this rank is doing now (e.g. "launch (gluon kernel)"); a timeout or death message quotes it."""
    if _PROGRESS is not None:
        _PROGRESS.value = where.encode(errors="replace")[: PROGRESS_BYTES - 1]


def rank_state() -> dict[str, Any]:
    """This rank process's state dict, kept across jobs and empty in a new pool generation.

    Only meaningful inside a job; in the parent process it is just an unused dict.
    """
    return _RANK_STATE


def _close_state() -> None:
    """On a clean stop: close what jobs cached (e.g. an ``Iris`` heap) on every rank, between two barriers.

    Every rank gets the stop message, so the barriers pair up; peers then drop their IPC mappings
    before any exporting rank exits.
    """
    import torch.distributed as dist

    closeable = [v for v in _RANK_STATE.values() if callable(getattr(v, "close", None))]
    if not closeable:
        return
    dist.barrier()
    for value in closeable:
        value.close()
    dist.barrier()
    _RANK_STATE.clear()


def alive(pid: int) -> bool:
    """True if ``pid`` runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _watch_parent(parent_pid: int) -> None:
    """Exit this rank if the process that started it disappears (so orphans never linger).

    The rank may run under a wrapper (a sanitizer), so its own parent can be the wrapper: watch the pool.
    """
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid and not alive(parent_pid):
            os._exit(70)


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to kill this rank as soon as its parent process exits, however it exits (SIGTERM and SIGKILL
    included). The parent is the fork server, which exits with the pool's process, or a wrapper (a sanitizer),
    which exits with this rank; the watch thread stays as the fallback for the pool's process itself."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if not alive(parent_pid):  # the pool's process exited before the request took effect
        os._exit(70)


def _adopt_environ(env: dict[str, str], forked: bool) -> None:
    """Make ``os.environ`` ``env`` (the pool's at start, with this rank's variables). A forked rank starts with its
    fork server's environment, so it also drops what ``env`` lacks; a rank spawned through a wrapper keeps what the
    wrapper added (the sanitizer's own variables, read when CUDA starts)."""
    if forked:
        for key in [k for k in os.environ if k not in env]:
            del os.environ[key]
    os.environ.update(env)


def _synchronize() -> None:
    """Wait for this rank's device work, if it started CUDA (a sanitizer reports a kernel once it is done); a context
    the sanitizer destroyed raises here, and its report says why."""
    try:
        import torch

        if torch.cuda.is_initialized():
            torch.cuda.synchronize()
    except Exception:
        pass


def send(conn: Connection, message: tuple) -> None:
    """Send a pickled message; a value that cannot be pickled becomes an ``error`` reply saying so."""
    try:
        data = pickle.dumps(message)
    except BaseException:
        kind, seq = message[0], message[1]
        data = pickle.dumps(("error", seq, f"the {kind} value could not be pickled:\n" + traceback.format_exc()))
    conn.send_bytes(data)


def rank_main(rank: int, world_size: int, env: dict[str, str], forked: bool, parent_pid: int, conn: Connection,
              status: Any = None, stack_file: str | None = None) -> None:
    """Entry point of a rank process (see the module docstring): ``env`` is its environment, ``forked`` says it was
    forked by the fork server (:mod:`iris.ranks.forkserver`), ``parent_pid`` is the pool's process; ``status``
    receives :func:`progress`; ``stack_file`` receives the Python stack whenever the pool asks
    (:mod:`iris.ranks.stacks`)."""
    global _PROGRESS
    _PROGRESS = status
    if stack_file is not None:
        stacks.listen(stack_file)
    _adopt_environ(env, forked)  # before anything imports Triton, whose import reads TRITON_INTERPRET
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group; the parent decides
    _die_with_parent(parent_pid)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    import datetime

    import torch.distributed as dist

    from iris.ranks import sanitizer
    from iris.world import install_interpreter

    try:
        install_interpreter()  # before any job imports a kernel module
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=_PG_TIMEOUT_S))
    except BaseException:
        send(conn, ("error", 0, traceback.format_exc()))
        return
    send(conn, ("ready", 0, os.getpid()))
    log, tool, offset = sanitizer.own_log(), sanitizer.own_tool(), 0
    try:
        while True:
            try:
                kind, seq, payload = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError):
                break  # the parent is gone
            if kind == "stop":
                try:
                    _close_state()
                except BaseException:
                    pass  # a peer already gone: the parent kills what is left after its join timeout
                break
            try:
                fn, args, kwargs = pickle.loads(payload)
                progress(f"job {getattr(fn, '__qualname__', fn)}")
                reply: tuple = ("ok", seq, fn(*args, **kwargs))
            except BaseException:
                reply = ("error", seq, traceback.format_exc())
            if log is not None:
                _synchronize()
                reports, offset = sanitizer.new_reports(log, offset, tool, sanitizer.peer_memory())
                sanitizer.note_not_ours(log, tool, [r for r in reports if r.not_ours])
                ours = [r for r in reports if not r.not_ours]
                if ours:  # the device context may be unusable now: report, then leave (the pool rebuilds)
                    send(conn, ("fatal", seq, sanitizer.quote(ours, tool, log)))
                    break
            progress("idle")
            send(conn, reply)
    finally:
        try:
            dist.destroy_process_group()
        except BaseException:
            pass
        conn.close()
