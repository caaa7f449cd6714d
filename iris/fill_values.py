"""The values the heap's constructors write (``full``'s fill value, ``arange``'s start, end and step), checked to be
held by the dtype before anything is allocated.

A value is refused when the dtype would change it: an integer dtype refuses what wraps (-1 as uint8), what it would
truncate (1.5 as int8) and nan or inf; a float dtype refuses an integer it would round (16777217 as float32), a
finite value that overflows to inf (1e6 as float16) and a nonzero one that underflows to 0 (1e-50 as float32), and
holds nan and inf themselves; bool takes True, False, 0 and 1. A float rounds to the float dtype's nearest value,
as in torch (0.1 as float32). Every refusal is one ValueError (TypeError: not a number) naming the call, the value
and the dtype.
"""

from __future__ import annotations

import math
import numbers

import torch

__all__ = ["Arange", "fill_scalar"]


def shown(value) -> str:
    """``repr(value)``, but an integer of more than 40 digits as its sign and length (Python refuses to print one of
    more than 4300 digits, and nobody reads one of 40)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        return f"{'-' if value < 0 else ''}<an integer of {math.floor(math.log10(abs(value))) + 1} digits>"
    return repr(value)


def _expected(dtype: torch.dtype) -> str:
    return f"expected a value {dtype} holds exactly"


def _range(dtype: torch.dtype) -> str:
    info = torch.iinfo(dtype)
    return f"{info.min} to {info.max}"


def _scalar(call: str, name: str, value, dtype: torch.dtype) -> bool | int | float:
    """``value`` as a Python bool, int or float (a 0-d tensor gives its item); TypeError naming it otherwise."""
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_complex():
        value = value.item()
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    kind = f"tensor of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__
    raise TypeError(f"{call}: {name}={shown(value)} ({kind}); expected a number (or a 0-d tensor) for a {dtype} tensor")


def _held_as_float(value: int | float, dtype: torch.dtype) -> float:
    """What a ``dtype`` (a float dtype) element holds after being set to ``value`` (inf where it overflows)."""
    try:
        as_double = float(value)
    except OverflowError:  # an int past float64's range
        return math.inf if value > 0 else -math.inf
    return torch.tensor(as_double, dtype=torch.float64).to(dtype).item()


def _problem(value: bool | int | float, dtype: torch.dtype) -> str | None:
    """Why a ``dtype`` element cannot hold ``value`` exactly, or None."""
    if dtype == torch.bool:
        return None if value in (0, 1) else "is not True, False, 0 or 1, so a torch.bool element cannot hold it"
    if not dtype.is_floating_point:
        if isinstance(value, float) and not math.isfinite(value):
            return f"is not a finite number, so {dtype} cannot hold it"
        if isinstance(value, float) and not value.is_integer():
            return f"is not an integer, so {dtype} would truncate it (to {int(value)})"
        info = torch.iinfo(dtype)
        if not info.min <= value <= info.max:
            return f"is outside {dtype}'s range ({_range(dtype)}), so it would wrap"
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None  # nan and inf are float values like any other
    held = _held_as_float(value, dtype)
    if math.isinf(held):
        return f"overflows {dtype} (to {held}; its largest finite value is {torch.finfo(dtype).max:g})"
    if held == 0 and value != 0:
        info = torch.finfo(dtype)
        return f"underflows {dtype} (to 0; its smallest positive value is {info.smallest_normal * info.eps:g})"
    if not isinstance(value, float) and held != value:  # an integer (or bool) the dtype would round
        return f"is an integer {dtype} cannot hold exactly (it would become {held!r})"
    return None


def fill_scalar(call: str, name: str, value, dtype: torch.dtype) -> bool | int | float:
    """``value`` as a Python number if a ``dtype`` element holds it exactly (see the module docstring); otherwise a
    ValueError (TypeError: not a number) naming ``call``, ``name``, the value and the dtype."""
    scalar = _scalar(call, name, value, dtype)
    problem = _problem(scalar, dtype)
    if problem:
        raise ValueError(f"{call}: {name}={shown(value)} {problem}; {_expected(dtype)}")
    return scalar


def _integral(value: int | float) -> bool:
    return not isinstance(value, float) or value.is_integer()


_CHUNK = 1 << 20  # elements written and checked at a time: the reference never holds more than this


class Arange:
    """``arange``'s values, checked: :attr:`count` of them, from ``start`` by ``step`` up to (not including) ``end``;
    :meth:`fill` writes them into a tensor of that many elements.

    What the arguments alone decide is checked here, before anything is allocated: finite numbers, a nonzero step
    pointing from start to end, integers for an integer dtype and first and last values the dtype holds (for an
    integer dtype that covers every value). A float dtype's interior values (an integer it would round, a value
    that underflows to 0) are checked as :meth:`fill` writes them, each chunk against its exact values.
    """

    def __init__(self, start, end, step, dtype: torch.dtype) -> None:
        self.args = f"start={shown(start)}, end={shown(end)}, step={shown(step)}"
        if dtype == torch.bool:
            raise ValueError("arange: dtype=torch.bool; expected a number dtype (torch has no arange of bools)")
        named = {n: _scalar("arange", n, v, dtype) for n, v in (("start", start), ("end", end), ("step", step))}
        for name, v in named.items():
            if isinstance(v, bool):
                raise TypeError(f"arange: {name}={v!r} (bool); expected a number")
            if not math.isfinite(v):
                raise ValueError(f"arange: {self.args}: {name} is not a finite number; expected finite numbers")
        start, end, step = named["start"], named["end"], named["step"]
        if step == 0:
            raise ValueError(f"arange: {self.args}: step is 0; expected a nonzero step")
        if (end - start) * step < 0:
            raise ValueError(f"arange: {self.args}: step points away from end; expected a step of the sign of "
                             "end - start")
        self.dtype = dtype
        # Integer arguments are integer values: exact arithmetic, and a float dtype must hold each one exactly.
        self.integers = all(isinstance(v, int) for v in named.values()) or not dtype.is_floating_point
        if self.integers:
            bad = [n for n, v in named.items() if not _integral(v)]
            if bad:
                raise ValueError(f"arange: {self.args}: {bad[0]} is not an integer, so {dtype} would truncate the "
                                 f"values; {_expected(dtype)}")
            start, end, step = int(start), int(end), int(step)
            self.count = max(0, -(-(end - start) // step))
        else:
            self.count = max(0, math.ceil((end - start) / step))  # torch's count: in double
        self.start, self.step = start, step
        if self.count:
            for value in (start, start + (self.count - 1) * step):
                self._check(value)

    def _check(self, value: int | float) -> None:
        problem = _problem(value, self.dtype)
        if problem:
            raise ValueError(f"arange: {self.args}: the value {shown(value)} {problem}; {_expected(self.dtype)}")

    def _exact(self, first: int, stop: int) -> torch.Tensor:
        """The exact values ``first`` to ``stop`` (indices): int64 for integers within its range, float64 else."""
        last = self.start + (self.count - 1) * self.step
        if not self.dtype.is_floating_point and self.count <= 2:  # a step past int64 only comes with two values
            return torch.tensor([self.start, last][first:stop], dtype=self.dtype)
        # An integer dtype's values are in int64's range, so int64 arithmetic gives them exactly (even where an
        # intermediate product wraps); a float dtype's integers past 2**62 and its floats are compared in float64.
        wide = torch.int64 if self.integers and (not self.dtype.is_floating_point or
                                                 max(abs(self.start), abs(last)) < 2**62) else torch.float64
        return self.start + self.step * torch.arange(first, stop, dtype=wide)

    def fill(self, out: torch.Tensor) -> None:
        """Write the values into ``out`` (``count`` elements of ``dtype``), chunk by chunk; a ValueError naming the
        first value the dtype cannot hold (a float dtype: an integer it rounds, a value that underflows to 0)."""
        flat = out.view(-1)
        for first in range(0, self.count, _CHUNK):
            stop = min(first + _CHUNK, self.count)
            exact = self._exact(first, stop)
            part = flat[first:stop]
            part.copy_(exact)
            if not self.dtype.is_floating_point:
                continue  # the first and last values were in range, so every one is
            held = part.to(exact.dtype)
            wrong = (held != exact) if self.integers else ((held == 0) & (exact != 0))
            if bool(wrong.any()):
                self._check(exact[int(wrong.nonzero()[0])].item())
