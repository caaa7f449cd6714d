"""``chunks.write_in_order``: every item's encoding (and its second step) written in item order, on one thread
and on pools whose chunks finish out of order; with ``parallel=False`` on the calling thread, starting no pool."""

from __future__ import annotations

import io
import time

import pytest

from iris.tracing import chunks
from tests.cpu_unit.checks import check

pytestmark = pytest.mark.cpu_unit


def _encode(i: int) -> bytes:
    time.sleep(0.002 * ((7 * i) % 5))  # later items often finish first
    return bytes([i]) * (i % 7 + 1)


def _finish(data: bytes) -> bytes:
    return len(data).to_bytes(2, "little") + data[::-1]


@pytest.mark.parametrize("workers", [1, 4])
@pytest.mark.parametrize("second_step", [False, True])
def test_chunks_are_written_in_item_order(monkeypatch, workers, second_step):
    monkeypatch.setattr(chunks, "workers", lambda: workers)
    items = list(range(40))
    out = io.BytesIO()
    chunks.write_in_order(out, _encode, items, _finish if second_step else None)
    expected = b"".join(_finish(_encode(i)) if second_step else _encode(i) for i in items)
    check("bytes", out.getvalue().hex(), expected.hex(), f"{workers} workers")


def test_an_error_in_the_second_step_reaches_the_caller(monkeypatch):
    monkeypatch.setattr(chunks, "workers", lambda: 3)

    def finish(data: bytes) -> bytes:
        if data[0] == 5:
            raise ValueError("chunk 5")
        return data

    with pytest.raises(ValueError, match="chunk 5"):
        chunks.write_in_order(io.BytesIO(), _encode, range(12), finish)


@pytest.mark.parametrize("second_step", [False, True])
def test_one_chunks_work_is_written_in_order_on_the_calling_thread(monkeypatch, second_step):
    monkeypatch.setattr(chunks, "workers", lambda: 4)
    monkeypatch.setattr(chunks, "ThreadPoolExecutor", None)  # a pool would fail to start
    items = list(range(9))
    out = io.BytesIO()
    chunks.write_in_order(out, _encode, items, _finish if second_step else None, parallel=False)
    expected = b"".join(_finish(_encode(i)) if second_step else _encode(i) for i in items)
    check("bytes", out.getvalue().hex(), expected.hex(), "parallel=False")
