"""``readback.Readback.fields``: slot-major records to a field-major numpy array, word for word, for counts of
slots that end inside, at and past a block of the CPU transpose (the GPU path: tests/gpu/test_readback.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iris.tracing import readback
from tests.cpu_unit.checks import check

pytestmark = pytest.mark.cpu_unit


@pytest.mark.parametrize("n", [0, 1, readback.BLOCK_SLOTS - 1, readback.BLOCK_SLOTS, 2 * readback.BLOCK_SLOTS + 5])
def test_fields_are_the_slots_transposed_word_for_word(n):
    words = torch.arange((n + 1) * 16, dtype=torch.int64).reshape(n + 1, 16) * 7919 - (1 << 62)
    slots = words[:n, :14]  # strided, as Tracing passes its records
    out = readback.Readback().fields(slots)
    check("shape", out.shape, (14, n))
    check("dtype", out.dtype, np.dtype(np.int64))
    expected = words[:n, :14].numpy().T
    bad = np.argwhere(out != expected)
    check("words that differ (field, slot)", bad[:5].tolist(), [], f"{n} slots")


def test_each_read_is_a_new_array():
    slots = torch.arange(32, dtype=torch.int64).reshape(8, 4)
    rb = readback.Readback()
    first = rb.fields(slots)
    slots += 100
    rb.fields(slots)
    check("first read after a second one", first.tolist(), torch.arange(32).reshape(8, 4).t().tolist())
