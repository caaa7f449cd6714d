"""Known divergences: the checks of cases that are expected to fail, each with its reason and a link.

The file (``ci/known_divergences.toml``) is keyed by stable case id and check::

    ["gpu-message_passing-8r"."triton vs gluon"]
    reason = "what differs and why it is accepted for now"
    link = "https://github.com/<owner>/<repo>/issues/<n>"

Every entry must name a case that can exist (a known backend, scenario and check, a world size the scenario
accepts); anything else is a :class:`KnownDivergenceError`, so a typo never silently hides a failure.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from conformance.results import CHECKS, parse_case_id

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FIELDS = ("reason", "link")


class KnownDivergenceError(ValueError):
    """A known-divergences file that cannot be trusted: the message names the file, the entry and the problem."""


@dataclass(frozen=True)
class Known:
    """One expected failure: ``check`` of case ``case_id``, why, and where it is tracked."""

    case_id: str
    check: str
    reason: str
    link: str


def load_known(path: Path) -> dict[tuple[str, str], Known]:
    """The entries of ``path`` by ``(case id, check)``; KnownDivergenceError for any entry that names no case."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise KnownDivergenceError(f"{path}: no such file (the known divergences, see docs/ci.md)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise KnownDivergenceError(f"{path}: not valid TOML: {e}") from None
    except (ValueError, RecursionError) as e:  # an integer of thousands of digits, arrays nested thousands deep
        said = "arrays or tables nested too deep" if isinstance(e, RecursionError) else str(e).split(":")[0]
        raise KnownDivergenceError(f"{path}: cannot be read ({said}); expected the TOML file of known divergences "
                                   "(see README)") from None
    except OSError as e:
        raise KnownDivergenceError(f"{path}: cannot be read ({e.strerror}); expected the TOML file of known "
                                   "divergences (see docs/ci.md)") from None
    known = {}
    for cid, checks in data.items():
        problem = _case_problem(cid)
        if problem:
            raise KnownDivergenceError(f"{path}: [{cid!r}]: {problem}")
        if not isinstance(checks, dict) or not checks:
            raise KnownDivergenceError(f"{path}: [{cid!r}] must hold one table per check, e.g. "
                                       f"[{cid!r}.\"gluon vs model\"] with reason and link")
        for check, entry in checks.items():
            where = f"{path}: [{cid!r}.{check!r}]"
            if check not in CHECKS:
                raise KnownDivergenceError(f"{where}: unknown check {check!r}; checks: {', '.join(CHECKS)}")
            if not isinstance(entry, dict):
                raise KnownDivergenceError(f"{where}: expected a table with {' and '.join(FIELDS)}")
            extra = sorted(set(entry) - set(FIELDS))
            if extra:
                raise KnownDivergenceError(f"{where}: unknown field(s) {', '.join(extra)}; fields: {', '.join(FIELDS)}")
            for name in FIELDS:
                value = entry.get(name)
                if not isinstance(value, str) or not value.strip():
                    raise KnownDivergenceError(f"{where}: {name} must be a non-empty string, got {value!r}")
            known[(cid, check)] = Known(cid, check, entry["reason"].strip(), entry["link"].strip())
    return known


def _case_problem(cid: str) -> str:
    """Why ``cid`` names no case that can exist ('' when it can)."""
    from conformance.kit.scenario import ScenarioError, is_scenario, known_scenarios, load
    from iris.ranks import BACKENDS

    try:
        backend, scenario, world_size = parse_case_id(cid)
    except ValueError as e:
        return str(e)
    if backend not in BACKENDS:
        return f"unknown backend {backend!r}; backends: {', '.join(BACKENDS)}"
    try:
        if not is_scenario(scenario):
            return f"unknown scenario {scenario!r}; {known_scenarios()}"
    except ScenarioError as e:  # IRIS_SCENARIO_PACKAGES lists something that is no package
        return str(e)
    try:
        refusal = load(scenario).refusal(world_size)
    except ScenarioError:
        return ""  # a broken module is still a scenario: its cases exist, and fail with its error
    return refusal or ""
