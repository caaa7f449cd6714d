"""``launch``: run one function on ``world_size`` fresh local rank processes, a one-shot :class:`RankPool`."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from iris.ranks.pool import RankPool, check_timeout, exit_if_rerunning_main, job_payload

__all__ = ["launch"]


def _backend() -> str:
    """The backend of launched ranks: cpu under TRITON_INTERPRET=1 or where torch sees no GPU, else gpu."""
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        return "cpu"
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


def launch(fn: Callable[..., Any], world_size: int, *args: Any, timeout: float = 300.0,
           env: dict[str, str] | None = None, **kwargs: Any) -> list[Any]:
    """Run ``fn(*args, **kwargs)`` on ``world_size`` spawned local ranks; return the results in rank order.

    Every rank gets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, a free MASTER_PORT, what its backend needs
    (``backend_env``: the GPU where torch sees one, else the CPU, whose ranks run kernels under the Triton
    interpreter, as ``TRITON_INTERPRET=1`` in this process asks for too) and ``env``, which overrides both, in its
    environment, joins a gloo process group and calls ``fn``, which must be an importable module-level function;
    arguments and results must be picklable. ``timeout`` bounds start-up and, again, the call (so an
    error names the caller's figure, however long start-up took on a loaded machine).

    Raises :class:`~iris.ranks.RankTimeout` (a ``TimeoutError`` naming the unfinished ranks),
    :class:`~iris.ranks.RankError` (a rank raised; its traceback) or :class:`~iris.ranks.RankDied` (a rank
    exited without answering; its exit code), both ``RuntimeError``. Every rank is stopped before this returns;
    it never hangs. A script must call it under ``if __name__ == "__main__":`` (each rank process runs the main
    script again as it starts); one that does not ends with one line saying so (:class:`~iris.ranks.UnguardedMain`).
    """
    exit_if_rerunning_main()  # this is a rank process starting up: the script called launch from its top level
    check_timeout("launch", "timeout", timeout)
    job_payload("launch", fn, args, kwargs)  # refuse a bad job before starting any process
    with RankPool(world_size, _backend(), env=env, start_timeout=timeout, failure_grace=2.0,
                  persistent=False, name="launch") as pool:
        pool.start()
        return pool.run(fn, *args, timeout=timeout, **kwargs)
