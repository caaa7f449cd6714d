"""The rank world: which rank this process is, how many ranks there are, and its device.

iris uses a torch.distributed process group only to exchange metadata (heap handles,
names, barriers), so the group it uses is always a gloo group, never NCCL/RCCL.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from iris.env_vars import env_flag, env_int

__all__ = ["World", "current_world", "device_index", "device_offset", "gather_or_raise", "install_interpreter",
           "is_interpreter"]

_RENDEZVOUS_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")

# (default process group object, gloo group created for it) when the default group has no gloo backend.
_gloo_cache: tuple[object, object] | None = None


@dataclass(frozen=True)
class World:
    """One rank's view of the world: its rank, the number of ranks, its device and process group.

    ``group`` is the torch.distributed group to use for metadata collectives; ``None`` means
    the default group.
    """

    rank: int
    world_size: int
    device: torch.device
    group: object | None = None


def is_interpreter() -> bool:
    """True when Triton kernels run under the Triton interpreter (``TRITON_INTERPRET=1``).

    Uses Triton's own reading of the variable, so it agrees with what ``@triton.jit`` does.
    """
    from triton import knobs

    return bool(knobs.runtime.interpret)


def install_interpreter() -> None:
    """Under ``TRITON_INTERPRET=1``, fix the Triton interpreter (:mod:`iris.interpreter`) and let ``@gluon.jit``
    kernels run on it; else a no-op.

    Called where worlds start (rank processes before their first job, :func:`current_world`); importing iris
    patches nothing.
    """
    if is_interpreter():
        from iris import interpreter, interpreter_gluon

        interpreter.install()
        interpreter_gluon.install()


def gather_or_raise(group, world_size: int, what: str, step: Callable[[], Any]) -> list[Any]:
    """Collective: run ``step`` on every rank and all-gather its results; if it failed anywhere, raise on every rank.

    Gathering errors instead of raising locally keeps ranks from hanging in a later collective.
    """
    try:
        item: tuple[Any, str | None] = (step(), None)
    except Exception as e:
        item = (None, f"{type(e).__name__}: {e}")
    gathered: list[Any] = [None] * world_size
    dist.all_gather_object(gathered, item, group=group)
    failed = [f"rank {r}: {err}" for r, (_, err) in enumerate(gathered) if err is not None]
    if failed:
        raise RuntimeError(f"{what} failed on " + "; ".join(failed))
    return [value for value, _ in gathered]


def synchronize(device: torch.device) -> None:
    """Wait for the work queued on ``device`` (nothing to wait for on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _force_cpu() -> bool:
    """``IRIS_FORCE_CPU``: 1 puts the world on the CPU even where a GPU is visible; 0 or unset does not."""
    return env_flag("IRIS_FORCE_CPU", "put the ranks on the CPU")


def _device_type() -> str:
    if _force_cpu() or not torch.cuda.is_available():  # is_available() is also True on ROCm builds
        return "cpu"
    return "cuda"


def device_offset() -> int:
    """``IRIS_DEVICE_OFFSET`` (default 0): rank r uses GPU ``(offset + r) % device_count``.

    Lets several worlds on one host (e.g. pytest-xdist workers) start on different GPUs.
    """
    return env_int("IRIS_DEVICE_OFFSET", 0, "an integer >= 0: rank r uses GPU (offset + r) % device_count")


def device_index(rank: int, device_count: int) -> int:
    """The GPU index of ``rank``: ``(IRIS_DEVICE_OFFSET + rank) % device_count``."""
    if device_count < 1:
        raise ValueError(f"iris: device_count must be >= 1, got {device_count}")
    return (device_offset() + rank) % device_count


def _ensure_process_group() -> None:
    if dist.is_initialized():
        return
    missing = [v for v in _RENDEZVOUS_VARS if v not in os.environ]
    if missing:
        raise RuntimeError(
            "iris: no torch.distributed process group exists"
            + (f" (and {', '.join(missing)} not set in the environment)" if len(missing) < 4 else "")
            + ". Call torch.distributed.init_process_group(...) first, run under torchrun "
            "(which sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), or start the ranks with "
            "iris.launch."
        )
    dist.init_process_group(
        "gloo",
        init_method="env://",
        rank=int(os.environ["RANK"]),
        world_size=int(os.environ["WORLD_SIZE"]),
    )


def _gloo_group() -> object | None:
    """The group for metadata collectives: None (default) if it has gloo, else a cached gloo group."""
    global _gloo_cache
    if "gloo" in str(dist.get_backend()).lower():
        return None
    default = dist.group.WORLD
    if _gloo_cache is None or _gloo_cache[0] is not default:
        # Collective over all ranks: every rank calls current_world(), so this is safe.
        _gloo_cache = (default, dist.new_group(backend="gloo"))
    return _gloo_cache[1]


def current_world() -> World:
    """Return this process's :class:`World`, initializing a gloo process group if needed.

    * An existing torch.distributed process group is used as is (a gloo side group is
      created once if its backend has no gloo).
    * Otherwise, if RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are set (torchrun style),
      a gloo group is initialized from them.
    * Otherwise ``RuntimeError`` explains how to create one.

    The device is ``cuda:{(IRIS_DEVICE_OFFSET + rank) % device_count}`` (offset default 0; made
    current) when a GPU is visible (CUDA or ROCm; CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES are
    honoured by torch), else ``cpu``.
    ``IRIS_FORCE_CPU=1`` forces ``cpu``. A cpu world requires the Triton interpreter
    (``TRITON_INTERPRET=1``), otherwise ``RuntimeError``.
    """
    device_type = _device_type()
    if device_type == "cpu" and not is_interpreter():
        reason = "IRIS_FORCE_CPU=1 is set" if _force_cpu() else "no GPU is visible to torch"
        raise RuntimeError(
            f"iris: the device is cpu ({reason}), so Triton kernels must run under the Triton "
            "interpreter, but TRITON_INTERPRET is not set to 1. Set TRITON_INTERPRET=1 in the "
            "environment before triton is imported (e.g. `TRITON_INTERPRET=1 python ...`)."
        )
    install_interpreter()
    _ensure_process_group()
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    group = _gloo_group()
    if device_type == "cuda":
        device = torch.device("cuda", device_index(rank, torch.cuda.device_count()))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    return World(rank=rank, world_size=world_size, device=device, group=group)
