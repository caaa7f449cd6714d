"""Choosing and running a selection of cases: the loop shared by ``run`` and ``gate``.

``plan`` turns the command line's scenarios and world sizes into cases, refusing bad input up front with a
:class:`SelectionError` (one line: the value and the choices). ``run_cases`` runs them on one owner of rank
pools, or, under compute-sanitizer tools, the whole selection once per tool, each pass on pools of its own under
that tool; a scenario module that cannot be loaded fails its own cases, and the run goes on. A failing example is
replayed once with its own params, and the case says whether the failure reproduced: either way it failed. An
example that hung is replayed once too, within the budget it hung in (never longer): ``reproduced`` when it hangs
again. A hang costs its budget, then at most that budget once more, and the run goes on with the next case on a
rebuilt pool. Under a sanitizer tool the failing example also runs once on ranks under no tool (the control), and
the case says how that ended (``control_outcome``): a failure or hang that only the tool's run shows still fails the
case, and says so. A case that cannot run as a tool needs (kernels that wait for their peers' where the tool runs
the ranks' kernels in turn) is not run under it, and its record says why (``CaseResult.skipped``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from conformance.harness.case import run_case
from conformance.harness.compile_ahead import Compiler
from conformance.harness.preparing import Prepared, prepare
from conformance.harness.run_settings import RunSettings
from conformance.kit.patterns import PatternError, expand
from conformance.kit.scenario import (
    Scenario,
    ScenarioError,
    canonical,
    default_world_sizes,
    is_scenario,
    known_scenarios,
    load,
    names,
)
from conformance.results import CaseResult, ExampleResult
from iris.ranks import Pools
from iris.ranks.sanitizer import TOOLS

PROGRESS = {"pass": "ok", "FAIL": "FAIL", "error": "FAIL", "hang": "HANG"}  # a case's status on its progress line


class SelectionError(ValueError):
    """Bad input on the command line (unknown scenario, malformed params, refused world size, ...): one line."""


@dataclass
class Planned:
    """One case to run: the scenario (or why its module cannot be loaded) on ``world_size`` ranks."""

    name: str
    world_size: int
    scenario: Scenario | None
    load_error: str = ""


def parse_params(text: str | None) -> dict | None:
    """The ``--params`` JSON object, or None; SelectionError for anything but a JSON object. A pattern's spec in
    it (``{"pattern": ...}``, how a replay line writes a long list drawn at the GPU scale) becomes its list
    (``conformance.kit.patterns.expand``); SelectionError naming what is wrong with a spec that makes none."""
    if text is None:
        return None
    said = text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"
    try:
        value = json.loads(text, object_pairs_hook=_one_value_per_key)
    except json.JSONDecodeError as e:
        raise SelectionError(f"--params {said!r} is not valid JSON ({e.msg} at character {e.pos}); expected an "
                             "object such as '{\"n\":15,\"BLOCK\":32}'") from None
    except _RepeatedKey as e:
        raise SelectionError(f"--params {said!r} gives key {e} twice; expected each key once") from None
    except (ValueError, RecursionError) as e:  # an integer of thousands of digits; lists nested thousands deep
        raise SelectionError(f"--params {said!r} cannot be read ({_reason(e)}); expected an object of parameter "
                             "names to values such as '{\"n\":15,\"BLOCK\":32}'") from None
    if not isinstance(value, dict):
        raise SelectionError(f"--params {said!r} is a JSON {type(value).__name__}; expected an object of "
                             "parameter names to values such as '{\"n\":15,\"BLOCK\":32}'")
    if _depth(value) > MAX_PARAMS_DEPTH:
        raise SelectionError(f"--params {said!r} nests lists or objects more than {MAX_PARAMS_DEPTH} deep; "
                             "expected the params of an example, as a replay line writes them")
    try:
        return expand(value)
    except PatternError as e:
        raise SelectionError(f"--params: {e}") from None


MAX_PARAMS_DEPTH = 8  # an example's params nest lists in lists (a mask per rank) and pattern specs: 4 deep at most


class _RepeatedKey(Exception):
    """A JSON object naming one key twice (``json.loads`` would keep the last value silently)."""


def _one_value_per_key(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    repeated = next((k for k in keys if keys.count(k) > 1), None)
    if repeated is not None:
        raise _RepeatedKey(repr(repeated))
    return dict(pairs)


def _reason(error: Exception) -> str:
    """``error`` for a refusal: an integer too long, or nesting too deep, in a few words."""
    if isinstance(error, RecursionError):
        return "lists or objects nested too deep"
    return str(error).split(":")[0]


def _depth(value) -> int:
    """How deep ``value`` (parsed JSON) nests lists and objects (0 for a number or a string), without recursion."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth + 1)
            todo += [(v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)]
    return deepest


