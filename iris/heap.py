"""The symmetric heap: one equally sized byte buffer per rank, every one mapped into every rank's process.

``heap.bases[r]`` is the address of rank ``r``'s heap as mapped in *this* process, so a kernel can
translate a local heap pointer ``p`` to the same object on rank ``r`` as
``p - bases[my_rank] + bases[r]``. Objects are placed with a bump allocator that every rank runs
identically, so the same allocation has the same offset on every rank.

Two private backends map the buffers, chosen in :func:`_backend_for`: CUDA/HIP IPC handles on GPUs
(:mod:`iris.ipc`, opened in the local device's context so peers on other GPUs are addressable), and
shared-memory files (``/dev/shm``) mapped with ``torch.from_file`` on cpu (Triton interpreter).
"""

from __future__ import annotations

import errno
import math
import os
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

from iris.checks import is_int, is_power_of_two
from iris.world import World, gather_or_raise

__all__ = ["HeapOutOfMemoryError", "SymmetricHeap"]

_SEGMENT_PREFIX = "iris-heap-"


class HeapOutOfMemoryError(MemoryError):
    """Raised by :meth:`SymmetricHeap.allocate` when the request does not fit."""


def _on_every_rank(world: World, what: str, step):
    """``step`` on every rank (collective); raises on every rank, naming the failed ones, if any failed."""
    return gather_or_raise(world.group, world.world_size, f"SymmetricHeap: {what}", step)


def _device_bytes(ptr: int, size: int, device: torch.device) -> torch.Tensor:
    """A uint8 tensor over ``size`` bytes at ``ptr`` on ``device`` that does not own the memory.

    The device is stated, not inferred from the pointer: a peer heap mapped into this device's context
    must be used from this device.
    """
    storage = torch._C._construct_storage_from_data_pointer(ptr, device, size)
    return torch.empty(0, dtype=torch.uint8, device=device).set_(storage)


class _GpuIpcBackend:
    """GPU heaps: allocate with torch, exchange IPC handles, open every peer's handle in the local device's context.

    Handles come from :mod:`iris.ipc` (CUDA or HIP, chosen there), not from torch's tensor sharing: torch opens
    a shared tensor in the exporting device's context, which a kernel on another GPU cannot address.
    """

    def __init__(self, device: torch.device) -> None:
        from iris.ipc import runtime_for
        from iris.tracing.core import backend_of

        self.device = device
        self.runtime = runtime_for(backend_of(device))
        self.opened: list[int] = []  # peer allocations this process mapped, closed by release()

    def open(self, size: int, world: World) -> tuple[torch.Tensor, list[torch.Tensor]]:
        from iris.ipc import note_peer_range

        with torch.cuda.device(self.device):
            allocated: list[torch.Tensor] = []

            def export() -> tuple[bytes, int]:
                allocated.append(torch.zeros(size, dtype=torch.uint8, device=self.device))
                torch.cuda.synchronize(self.device)  # the memset completes before peers can touch the memory
                return self.runtime.export(allocated[0].data_ptr())

            exports = _on_every_rank(world, "allocating and exporting the heap (GPU IPC)", export)
            buffer = allocated[0]
            peers: list[torch.Tensor] = []

            def open_peers() -> None:
                try:
                    for r, (handle, offset) in enumerate(exports):
                        if r == world.rank:
                            peers.append(buffer)
                            continue
                        self.opened.append(self.runtime.open(handle, self.device.index))
                        note_peer_range(self.opened[-1] + offset, size)
                        peers.append(_device_bytes(self.opened[-1] + offset, size, self.device))
                except BaseException:
                    self.release()
                    raise

            _on_every_rank(world, "opening peer GPU IPC handles in the local device's context", open_peers)
        return buffer, peers

    def release(self) -> None:
        """Unmap every peer heap (after this device's queued work is done); the own buffer goes with its tensors."""
        if not self.opened:
            return
        torch.cuda.synchronize(self.device)
        with torch.cuda.device(self.device):
            while self.opened:
                self.runtime.close(self.opened.pop())


