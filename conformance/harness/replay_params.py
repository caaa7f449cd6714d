"""Replayed params (``--params``) checked against the scenario before anything runs.

A replay's params must be what the scenario's strategy draws for that world size: the same keys, each value of
the type and nesting of a drawn one (per-rank lists with one entry per rank), each value in the strategy's own
domain, and the scenario's model must accept them (with the trace chunk the replay runs with) and expect something
to check. The harness's settings are not params: a ``chunk``, ``num_warps`` or ``scale`` key is refused, naming
its flag (``--chunk``, ``--num-warps``, ``--scale``). The params are checked at the scale the replay runs at
(``conformance.kit.scale``: ``--scale gpu`` accepts what the GPU scale draws, and without it they must be what
``SMALL`` draws). The first problem is one line naming the key, the value and what was expected.

The domain is read from the strategy itself, so a scenario declares nothing: the scenario's ``@st.composite``
params function runs again with every labelled draw whose label is a key answered by the replayed value, after
checking that value against the strategy drawn there (:func:`domain_problem`: integer bounds, ``sampled_from``
sets such as ``BLOCK_SIZES`` and the dtypes, lists, per-rank tuples, ``one_of``). Bounds that depend on earlier
draws (``n <= programs * BLOCK``) are so checked with the replayed values. A draw whose label names no key is
answered by its strategy's simplest value; a draw after it is checked only where the strategy drawn there is the
same when that draw takes another value (its domain does not depend on what the replay does not give). Not
checked: a key the params function changes after drawing it (replaying the strategy's own simplest params returns
another value for it), and a strategy whose values cannot be read off it (mapped, filtered, floats, ...).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample, Unsatisfiable
from hypothesis.strategies._internal.collections import FixedDictStrategy, ListStrategy, TupleStrategy
from hypothesis.strategies._internal.core import CompositeStrategy
from hypothesis.strategies._internal.lazy import LazyStrategy
from hypothesis.strategies._internal.misc import BooleansStrategy, JustStrategy
from hypothesis.strategies._internal.numbers import IntegersStrategy
from hypothesis.strategies._internal.strategies import MappedStrategy, OneOfStrategy, SampledFromStrategy

from conformance.check.model import Model
from conformance.kit.scale import SMALL, Scale, drawing_at
from conformance.kit.scenario import Scenario

# Harness settings (``ExampleSettings``) a user sets with a flag of ``run``, never inside the params.
SETTING_FLAGS = {"chunk": "--chunk N", "num_warps": "--num-warps N", "scale": "--scale NAME"}


class ParamsError(ValueError):
    """Replayed params a scenario cannot run; the message names the key, the value and what was expected."""


_FIRST = settings(database=None, max_examples=1, phases=(Phase.generate,))
_SEARCH = settings(database=None, max_examples=20, phases=(Phase.generate,))


def reference(scenario: Scenario, world_size: int) -> dict:
    """The simplest params the scenario's strategy draws for ``world_size`` ranks (the first it generates)."""
    return find(scenario.params(world_size), lambda p: True, settings=_FIRST)


