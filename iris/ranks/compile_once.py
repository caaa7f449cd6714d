"""A world's ranks compile a kernel once: Triton's file cache, with one compile of a key at a time across processes.

Every rank of a world launches the same kernels, and a kernel that reads its rank at run time is the same compile on
every rank; Triton's own cache lets all R ranks miss it at once and compile it R times, side by side, on the
machine's CPUs (8 ranks: 8 compiles of each kernel, while other worlds wait for the CPUs). ``SharedCompileCache``
is Triton's ``FileCacheManager`` where a miss takes the key's lock file (``COMPILING``) before Triton compiles: the
first process to miss compiles and writes the cache, and the others wait for it and load what it wrote. The same
holds for the C launcher Triton builds for each kernel signature (an extension module, ``get_file``/``put``). The
lock is released when the compile's files are written (``put_group``; the module's ``put``), when the frame that
missed (Triton's ``compile``, or its launcher build) has left the stack without writing them (it raised: a thread
watches for that, since a kept traceback would keep the cache manager alive, and a rank that keeps one and then
waits for its peers at a barrier would hold them), or when the process ends (the operating system drops its
``flock``); a process that has waited ``WAIT_S`` compiles on its own.
gpu ranks use it (``iris.ranks.env.backend_env``) unless ``TRITON_CACHE_MANAGER`` names another manager.
"""

from __future__ import annotations

import fcntl
import os
import sys
import sysconfig
import threading
import time

from triton.runtime.cache import FileCacheManager

COMPILING = "compiling.lock"  # in the key's cache directory, beside Triton's own files
WAIT_S = 600.0  # the longest a process waits for another's compile of the same key before compiling it itself
POLL_S = 0.05
EXTENSION = sysconfig.get_config_var("EXT_SUFFIX") or ".so"  # how the file of a launcher module Triton builds ends


class SharedCompileCache(FileCacheManager):
    """``FileCacheManager`` whose misses of what a process builds are taken one process at a time (module docstring)."""

    def __init__(self, key, override=False, dump=False):
        super().__init__(key, override=override, dump=dump)
        self._shared = not (override or dump)  # the cache proper: not Triton's dump or override directories
        self._held: int | None = None
        self._lock = threading.Lock()

    def get_group(self, filename: str):
        """A kernel's compiled files: a miss of its metadata (``<name>.json``) takes the key's lock."""
        return self._miss_once(super().get_group, filename, filename.endswith(".json"))

    def get_file(self, filename: str):
        """One file: a miss of an extension module (the launcher Triton builds with a C compiler) takes the lock."""
        return self._miss_once(super().get_file, filename, filename.endswith(EXTENSION))

    def put_group(self, filename: str, group):
        try:
            return super().put_group(filename, group)
        finally:
            self._release()

    def put(self, data, filename, binary=True) -> str:
        try:
            return super().put(data, filename, binary=binary)
        finally:
            if filename.endswith(EXTENSION):
                self._release()

    def _miss_once(self, look, filename: str, builds: bool):
        """``look(filename)``; where it misses what a process ``builds``, only after the processes before it."""
        found = look(filename)
        if found is not None or not builds or not self._shared or self._held is not None:
            return found
        fd = os.open(os.path.join(self.cache_dir, COMPILING), os.O_RDWR | os.O_CREAT, 0o644)
        if not _lock(fd, WAIT_S):
            os.close(fd)  # another process's build outlasted the wait: build here too
            return None
        found = look(filename)
        if found is not None:  # another process built it while this one waited
            _unlock(fd)
            return found
        self._held = fd  # this process builds it; writing it releases the lock, or the watch if the build raises
        threading.Thread(target=self._watch, args=(sys._getframe(2),), daemon=True, name="iris-compile-once").start()
        return None

    def _release(self) -> None:
        with self._lock:
            fd, self._held = self._held, None
        if fd is not None:
            _unlock(fd)

    def _watch(self, caller) -> None:
        """Release the lock once ``caller`` (the frame that missed: Triton's ``compile``, or its launcher build) has
        returned or raised. ``frame.clear()`` tells: it refuses a frame still running, and of one that has ended it
        drops the locals (a failed compile's, which nothing reads after). It reads that frame alone: walking the
        compiling thread's stack from here (``f_back``) while that thread ran crashed CPython 3.11."""
        while self._held is not None:
            try:
                caller.clear()
            except RuntimeError:  # still running
                time.sleep(POLL_S)
                continue
            self._release()
            return


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