def refuse_unknown(scenarios: list[str]) -> None:
    """SelectionError naming the scenarios of ``scenarios`` that are none (``kit.scenario.is_scenario``: nothing
    else is imported), and the known ones; or naming a package of ``IRIS_SCENARIO_PACKAGES`` that is none."""
    try:
        unknown = [n for n in scenarios if not is_scenario(n)]
        if unknown:
            raise SelectionError(f"unknown scenario {', '.join(map(repr, unknown))}; {known_scenarios()}")
    except ScenarioError as e:
        raise SelectionError(str(e)) from None


def _load(name: str) -> tuple[Scenario | None, str]:
    try:
        return load(name), ""
    except ScenarioError as e:
        return None, f"ScenarioError: {e}"


def plan(scenarios: list[str] | None, ranks: tuple[int, ...] | None) -> tuple[list[Planned], list[str]]:
    """The cases of ``scenarios`` (default: all) x ``ranks`` (default: each scenario's), and notes of skipped ones.

    A world size that a scenario named explicitly refuses is a SelectionError; with every scenario selected, such
    a case is skipped with a note. A scenario whose module is broken gets cases that fail with its error.
    """
    explicit = bool(scenarios)
    chosen = list(dict.fromkeys(scenarios or names()))
    refuse_unknown(chosen)
    chosen = list(dict.fromkeys(map(canonical, chosen)))  # one scenario named two ways is one scenario
    cases, notes = [], []
    for name in chosen:
        scenario, error = _load(name)
        if scenario is None:
            cases += [Planned(name, ws, None, error) for ws in (ranks or default_world_sizes())]
            continue
        for ws in ranks or scenario.world_sizes:
            refusal = scenario.refusal(ws)
            if refusal and explicit:
                accepted = [r for r in (*default_world_sizes(), *(ranks or ())) if scenario.refusal(r) is None]
                raise SelectionError(f"--ranks {ws}: {refusal}; it accepts e.g. "
                                     f"{', '.join(map(str, sorted(set(accepted)))) or 'none of those tried'}")
            if refusal:
                notes.append(f"skipped: {refusal}")
            else:
                cases.append(Planned(name, ws, scenario))
    return cases, notes


def run_cases(cases: list[Planned], run: RunSettings,
              echo: Callable[[str], None] = print) -> list[tuple[CaseResult, ExampleResult | None]]:
    """Run every case in order on one owner of pools, with the run's settings (``RunSettings``); replay each
    failing example once (unless ``run.params``), with its own params and settings; one that hung, within the budget
    it hung in; under a tool, once more on pools under none (the control; those pools start at its first job).

    ``run.sanitizers``: compute-sanitizer tools (``iris.ranks.sanitizer.TOOLS``); each runs every case, in a pass of
    its own on pools whose ranks run under it (one tool per process), and each case's record names its tool. Empty:
    one pass, no tool. ``run.max_runs``: the most examples a case runs, shrinking a failure included
    (``case.run_case``); the replay is one more.

    On a GPU, each case's kernel variants are compiled ahead on a pool of processes (``compile_ahead``): every
    case of a pass is drawn and submitted at its start (``_prepare_all``), so later cases compile while earlier ones
    run; later passes load what the first compiled from Triton's cache. Returns ``(case, last)`` per case and
    pass: its result and its last example (for a trace; None when none ran)."""
    done: list[tuple[CaseResult, ExampleResult | None]] = []
    passes = run.sanitizers or ("",)
    total = len(cases) * len(passes)
    backend = run.backend
    with Compiler(None if backend == "gpu" else 0) as compiler, Pools() as plain:  # plain: the controls' (lazy)
        compiler.start()
        for sanitizer in passes:
            with Pools(sanitizer=sanitizer) as pools:
                _start_pools(pools, cases, backend)
                skipped = {i: why for i, planned in enumerate(cases) if (why := _not_under(sanitizer, planned))}
                runs = [planned if i not in skipped else None for i, planned in enumerate(cases)]
                prepared = (_prepare_all(runs, compiler, run, echo)
                            if backend == "gpu" and run.params is None else {})
                for i, planned in enumerate(cases):
                    under = f" under {sanitizer}" if sanitizer else ""
                    echo(f"[{len(done) + 1}/{total}] {planned.name} on {planned.world_size} rank(s){under} ...")
                    if i in skipped:
                        c = CaseResult(planned.scenario.ref or planned.name, planned.world_size, backend,
                                       sanitizer=sanitizer, skipped=skipped[i])
                        done.append((c, None))
                        _said(c, echo)
                        continue
                    c, last = _run_one(pools, planned, run, prepared.get(i) or compiler)
                    if not c.ok and c.failing_params is not None and run.params is None:
                        cap = run.timeout if c.hang is None else min(run.timeout, c.hang.timeout)
                        again = _again(pools, planned, c, run, cap)
                        reproduced = again.hang is not None if c.hang is not None else not again.ok
                        c.replay_outcome = "reproduced" if reproduced else "not reproduced"
                        if sanitizer:  # the control: on ranks under no tool
                            c.control_outcome = _again(plain, planned, c, run, cap).status
                    if sanitizer and planned.scenario is not None:
                        c.not_ours = pools.get(planned.world_size, backend).take_not_ours()
                    done.append((c, last))
                    _said(c, echo)
    return done


