"""Device selection of a rank: ``(IRIS_DEVICE_OFFSET + rank) % device_count``, offset 0 by default."""

from __future__ import annotations

import pytest

from iris.world import device_index, device_offset

pytestmark = pytest.mark.cpu_unit


def test_default_offset_is_zero(monkeypatch):
    monkeypatch.delenv("IRIS_DEVICE_OFFSET", raising=False)
    assert device_offset() == 0
    assert [device_index(r, 8) for r in range(4)] == [0, 1, 2, 3]
    assert [device_index(r, 1) for r in range(4)] == [0, 0, 0, 0]  # 4 ranks on 1 GPU
    monkeypatch.setenv("IRIS_DEVICE_OFFSET", "")
    assert device_offset() == 0


@pytest.mark.parametrize(
    "offset, device_count, expected",
    [
        ("2", 8, [2, 3, 4, 5]),
        ("6", 8, [6, 7, 0, 1]),
        ("8", 8, [0, 1, 2, 3]),
        ("3", 2, [1, 0, 1, 0]),
        (" 1 ", 4, [1, 2, 3, 0]),
    ],
)
def test_offset_shifts_and_wraps(monkeypatch, offset, device_count, expected):
    monkeypatch.setenv("IRIS_DEVICE_OFFSET", offset)
    assert [device_index(r, device_count) for r in range(4)] == expected


@pytest.mark.parametrize("bad", ["-1", "x", "1.5", "+1", "1e3", "0x1", "\uff11", "1_0"])
def test_bad_offset_is_named(monkeypatch, bad):
    monkeypatch.setenv("IRIS_DEVICE_OFFSET", bad)
    with pytest.raises(ValueError, match="IRIS_DEVICE_OFFSET") as e:
        device_index(0, 8)
    assert repr(bad) in str(e.value)


def test_no_devices_is_an_error(monkeypatch):
    monkeypatch.delenv("IRIS_DEVICE_OFFSET", raising=False)
    with pytest.raises(ValueError, match="device_count"):
        device_index(0, 0)


@pytest.mark.parametrize(("value", "forced"), [(None, False), ("0", False), ("1", True)])
def test_force_cpu_is_1_or_0(monkeypatch, value, forced):
    from iris.world import _force_cpu

    if value is None:
        monkeypatch.delenv("IRIS_FORCE_CPU", raising=False)
    else:
        monkeypatch.setenv("IRIS_FORCE_CPU", value)
    assert _force_cpu() is forced


@pytest.mark.parametrize("bad", ["", "true", "yes", "2", " 1"])
def test_a_force_cpu_value_that_is_neither_1_nor_0_is_refused_not_read_as_0(monkeypatch, bad):
    """Was: any value but 1 silently left the ranks on the GPU."""
    from iris.world import _force_cpu

    monkeypatch.setenv("IRIS_FORCE_CPU", bad)
    with pytest.raises(ValueError) as e:
        _force_cpu()
    assert str(e.value) == f"IRIS_FORCE_CPU={bad!r}: neither 0 nor 1; expected 1 to put the ranks on the CPU, or 0 " \
                           "(the default)"
