"""gpu tier: ``readback.Readback.fields`` from GPU memory through its pinned buffer, word for word, for counts of
slots whose words end inside, at and past a pinned piece, twice on one ``Readback`` (the buffer is reused)."""

from __future__ import annotations

import pytest

from tests.cpu_unit.checks import check
from tests.worlds import run_world

pytestmark = pytest.mark.gpu


def readback_job() -> list:
    """Per slot count: (slots, shape, first differing (field, slot) pairs) of two reads through one Readback."""
    import numpy as np
    import torch

    from iris.tracing import readback
    from iris.world import current_world

    device = current_world().device
    piece = readback.PIECE_WORDS
    rb = readback.Readback()
    out = []
    for n in (0, 1, piece // 14, piece // 7 + 3, 3 * piece // 14 + 1):
        words = torch.randint(-(1 << 62), 1 << 62, (n + 1, 16), dtype=torch.int64, device=device)
        expected = words[:n, :14].cpu().numpy().T
        for _ in range(2):
            got = rb.fields(words[:n, :14])
            out.append((n, got.shape, np.argwhere(got != expected)[:5].tolist()))
    return out


def test_fields_from_the_gpu_are_the_slots_transposed_word_for_word():
    (results,) = run_world(readback_job, "gpu", 1)
    check("reads", len(results), 10)
    for n, shape, bad in results:
        check("shape", tuple(shape), (14, n), f"{n} slots")
        check("words that differ (field, slot)", bad, [], f"{n} slots")
