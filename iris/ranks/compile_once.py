"""A world's ranks compile a kernel once: Triton's file cache, with one compile of a key at a time across processes.

Every rank of a world launches the same kernels, and a kernel that reads its rank at run time is the same compile on
every rank; Triton's own cache lets all R ranks miss it at once and compile it R times, side by side, on the
machine's CPUs (8 ranks: 8 compiles of each kernel, while other worlds wait for the CPUs). ``SharedCompileCache``
is Triton's ``FileCacheManager`` where a miss takes the key's lock file (``COMPILING``) before Triton compiles: the
first process to miss compiles and writes the cache, and the others wait for it and load what it wrote. The lock
is released when the compile's files are written (``put_group``), when Triton's ``compile`` that missed has left
the stack without writing them (it raised: a thread watches for that, since a kept traceback would keep the cache
manager alive, and a rank that keeps one and then waits for its peers at a barrier would hold them), or when the
process ends (the operating system drops its ``flock``); a process that has waited ``WAIT_S`` compiles on its own.
gpu ranks use it (``iris.ranks.env.backend_env``) unless ``TRITON_CACHE_MANAGER`` names another manager.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
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
        self._lock = threading.Lock()

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
        self._held = fd  # this process compiles it; put_group releases the lock, or the watch if compile raises
        threading.Thread(target=self._watch, args=(sys._getframe(1), threading.get_ident()), daemon=True,
                         name="iris-compile-once").start()
        return None

    def put_group(self, filename: str, group):
        try:
            return super().put_group(filename, group)
        finally:
            self._release()

    def _release(self) -> None:
        with self._lock:
            fd, self._held = self._held, None
        if fd is not None:
            _unlock(fd)

    def _watch(self, caller, thread: int) -> None:
        """Release the lock once ``caller`` (Triton's ``compile`` frame that missed) is off ``thread``'s stack."""
        while self._held is not None:
            frame = sys._current_frames().get(thread)
            while frame is not None and frame is not caller:
                frame = frame.f_back
            if frame is None:
                self._release()
                return
            time.sleep(POLL_S)


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
