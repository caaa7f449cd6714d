"""Encode a file in chunks on a thread pool and write the chunks in order (numpy and deflate release the GIL).

An optional second step (deflate) runs on a pool of its own, so encoding threads never wait for it. At most
``2 * workers`` chunks are in flight, so memory stays bounded however long the file is. A file of no more than one
chunk's work (``parallel=False``) is written on the calling thread: starting and joining threads would cost more
than they save.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import IO, TypeVar

T = TypeVar("T")
# Threads beyond 8 made encoding slower on a 16-CPU host (docs/figures.md, "Host: decoding and export"): the threads
# hand the GIL over at every numpy call.
MAX_WORKERS = 8


def workers() -> int:
    """Threads used for encoding: the CPUs this process may run on, at most ``MAX_WORKERS``."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cpus))


def write_in_order(f: IO[bytes], encode: Callable[[T], bytes], items: Iterable[T],
                   finish: Callable[[bytes], bytes] | None = None, *, parallel: bool = True) -> None:
    """``f.write(finish(encode(item)))`` for every item, in order (``encode(item)`` without ``finish``); ``encode``
    runs on a thread pool, ``finish`` on another, unless ``parallel`` is False (the items are one chunk's work at
    most): then both run on this thread."""
    n = workers() if parallel else 1
    if n == 1:
        for item in items:
            data = encode(item)
            f.write(data if finish is None else finish(data))
        return
    with ThreadPoolExecutor(max_workers=n) as pool, ThreadPoolExecutor(max_workers=n) as after:
        pending: deque = deque()
        for item in items:
            job = pool.submit(encode, item)
            if finish is not None:  # an ``after`` thread waits for its chunk's encoding, holding no GIL
                job = after.submit(lambda job=job: finish(job.result()))
            pending.append(job)
            if len(pending) >= 2 * n:
                f.write(pending.popleft().result())
        while pending:
            f.write(pending.popleft().result())
