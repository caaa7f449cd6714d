"""Start mutation probes by forking them from one process that imported their third-party packages once.

A probe (``conformance.mutation.probe``) is a Python process on a copy of the packages; started afresh, each one
would import torch, Triton, numpy and Hypothesis again before it runs a case. ``ProbeStarter``
starts this file as a process of its own (run by path, so it never imports ``iris`` or ``conformance``), which imports
those packages, then forks one child per probe: the child moves into the copy (working folder, environment,
``sys.path`` first entry), runs the probe module as ``python -m`` would, and imports the copy's packages fresh.

Protocol over a Unix socket pair: the runner sends one JSON request (module, argv, cwd, env) with the probe's stdout
and stderr descriptors; this process answers ``{"started": pid}``, and ``{"exited": pid, "code": c}`` once it reaped
the child (``c`` as ``subprocess`` reports it: negative for a signal). A child leads a session of its own, so the
runner ends it and its rank processes with ``os.killpg``; this process exits when the runner closes the socket.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path

PRELOAD = ("numpy", "torch", "torch.distributed", "triton", "triton.language", "hypothesis")
_MESSAGE_BYTES = 1 << 20


class ProbeStarter:
    """The forking process of one mutation run (``with ProbeStarter(env) as starter: starter.start(...)``), started
    at the first probe.

    ``env`` is the probes' environment without ``PYTHONPATH`` (each request names its own): the packages imported
    there read it as the probes would."""

    def __init__(self, env: dict[str, str]) -> None:
        self._env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen | None = None
        self._exited: dict[int, int] = {}
        self._buffer = b""

    def _started(self) -> socket.socket:
        """The socket to the forking process, started at the first probe."""
        if self._sock is None:
            self._sock, theirs = socket.socketpair()
            self._proc = subprocess.Popen([sys.executable, str(Path(__file__)), str(theirs.fileno())],
                                          pass_fds=(theirs.fileno(),), env=self._env, stdin=subprocess.DEVNULL)
            theirs.close()
        return self._sock

    def __enter__(self) -> ProbeStarter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self, module: str, argv: list[str], cwd: str, env: dict[str, str], stdout: int, stderr: int) -> int:
        """Fork a child that runs ``python -m module *argv`` in ``cwd`` with ``env`` (``PYTHONPATH`` its first
        ``sys.path`` entries) and the descriptors ``stdout`` and ``stderr``; its pid (the leader of its session)."""
        request = json.dumps({"module": module, "argv": argv, "cwd": cwd, "env": env}).encode()
        socket.send_fds(self._started(), [request], [stdout, stderr])
        while "started" not in (reply := self._receive(None)):
            self._exited[reply["exited"]] = reply["code"]  # an earlier child's end, read before this one's start
        return reply["started"]

    def wait(self, pid: int, timeout: float | None) -> int | None:
        """The exit code of child ``pid`` once it ended, None if it runs after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while pid not in self._exited:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            reply = self._receive(left)
            if reply is None:
                if self._proc.poll() is not None:
                    raise RuntimeError(f"the probe starter exited with {self._proc.returncode} while probe {pid} ran")
                continue
            if "exited" in reply:
                self._exited[reply["exited"]] = reply["code"]
        return self._exited.pop(pid)

    def finish(self, pid: int, timeout: float | None) -> tuple[int, bool]:
        """Child ``pid``'s exit code, and whether it ran past ``timeout`` seconds: then, or if the wait is
        interrupted, it and its session are ended (``stop``)."""
        code = None
        try:
            code = self.wait(pid, timeout)
        finally:
            timed_out = code is None
            if timed_out:
                code = self.stop(pid)
        return code, timed_out

    def stop(self, pid: int) -> int:
        """End child ``pid`` and its session (its rank processes) and reap it; its exit code."""
        with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
            os.killpg(pid, signal.SIGKILL)
        return self.wait(pid, None)

    def _receive(self, timeout: float | None) -> dict | None:
        """The next reply (one JSON object a line), None if none came within ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._sock], [], [], left)
            if not ready:
                return None
            data = self._sock.recv(_MESSAGE_BYTES)
            if not data:
                raise RuntimeError(f"the probe starter closed its socket (exit code {self._proc.wait()})")
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def close(self) -> None:
        """Stop the forking process (its children, if any still run, see it gone and exit)."""
        if self._sock is None:
            return
        self._sock.close()
        self._sock = None
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


# ------------------------------------------------------------------------------------------------ the process


def run_module_as_main(module: str) -> int:
    """Run ``module`` as ``python -m`` runs it (``sys.argv`` already set); its exit code as the interpreter reads it:
    an exit with None is 0, with a message the message on stderr and 1, an escaped exception its traceback and 1."""
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 (an escaped exception is what the user would see: its traceback)
        traceback.print_exc()
        return 1
    return 0


def _run_child(sock: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked child: become the probe ``request`` names, then exit with its exit code."""
    code = 1
    try:
        os.setsid()
        sock.close()
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in fds:
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        first = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        here = str(Path(__file__).parent)
        sys.path[:] = [request["cwd"], *first, *(p for p in sys.path if p != here)]
        sys.argv = [request["module"], *request["argv"]]
        code = run_module_as_main(request["module"])
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)


def _send(sock: socket.socket, reply: dict) -> None:
    sock.sendall(json.dumps(reply).encode() + b"\n")


def _reap(sock: socket.socket, children: set[int]) -> None:
    for pid in list(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            children.discard(pid)
            _send(sock, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})


def main(fd: int) -> int:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    ours = sorted(m for m in sys.modules if m.partition(".")[0] in ("iris", "conformance"))
    if ours:  # a probe must import the copy's packages, not these
        raise RuntimeError(f"importing {PRELOAD} imported {ours}")
    sock = socket.socket(fileno=fd)
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([sock], [], [], 0.05 if children else None)
        _reap(sock, children)
        if not ready:
            continue
        data, fds, _, _ = socket.recv_fds(sock, _MESSAGE_BYTES, 2)
        if not data:  # the runner is gone: its probes see this process exit and stop
            return 0
        request = json.loads(data)
        pid = os.fork()
        if pid == 0:
            _run_child(sock, request, fds)
        for f in fds:
            os.close(f)
        children.add(pid)
        _send(sock, {"started": pid})


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
