"""Argument checks shared by the host code: what counts as an int and as a positive number of seconds.

A leaf module: it imports nothing of iris, so every module can use it.
"""

from __future__ import annotations


def is_int(x: object) -> bool:
    """True for an ``int`` that is not a ``bool``."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_positive_number(x: object) -> bool:
    """True for an int or float (not a bool) greater than zero."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0
