"""``Pools``: the owner of the rank pools of one run, one per (world size, backend), closed together.

Under pytest-xdist worker ``gwN`` a pool of R ranks starts at GPU ``N * R`` (``IRIS_DEVICE_OFFSET``, taken
modulo the GPU count by each rank), so the workers of ``pytest -n 8`` spread their ranks over 8 GPUs.
"""

from __future__ import annotations

import threading

from iris.ranks.env import xdist_worker_index
from iris.ranks.pool import RankPool
from iris.ranks.sanitizer import tool_name

__all__ = ["Pools"]


class Pools:
    """``get(world_size, backend)`` returns this owner's pool for that world, made on first use.

    ``sanitizer``: the pools run their ranks under that compute-sanitizer tool (True: memcheck; see ``RankPool``).
    ``one_at_a_time``: a new pool first closes this owner's other pools of its backend, so that the owner holds one
    world's ranks per backend at most (on one GPU every rank process holds a CUDA context, about 0.6 to 0.9 GiB:
    the test processes of ``pytest -n 8`` each keeping pools of 1, 2 and 4 ranks outgrow an 80 GB GPU).
    """

    def __init__(self, worker_index: int | None = None, *, sanitizer: bool | str = False,
                 one_at_a_time: bool = False) -> None:
        self._worker = xdist_worker_index() if worker_index is None else worker_index
        self._sanitizer = tool_name(sanitizer)
        self._one_at_a_time = one_at_a_time
        self._pools: dict[tuple[int, str], RankPool] = {}
        self._lock = threading.Lock()

    @property
    def sanitizer(self) -> str:
        """The compute-sanitizer tool the pools' ranks run under ("" when none)."""
        return self._sanitizer

    def device_offset(self, world_size: int) -> int:
        """First GPU of a ``world_size``-rank pool of this owner: ``worker index * world_size``."""
        return self._worker * world_size

    def get(self, world_size: int, backend: str) -> RankPool:
        """The pool for ``(world_size, backend)``; a closed one is replaced."""
        with self._lock:
            pool = self._pools.get((world_size, backend))
            if pool is None or pool.closed:
                if self._one_at_a_time:
                    for other in [key for key in self._pools if key[1] == backend]:
                        self._pools.pop(other).close()
                pool = RankPool(world_size, backend, device_offset=self.device_offset(world_size),
                                sanitizer=self._sanitizer)
                self._pools[(world_size, backend)] = pool
            return pool

    def close(self) -> None:
        """Close every pool (stop messages, then kill what is left)."""
        with self._lock:
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.close()

    def __enter__(self) -> Pools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
