"""The environment of a rank process: the one place that says what a cpu or gpu rank needs.

A rank gets the pool's ``os.environ`` with its variables applied (inherited when spawned, adopted first thing when
forked: :mod:`iris.ranks.forkserver`, which forks a rank only from a server started under the rank's own
``TRITON_INTERPRET``, as a forked rank imports Triton before it adopts the rest).
"""

from __future__ import annotations

import os
import re
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

BACKENDS = ("cpu", "gpu")
CACHE_MANAGER = "TRITON_CACHE_MANAGER"
SHARED_COMPILE_CACHE = "iris.ranks.compile_once:SharedCompileCache"  # named, not imported: no Triton import here
_BACKEND_ENV = {
    "cpu": {"TRITON_INTERPRET": "1", "IRIS_FORCE_CPU": "1"},  # Triton interpreter, heaps in shared memory
    "gpu": {"TRITON_INTERPRET": "0", "IRIS_FORCE_CPU": "0"},
}
# Serializes the temporary os.environ patch around Process.start() (a rank starts with that os.environ).
_ENV_LOCK = threading.Lock()


def backend_env(backend: str) -> dict[str, str]:
    """The variables that make a rank a ``cpu`` (interpreter) or ``gpu`` rank. A gpu world's ranks compile each
    kernel once between them (``iris.ranks.compile_once``) unless ``TRITON_CACHE_MANAGER`` names another cache."""
    if backend not in _BACKEND_ENV:
        raise ValueError(f"backend={backend!r}, expected one of {BACKENDS}")
    env = dict(_BACKEND_ENV[backend])
    if backend == "gpu" and CACHE_MANAGER not in os.environ:
        env[CACHE_MANAGER] = SHARED_COMPILE_CACHE
    return env


def rank_env(rank: int, world_size: int, port: int, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """``extra`` plus the torch.distributed rendezvous variables of ``rank`` in a local world."""
    return {
        **(extra or {}),
        "RANK": str(rank),
        "WORLD_SIZE": str(world_size),
        "LOCAL_RANK": str(rank),
        "LOCAL_WORLD_SIZE": str(world_size),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }


_GIVEN_PORTS: set[int] = set()  # handed out by this process: pools spawned at once never share a rendezvous port


def free_port() -> int:
    """A local TCP port that was free a moment ago and that this process has not handed out before (the rendezvous
    port of a new world)."""
    with _ENV_LOCK:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _GIVEN_PORTS:
                _GIVEN_PORTS.add(port)
                return port


@contextmanager
def patched_environ(env: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with ``env`` applied, restored afterwards (one thread at a time)."""
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


def xdist_worker_index() -> int:
    """N for pytest-xdist worker ``gwN`` (env PYTEST_XDIST_WORKER); 0 when not under xdist."""
    match = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    return int(match.group(1)) if match else 0
