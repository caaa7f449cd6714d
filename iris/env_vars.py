"""Documented environment variables, read and checked where they are read.

Each reader returns the variable's value as what it means (a number, a flag, a folder) or raises
:class:`EnvVarError`, one line naming the variable, its value and what was expected: a value that cannot be used
exactly is refused, never read as the default.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_DIGITS = re.compile(r"[0-9]+")


class EnvVarError(ValueError):
    """An environment variable whose value cannot be used: ``NAME='value': problem; expected ...`` (one line)."""

    def __init__(self, name: str, value: str, problem: str, expected: str) -> None:
        super().__init__(f"{name}={value!r}: {problem}; expected {expected}")


def env_int(name: str, default: int, expected: str, minimum: int = 0) -> int:
    """``name`` as an integer >= ``minimum`` written in plain digits (no sign, no exponent, no other digits);
    ``default`` when it is unset or blank."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    text = value.strip()
    number = int(text) if _DIGITS.fullmatch(text) and len(text) <= 18 else None
    if number is None or number < minimum:
        raise EnvVarError(name, value, "not a whole number in plain digits" if number is None else
                          f"less than {minimum}", expected)
    return number


def env_flag(name: str, what: str) -> bool:
    """``name`` as a switch: ``1`` on, ``0`` or unset off (``what`` it turns on, for the refusal)."""
    value = os.environ.get(name)
    if value is None or value == "0":
        return False
    if value == "1":
        return True
    raise EnvVarError(name, value, "neither 0 nor 1", f"1 to {what}, or 0 (the default)")


def env_folder(name: str, expected: str, off: str | None = None) -> Path | None:
    """``name`` as a folder that exists or can be made, and can be written (checked, nothing made); None when it
    is unset, or its value is ``off`` (in any case). An empty value is refused: it would mean the current folder."""
    from iris.cli_args import folder_problem

    value = os.environ.get(name)
    if value is None or (off is not None and value.lower() == off):
        return None
    problem = "empty" if not value.strip() else folder_problem(Path(value))
    if problem:
        raise EnvVarError(name, value, problem, expected)
    return Path(value)
