"""Replayed params (``--params``) checked against the scenario before anything runs.

A replay's params must be what the scenario's strategy draws for that world size: the same keys, each value of
the type and nesting of a drawn one (per-rank lists with one entry per rank), the harness's own keys (``chunk``
from ``host_side.CHUNK_SIZES``) valid, and the scenario's model must accept them. The first problem is one line
naming the key, the value and what was expected.
"""

from __future__ import annotations

from hypothesis import Phase, find, settings

from conformance.harness.host_side import CHUNK_SIZES
from conformance.kit.scenario import Scenario

HARNESS_KEYS = {"chunk": CHUNK_SIZES}  # drawn by the harness for every example, not by the scenario


class ParamsError(ValueError):
    """Replayed params a scenario cannot run; the message names the key, the value and what was expected."""


def reference(scenario: Scenario, world_size: int) -> dict:
    """The simplest params the scenario's strategy draws for ``world_size`` ranks (the first it generates)."""
    first = settings(database=None, max_examples=1, phases=(Phase.generate,))
    return find(scenario.params(world_size), lambda p: True, settings=first)


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


def check(scenario: Scenario, world_size: int, params: dict) -> None:
    """Raise :class:`ParamsError` if ``params`` are not params ``scenario`` draws on ``world_size`` ranks."""
    want = reference(scenario, world_size)
    where = f"--params for {scenario.name} on {world_size} rank(s)"
    missing = [k for k in want if k not in params]
    if missing:
        raise ParamsError(f"{where}: missing key {missing[0]!r}; expected the keys {', '.join(want)}")
    unknown = [k for k in params if k not in want and k not in HARNESS_KEYS]
    if unknown:
        raise ParamsError(f"{where}: unknown key {unknown[0]!r}={params[unknown[0]]!r}; expected the keys "
                          f"{', '.join(want)} (and {', '.join(HARNESS_KEYS)})")
    for key, allowed in HARNESS_KEYS.items():
        if key in params and params[key] not in allowed:
            raise ParamsError(f"{where}: {key}={params[key]!r}; expected one of {list(allowed)}")
    for key, value in want.items():
        per_rank = isinstance(value, list) and len(value) == world_size and bool(value) and isinstance(value[0], list)
        problem = _same_shape(key, params[key], value, world_size, per_rank)
        if problem:
            raise ParamsError(f"{where}: {problem}")
    try:
        scenario.model({"chunk": CHUNK_SIZES[0], **params}, world_size)
    except Exception as e:
        raise ParamsError(f"{where}: the model rejects them ({type(e).__name__}: {e}); draw params from the "
                          "scenario's strategy, or take them from a replay line") from None
