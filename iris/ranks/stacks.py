"""Where a hung rank was: its Python stack, written on request before the pool kills it.

A rank process registers :data:`SIGNAL` with ``faulthandler`` (:func:`listen`), which writes the Python stack of every
thread to the rank's own file from C, without waiting for the interpreter: a rank stuck in a CUDA call, a collective
or a compile still answers. When a job outlives its timeout, the pool asks each rank that had not answered
(:func:`take`) before it kills them, and the timeout's message quotes the frames of the thread running the job.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sysconfig
import time
from typing import IO

SIGNAL = signal.SIGUSR1
WAIT_S = 2.0  # how long the pool waits for the stacks it asked for
POLL_S = 0.02
MAX_FRAMES = 12  # of the job's thread quoted
_JOB_THREAD = " in rank_main"  # a frame of the thread that runs jobs (iris.ranks.child.rank_main)
_open: list[IO] = []  # the file faulthandler writes to stays open for the process's life


def listen(path: str) -> None:
    """In a rank process: write every thread's Python stack to ``path`` whenever :data:`SIGNAL` arrives."""
    out = open(path, "w")  # noqa: SIM115  kept open: faulthandler writes to its descriptor
    _open.append(out)
    faulthandler.register(SIGNAL, file=out, all_threads=True, chain=False)


def take(ranks: dict[int, tuple[int, str]], wait_s: float = WAIT_S) -> dict[int, str]:
    """Ask each of ``ranks`` (rank -> its process id and stack file) for its stack; rank -> the frames of its job's
    thread (:func:`job_frames`), for every rank that wrote them within ``wait_s`` seconds."""
    asked = {}
    for rank, (pid, path) in ranks.items():
        try:
            size = os.path.getsize(path)
            os.kill(pid, SIGNAL)
        except OSError:
            continue  # gone, or never listened: nothing to read
        asked[rank] = (path, size)
    stacks: dict[int, str] = {}
    deadline = time.monotonic() + wait_s
    while asked and time.monotonic() < deadline:
        time.sleep(POLL_S)
        for rank, (path, size) in list(asked.items()):
            text = _new_text(path, size)
            frames = job_frames(text)
            if frames and text.endswith("\n"):
                stacks[rank] = frames
                del asked[rank]
    return stacks


def _new_text(path: str, offset: int) -> str:
    try:
        with open(path, errors="replace") as f:
            f.seek(offset)
            return f.read()
    except OSError:
        return ""


def job_frames(dump: str, max_frames: int = MAX_FRAMES) -> str:
    """Of a ``faulthandler`` dump of every thread, the frames of the thread that runs jobs, from the innermost (where
    it waits) to the job's function: the innermost frame and every frame of code outside the installed libraries
    (:func:`_library`), a run of library frames between them as one line ("... 4 library frames"); at most
    ``max_frames`` of them, the innermost and the outermost half. "" when the dump has no such thread yet."""
    for block in dump.split("\n\n"):
        lines = [line.strip() for line in block.splitlines() if line.strip().startswith("File ")]
        inner = next((i for i, line in enumerate(lines) if line.endswith(_JOB_THREAD)), None)
        if inner is not None:
            lines = lines[:inner] or lines[:1]  # the job's frames (rank_main's own when it is between jobs)
            kept = [i for i, line in enumerate(lines) if i == 0 or not _library(line)]
            if len(kept) > max_frames:  # the innermost and the outermost half: where it waits, which step
                half = max_frames // 2
                kept = kept[:half] + kept[-half:]
            shown: list[str] = []
            for before, at in zip([-1, *kept[:-1]], kept, strict=True):
                left_out = lines[before + 1:at]
                if left_out:
                    shown.append(f"... {len(left_out)} {'library ' if all(map(_library, left_out)) else ''}frames")
                shown.append(lines[at])
            return "\n".join(shown)
    return ""


def _library(frame: str) -> bool:
    """Whether a dump's frame line is of code installed as a library (site-packages, the standard library) or
    generated (``<string>``), not the project's or the user's."""
    path = frame.split('"')[1] if frame.count('"') >= 2 else ""
    return (path.startswith("<") or any(part in path for part in ("/site-packages/", "/dist-packages/"))
            or path.startswith(_STDLIB))


_STDLIB = sysconfig.get_paths()["stdlib"] + os.sep
