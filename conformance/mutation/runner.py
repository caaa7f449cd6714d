"""``python -m conformance mutate``: the suite proves its power by killing every mutant of the catalogue
(``conformance.mutation.catalogue``).

For each mutant: copy ``iris/`` and ``conformance/`` into a temporary folder, apply the mutant there (never in the
working tree), and run conformance cases in a child process (``conformance.mutation.probe``) on the CPU
interpreter (``--backend gpu``: on the GPUs) with a fixed seed: the mutant's likely killers first, then every
other case, stopping at the first case that fails. The mutant is

    killed    a case failed: which scenario, world size and checks (triton vs model, gluon vs model,
              triton vs gluon; ``hang`` when the mutant hung a rank: it did not finish within the example's
              budget, capped by ``JOB_TIMEOUT_S``; ``error`` when it crashed one)
    survived  every case passed: a hole in the suite
    skipped   the backend cannot show the bug (``Mutant.backends``; the CPU interpreter runs programs one at a time,
              and a GPU takes one vendor's code path of ``iris/tracing/hw.py``)
    stale     its old text is not exactly once in its file (the catalogue needs updating)
    timeout   the per-mutant time limit ran out before any case failed
    error     the child itself failed, or the unmutated copy fails the killing case too

A baseline run of the unmutated copy comes first: a case that fails without any mutant is an error, never a kill.
A mutant with a ``scale`` runs its cases at that scale, and has a baseline at that scale.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from conformance.mutation.catalogue import CATALOGUE, Mutant
from conformance.mutation.probe_starter import ProbeStarter
from conformance.mutation.report import Outcome

SEED = 20_240_917  # the fixed Hypothesis seed of every mutation run
PACKAGES = ("iris", "conformance")
WORLD_ORDER = (2, 1, 4)  # 2 ranks first: they reach a peer, and cost less than 4
MUTANT_TIMEOUT_S = 1800.0
JOB_TIMEOUT_S = 120.0  # the cap of every example's budget (``conformance.harness.budget``): a hang costs the budget
ROOT = Path(__file__).resolve().parents[2]
PROBE = "conformance.mutation.probe"  # the module a probe runs

Case = tuple[str, int]


class MutationError(Exception):
    """A run that cannot start or cannot be trusted (unknown mutant, failing baseline); shown without a traceback."""


# ------------------------------------------------------------------------------------------- the catalogue


def select(only: Iterable[str] | None, catalogue: tuple[Mutant, ...] | None = None) -> list[Mutant]:
    """The mutants named in ``only`` (names or comma lists), in catalogue order; all when ``only`` is empty."""
    catalogue = CATALOGUE if catalogue is None else catalogue
    names = [n.strip() for item in (only or ()) for n in item.split(",") if n.strip()]
    if not names:
        return list(catalogue)
    known = {m.name for m in catalogue}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise MutationError(f"unknown mutant {', '.join(map(repr, unknown))}; see python -m conformance mutate --list")
    return [m for m in catalogue if m.name in names]


def stale_reason(mutant: Mutant, root: Path = ROOT) -> str | None:
    """Why ``mutant`` cannot be applied to the tree at ``root`` (None when its old text occurs exactly once)."""
    path = root / mutant.file
    if not path.is_file():
        return f"stale mutant {mutant.name}: {mutant.file} does not exist"
    count = path.read_text().count(mutant.old)
    if count != 1:
        found = "not found" if count == 0 else f"found {count} times"
        return f"stale mutant {mutant.name}: its old text {mutant.old!r} is {found} in {mutant.file} (expected once)"
    return None


def catalogue_problems(catalogue: tuple[Mutant, ...], scenarios: Iterable[str], root: Path = ROOT) -> list[str]:
    """Every defect of a catalogue: duplicate names, no-op changes, unknown killers, stale old texts."""
    known = set(scenarios)
    problems, seen = [], set()
    for m in catalogue:
        if m.name in seen:
            problems.append(f"mutant {m.name}: name used twice")
        seen.add(m.name)
        if m.old == m.new:
            problems.append(f"mutant {m.name}: new text equals old text")
        problems += [f"mutant {m.name}: killer {k!r} names no scenario" for k in m.killers
                     if k.split("@")[0] not in known]
        reason = stale_reason(m, root)
        if reason:
            problems.append(reason)
    return problems


# --------------------------------------------------------------------------------------------- the cases


def all_cases(scenarios: Iterable[str] | None = None, ranks: Iterable[int] | None = None) -> list[Case]:
    """Every (scenario, world size) case to consider: world sizes in ``WORLD_ORDER``, then by scenario name.

    Without ``ranks``: each scenario's default world sizes; with ``ranks``: those of them the scenario accepts
    (any R >= 1 unless it declares a constraint).
    """
    from conformance.kit.scenario import canonical, load, names

    chosen = sorted(set(map(canonical, scenarios))) if scenarios else names()
    loaded = {name: load(name) for name in chosen}
    if ranks is None:
        sizes = {name: set(s.world_sizes) for name, s in loaded.items()}
    else:
        sizes = {name: {ws for ws in ranks if s.refusal(ws) is None} for name, s in loaded.items()}
    order = list(WORLD_ORDER) + sorted({ws for s in sizes.values() for ws in s} - set(WORLD_ORDER))
    return [(name, ws) for ws in order for name in chosen if ws in sizes[name]]


def killer_cases(mutant: Mutant, cases: list[Case]) -> list[Case]:
    """The cases of ``mutant``'s killers (``name``: every world size in ``cases``; ``name@R``: R only), in order."""
    first: list[Case] = []
    for killer in mutant.killers:
        name, _, ws = killer.partition("@")
        first += [c for c in cases if c[0] == name and (not ws or c[1] == int(ws)) and c not in first]
    return first


