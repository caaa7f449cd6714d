"""Long lists drawn as patterns: a lane mask or a list of values made from a few drawn numbers.

Hypothesis draws a list element by element, and one example holds a few thousand choices: a mask of tens of
thousands of lanes cannot be drawn that way. At a scale with ``patterns`` (``conformance.kit.scale``) the
strategies draw a pattern instead (``masks``, ``values``). A :class:`Pattern` is the list itself (a scenario
indexes it as any list) and keeps its ``spec``, the few numbers it was made from: a replay line carries the spec
(``compact``) and ``--params`` makes the list again (``expand``), so the line stays short whatever the length.

Specs, each with ``"pattern"`` (the kind) and ``"length"``:

- masks (0/1): ``on``; ``off``; ``periodic`` (lane j on iff (j + phase) % period < duty); ``runs`` (alternating
  runs of 1 .. longest lanes from a seed); ``random`` (each lane on with probability density / 256, from a seed);
- values in low .. high: ``constant`` (value); ``ramp`` (start, then step per element, wrapped into the range);
  ``uniform`` (from a seed);
- ``differ``: the ``values`` spec's list with the lowest bit flipped wherever it equals the ``reference`` spec's.

The lists are made with ``random.Random(seed)``, the same on every platform and Python version.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from hypothesis import strategies as st

KEY = "pattern"  # names the kind in a spec; a dict of params with this key is a spec
MAX_LENGTH = 1 << 24
MAX_PERIOD = 64
MAX_RUN = 1024
MAX_SEED = 2**32 - 1
MAX_STEP = 1 << 16


class Pattern(list):
    """A list made from ``spec`` (a dict); equal to, and used as, the plain list of its values."""

    def __init__(self, values: Iterable = (), spec: dict | None = None) -> None:
        super().__init__(values)
        self.spec = spec

    def __repr__(self) -> str:
        return f"Pattern({self.spec!r})" if self.spec is not None else super().__repr__()


class PatternError(ValueError):
    """A spec that makes no list: the message names the kind, the key, the value and what was expected."""


def _int(spec: dict, key: str, low: int, high: int) -> int:
    value = spec.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise PatternError(f"pattern {spec.get(KEY)!r}: {key}={value!r}; expected an int in {low}..{high}")
    return value


def _range(spec: dict) -> tuple[int, int]:
    low = _int(spec, "low", -(2**63), 2**63 - 1)
    return low, _int(spec, "high", low, 2**63 - 1)


def _mask(kind: str, spec: dict, length: int) -> list[int]:
    if kind in ("on", "off"):
        return [int(kind == "on")] * length
    if kind == "periodic":
        period = _int(spec, "period", 1, MAX_PERIOD)
        phase, duty = _int(spec, "phase", 0, period - 1), _int(spec, "duty", 0, period)
        return [int((j + phase) % period < duty) for j in range(length)]
    rng = random.Random(_int(spec, "seed", 0, MAX_SEED))
    if kind == "runs":
        longest = _int(spec, "longest", 1, MAX_RUN)
        bits, bit = [], rng.getrandbits(1)
        while len(bits) < length:
            bits += [bit] * rng.randrange(1, longest + 1)
            bit ^= 1
        return bits[:length]
    density = _int(spec, "density", 0, 256)
    return [int(rng.getrandbits(8) < density) for _ in range(length)]


def _values(kind: str, spec: dict, length: int) -> list[int]:
    low, high = _range(spec)
    span = high - low + 1
    if kind == "constant":
        return [_int(spec, "value", low, high)] * length
    if kind == "ramp":
        start, step = _int(spec, "start", low, high), _int(spec, "step", -MAX_STEP, MAX_STEP)
        return [low + (start - low + j * step) % span for j in range(length)]
    rng, bits = random.Random(_int(spec, "seed", 0, MAX_SEED)), span.bit_length()
    return [low + rng.getrandbits(bits) % span for _ in range(length)]


# the keys of each kind's spec, in the order a spec is written
FIELDS = {
    "on": ("length",), "off": ("length",), "periodic": ("length", "period", "phase", "duty"),
    "runs": ("length", "seed", "longest"), "random": ("length", "seed", "density"),
    "constant": ("length", "low", "high", "value"), "ramp": ("length", "low", "high", "start", "step"),
    "uniform": ("length", "low", "high", "seed"), "differ": ("values", "reference"),
}  # fmt: skip
MASKS = ("on", "off", "periodic", "runs", "random")


def make(spec: dict) -> Pattern:
    """The list ``spec`` describes (see the module docstring), which keeps the spec with its keys in ``FIELDS``
    order; PatternError naming what is wrong otherwise."""
    if not isinstance(spec, dict):
        raise PatternError(f"pattern spec {spec!r}; expected an object such as {{\"pattern\": \"on\", \"length\": 8}}")
    kind = spec.get(KEY)
    if kind not in FIELDS:
        raise PatternError(f"pattern {kind!r}; expected one of {', '.join(FIELDS)}")
    keys = FIELDS[kind]
    if set(spec) != {KEY, *keys}:
        odd = sorted(set(spec) - {KEY, *keys}) or sorted({KEY, *keys} - set(spec))
        raise PatternError(f"pattern {kind!r}: {'unexpected' if set(spec) - {KEY, *keys} else 'missing'} key "
                           f"{odd[0]!r}; expected the keys {', '.join((KEY, *keys))}")
    spec = {KEY: kind, **{k: spec[k] for k in keys}}
    if kind == "differ":
        values, reference = make(spec["values"]), make(spec["reference"])
        if len(values) != len(reference):
            raise PatternError(f"pattern 'differ': values of length {len(values)}, reference of length "
                               f"{len(reference)}; expected equal lengths")
        spec = {KEY: kind, "values": values.spec, "reference": reference.spec}
        return Pattern([v ^ 1 if v == r else v for v, r in zip(values, reference, strict=True)], spec)
    length = _int(spec, "length", 0, MAX_LENGTH)
    made = _mask(kind, spec, length) if kind in MASKS else _values(kind, spec, length)
    return Pattern(made, spec)


def compact(value):
    """``value`` (params, or any part of them) with every Pattern replaced by its spec: what JSON carries."""
    if isinstance(value, Pattern) and value.spec is not None:
        return value.spec
    if isinstance(value, list):
        return [compact(v) for v in value]
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items()}
    return value


def expand(value):
    """``value`` read from JSON with every spec (a dict with a ``"pattern"`` key) made into its list (``make``)."""
    if isinstance(value, dict):
        return make(value) if KEY in value else {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    return value


def differing(values: list[int], reference: list[int]) -> list[int]:
    """``values`` with the lowest bit flipped wherever it equals ``reference`` (so each differs from it): a Pattern
    when both are (its spec says so), else a plain list."""
    spec = None
    if isinstance(values, Pattern) and isinstance(reference, Pattern) and values.spec and reference.spec:
        spec = {KEY: "differ", "values": values.spec, "reference": reference.spec}
    fixed = [v ^ 1 if v == r else v for v, r in zip(values, reference, strict=True)]
    return fixed if spec is None else Pattern(fixed, spec)


def _pattern(kind: str, length: int, **fields: st.SearchStrategy) -> st.SearchStrategy[Pattern]:
    return st.fixed_dictionaries({KEY: st.just(kind), "length": st.just(length), **fields}).map(make)


def masks(length: int) -> st.SearchStrategy[Pattern]:
    """A 0/1 mask of ``length`` lanes as a pattern: all on (the simplest), all off, periodic, runs, random."""
    seed = st.integers(0, MAX_SEED)

    @st.composite
    def periodic(draw):
        period = draw(st.integers(2, MAX_PERIOD))
        return make({KEY: "periodic", "length": length, "period": period, "phase": draw(st.integers(0, period - 1)),
                     "duty": draw(st.integers(1, period - 1))})

    return st.one_of(_pattern("on", length), _pattern("off", length), periodic(),
                     _pattern("runs", length, seed=seed, longest=st.integers(1, MAX_RUN)),
                     _pattern("random", length, seed=seed, density=st.integers(1, 255)))


def values(length: int, low: int, high: int, first: str = "constant") -> st.SearchStrategy[Pattern]:
    """``length`` integers in ``low .. high`` as a pattern: constant, ramp or uniform, ``first`` the simplest kind."""
    bounds = {"low": st.just(low), "high": st.just(high)}
    kinds = {
        "constant": _pattern("constant", length, **bounds, value=st.integers(low, high)),
        "ramp": _pattern("ramp", length, **bounds, start=st.integers(low, high),  # a step of 0 is a constant
                         step=st.one_of(st.integers(1, MAX_STEP), st.integers(-MAX_STEP, -1))),
        "uniform": _pattern("uniform", length, **bounds, seed=st.integers(0, MAX_SEED)),
    }
    if first not in kinds:
        raise ValueError(f"first={first!r}; expected one of {', '.join(kinds)}")
    return st.one_of(kinds[first], *(s for k, s in kinds.items() if k != first))
