"""Run a rank-side job on a world of R rank processes, once per (job, backend, R) per test process.

A job is a module-level function run on every rank (modules named ``*_jobs.py``); it returns a dict of
results that the tests then check case by case. ``cpu`` worlds run kernels under the Triton interpreter with heaps in
shared memory; ``gpu`` worlds put rank r on GPU ``r % device_count``.
"""

from __future__ import annotations

import functools

import pytest

from iris.ranks import backend_env, launch
from tests import gpu_memory

CPU_WORLD_SIZES = (1, 2, 4)


def _multi_gpu_sizes() -> tuple[int, ...]:
    """With G >= 2 GPUs: G ranks (one per GPU) and 2G (two per GPU, across GPUs); none otherwise."""
    import torch

    g = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return tuple(sorted({g, 2 * g} - set(CPU_WORLD_SIZES))) if g >= 2 else ()


# gpu worlds also run the multi-GPU placements; cpu worlds skip those sizes (run_world says so).
WORLD_SIZES = CPU_WORLD_SIZES + _multi_gpu_sizes()
ENV = {backend: backend_env(backend) for backend in ("cpu", "gpu")}
TIMEOUT_S = 600.0


def backends():
    """The two execution tiers as pytest params (``cpu`` is cpu_interpret, ``gpu`` is gpu)."""
    return [pytest.param("cpu", marks=pytest.mark.cpu_interpret), pytest.param("gpu", marks=pytest.mark.gpu)]


@functools.cache
def _outcome(job, backend: str, world_size: int, args: tuple):
    try:
        return True, tuple(launch(job, world_size, *args, timeout=TIMEOUT_S, env=ENV[backend]))
    except Exception as e:  # cached too, so a broken world fails each of its tests at once
        if backend == "gpu" and "out of memory" in str(e):
            e.add_note(gpu_memory.out_of_memory_note())
        return False, e


def run_world(job, backend: str, world_size: int, *args) -> tuple:
    """Results of ``job(*args)`` on every rank, in rank order (cached per test process)."""
    if backend == "cpu" and world_size not in CPU_WORLD_SIZES:
        pytest.skip(f"{world_size} ranks is a multi-GPU placement; cpu worlds run {CPU_WORLD_SIZES} ranks")
    ok, value = _outcome(job, backend, world_size, args)
    if not ok:
        raise value
    return value