def _again(pools: Pools, planned: Planned, c: CaseResult, run: RunSettings, cap: float) -> CaseResult:
    """Case ``c``'s failing example once more, with its own settings, on ``pools``' ranks, within ``cap`` seconds."""
    again = run.replaying(c.failing_params, c.failing_settings.chunk, c.failing_settings.num_warps, cap)
    return run_case(pools, planned.scenario, planned.world_size, again)[0]


def _not_under(sanitizer: str, planned: Planned) -> str:
    """Why case ``planned`` is not run under ``sanitizer`` ("" when it is): its kernels wait for their peers', and
    the tool runs a world's ranks' kernels in turn (``iris.ranks.sanitizer.Tool.ranks_in_turn``)."""
    in_turn = TOOLS[sanitizer].ranks_in_turn if sanitizer else ""
    if not in_turn or planned.scenario is None or not planned.scenario.waits_on_peers or planned.world_size < 2:
        return ""
    return (f"its kernels wait for their peers' kernels, so its ranks must run at once, and {sanitizer} runs them in "
            f"turn: {in_turn}")


def _prepare_all(cases: list[Planned | None], compiler: Compiler, run: RunSettings,
                 echo: Callable[[str], None]) -> dict[int, Prepared]:
    """Each case's examples drawn and their variants submitted to ``compiler`` (``preparing.prepare``), by the
    case's index; a case whose drawing raises is left out (``run_case`` draws it again and reports the error), as
    is one that is None (not run)."""
    if not compiler.workers:
        return {}
    echo(f"drawing the examples of {sum(c is not None for c in cases)} case(s) to compile their kernels ahead ...")
    prepared: dict[int, Prepared] = {}
    for i, planned in enumerate(cases):
        if planned is None or planned.scenario is None:
            continue
        try:
            prepared[i] = prepare(planned.scenario, planned.world_size, run, compiler)
        except Exception:  # the case draws again when its turn comes, and reports the error
            continue
    return prepared


def _said(c: CaseResult, echo: Callable[[str], None]) -> None:
    """A case's outcome for the progress output: ok, FAIL or HANG (``PROGRESS``) with its numbers, then why, then
    what is not ours; or why it was skipped."""
    if c.skipped:
        echo(f"    skipped under {c.sanitizer}: {c.skipped}")
        return
    replayed = f", replayed: {c.replayed}" if c.replay_outcome else ""
    echo(f"    {PROGRESS[c.status]} ({c.examples} examples, {c.seconds:.1f} s{_ahead(c)}{replayed})")
    if not c.ok:
        echo("    " + (c.problem if c.hang is not None else c.failure or c.problem).replace("\n", "\n    "))
    for entry in c.not_ours:
        echo(f"    not ours, {entry['count']} x ({entry['why']}):\n      " + entry["report"].replace("\n", "\n      "))


def _start_pools(pools: Pools, cases: list[Planned], backend: str) -> None:
    """Spawn the rank processes of every world size the cases use, all at once: while they import and join their
    groups, the first case runs, and each later case waits only for what is left of its own pool's start-up.
    Not under a sanitizer: there each pool starts at its first job. Ranks spawned ahead under compute-sanitizer
    hung in their first CUDA call (``torch.cuda.is_available()``), in every tool and with one tool at a time; the
    same example on a pool started at its job passed."""
    if pools.sanitizer:
        return
    for world_size in sorted({c.world_size for c in cases if c.scenario is not None}):
        pools.get(world_size, backend).spawn_now()


def _ahead(c: CaseResult) -> str:
    """What compiling the case ahead did, for its progress line ("" when nothing was compiled ahead)."""
    said = (f", {c.ahead_compiled} of {c.ahead_variants} variants compiled ahead in {c.ahead_seconds:.1f} s"
            if c.ahead_variants else "")
    return said + (f" (compiling ahead failed: {c.ahead_error})" if c.ahead_error else "")


def _run_one(pools: Pools, planned: Planned, run: RunSettings,
             ahead: Compiler | Prepared) -> tuple[CaseResult, ExampleResult | None]:
    if planned.scenario is None:
        case = CaseResult(planned.name, planned.world_size, run.backend, sanitizer=pools.sanitizer)
        case.error = planned.load_error
        return case, None
    try:
        case, last = run_case(pools, planned.scenario, planned.world_size, run, ahead)
    except Exception as e:  # a scenario module that breaks in a way run_case does not expect: its case fails
        case = CaseResult(planned.scenario.ref or planned.name, planned.world_size, run.backend,
                          sanitizer=pools.sanitizer)
        last = None
        case.error = f"{type(e).__name__}: {e}"
    return case, last