class _SharedMemoryBackend:
    """cpu heaps: each rank creates a shared-memory file, every rank maps every file, creators unlink.

    ``torch.from_file(shared=True)`` maps with MAP_SHARED, keeps no file descriptor open and unmaps
    when the last tensor viewing the storage dies, so views that outlive ``close()`` stay valid and
    nothing leaks. Plain files avoid multiprocessing's resource_tracker (which would warn about, and
    unlink, segments opened by non-creators at process exit).
    """

    @staticmethod
    def _directory() -> str:
        return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()

    @classmethod
    def _create(cls, size: int) -> str:
        path = os.path.join(cls._directory(), f"{_SEGMENT_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:16]}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            try:
                # Reserve the pages now: a full /dev/shm is an error here, not a SIGBUS later.
                os.posix_fallocate(fd, 0, size)
            except (AttributeError, OSError) as e:
                if isinstance(e, OSError) and e.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                    raise
                os.ftruncate(fd, size)
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise
        os.close(fd)
        return path

    @staticmethod
    def _map(path: str, size: int) -> torch.Tensor:
        return torch.from_file(path, shared=True, size=size, dtype=torch.uint8)

    def __init__(self, device: torch.device) -> None:
        self.device = device

    @classmethod
    def open(cls, size: int, world: World) -> tuple[torch.Tensor, list[torch.Tensor]]:
        path: str | None = None
        mapped: list[torch.Tensor] = []

        def create() -> str:
            nonlocal path
            path = cls._create(size)
            mapped.append(cls._map(path, size))
            return path

        try:
            paths = _on_every_rank(world, "creating the shared-memory segment", create)
            buffer = mapped[0]
            peers: list[torch.Tensor] = []

            def open_peers() -> None:
                peers.extend(buffer if r == world.rank else cls._map(p, size) for r, p in enumerate(paths))

            # The gather doubles as the barrier after which every rank has mapped every segment.
            _on_every_rank(world, "mapping peer shared-memory segments", open_peers)
        finally:
            if path is not None:
                os.unlink(path)  # mappings stay valid; nothing is left behind even if a rank crashes later
        return buffer, peers

    def release(self) -> None:
        pass  # mappings go away with the last tensor that views them


def _backend_for(device: torch.device) -> _GpuIpcBackend | _SharedMemoryBackend:
    """The one place where GPU and cpu heaps part ways."""
    return _SharedMemoryBackend(device) if device.type == "cpu" else _GpuIpcBackend(device)


class SymmetricHeap:
    """A ``size``-byte heap on every rank of ``world``, each mapped into every rank's process.

    Collective: every rank constructs it with the same ``size`` (and must call :meth:`allocate`
    with the same sequence of requests to keep offsets symmetric). The memory starts zeroed.

    Attributes:
        buffer: this rank's heap, a 1-D ``torch.uint8`` tensor of ``size`` bytes on ``world.device``.
        bases: ``bases[r]`` is the address of rank ``r``'s heap as mapped in this process.
        world: the :class:`~iris.world.World` the heap spans.
    """

    def __init__(self, size: int, world: World) -> None:
        if not is_int(size) or size <= 0:
            raise ValueError(f"SymmetricHeap: size must be an int > 0 (bytes), got {size!r}")
        self.world = world
        self._size = size
        self._used = 0
        self._backend = _backend_for(world.device)
        self.buffer: torch.Tensor | None
        self.buffer, self._peers = self._backend.open(size, world)
        self.bases: list[int] = [p.data_ptr() for p in self._peers]

    @property
    def size(self) -> int:
        """Heap size in bytes (per rank)."""
        return self._size

    @property
    def used(self) -> int:
        """Bytes allocated so far, including alignment padding."""
        return self._used

    @property
    def free(self) -> int:
        """Bytes left after the last allocation (before any alignment padding)."""
        return self._size - self._used

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self.buffer is None

    def _check_open(self) -> torch.Tensor:
        if self.buffer is None:
            raise RuntimeError("SymmetricHeap: the heap is closed")
        return self.buffer

    def allocate(self, nbytes: int, alignment: int = 256) -> int:
        """Reserve ``nbytes`` bytes aligned to ``alignment`` (a power of two); return their byte offset.

        Offsets are relative to the heap start (``bases[rank]``). Raises :class:`HeapOutOfMemoryError`
        (a ``MemoryError``) without changing anything if the request does not fit.
        """
        self._check_open()
        if not is_int(nbytes) or nbytes < 0:
            raise ValueError(f"SymmetricHeap.allocate: nbytes must be an int >= 0, got {nbytes!r}")
        if not is_power_of_two(alignment):
            raise ValueError(f"SymmetricHeap.allocate: alignment must be a power of two, got {alignment!r}")
        offset = -(-self._used // alignment) * alignment
        end = offset + nbytes
        if end > self._size:
            raise HeapOutOfMemoryError(
                f"SymmetricHeap: cannot allocate {nbytes} bytes (alignment {alignment}): "
                f"{self.free} bytes free of a {self._size}-byte heap ({self._used} bytes used)"
            )
        self._used = end
        return offset

    @contextmanager
    def given_back_on_error(self) -> Iterator[None]:
        """Allocations made inside the block are given back if it raises: ``used`` returns to its value at entry.

        The heap is a bump allocator, so rolling ``used`` back frees exactly what the block took and moves nothing
        allocated before it. A helper that allocates and then fills (``Iris.full``) runs the fill in here, so a
        fill that fails leaves the heap as it was, and the ranks' offsets stay symmetric.
        """
        used = self._used
        try:
            yield
        except BaseException:
            if self.buffer is not None:  # a closed heap has nothing to give back (and keeps used at 0)
                self._used = used
            raise

    def _view(self, base: torch.Tensor, offset: int, shape: int | Sequence[int], dtype: torch.dtype) -> torch.Tensor:
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"SymmetricHeap: dtype must be a torch.dtype, got {dtype!r}")
        size = torch.Size([shape] if is_int(shape) else shape)
        nbytes = math.prod(size) * dtype.itemsize
        if not is_int(offset) or offset < 0 or offset % dtype.itemsize:
            raise ValueError(
                f"SymmetricHeap: offset must be an int >= 0 and a multiple of {dtype.itemsize} for {dtype}, "
                f"got {offset!r}"
            )
        if offset + nbytes > self._size:
            raise ValueError(
                f"SymmetricHeap: {nbytes} bytes at offset {offset} run past the end of the {self._size}-byte heap"
            )
        return base[offset : offset + nbytes].view(dtype).view(size)

    def tensor(self, offset: int, shape: int | Sequence[int], dtype: torch.dtype) -> torch.Tensor:
        """A contiguous ``shape``/``dtype`` view of this rank's heap starting at byte ``offset``."""
        return self._view(self._check_open(), offset, shape, dtype)

    def peer_tensor(self, rank: int, offset: int, shape: int | Sequence[int], dtype: torch.dtype) -> torch.Tensor:
        """The same view as :meth:`tensor`, of rank ``rank``'s heap (as mapped in this process)."""
        self._check_open()
        if not is_int(rank) or not 0 <= rank < self.world.world_size:
            raise ValueError(f"SymmetricHeap: rank must be in [0, {self.world.world_size}), got {rank!r}")
        return self._view(self._peers[rank], offset, shape, dtype)

    def reset(self) -> None:
        """Free every allocation (the next one starts at offset 0); the memory is not cleared."""
        self._used = 0

    def close(self) -> None:
        """Release this rank's mappings of every heap (idempotent, local: no collective).

        Peers must no longer access this rank's heap (e.g. close after a barrier). On GPUs this rank's
        mappings of peer heaps are closed (views from :meth:`peer_tensor` become invalid), and the own
        buffer goes back to torch's allocator once no tensor views it.
        """
        if self.buffer is None:
            return
        self._peers = []
        self.buffer = None
        self.bases = []
        self._used = 0
        self._backend.release()

    def __enter__(self) -> SymmetricHeap:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"used={self._used}"
        return (
            f"SymmetricHeap(size={self._size}, {state}, rank={self.world.rank}, "
            f"world_size={self.world.world_size}, device={self.world.device})"
        )
