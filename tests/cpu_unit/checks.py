"""Check helpers for the host tests: a failure reads ``<field>=<actual>, but should be <expected> [<where>]``.

Every helper hides itself from the traceback, so the reader sees the failing line of the test and a
message that needs no knowledge of the test's internals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import pytest


def message(field: str, actual, expected, where: str = "") -> str:
    """The one failure text: ``field=actual, but should be expected [where]``."""
    suffix = f" [{where}]" if where else ""
    return f"{field}={actual!r}, but should be {expected}{suffix}"


def _same(actual, expected) -> bool:
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    if isinstance(expected, bool):  # True must not pass for 1, nor 1 for True
        return isinstance(actual, (bool, np.bool_)) and bool(actual) == expected
    return bool(actual == expected)


def check(field: str, actual, expected, where: str = "") -> None:
    """``actual == expected`` (NaN equals NaN; a bool expected also needs a bool)."""
    __tracebackhide__ = True
    if not _same(actual, expected):
        pytest.fail(message(field, actual, repr(expected), where))


def check_that(field: str, actual, ok: bool, should: str, where: str = "") -> None:
    """``ok`` must hold; ``should`` says what ``actual`` should be ("in [0, 8)", "a multiple of 256")."""
    __tracebackhide__ = True
    if not ok:
        pytest.fail(message(field, actual, should, where))


def check_array(field: str, actual, expected, where: str = "") -> None:
    """Element by element (NaN equals NaN); names the first differing index and how many differ."""
    __tracebackhide__ = True
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        pytest.fail(message(f"{field}.shape", actual.shape, repr(expected.shape), where))
    both_nan = np.zeros(actual.shape, dtype=bool)
    if actual.dtype.kind == "f" and expected.dtype.kind == "f":
        both_nan = np.isnan(actual) & np.isnan(expected)
    bad = np.argwhere((actual != expected) & ~both_nan)
    if len(bad):
        j = tuple(int(i) for i in bad[0])
        idx = ", ".join(map(str, j))
        pytest.fail(message(f"{field}[{idx}]", actual[j].item(), repr(expected[j].item()),
                            f"{len(bad)} of {actual.size} differ" + (f"; {where}" if where else "")))


def check_raises(exc_type: type[BaseException], fn: Callable[[], object], mentions: Iterable[str] = (),
                 where: str = "") -> BaseException:
    """``fn()`` raises ``exc_type`` whose message contains every string of ``mentions``; returns the error."""
    __tracebackhide__ = True
    try:
        fn()
    except exc_type as e:
        text = str(e)
        for m in mentions:
            if m not in text:
                pytest.fail(message("error message", text, f"a message mentioning {m!r}", where))
        return e
    except Exception as e:
        pytest.fail(message("exception", f"{type(e).__name__}: {e}", exc_type.__name__, where))
    pytest.fail(message("exception", None, exc_type.__name__, where))
