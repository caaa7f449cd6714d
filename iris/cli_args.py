"""Command-line input, refused in one line: the parser and argparse types shared by every script of the project.

The conformance command line, the benchmarks and the examples parse with :class:`OneLineParser`, which reports bad
input as one line on stderr and exit code 2 (no usage block, no traceback), and check values with these types
before anything runs: each names the option, the value and what was expected.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad input in one line (no usage block) and exits 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message}\n")


def int_at_least(option: str, minimum: int):
    """An argparse type: an integer >= ``minimum``, refused in one line naming ``option`` and the value."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: expected an integer >= {minimum}")
        return value

    return parse


def positive_at_most(option: str, maximum: float, unit: str = "seconds"):
    """An argparse type: a number in (0, ``maximum``] (no nan, no inf), refused in one line naming ``option``, the
    value and the bounds; ``unit`` says what it counts."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value <= maximum:  # nan fails both comparisons
            raise argparse.ArgumentTypeError(f"{option} {text!r}: expected a positive number of {unit}, at most "
                                             f"{maximum:g}")
        return value

    return parse


def folder_problem(path: Path) -> str | None:
    """Why ``path`` cannot be used as an output folder (made if missing, then written), or None.

    Leaves nothing behind: the folder is not made; a probe folder made in its nearest existing parent (or in it)
    shows that making and writing work there, and is removed at once.
    """
    existing = path
    try:
        if os.path.lexists(path) and not path.is_dir():
            return "exists and is not a folder"
        while not os.path.lexists(existing):
            existing = existing.parent
        if not existing.is_dir():
            return f"{existing} is not a folder, so no folder can be made under it"
        os.rmdir(tempfile.mkdtemp(prefix=".iris-probe-", dir=existing))
    except OSError as e:
        return f"nothing can be made or written in {existing} ({e.strerror or e})"
    return None


def folder(option: str):
    """An argparse type: a folder (``--out``, ``--keep``) that can be made and written, checked at once."""

    def parse(text: str) -> Path:
        problem = folder_problem(Path(text))
        if problem:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: {problem}; expected a folder (new or existing) "
                                             "that can be written")
        return Path(text)

    return parse


def out_file(option: str, what: str = "a file"):
    """An argparse type: a file to write (``--out``) whose folder can be made and written, checked at once."""

    def parse(text: str) -> Path:
        path = Path(text)
        if path.is_dir():
            problem = "is a folder"
        elif os.path.lexists(path.parent) and not path.parent.is_dir():
            problem = f"{path.parent} is not a folder"
        else:
            problem = folder_problem(path.parent)
        if problem:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: {problem}; expected {what} in a folder that can "
                                             "be made and written")
        return path

    return parse
