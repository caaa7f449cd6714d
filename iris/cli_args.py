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
            raise argparse.ArgumentTypeError(f"{option} {_said(text)}: expected an integer {_range(minimum, maximum)}"
                                             + (f" ({why})" if why else "") + _plain(text))
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
            raise argparse.ArgumentTypeError(f"{option} {_said(text)}: expected a comma list {what}"
                                             + (f" ({why})" if why else "") + f", such as {example}"
                                             + _plain(*text.split(",")))
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
    (``2``, ``0.5``), refused in one line naming ``option``, the value and the bounds."""

    def parse(text: str) -> float:
        value = float(text) if _DECIMAL.fullmatch(text) and len(text) <= 32 else math.nan
        if not (math.isfinite(value) and 0 < value <= maximum):  # nan fails every comparison
            bound = f", at most {maximum:g}" if math.isfinite(maximum) else ""
            raise argparse.ArgumentTypeError(f"{option} {_said(text)}: expected a finite number of {unit} > 0{bound}"
                                             + _plain(text, decimal=True))
        return value

    return parse


_DIGITS = re.compile(r"[0-9]+")  # a number on the command line: plain digits, no sign, exponent, "_" or other digits
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+")


def _int_or_none(text: str) -> int | None:
    """``text`` as an integer where it is plain digits (at most 18 of them), else None."""
    return int(text) if _DIGITS.fullmatch(text) and len(text) <= 18 else None


def _said(text: str) -> str:
    """``text`` quoted for a refusal, its middle left out past 60 characters."""
    return repr(text) if len(text) <= 60 else f"{text[:40]!r}...({len(text)} characters)"


def _plain(*texts: str, decimal: bool = False) -> str:
    """A note for a refusal where a text Python would read as a number is not written in plain digits
    (``+5``, ``1e3``, ``0x10``, ``1_000``, `` 5``, other scripts' digits), else ""."""
    pattern = _DECIMAL if decimal else _DIGITS
    for text in texts:
        try:
            value = (float if decimal else int)(text)
        except ValueError:
            continue
        if math.isfinite(value) and not pattern.fullmatch(text.removeprefix("-")):  # a negative: the range says
            return f"; {text!r} is not written in plain digits 0-9" + (" with an optional ." if decimal else "")
    return ""


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


def _blank(text: str) -> str:
    """Why ``text`` names no path ("" when it names one): empty (Python would read the current folder) or blank."""
    return "empty" if not text else "only blanks" if not text.strip() else ""


def folder(option: str):
    """An argparse type: a folder (``--out``, ``--keep``) that can be made and written, checked at once."""

    def parse(text: str) -> Path:
        problem = _blank(text) or folder_problem(Path(text))
        if problem:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: {problem}; expected a folder (new or existing) "
                                             "that can be written")
        return Path(text)

    return parse


def out_file(option: str, what: str = "a file"):
    """An argparse type: a file to write (``--out``) whose folder can be made and written, checked at once."""

    def parse(text: str) -> Path:
        path = Path(text)
        if _blank(text):
            problem = _blank(text)
        elif path.is_dir():
            problem = "is a folder"
        elif os.path.lexists(path) and not os.access(path, os.W_OK):
            problem = "exists and cannot be written"
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
