"""Trace records to host memory, field-major: the one read-back path of ``Tracing.events``.

The device keeps records slot-major (a record per slot); decoding wants one numpy row per field. On a GPU the
slots are transposed there and the result comes back in pieces through one pinned buffer that is kept between
reads: a copy into fresh pageable memory goes through the driver's own staging, many times slower than a copy into
pinned memory plus the host's copy out of it (``docs/figures.md``, "Host: decoding and export"). On the CPU the
transpose is done a block of slots at a time, so both sides of the copy stay in cache.
"""

from __future__ import annotations

import numpy as np
import torch

PIECE_WORDS = 1 << 19  # int64 words per piece (4 MB): the pinned buffer's size
BLOCK_SLOTS = 1 << 13  # slots per block of the CPU transpose


class Readback:
    """Copies slot-major records to a new field-major numpy array; owns the pinned buffer it copies through."""

    def __init__(self) -> None:
        self._pinned: torch.Tensor | None = None

    def fields(self, slots: torch.Tensor) -> np.ndarray:
        """``slots`` (int64 ``[n, f]``, any strides, on any device) as a new int64 ``[f, n]`` numpy array."""
        n, f = slots.shape
        out = np.empty((f, n), dtype=np.int64)
        if slots.device.type == "cpu":
            src = slots.numpy()
            for lo in range(0, n, BLOCK_SLOTS):
                out[:, lo:lo + BLOCK_SLOTS] = src[lo:lo + BLOCK_SLOTS].T
            return out
        flat = slots.t().contiguous().view(-1)  # transposed on the device
        if self._pinned is None:
            self._pinned = torch.empty(PIECE_WORDS, dtype=torch.int64, pin_memory=True)
        host, dest = self._pinned.numpy(), out.reshape(-1)
        for lo in range(0, flat.numel(), PIECE_WORDS):
            k = min(PIECE_WORDS, flat.numel() - lo)
            self._pinned[:k].copy_(flat[lo:lo + k])  # waits for the copy: the buffer is read next
            dest[lo:lo + k] = host[:k]  # numpy's copy: torch's would leave its worker threads spinning
        return out

    def release(self) -> None:
        """Free the pinned buffer (a later read takes a new one)."""
        self._pinned = None
