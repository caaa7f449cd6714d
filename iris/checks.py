"""Argument checks shared by the host code: what counts as an int, a power of two and a positive number of seconds.

A leaf module: it imports nothing of iris, so every module can use it.
"""

from __future__ import annotations


def is_int(x: object) -> bool:
    """True for an ``int`` that is not a ``bool``."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_positive_number(x: object) -> bool:
    """True for an int or float (not a bool) greater than zero."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


def is_power_of_two(x: object) -> bool:
    """True for an int (not a bool) that is a positive power of two: 1, 2, 4, ..."""
    return is_int(x) and x > 0 and not x & (x - 1)
