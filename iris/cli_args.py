"""Command-line input, refused in one line: the parser and argparse types shared by every script of the project.

The conformance command line, the benchmarks and the examples parse with :class:`OneLineParser`, which reports bad
input as one line on stderr and exit code 2 (no usage block, no traceback), and check values with these types
before anything runs: each names the option, the value and what was expected.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from iris.ranks.pool import MAX_WORLD_SIZE
from iris.tracing.core import MAX_CHUNK


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad input in one line (no usage block) and exits 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message}\n")


def int_at_least(option: str, minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``minimum``, refused in one line naming ``option`` and the value."""
    return int_in(option, minimum)


def int_in(option: str, minimum: int, maximum: int | None = None, why: str = "") -> Callable[[str], int]:
    """An argparse type: an integer from ``minimum`` to ``maximum`` (None: no upper bound), refused in one line
    naming ``option``, the value and the range, then ``why`` the range is what it is."""

    def parse(text: str) -> int:
        value = _int_or_none(text)
        if value is None or not _within(value, minimum, maximum):
            raise argparse.ArgumentTypeError(f"{option} {text!r}: expected an integer {_range(minimum, maximum)}"
                                             + (f" ({why})" if why else ""))
        return value

    return parse


def add_chunk(parser: argparse.ArgumentParser) -> None:
    """``--chunk``: the slots a program claims at a time (``tracing.enable``'s chunk), default 64."""
    parser.add_argument("--chunk", type=int_in("--chunk", 1, MAX_CHUNK, "slots a program claims at a time: "
                                               "tracing.enable's chunk"), default=64,
                        help="slots a program claims at a time (tracing.enable; default 64)")


def world_size(option: str = "--ranks") -> Callable[[str], int]:
    """An argparse type: one world size, 1 to ``MAX_WORLD_SIZE`` ranks (the rank processes one host runs)."""
    return int_in(option, 1, MAX_WORLD_SIZE, why="a world size: at most the rank processes one host runs")


def int_list(option: str, minimum: int = 1, maximum: int | None = None, *, allowed: Sequence[int] | None = None,
             why: str = "", example: str = "1,2,4", item: str = "value") -> Callable[[str], tuple[int, ...]]:
    """An argparse type: a comma list of distinct integers from ``minimum`` to ``maximum`` (or, given ``allowed``,
    each one of those), refused in one line naming ``option``, the value and what each entry may be; an empty entry
    is no integer, and an ``item`` given twice is refused naming it."""
    what = (f"of {', '.join(map(str, allowed))}" if allowed is not None
            else f"of integers {_range(minimum, maximum)}")

    def parse(text: str) -> tuple[int, ...]:
        values = tuple(_int_or_none(piece) for piece in text.split(","))
        valid = (lambda v: v in allowed) if allowed is not None else (lambda v: _within(v, minimum, maximum))
        if not all(v is not None and valid(v) for v in values):
            raise argparse.ArgumentTypeError(f"{option} {text!r}: expected a comma list {what}"
                                             + (f" ({why})" if why else "") + f", such as {example}")
        _refuse_repeats(option, text, values, item, example, prefix=f"{item} ")
        return values

    parse.item = item  # what ExtendOnce names
    return parse


def choice_list(option: str, choices: Sequence[str], item: str = "name") -> Callable[[str], tuple[str, ...]]:
    """An argparse type: a comma list of distinct names out of ``choices``, refused in one line naming ``option``,
    the value and the choices; an empty entry is no choice, and an ``item`` given twice is refused naming it."""

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(text.split(","))
        if not all(name in choices for name in names):
            raise argparse.ArgumentTypeError(f"{option} {text!r}: expected a comma list of {', '.join(choices)}")
        _refuse_repeats(option, text, names, item, ",".join(choices[:4]))
        return names

    parse.item = item  # what ExtendOnce names
    return parse


def _refuse_repeats(option: str, text: str, values: Sequence, item: str, example: str, prefix: str = "") -> None:
    """An ArgumentTypeError naming the entries of ``values`` (parsed from ``text``) that come more than once."""
    repeated = [v for i, v in enumerate(values) if values.count(v) > 1 and values.index(v) == i]
    if repeated:
        raise argparse.ArgumentTypeError(f"{option} {text!r}: {prefix}{', '.join(map(str, sorted(repeated)))} is "
                                         f"repeated; expected each {item} once, such as {example}")


class ExtendOnce(argparse.Action):
    """``action="extend"`` for a repeatable option (its type a :func:`choice_list` or :func:`int_list`, or one value
    a use, as ``action="append"``) that refuses, in one line, an entry an earlier use of the option already gave."""

    def __call__(self, parser, namespace, values, option_string=None):
        values = [values] if isinstance(values, str) else values
        before = list(getattr(namespace, self.dest, None) or ())
        again = [v for v in values if v in before]
        if again:
            parser.error(f"argument {'/'.join(self.option_strings)}: {option_string} {','.join(map(str, values))!r}: "
                         f"{', '.join(map(str, again))} given already by an earlier {option_string}; expected each "
                         f"{getattr(self.type, 'item', self.dest)} once")
        setattr(namespace, self.dest, before + list(values))


def positive_number(option: str, unit: str = "seconds", maximum: float = math.inf) -> Callable[[str], float]:
    """An argparse type: a finite number > 0 (of ``unit``) and at most ``maximum``, written in plain decimal digits
    (``2``, ``0.5``, ``1e3``), refused in one line naming ``option``, the value and the bounds."""

    def parse(text: str) -> float:
        value = float(text) if _DECIMAL.fullmatch(text) else math.nan
        if not (math.isfinite(value) and 0 < value <= maximum):  # nan fails every comparison
            bound = f", at most {maximum:g}" if math.isfinite(maximum) else ""
            raise argparse.ArgumentTypeError(f"{option} {text!r}: expected a finite number of {unit} > 0{bound}")
        return value

    return parse


# What a number on a command line may be: ASCII digits, a leading minus, and for a decimal a point and an exponent.
# Python's int() and float() take more (" 5", "+5", "1_000", "٥", "inf", "nan"), which nobody means to type.
_INTEGER = re.compile(r"-?[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?", re.ASCII)


def _int_or_none(text: str) -> int | None:
    """``text`` as an int if it is plain digits (a leading minus allowed) of at most 4300 of them, else None."""
    if not _INTEGER.fullmatch(text):
        return None
    try:
        return int(text)
    except ValueError:  # more digits than Python converts
        return None


def _within(value: int, minimum: int, maximum: int | None) -> bool:
    return value >= minimum and (maximum is None or value <= maximum)


def _range(minimum: int, maximum: int | None) -> str:
    """``>= 1`` or ``from 1 to 8``."""
    return f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"


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


NO_GPU = "--backend gpu needs a GPU (torch.cuda.is_available() is False)"


def missing_gpu(backend: str | None) -> bool:
    """Whether ``backend`` is gpu on a machine where torch sees no GPU (refused with ``NO_GPU``)."""
    import torch

    return backend == "gpu" and not torch.cuda.is_available()


def chosen_backend(parser: argparse.ArgumentParser, asked: str | None) -> str:
    """``--backend``: ``asked``, else gpu where torch sees a GPU and cpu elsewhere; gpu without one is refused in one
    line through ``parser``."""
    import torch

    if missing_gpu(asked):
        parser.error(NO_GPU)
    return asked or ("gpu" if torch.cuda.is_available() else "cpu")
