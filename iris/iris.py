"""Host ``Iris``: one rank's symmetric heap, allocation helpers, barrier, context tensor and tracing.

Every rank creates it collectively (``iris.iris(heap_size)``) inside a torch.distributed process
group. Tensors it allocates live on the symmetric heap, so kernels can address the same tensor
on any rank through ``DeviceContext``/``IrisDeviceCtx``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.distributed as dist

from iris import context_layout
from iris.checks import is_int, is_power_of_two
from iris.fill_values import Arange, fill_scalar
from iris.heap import SymmetricHeap
from iris.tracing.core import Tracing
from iris.world import World, current_world, synchronize

DEFAULT_ALIGNMENT = 256


def _shape(size) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    for s in size:
        if not is_int(s) or s < 0:
            raise ValueError(f"tensor size {tuple(size)!r} must be non-negative ints")
    return tuple(size)


_DTYPES = (torch.bool, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.float16,
           torch.bfloat16, torch.float32, torch.float64)


def _dtype(dtype) -> torch.dtype:
    """``dtype`` if it is a torch dtype the heap holds; ValueError naming it and the choices otherwise."""
    if not isinstance(dtype, torch.dtype) or dtype not in _DTYPES:
        names = ", ".join(str(d) for d in _DTYPES)
        raise ValueError(f"dtype={dtype!r}; expected a torch.dtype, one of {names}")
    return dtype


def _alignment(alignment) -> int:
    """``alignment`` if it is a positive power of two (bytes); ValueError naming it otherwise (for every dtype)."""
    if not is_power_of_two(alignment):
        raise ValueError(f"alignment={alignment!r}; expected a positive power of two (bytes), such as "
                         f"{DEFAULT_ALIGNMENT}")
    return alignment


def _fill_value(value, dtype: torch.dtype) -> None:
    """Nothing if a ``dtype`` element holds ``value`` exactly; a ValueError (TypeError: not a number) naming ``full``,
    the value and the dtype otherwise (:func:`iris.fill_values.fill_scalar`)."""
    fill_scalar("full", "fill_value", value, dtype)


class Iris:
    """One rank's handle on the symmetric heap (create with ``iris.iris(heap_size)``)."""

    api = "triton"  # the device API this host object serves; trace exports name processes after it

    def __init__(self, heap_size: int, world: World | None = None) -> None:
        if not is_int(heap_size) or heap_size <= 0:
            raise ValueError(f"heap_size={heap_size!r}; expected a positive int number of bytes")
        self.world = world if world is not None else current_world()
        self.heap = SymmetricHeap(heap_size, self.world)
        self._context = torch.tensor(
            context_layout.encode(self.world.rank, self.heap.bases), dtype=torch.int64, device=self.world.device
        )
        self.tracing = Tracing(self)

    # -- world -----------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return self.world.rank

    @property
    def num_ranks(self) -> int:
        return self.world.world_size

    @property
    def device(self) -> torch.device:
        return self.world.device

    @property
    def group(self):
        return self.world.group

    def get_rank(self) -> int:
        return self.world.rank

    def get_num_ranks(self) -> int:
        return self.world.world_size

    def get_device(self) -> torch.device:
        return self.world.device

    def get_heap_bases(self) -> torch.Tensor:
        """Every rank's heap base as mapped in this process (int64, on this rank's device)."""
        return self._context[context_layout.HEAP_BASES :]

    def barrier(self) -> None:
        """Wait for this rank's device work, then for every rank."""
        synchronize(self.device)
        dist.barrier(group=self.group)

    # -- context ---------------------------------------------------------------------------------
    def get_device_context(self) -> torch.Tensor:
        """The context tensor (layout v3) kernels pass to ``DeviceContext.initialize``.

        The same tensor is returned every time; ``tracing.enable/disable`` update it in place.
        """
        return self._context

    def _write_tracing_block(self, block: context_layout.TracingBlock | None) -> None:
        values = context_layout.encode(self.rank, self.heap.bases, block)
        synchronize(self.device)
        self._context.copy_(torch.tensor(values, dtype=torch.int64))

    # -- allocation ------------------------------------------------------------------------------
    def _allocate(self, shape: tuple[int, ...], dtype: torch.dtype, alignment: int,
                  init: Callable[[torch.Tensor], object] | None = None) -> torch.Tensor:
        """A ``shape``/``dtype`` tensor on the heap, aligned to ``alignment`` bytes, then ``init(tensor)`` if given.

        Every argument is checked before anything is allocated; if ``init`` fails, the allocation is given back
        (the heap's ``used`` is as before the call).
        """
        element = torch.empty((), dtype=_dtype(dtype)).element_size()
        alignment = _alignment(alignment)
        with self.heap.given_back_on_error():
            # A view of dtype needs an offset that is a multiple of its size: never align below it.
            offset = self.heap.allocate(math.prod(shape) * element, max(alignment, element))
            out = self.heap.tensor(offset, shape, dtype)
            if init is not None:
                init(out)
        return out

    def empty(self, *size, dtype: torch.dtype = torch.float32, alignment: int = DEFAULT_ALIGNMENT) -> torch.Tensor:
        """Uninitialized tensor on the symmetric heap."""
        return self._allocate(_shape(size), dtype, alignment)

    def zeros(self, *size, dtype: torch.dtype = torch.float32, alignment: int = DEFAULT_ALIGNMENT) -> torch.Tensor:
        """Zero-filled tensor on the symmetric heap."""
        return self._allocate(_shape(size), dtype, alignment, torch.Tensor.zero_)

    def ones(self, *size, dtype: torch.dtype = torch.float32, alignment: int = DEFAULT_ALIGNMENT) -> torch.Tensor:
        """One-filled tensor on the symmetric heap."""
        return self._allocate(_shape(size), dtype, alignment, lambda t: t.fill_(1))

    def full(
        self, size: Sequence[int], fill_value, dtype: torch.dtype = torch.float32, alignment: int = DEFAULT_ALIGNMENT
    ) -> torch.Tensor:
        """Tensor of ``fill_value`` on the symmetric heap; a value ``dtype`` cannot hold exactly (one that would wrap,
        be truncated, overflow to inf or underflow to 0; a bool other than True, False, 0 or 1) raises ValueError
        before anything is allocated."""
        shape = _shape((size,))
        _fill_value(fill_value, _dtype(dtype))
        return self._allocate(shape, dtype, alignment, lambda t: t.fill_(fill_value))

    def zeros_like(self, other: torch.Tensor, alignment: int = DEFAULT_ALIGNMENT) -> torch.Tensor:
        """Zero tensor with ``other``'s shape and dtype on the symmetric heap."""
        if not isinstance(other, torch.Tensor):
            raise TypeError(f"zeros_like: other={other!r} ({type(other).__name__}); expected a torch.Tensor "
                            "(its shape and dtype are copied)")
        return self.zeros(*other.shape, dtype=other.dtype, alignment=alignment)

    def arange(
        self, start, end=None, step=1, dtype: torch.dtype = torch.int64, alignment: int = DEFAULT_ALIGNMENT
    ) -> torch.Tensor:
        """``torch.arange`` values on the symmetric heap (``arange(end)`` counts from 0); arguments that are not finite
        numbers, or give a value ``dtype`` cannot hold exactly, raise before anything is allocated (a float dtype's
        interior values are checked as they are written: a failure gives the allocation back)."""
        if end is None:
            start, end = 0, start
        values = Arange(start, end, step, _dtype(dtype))
        return self._allocate((values.count,), dtype, alignment, values.fill)

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the trace buffers and this rank's heap mappings (local, no collective).

        Peers must be done with this rank's heap first: close every rank after a :meth:`barrier`.
        """
        self.tracing.release()
        self.heap.close()

    def __enter__(self) -> Iris:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def iris(heap_size: int = 1 << 30) -> Iris:
    """Create this rank's ``Iris`` (collective over the current torch.distributed world)."""
    return Iris(heap_size)
