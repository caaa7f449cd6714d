"""Rank processes under ``compute-sanitizer --tool memcheck`` (CUDA): where the tool is, and what it reported.

A pool started with ``sanitize=True`` spawns every rank through the tool, logging to one file per rank. After
each job the rank reads what the tool appended to its log and fails the job, quoting it, if it reported an
error, so the case that touched memory it should not is the case that fails.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile

TOOL = "compute-sanitizer"
CUDA_DEFAULT = "/usr/local/cuda"  # where CUDA installs itself when CUDA_HOME is not set
LOG_ENV = "IRIS_SANITIZER_LOG"  # set in a sanitized rank (by the wrapper, before the tool starts): its log file
_ERROR_MARKERS = ("Invalid ", "Program hit ", "Out-of-range", "Misaligned", "Malformed", "leaked", "Race reported",
                  "Uninitialized", "Barrier error")


class SanitizerUnavailable(RuntimeError):
    """Memory checking was asked for where it cannot run (no tool, or not a CUDA build)."""


def find_tool() -> str:
    """Path of ``compute-sanitizer``: on PATH, in ``$CUDA_HOME/bin`` or in ``/usr/local/cuda/bin``."""
    import torch

    if torch.version.hip:
        raise SanitizerUnavailable("--sanitize is not available on ROCm: compute-sanitizer checks CUDA programs only")
    candidates = [shutil.which(TOOL)]
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), CUDA_DEFAULT):
        if root:
            candidates.append(os.path.join(root, "bin", TOOL))
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise SanitizerUnavailable(
        f"{TOOL} not found on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin: install the CUDA toolkit, put its "
        "bin folder on PATH or set CUDA_HOME"
    )


def wrapper(python: str, log_dir: str) -> str:
    """An executable that runs ``python`` under memcheck with one log per process; ranks are spawned through it.

    The wrapper names the log itself (``rank-<wrapper pid>.log``) and exports it as ``LOG_ENV``: the tool's own
    ``%p`` expands to the tool's process id, which the rank cannot know.
    """
    tool = find_tool()
    fd, path = tempfile.mkstemp(prefix="iris-sanitize-", suffix=".sh", dir=log_dir)
    with os.fdopen(fd, "w") as f:
        f.write("#!/bin/sh\n"
                f'{LOG_ENV}="{log_dir}/rank-$$.log"\n'
                f"export {LOG_ENV}\n"
                f'exec "{tool}" --tool memcheck --print-limit 20 --log-file "${LOG_ENV}" "{python}" "$@"\n')
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def new_errors(log: str, offset: int) -> tuple[str, int]:
    """The error lines the tool appended to ``log`` after byte ``offset``, and the new offset."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except FileNotFoundError:
        return "", offset
    lines = [line for line in text.splitlines() if line.startswith("=========")]
    errors = [line for line in lines if any(marker in line for marker in _ERROR_MARKERS)]
    if not errors:
        return "", offset + len(text.encode())
    return "\n".join(lines[:40]), offset + len(text.encode())


def own_log() -> str | None:
    """This rank's log file when it runs under the tool (the wrapper names it in ``LOG_ENV``)."""
    return os.environ.get(LOG_ENV) or None