def _kind(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _same_shape(key: str, got, want, world_size: int, per_rank: bool) -> str | None:
    """Why ``got`` is not shaped like ``want`` (a value of key ``key`` the strategy drew), or None."""
    if _kind(got) != _kind(want) and not (_kind(got) == "int" and _kind(want) == "float"):
        kind = _kind(want)
        return f"{key}={got!r}: expected {'an' if kind[0] in 'aeiou' else 'a'} {kind} like {want!r}"
    if isinstance(want, list):
        if per_rank and len(got) != world_size:
            return f"{key}: {len(got)} entries, expected one per rank ({world_size})"
        if want:
            for item in got:
                problem = _same_shape(key, item, want[0], world_size, False)
                if problem:
                    return problem
    return None


def check(scenario: Scenario, world_size: int, params: dict, chunk: int | None = None, scale: Scale = SMALL,
          num_warps: int | None = None) -> None:
    """Raise :class:`ParamsError` if ``params`` are not params ``scenario`` draws on ``world_size`` ranks at
    ``scale``, or give the harness nothing to check when run with trace chunk ``chunk`` (None: the replay's
    default) and ``num_warps``."""
    with drawing_at(scale):
        _check(scenario, world_size, params, chunk, scale, num_warps)


def _check(scenario: Scenario, world_size: int, params: dict, chunk: int | None, scale: Scale,
           num_warps: int | None) -> None:
    want = reference(scenario, world_size)
    where = f"--params for {scenario.name} on {world_size} rank(s)" + (f" at scale {scale.name}"
                                                                        if scale is not SMALL else "")
    missing = [k for k in want if k not in params]
    if missing:
        raise ParamsError(f"{where}: missing key {missing[0]!r}; expected the keys {', '.join(want)}")
    unknown = [k for k in params if k not in want]
    if unknown:
        key = unknown[0]
        flag = f" ({key} is a harness setting, not a param: {SETTING_FLAGS[key]})" if key in SETTING_FLAGS else ""
        raise ParamsError(f"{where}: unknown key {key!r}={params[key]!r}; expected the keys {', '.join(want)}{flag}")
    for key, value in want.items():
        per_rank = isinstance(value, list) and len(value) == world_size and bool(value) and isinstance(value[0], list)
        problem = _same_shape(key, params[key], value, world_size, per_rank)
        if problem:
            raise ParamsError(f"{where}: {problem}")
    problem = replay_problem(scenario.params(world_size), params, want)
    if problem:
        raise ParamsError(f"{where}: {problem}")
    try:
        model = scenario.expected(params, world_size, scenario.settings(params, chunk, num_warps=num_warps,
                                                                        scale=scale.name))
    except Exception as e:
        raise ParamsError(f"{where}: the model rejects them ({type(e).__name__}: {e}); draw params from the "
                          "scenario's strategy, or take them from a replay line") from None
    if not checkable(model):
        raise ParamsError(f"{where}: they launch nothing to check (the model expects no event, no memory and no "
                          "claimed slot on any rank); expected params that launch work, as the strategy draws")


def checkable(model: Model) -> bool:
    """Whether a model expects anything at all: an event, an element of memory, or a claimed trace slot."""
    events = any(model.events.values())
    memory = any(len(values) for buffers in model.memory.values() for values in buffers.values())
    claimed = bool(model.claimed) and any(model.claimed.values())
    return events or memory or claimed


# --------------------------------------------------------------------------------------- the strategy's domain


def _unwrap(strategy):
    while isinstance(strategy, LazyStrategy):
        strategy = strategy.wrapped_strategy
    return strategy


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _same(value, element) -> bool:
    """``value == element`` for a replayed value, type included (1 is not True, nor 1.0)."""
    if _is_int(value) and _is_int(element):
        return value == element
    if isinstance(value, list) and isinstance(element, (list, tuple)):
        return len(value) == len(element) and all(_same(v, e) for v, e in zip(value, element, strict=True))
    return type(value) is type(element) and value == element


def _int_range(start: int | None, end: int | None) -> str:
    if start is not None and end is not None:
        return f"an int in {start}..{end}"
    if start is not None:
        return f"an int >= {start}"
    return f"an int <= {end}" if end is not None else "an int"


def _choices(elements: Sequence) -> str:
    """What a ``sampled_from`` accepts, in words: a contiguous run of ints as a range, else the values."""
    if len(elements) > 3 and all(_is_int(e) for e in elements):
        low, high = min(elements), max(elements)
        if sorted(elements) == list(range(low, high + 1)):
            return _int_range(low, high)
    if len(elements) == 1:
        return repr(elements[0])
    shown = [repr(e) for e in elements] if len(elements) <= 12 else [*map(repr, elements[:10]), "...",
                                                                      repr(elements[-1])]
    return f"one of [{', '.join(shown)}]"


def domain_problem(strategy: st.SearchStrategy, value, name: str) -> str | None:
    """Why ``value`` (of key ``name``) is not a value ``strategy`` draws: one phrase naming the key, the value and
    what it accepts. None when it is, or when the strategy's domain cannot be read off it."""
    s = _unwrap(strategy)
    if isinstance(s, IntegersStrategy):
        inside = _is_int(value) and (s.start is None or value >= s.start) and (s.end is None or value <= s.end)
        return None if inside else f"{name}={value!r}; expected {_int_range(s.start, s.end)}"
    if isinstance(s, BooleansStrategy):
        return None if isinstance(value, bool) else f"{name}={value!r}; expected true or false"
    if isinstance(s, SampledFromStrategy):
        if getattr(s, "_transformations", ()):
            return None  # mapped or filtered values: not read off the strategy
        if any(_same(value, e) for e in s.elements):
            return None
        return f"{name}={value!r}; expected {_choices(s.elements)}"
    if isinstance(s, OneOfStrategy):
        branches = list(s.original_strategies)
        problems = [domain_problem(b, value, name) for b in branches]
        if None in problems:
            return None
        # a branch that is not one fixed value says what is wrong inside the value (an entry, a size)
        return next((p for b, p in zip(branches, problems, strict=True) if not isinstance(_unwrap(b), JustStrategy)),
                    problems[0])
    if isinstance(s, ListStrategy):
        if not isinstance(value, list):
            return f"{name}={value!r}; expected a list"
        if not s.min_size <= len(value) <= s.max_size:
            size = str(s.min_size) if s.min_size == s.max_size else f"{s.min_size}..{s.max_size}"
            return f"{name}: {len(value)} entries; expected {size}"
        return next((p for i, v in enumerate(value) if (p := domain_problem(s.element_strategy, v, f"{name}[{i}]"))),
                    None)
    if isinstance(s, TupleStrategy):
        parts = s.element_strategies
        if not isinstance(value, list):
            return f"{name}={value!r}; expected a list"
        if len(value) != len(parts):
            return f"{name}: {len(value)} entries; expected {len(parts)}"
        return next((p for i, (part, v) in enumerate(zip(parts, value, strict=True))
                     if (p := domain_problem(part, v, f"{name}[{i}]"))), None)
    if isinstance(s, MappedStrategy) and s.pack in (list, tuple):  # per_rank: a tuple of draws as a list
        return domain_problem(s.mapped_strategy, value, name)
    if isinstance(s, FixedDictStrategy) and isinstance(value, dict):
        return next((p for key, part in s.mapping.items() if key in value
                     and (p := domain_problem(part, value[key], key))), None)
    return None


@dataclass(frozen=True)
class _Draw:
    """One labelled draw of a replayed params function, answered by the replayed value of its label."""

    label: str
    strategy: str  # the strategy drawn, as Hypothesis shows it (its bounds and sets)
    problem: str | None  # why the replayed value is outside it
    first: bool  # no draw before it was left unanswered


def _simplest(strategy: st.SearchStrategy):
    return find(strategy, lambda _: True, settings=_FIRST)


def _another(strategy: st.SearchStrategy):
    """A value of ``strategy`` other than its simplest, where it has one."""
    simplest = _simplest(strategy)
    try:
        return find(strategy, lambda x: x != simplest, settings=_SEARCH)
    except (NoSuchExample, Unsatisfiable):
        return simplest


def _replay(composite: CompositeStrategy, params: dict, answer) -> tuple[list[_Draw], object]:
    """Run ``composite``'s function with each draw labelled by a key of ``params`` answered by its value (after
    checking it against the strategy drawn), any other draw by ``answer(strategy)``; its draws and its result."""
    draws: list[_Draw] = []
    answered_all = True

    def draw(part: st.SearchStrategy, label=None):
        nonlocal answered_all
        if isinstance(label, str) and label in params:
            try:
                problem = domain_problem(part, params[label], label)
            except Exception:  # a strategy made of an earlier out-of-domain value: that value's problem says why
                problem = None
            draws.append(_Draw(label, repr(part), problem, answered_all))
            return copy.deepcopy(params[label])
        answered_all = False
        return answer(part)

    try:
        drawn = composite.definition(draw, *composite.args, **composite.kwargs)
    except Exception:  # e.g. a strategy built from an out-of-domain value: the first problem found says why
        drawn = None
    return draws, drawn


def _occurrences(draws: list[_Draw]) -> dict[tuple[str, int], _Draw]:
    seen: dict[str, int] = {}
    keyed = {}
    for d in draws:
        seen[d.label] = seen.get(d.label, -1) + 1
        keyed[(d.label, seen[d.label])] = d
    return keyed


def replay_problem(strategy: st.SearchStrategy, params: dict, reference: dict) -> str | None:
    """Why ``params`` are not what ``strategy`` (a scenario's params strategy) draws, or None; ``reference``: params
    the strategy drew.

    A draw after one that no key answers is checked only where the strategy drawn there is the same whichever
    value that draw takes (the simplest, or another): its domain does not depend on a value the replay does not
    give. A key the params function changes after drawing it (replaying ``reference`` returns another value for
    it) is not checked.
    """
    s = _unwrap(strategy)
    if isinstance(s, JustStrategy) and len(s.elements) == 1 and isinstance(s.elements[0], dict):
        fixed = s.elements[0]
        return next((f"{k}={params[k]!r}; expected {fixed[k]!r}" for k in fixed
                     if k in params and not _same(params[k], fixed[k])), None)
    if not isinstance(s, CompositeStrategy):
        return domain_problem(s, params, "params") if isinstance(s, FixedDictStrategy) else None
    _, again = _replay(s, reference, _simplest)
    kept = {k for k in reference if isinstance(again, dict) and _same(again.get(k), reference[k])}
    draws = _occurrences(_replay(s, params, _simplest)[0])
    if all(d.first for d in draws.values()):
        steady = set()
    else:
        other = _occurrences(_replay(s, params, _another)[0])
        steady = {at for at, d in draws.items() if at in other and other[at].strategy == d.strategy}
    return next((d.problem for at, d in draws.items() if d.problem and d.label in kept and (d.first or at in steady)),
                None)
