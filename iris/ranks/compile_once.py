"""A world's ranks compile a kernel once: Triton's file cache, with one compile of a key at a time across processes.

Every rank of a world launches the same kernels, and a kernel that reads its rank at run time is the same compile on
every rank; Triton's own cache lets all R ranks miss it at once and compile it R times, side by side, on the
machine's CPUs (8 ranks: 8 compiles of each kernel, while other worlds wait for the CPUs). ``SharedCompileCache``
is Triton's ``FileCacheManager`` where a miss takes the key's lock file (``COMPILING``) before Triton compiles: the
first process to miss compiles and writes the cache, and the others wait for it and load what it wrote. The lock
is released when the compile's files are written (``put_group``), when its cache manager is collected (a compile
that raised), or when the process ends (the kernel's ``flock``); a process that has waited ``WAIT_S`` compiles on
its own. gpu ranks use it (``iris.ranks.env.backend_env``) unless ``TRITON_CACHE_MANAGER`` names another manager.
"""

from __future__ import annotations

import fcntl
import os
import time

from triton.runtime.cache import FileCacheManager

COMPILING = "compiling.lock"  # in the key's cache directory, beside Triton's own files
WAIT_S = 600.0  # the longest a process waits for another's compile of the same key before compiling it itself
POLL_S = 0.05


class SharedCompileCache(FileCacheManager):
    """``FileCacheManager`` whose misses of a compile's metadata are taken one process at a time (module docstring)."""

    def __init__(self, key, override=False, dump=False):
        super().__init__(key, override=override, dump=dump)
        self._shared = not (override or dump)  # the cache proper: not Triton's dump or override directories
        self._held: int | None = None

    def get_group(self, filename: str):
        group = super().get_group(filename)
        if group is not None or not self._shared or not filename.endswith(".json") or self._held is not None:
            return group
        fd = os.open(os.path.join(self.cache_dir, COMPILING), os.O_RDWR | os.O_CREAT, 0o644)
        if not _lock(fd, WAIT_S):
            os.close(fd)  # another process's compile outlasted the wait: compile here too
            return None
        group = super().get_group(filename)
        if group is not None:  # another process compiled it while this one waited
            _unlock(fd)
            return group
        self._held = fd  # this process compiles it; put_group releases the lock
        return None

    def put_group(self, filename: str, group):
        try:
            return super().put_group(filename, group)
        finally:
            self._release()

    def _release(self) -> None:
        fd, self._held = self._held, None
        if fd is not None:
            _unlock(fd)

    def __del__(self) -> None:
        if self._held is not None:
            self._release()


def _lock(fd: int, wait_s: float) -> bool:
    """Take an exclusive ``flock`` on ``fd`` within ``wait_s`` seconds; whether it was taken."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)


def _unlock(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