def plan(mutant: Mutant, cases: list[Case]) -> list[Case]:
    """``cases`` reordered for ``mutant``: its killers' cases first, then the rest."""
    first = killer_cases(mutant, cases)
    return first + [c for c in cases if c not in first]


# ----------------------------------------------------------------------------------------------- the copies


def copy_tree(dest: Path, root: Path = ROOT) -> Path:
    """A copy of the packages under ``root`` at ``dest`` (sources only)."""
    for package in PACKAGES:
        shutil.copytree(root / package, dest / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def apply(mutant: Mutant, tree: Path) -> None:
    """Apply ``mutant`` to the copy at ``tree`` (raises MutationError if its old text is not there exactly once)."""
    reason = stale_reason(mutant, tree)
    if reason:
        raise MutationError(reason)
    path = tree / mutant.file
    path.write_text(path.read_text().replace(mutant.old, mutant.new, 1))


@dataclass
class ProbeRun:
    """Result of one child run: a record per finished case, and how the child ended."""

    records: list[dict]
    timed_out: bool
    returncode: int | None
    log_tail: str


def probe_env(tree: Path | None) -> dict[str, str]:
    """The environment of a probe on the copy at ``tree`` (None: of the process that forks them, no ``PYTHONPATH``)."""
    env = dict(os.environ, IRIS_HYPOTHESIS_DB="none")
    env.pop("TRITON_INTERPRET", None)  # the pool sets it for the rank processes
    env.pop("PYTHONPATH", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def run_probe(tree: Path, cases: list[Case], *, stop_at_first: bool, profile: str, timeout: float,
              job_timeout: float, echo: Callable[[str], None], backend: str = "cpu", scale: str = "small",
              starter: ProbeStarter) -> ProbeRun:
    """Run ``cases`` in a child process on the copy at ``tree`` forked by ``starter``, their examples drawn at
    ``scale`` (a name of ``conformance.kit.scale``: a mutant's own ``Mutant.scale``, else the run's); kills the
    child's session (it and its rank processes) on timeout."""
    spec = {"root": str(tree), "cases": cases, "stop_at_first": stop_at_first, "seed": SEED, "profile": profile,
            "job_timeout": job_timeout, "backend": backend, "scale": scale}
    spec_path, result_path, log_path = tree / "probe-spec.json", tree / "probe-result.json", tree / "probe.log"
    spec_path.write_text(json.dumps(spec))
    argv = [str(spec_path), str(result_path)]
    with open(log_path, "w") as log:
        read, write = os.pipe()
        try:
            pid = starter.start(PROBE, argv, str(tree), probe_env(tree), write, log.fileno())
        finally:
            os.close(write)
        out = os.fdopen(read, "rb")
        reader = threading.Thread(target=lambda: [echo(line.decode(errors="replace").rstrip()) for line in out],
                                  daemon=True)
        reader.start()
        code, timed_out = starter.finish(pid, timeout)  # past it, or interrupted: the child and its ranks ended
        reader.join(timeout=10)
        if not reader.is_alive():
            out.close()
    records = json.loads(result_path.read_text()) if result_path.exists() else []
    tail = "\n".join(log_path.read_text().splitlines()[-15:])
    return ProbeRun(records, timed_out, code, tail)


class Baseline:
    """The unmutated copy and the cases verified on it (a case that fails there is an error, never a kill)."""

    def __init__(self, tree: Path, run: Callable[..., ProbeRun], timeout: float = MUTANT_TIMEOUT_S) -> None:
        self.tree = tree
        self._run = run
        self.timeout = timeout  # what one run of the copy may take (``--timeout``), for a baseline that timed out
        self.records: dict[Case, dict] = {}

    def verify(self, cases: list[Case]) -> None:
        """Run the cases not verified yet; raise MutationError naming every case the unmutated copy fails, or, when
        it ran out of time, the case it was running and those it never reached."""
        todo = [c for c in cases if c not in self.records]
        if not todo:
            return
        result = self._run(self.tree, todo, stop_at_first=False)
        for r in result.records:
            self.records[(r["scenario"], r["world_size"])] = r
        missing = [c for c in todo if c not in self.records]
        failing = [r for c, r in self.records.items() if c in todo and not r["ok"]]
        if missing and result.timed_out and not failing:
            raise MutationError(self._timed_out(missing))
        if failing or missing:
            lines = [f"{r['scenario']}@{r['world_size']}: {r['detail']}" for r in failing]
            if missing and result.timed_out:
                lines.append(self._timed_out(missing))
            elif missing:
                lines.append(f"{len(missing)} case(s) never finished (the probe exited with {result.returncode}): "
                             f"{', '.join(f'{n}@{w}' for n, w in missing)}\n{result.log_tail}")
            raise MutationError("baseline: the unmutated copy fails, fix the suite first\n" + "\n".join(lines))

    def _timed_out(self, missing: list[Case]) -> str:
        """What a baseline that ran out of time says: the case it was running, those it never reached."""
        running, *rest = (f"{n}@{w}" for n, w in missing)
        return (f"baseline: the unmutated copy timed out: {running} did not finish within --timeout {self.timeout:g} s"
                + (f" and {len(rest)} case(s) never started ({', '.join(rest)})" if rest else "")
                + f"; expected a --timeout that the unmutated copy's cases fit in (default {MUTANT_TIMEOUT_S:g})")


# -------------------------------------------------------------------------------------------------- the run


def platform(backend: str) -> str:
    """What a run on ``backend`` can show bugs of (``Mutant.backends``): ``cpu``, or the GPU's vendor path,
    ``gpu-hip`` where torch is built for ROCm (``torch.version.hip``), else ``gpu-cuda``."""
    if backend != "gpu":
        return backend
    import torch

    return "gpu-hip" if torch.version.hip else "gpu-cuda"


def run_mutants(mutants: list[Mutant], *, root: Path = ROOT, scenarios: list[str] | None = None,
                ranks: tuple[int, ...] | None = None, matrix: bool = False, profile: str = "dev",
                timeout: float = MUTANT_TIMEOUT_S, job_timeout: float = JOB_TIMEOUT_S, keep: Path | None = None,
                backend: str = "cpu", scale: str = "small", echo: Callable[[str], None] = print) -> list[Outcome]:
    """Apply and run every mutant; the outcome of each, in order. Raises MutationError if the baseline fails.

    A mutant whose bug ``backend`` cannot show (``Mutant.backends``, against ``platform(backend)``) is skipped,
    with the reason as its message. ``scale``: what the cases' examples are drawn at (``conformance.kit.scale``;
    ``gpu`` on a GPU only), unless a mutant names its own (``Mutant.scale``); each scale's cases are checked against
    a baseline at that scale."""
    outcomes = [Outcome(m.name, m.file, m.breaks) for m in mutants]
    live = []
    here = platform(backend)
    for m, o in zip(mutants, outcomes, strict=True):
        reason = stale_reason(m, root)
        if reason:
            o.status, o.message = "stale", reason
            echo(reason)
        elif not m.shows_on(here):
            o.status, o.message = "skipped", f"not on {here}: {m.why_skipped}"
            echo(f"skip {m.name}: {o.message}")
        else:
            live.append((m, o))
    if not live:
        return outcomes
    cases = all_cases(scenarios, ranks)
    if not cases:
        raise MutationError(f"no case to run: scenarios {scenarios} support none of the world sizes {ranks}")
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="iris-mutate-", dir=keep))
    starter = ProbeStarter(probe_env(None))  # every probe forked from it: torch and the rest imported once

    def probe(tree, todo, *, stop_at_first, scale, label=""):
        def tagged(line: str) -> None:
            echo(f"  ({label}) {line.strip()}" if label else line)

        return run_probe(tree, todo, stop_at_first=stop_at_first, profile=profile, timeout=timeout,
                         job_timeout=job_timeout, backend=backend, scale=scale, echo=tagged, starter=starter)

    at = {m.name: m.scale or scale for m, _ in live}  # the scale each mutant's cases run at
    try:
        unmutated = copy_tree(workdir / "baseline", root)
        baselines: dict[str, Baseline] = {}
        for s in dict.fromkeys(at.values()):  # one baseline per scale, the cases its mutants name
            label = "baseline" + (f" at scale {s}" if s != "small" else "")
            baselines[s] = Baseline(unmutated, functools.partial(probe, scale=s, label=label), timeout)
            first = cases if matrix else list(dict.fromkeys(
                c for m, _ in live if at[m.name] == s for c in killer_cases(m, cases)))
            echo(f"{label}: {len(first)} case(s) on the unmutated copy, more later where a mutant dies elsewhere")
            baselines[s].verify(first)
        for i, (m, o) in enumerate(live, 1):
            s = at[m.name]
            echo(f"[{i}/{len(live)}] {m.name} ({m.file}){' at scale ' + s if s != 'small' else ''}: {m.breaks}")
            tree = copy_tree(workdir / m.name, root)
            apply(m, tree)
            start = time.perf_counter()
            result = probe(tree, plan(m, cases), stop_at_first=not matrix, scale=s)
            o.seconds = round(time.perf_counter() - start, 1)
            _judge(o, result, baselines[s])
            echo(f"    -> {o.status}{' by ' + o.killed_by if o.kills else ''}{': ' + o.message if o.message else ''}"
                 f" ({o.cases_run} case(s), {o.seconds:.0f} s)")
            if keep is None:
                shutil.rmtree(tree, ignore_errors=True)
    finally:
        starter.close()
        if keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return outcomes


def _judge(o: Outcome, result: ProbeRun, baseline: Baseline) -> None:
    o.cases_run = len(result.records)
    failing = [r for r in result.records if not r["ok"]]
    try:
        baseline.verify([(r["scenario"], r["world_size"]) for r in failing])
    except MutationError as e:
        o.status, o.message = "error", str(e).splitlines()[0] + " (on a case this mutant failed)"
        return
    o.kills = [{k: r[k] for k in ("scenario", "world_size", "checks", "detail")} for r in failing]
    if o.kills:
        o.status = "killed"
    elif result.timed_out:
        o.status, o.message = "timeout", f"no kill in {o.cases_run} case(s) before the per-mutant time limit"
    elif result.returncode != 0:
        o.status, o.message = "error", f"probe exited with {result.returncode}: {result.log_tail}"
    else:
        o.status = "survived"
