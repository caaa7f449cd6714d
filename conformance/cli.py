"""``python -m conformance``: run the suite, gate CI on it, list scenarios, scaffold one, run the mutation self-test."""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import settings as hypothesis_settings

from conformance.harness.drawing import CHUNK_SIZES
from conformance.harness.profiles import DEFAULT_PROFILE, PROFILES, chosen_profile, load_profile
from conformance.harness.run_settings import JOB_TIMEOUT_S, RunSettings, detect_backend
from conformance.harness.suite import SelectionError, parse_params, plan, refuse_unknown, run_cases
from conformance.kit.scaffold import TEMPLATES, scaffold
from conformance.kit.scale import GPU, SCALES, SMALL, scale_named
from conformance.kit.scenario import (
    ScenarioError,
    canonical,
    default_world_sizes,
    load,
    names,
    package_scenarios,
    scenario_packages,
)
from conformance.mutation.runner import MUTANT_TIMEOUT_S
from conformance.report.output import summary_table, write_example_trace, write_results
from iris.cli_args import (
    NO_GPU,
    OneLineParser,
    choice_list,
    folder,
    int_at_least,
    int_list,
    missing_gpu,
    out_file,
    positive_number,
)
from iris.env_vars import EnvVarError
from iris.ranks.pool import MAX_TIMEOUT_S, MAX_WORLD_SIZE
from iris.ranks.sanitizer import DEFAULT_TOOL
from iris.ranks.sanitizer import TOOLS as SANITIZERS
from iris.tracing.core import DEFAULT_CHUNK

ROOT = Path(__file__).resolve().parent.parent
KNOWN_DIVERGENCES = ROOT / "ci" / "known_divergences.toml"


_world_sizes = int_list("--ranks", 1, MAX_WORLD_SIZE, why=f"world sizes; at most {MAX_WORLD_SIZE}, the rank processes "
                                                        "one host runs", item="world size")


def _ranks(text: str) -> tuple[int, ...]:
    """An argparse type: ``--ranks``, distinct world sizes of 1 to ``MAX_WORLD_SIZE`` ranks, comma-separated."""
    ranks = _world_sizes(text)
    repeated = sorted({r for r in ranks if ranks.count(r) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"--ranks {text!r}: world size {', '.join(map(str, repeated))} is repeated; "
                                         "expected each world size once, such as 1,2,4")
    return ranks


_tools = choice_list("--sanitize", tuple(SANITIZERS), item="tool")


def _sanitizers(text: str) -> tuple[str, ...]:
    """An argparse type: ``--sanitize``, distinct compute-sanitizer tools (``iris.ranks.sanitizer.TOOLS``),
    comma-separated."""
    tools = _tools(text)
    repeated = sorted({t for t in tools if tools.count(t) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"--sanitize {text!r}: {', '.join(repeated)} is repeated; expected each tool "
                                         f"once, such as {','.join(SANITIZERS)}")
    return tools


def _mutant_names(option: str, all_of_them: str):
    """An argparse type: a comma list naming at least one mutant, each once and no item empty (``all_of_them``: how
    to ask for every mutant)."""

    def parse(text: str) -> str:
        names = [name.strip() for name in text.split(",")]
        if not any(names):
            raise argparse.ArgumentTypeError(f"{option} {text!r}: no mutant named; expected a comma list of mutant "
                                             f"names, or {all_of_them}")
        if not all(names):
            raise argparse.ArgumentTypeError(f"{option} {text!r}: an empty item; expected a comma list of mutant "
                                             "names, each once, such as triton-trace-event_id,gluon-trace-event_id")
        _refuse_repeats(option, text, names, "mutant")
        return text

    return parse


def _refuse_repeats(option: str, text: str, items: list[str], what: str) -> None:
    """ArgumentTypeError naming the items of ``items`` given more than once (``what`` they are)."""
    repeated = list(dict.fromkeys(i for i in items if items.count(i) > 1))
    if repeated:
        raise argparse.ArgumentTypeError(f"{option} {text!r}: {what} {', '.join(repeated)} is given twice; expected "
                                         f"each {what} once")


class _EachOnce(argparse.Action):
    """``append`` for a repeatable option, refusing a name an earlier use of it gave already: ``names`` are the
    names a value gives, each in its one spelling (a scenario may be written two ways), ``what`` they name."""

    def __init__(self, *args, names=lambda text: [text], what: str = "name", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.names, self.what = names, what

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        given = list(getattr(namespace, self.dest) or [])
        before = {name: value for value in given for name in self.names(value)}
        for name in self.names(values):
            if name in before:
                said = "" if before[name] == values else f" (as {before[name]!r} before)"
                raise argparse.ArgumentError(self, f"{option_string} {values!r}: {self.what} {name} is given "
                                                   f"twice{said}; expected each {self.what} once")
        setattr(namespace, self.dest, [*given, values])


def _mutants_of(text: str) -> list[str]:
    return [name.strip() for name in text.split(",")]


_seed = int_at_least("--seed", 0)
_examples = int_at_least("--examples", 1)
_timeout = positive_number("--timeout", maximum=MAX_TIMEOUT_S)  # what a rank pool waits for at most (ranks/pool.py)


def _one_of(option: str, values: tuple[int, ...], what: str):
    """An argparse type: an integer out of ``values`` (``what`` they are), refused in one line naming ``option``."""

    def parse(text: str) -> int:
        value = int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None
        if value not in values:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: expected one of {', '.join(map(str, values))} "
                                             f"({what})")
        return value

    return parse


_chunk = _one_of("--chunk", CHUNK_SIZES, "the trace chunks examples draw")
_num_warps = _one_of("--num-warps", tuple(sorted(GPU.num_warps)), "the num_warps examples draw at scale gpu")


def _in_file(option: str):
    """An argparse type: a file to read (``--known``, ``--baseline``), refused at once when the text is empty or
    blank (the current folder); what it holds is checked before the suite runs."""

    def parse(text: str) -> Path:
        path = Path(text)
        if not text.strip():
            problem = "empty" if not text else "only blanks"
        elif path.exists() and not path.is_file() and not path.is_dir():  # a device or a pipe: read, it may not end
            problem = "not a regular file"
        else:
            return path
        raise argparse.ArgumentTypeError(f"{option} {text!r}: {problem}; expected the path of a file")

    return parse


def _check_out(out: Path, files: list[str]) -> None:
    """SelectionError naming a file of ``files`` under ``out`` (``traces`` and ``traces/...``: under its traces
    folder) that exists and cannot be written, or a folder where a file goes (or a file where ``traces/`` goes):
    found before anything runs, not at the first write after the suite."""
    for name in files:
        path = out / name
        if name == "traces":
            wrong = os.path.lexists(path) and not path.is_dir()
            problem = "exists and is not a folder"
        else:
            wrong = path.is_dir() or (os.path.lexists(path) and not os.access(path, os.W_OK))
            problem = "is a folder" if path.is_dir() else "exists and cannot be written"
        if wrong:
            raise SelectionError(f"--out {str(out)!r}: {path} {problem}; expected a folder where the results "
                                 f"({path.name} among them) can be written")


_out_folder = folder("--out")
_out_file = out_file("--out")


def _selection_options(p: argparse.ArgumentParser, out: str) -> None:
    """The options ``run`` and ``gate`` share."""
    p.add_argument("--scenario", action=_EachOnce, names=lambda ref: [canonical(ref)], what="scenario",
                   help="scenario name or dotted module path (repeatable, each scenario once; default: all)")
    p.add_argument("--ranks", type=_ranks, default=None, help="world sizes, each once, any R from 1 to "
                   f"{MAX_WORLD_SIZE} (the rank processes one host runs), e.g. 1,2,4,8 (default: "
                   f"{','.join(map(str, default_world_sizes()))}: 1,2,4 plus the GPU count when it is 8 or more)")
    p.add_argument("--backend", choices=("cpu", "gpu"), default=None, help="default: gpu if one is visible")
    p.add_argument("--profile", choices=sorted(PROFILES), default=None, help="Hypothesis profile "
                   "(default: IRIS_CONFORMANCE_PROFILE or dev)")
    p.add_argument("--scale", choices=tuple(SCALES), default=SMALL.name, help="what the examples are drawn at "
                   "(docs/suite.md \"Scale\"): small (default: the CPU interpreter and the pull-request gate) or gpu "
                   "(num_warps 1 to 16, grids of several waves of the SMs, traced loops of thousands of "
                   "iterations, blocks of tens of thousands of elements; refused on the cpu backend)")
    p.add_argument("--examples", type=_examples, default=None, help="the most examples a case runs, shrinking a "
                   "failure included (default: the profile's count, which bounds only the examples generated: a "
                   "failing case then shrinks for as long as Hypothesis takes, often 50 to 100 examples more)")
    p.add_argument("--seed", type=_seed, default=None, help="fixed Hypothesis seed: the same examples every run")
    p.add_argument("--sanitize", nargs="?", const=(DEFAULT_TOOL,), default=(), type=_sanitizers, metavar="TOOLS",
                   help=f"run the selection under each of these compute-sanitizer tools (CUDA), a comma list of "
                   f"{', '.join(SANITIZERS)}: every case once per tool, its ranks under the tool; a finding of ours "
                   f"fails the case, quoting the tool (--sanitize alone: {DEFAULT_TOOL})")
    p.add_argument("--timeout", type=_timeout, default=JOB_TIMEOUT_S, help=f"the cap of every example's budget "
                   f"on the ranks, in seconds, at most {MAX_TIMEOUT_S:g} (default {JOB_TIMEOUT_S:g}); the budget is "
                   "derived from the example's size (conformance/harness/budget.py), and an example whose ranks do "
                   "not finish within it fails its case as a hang")
    p.add_argument("--out", type=_out_folder, default=out, help="folder for results and traces (checked before "
                   "anything runs: an existing folder, or one that can be made, that can be written)")


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m conformance", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run scenarios on the hardware present and write a report")
    _selection_options(run, "conformance-out")
    run.add_argument("--params", default=None, help="JSON parameters: run exactly this example (replay); "
                     "refused unless they are params the scenario draws, and launch something to check")
    run.add_argument("--chunk", type=_chunk, default=None, help="the trace chunk (slots a program claims at a "
                     f"time) of every example, one of {', '.join(map(str, CHUNK_SIZES))} (default: drawn per "
                     f"example; a --params replay without it: {DEFAULT_CHUNK})")
    run.add_argument("--num-warps", type=_num_warps, default=None, help="num_warps of every launch that gives "
                     "none, one of " + ", ".join(map(str, sorted(GPU.num_warps))) + " (with --scale gpu; default: "
                     "drawn per example)")
    gate = sub.add_parser("gate", help="run the suite as a CI gate: results.json, JUnit XML, summary.md, traces; "
                          "exit 0 only when every failure is a known divergence")
    _selection_options(gate, "conformance-gate")
    gate.set_defaults(chunk=None, num_warps=None)  # every example draws its trace chunk (and num_warps at scale gpu)
    gate.add_argument("--known", type=_in_file("--known"), default=None, help="known divergences (TOML; default "
                      "ci/known_divergences.toml)")
    gate.add_argument("--baseline", type=_in_file("--baseline"), default=None, help="an earlier results.json: "
                      "report newly failing and fixed checks")
    gate.add_argument("--mutants", nargs="?", const="all", default=None, metavar="NAMES",
                      type=_mutant_names("--mutants", "--mutants alone for all of them"),
                      help="also run the mutation self-test (all mutants, or a comma list); a mutant that is not "
                      "killed fails the gate")
    sub.add_parser("list", help="list the scenarios")
    new = sub.add_parser("new", help="scaffold conformance/scenarios/NAME.py")
    new.add_argument("name")
    new.add_argument("--template", choices=tuple(TEMPLATES), default="store", help="store (default: a masked block "
                     "op, after scenarios/store.py) or waiting (a kernel that waits on flags its peers set, after "
                     "scenarios/fused_gather_compute.py)")
    mut = sub.add_parser("mutate", help="mutation self-test: every mutant of conformance/mutation/catalogue.py must be "
                         "killed")
    mut.add_argument("--only", action=_EachOnce, names=_mutants_of, what="mutant", metavar="NAME",
                     type=_mutant_names("--only", "no --only for all of them"),
                     help="mutant name or comma list (repeatable, each mutant once; default: every mutant)")
    mut.add_argument("--list", action="store_true", help="list the mutants: name, file, what each breaks")
    mut.add_argument("--scenario", action=_EachOnce, names=lambda ref: [canonical(ref)], what="scenario",
                     help="run only this scenario (repeatable, each scenario once): which mutants it kills alone; "
                     "survivors then do not fail the run")
    mut.add_argument("--ranks", type=_ranks, default=None, help=f"world sizes to run, each once, 1 to "
                     f"{MAX_WORLD_SIZE}, e.g. 1,2 (default: all)")
    mut.add_argument("--matrix", action="store_true", help="run every case for every mutant (kill matrix)")
    mut.add_argument("--backend", choices=("cpu", "gpu"), default="cpu", help="where the cases run (default cpu: "
                     "the interpreter); mutants the backend cannot show are skipped")
    mut.add_argument("--profile", choices=sorted(PROFILES), default=DEFAULT_PROFILE,
                     help=f"Hypothesis profile (default {DEFAULT_PROFILE})")
    mut.add_argument("--scale", choices=tuple(SCALES), default=SMALL.name, help="what the cases' examples are drawn "
                     "at (default small; gpu with --backend gpu only: docs/suite.md \"Scale\")")
    mut.add_argument("--timeout", type=_timeout, default=MUTANT_TIMEOUT_S, help=f"seconds per mutant, at most "
                     f"{MAX_TIMEOUT_S:g} (default {MUTANT_TIMEOUT_S:g})")
    mut.add_argument("--out", type=_out_file, default=str(Path("conformance-out") / "mutate.json"),
                     help="JSON report")
    mut.add_argument("--keep", type=folder("--keep"), default=None, help="keep the mutated copies under this "
                     "folder")
    return p


def cmd_list() -> int:
    """Every scenario ``--scenario`` accepts, by the name it takes there: those of ``conformance.scenarios``, then
    those of the packages ``IRIS_SCENARIO_PACKAGES`` lists, by dotted path; exit 1 when a module cannot be loaded
    (its line says why), 2 when the variable names no package."""
    try:
        refs = names() + [f"{package}.{name}" for package in scenario_packages()[1:]
                          for name in package_scenarios(package)]
    except ScenarioError as e:
        print(f"python -m conformance list: {e}", file=sys.stderr)
        return 2
    broken, width = 0, max(28, *map(len, refs))
    for ref in refs:
        try:
            s = load(ref)
        except ScenarioError as e:
            broken += 1
            print(f"{ref:{width}s} cannot be loaded: {e}")
            continue
        constraint = f" (only where {s.world_constraint.reason})" if s.world_constraint else ""
        print(f"{ref:{width}s} ranks {','.join(map(str, s.world_sizes)):8s} {s.description}{constraint}")
    return 1 if broken else 0


def _prepare(args, params_text: str | None = None):
    """The profile's name, the run's settings (``RunSettings``, built here once from the arguments), the cases and
    the notes of a ``run`` or ``gate``; SelectionError on bad input."""
    _check_environment()
    backend = args.backend or detect_backend()
    try:
        profile_name = chosen_profile(args.profile)
    except ValueError as e:
        raise SelectionError(str(e)) from None
    scale = scale_named(args.scale)
    _check_scale(scale, backend, args.num_warps)
    params = parse_params(params_text)
    if args.sanitize:
        _check_sanitizer(backend)
    cases, notes = plan(args.scenario, args.ranks)
    if not cases:
        raise SelectionError(f"no case to run: scenarios {args.scenario or 'all'} accept none of the world sizes "
                             f"{args.ranks}")
    if params is not None:
        _check_params(cases, params, args.chunk, scale, args.num_warps)
    _check_gpu(backend)  # after the checks of what was typed, which hold on any machine
    chosen = load_profile(profile_name)
    if args.examples is not None:
        chosen = hypothesis_settings(chosen, max_examples=args.examples)
    run = RunSettings(backend, chosen, params=params, chunk=args.chunk, seed=args.seed, scale=scale,
                      num_warps=args.num_warps, timeout=args.timeout, max_runs=args.examples,
                      sanitizers=tuple(args.sanitize))
    return profile_name, run, cases, notes


def _check_environment() -> None:
    """The documented variables a run reads (``IRIS_HYPOTHESIS_DB``, ``IRIS_COMPILE_WORKERS``), checked before
    anything runs: SelectionError naming the variable, its value and what was expected."""
    from conformance.harness.compile_ahead import default_workers
    from conformance.harness.profiles import example_database

    try:
        example_database()
        default_workers()
    except EnvVarError as e:
        raise SelectionError(str(e)) from None


def _check_gpu(backend: str) -> None:
    """``--backend gpu`` where torch sees no GPU: every case would fail on its ranks, so nothing runs."""
    if missing_gpu(backend):
        raise SelectionError(NO_GPU)


def _check_scale(scale, backend: str, num_warps: int | None) -> None:
    """``--scale`` past small runs on a GPU only; ``--num-warps`` only at a scale that draws num_warps."""
    if scale is not SMALL and backend == "cpu":
        raise SelectionError(f"--scale {scale.name}: backend cpu runs every program of a rank one after another "
                             "under the interpreter, and an example at this scale (hundreds of programs, thousands of "
                             "events) would take hours there; use --backend gpu on a GPU host, or --scale small")
    if num_warps is not None and not scale.num_warps:
        raise SelectionError(f"--num-warps {num_warps}: only with --scale gpu (at scale {scale.name} every launch "
                             "runs with its own num_warps)")


def _check_params(cases, params: dict, chunk: int | None, scale, num_warps: int | None) -> None:
    """Replayed params must be what each selected scenario draws for its world size at ``scale``
    (``replay_params``)."""
    from conformance.harness.replay_params import ParamsError, check

    for case in cases:
        if case.scenario is not None:
            try:
                check(case.scenario, case.world_size, params, chunk, scale, num_warps)
            except ParamsError as e:
                raise SelectionError(str(e)) from None


def _check_sanitizer(backend: str) -> None:
    from iris.ranks.sanitizer import SanitizerUnavailable, find_tool

    if backend != "gpu":
        raise SelectionError(f"--sanitize checks GPU kernels with compute-sanitizer; backend {backend} runs kernels "
                             "under the interpreter (use --backend gpu on a CUDA host)")
    try:
        find_tool()
    except SanitizerUnavailable as e:
        message = str(e)
        raise SelectionError(message if message.startswith("--sanitize") else f"--sanitize: {message}") from None


def _meta(args, backend: str, profile_name: str, examples: int, start: float, cases) -> dict:
    sizes = sorted({c.world_size for c in cases})
    seconds = time.perf_counter() - start
    ran = sum(c.examples for c in cases)
    return {"backend": backend, "scale": args.scale, "profile": profile_name, "examples": examples, "seed": args.seed,
            "sanitize": list(args.sanitize), "world_sizes": ",".join(map(str, sizes)), "seconds": seconds,
            "examples_run": ran, "examples_per_second": ran / seconds if seconds > 0 else 0.0,
            "jit_compiled": sum(c.jit_compiled for c in cases), "jit_loaded": sum(c.jit_loaded for c in cases),
            "ahead_compiled": sum(c.ahead_compiled for c in cases),
            "ahead_seconds": sum(c.ahead_seconds for c in cases),
            "python": platform.python_version(), "argv": sys.argv[1:]}


def _footer(meta: dict) -> str:
    """The run's totals: examples per second, and the kernels Triton compiled or loaded from its disk cache."""
    return (f"{meta['examples_run']} examples in {meta['seconds']:.0f} s ({meta['examples_per_second']:.2f}/s); "
            f"JIT: {meta['jit_compiled']} compiled, {meta['jit_loaded']} loaded from the cache"
            + (f" by the ranks; {meta['ahead_compiled']} compiled ahead in {meta['ahead_seconds']:.0f} s"
               if meta.get("ahead_compiled") else ""))


def _execute(args, title: str, run: RunSettings, cases, notes):
    """What ``run`` and ``gate`` share once their input is checked: the output folders, the title and notes, and
    the cases run; returns what ran and when it started."""
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "traces").mkdir(exist_ok=True)
    except OSError as e:  # changed since the arguments were checked, or traces/ is a file
        raise SelectionError(f"--out {str(args.out)!r}: cannot make {e.filename} ({e.strerror}); expected a folder "
                             "that can be written") from None
    print(title)
    for note in notes:
        print(note)
    start = time.perf_counter()
    done = run_cases(cases, run)
    return done, start


def _under(args) -> str:
    """The compute-sanitizer tools of a run, for its title ("" when none)."""
    if not args.sanitize:
        return ""
    return f" under compute-sanitizer {', '.join(args.sanitize)} (every case once per tool)"


def _examples_said(args, settings) -> str:
    """How many examples a case runs, in words: ``--examples N`` bounds shrinking too, a profile only generation."""
    if args.examples is not None:
        return f"at most {args.examples} examples per case (shrinking a failure included)"
    return f"{settings.max_examples} examples per case (more while a failure is shrunk)"


def _scale_said(args) -> str:
    """The scale in a title: nothing at small (what every run drew before scales existed)."""
    return "" if args.scale == SMALL.name else f", scale {args.scale}"


def cmd_run(args) -> int:
    profile_name, run, cases, notes = _prepare(args, args.params)
    backend, settings = run.backend, run.profile
    _check_out(args.out, ["results.json", "traces", *dict.fromkeys(f"traces/{c.name}.json" for c in cases)])
    title = (f"conformance: {len(cases)} cases, backend {backend}{_scale_said(args)}{_under(args)}, profile "
             f"{profile_name}, {_examples_said(args, settings)}, output {args.out}/")
    done, start = _execute(args, title, run, cases, notes)
    traced = {}
    for case, last in done:  # one trace per scenario: the last example of its largest world
        if last is not None and case.world_size >= traced.get(case.scenario, (0, None))[0]:
            traced[case.scenario] = (case.world_size, last)
    for name, (_, last) in traced.items():
        write_example_trace(args.out / "traces" / f"{name}.json", last)
    results = [case for case, _ in done]
    meta = _meta(args, backend, profile_name, settings.max_examples, start, results)
    write_results(args.out / "results.json", results, meta)
    print(summary_table(results))
    print(_footer(meta))
    print(f"results: {args.out / 'results.json'}; traces: {args.out / 'traces'}/ ({meta['seconds']:.0f} s)")
    return 0 if all(c.ok or c.skipped for c in results) and any(c.ok for c in results) else 1


def cmd_gate(args) -> int:
    from conformance.report import gate, junit, summary
    from conformance.report.known import KnownDivergenceError, load_known

    if args.mutants is not None:
        _check_mutants(args.mutants)
    profile_name, run, cases, notes = _prepare(args)
    backend, settings = run.backend, run.profile
    _check_out(args.out, ["results.json", "junit.xml", "summary.md", "traces", *(["mutate.json"] * bool(args.mutants))])
    known_path = args.known or KNOWN_DIVERGENCES
    try:
        known = load_known(known_path) if args.known or KNOWN_DIVERGENCES.exists() else {}
    except KnownDivergenceError as e:
        raise SelectionError(f"--known {e}" if args.known else str(e)) from None
    try:
        baseline = gate.load_baseline(args.baseline) if args.baseline else None
    except ValueError as e:
        raise SelectionError(str(e)) from None
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    title = (f"gate: {len(cases)} cases, backend {backend}{_scale_said(args)}{_under(args)}, profile {profile_name}, "
             f"known divergences {len(known)} ({known_path}), output {args.out}/")
    done, start = _execute(args, title, run, cases, notes)
    results = [case for case, _ in done]
    traces = {}
    for case, last in done:  # the trace of each failing example
        if not case.ok and case.failure and last is not None:
            path = args.out / "traces" / f"{case.record_id}.json"
            try:
                write_example_trace(path, last)
                traces[case.record_id] = {"trace": str(path.relative_to(args.out))}
            except Exception as e:  # a trace that cannot be written must not hide the verdicts
                traces[case.record_id] = {"trace_error": f"{type(e).__name__}: {e}"}
    outcomes = gate.judge(results, known, str(known_path))
    mutation = _mutation(args.mutants, args.out) if args.mutants else None
    passed = gate.passes(outcomes, mutation is None or mutation["exit_code"] == 0)
    comparison = gate.compare(results, baseline) if baseline is not None else None
    meta = _meta(args, backend, profile_name, settings.max_examples, start, results) | {
        "timestamp": stamp, "known_divergences": str(known_path), "gate": "passed" if passed else "failed",
        "counts": gate.counts(outcomes)}
    extra = {rid: {"checks": {}} | traces.get(rid, {}) for rid in (c.record_id for c in results)}
    for o in outcomes:
        extra[o.case_id]["checks"][o.check] = {"status": o.status, "message": o.message}
    top = {"comparison": {"newly_failing": comparison[0], "fixed": comparison[1]}} if comparison else {}
    if mutation is not None:
        top["mutation"] = mutation
    write_results(args.out / "results.json", results, meta, extra, top)
    junit.write_junit(args.out / "junit.xml", outcomes, stamp, meta["seconds"])
    text = summary.summary(results, outcomes, meta, passed=passed, comparison=comparison, mutation=mutation)
    (args.out / "summary.md").write_text(text)
    print(summary_table(results))
    print(_footer(meta))
    n = gate.counts(outcomes)
    print(f"gate {'PASSED' if passed else 'FAILED'}: " + ", ".join(f"{v} {k}" for k, v in n.items()) +
          (f"; mutants: exit code {mutation['exit_code']}" if mutation else ""))
    for o in outcomes:
        if o.fails_gate:
            print(f"  {o.status}: {o.case_id} {o.check}: {o.message}")
    print(f"written: {args.out}/results.json, junit.xml, summary.md, traces/ ({meta['seconds']:.0f} s)")
    return 0 if passed else 1


def _check_mutants(names: str) -> None:
    """``gate --mutants NAMES``: every name must be a mutant of the catalogue (SelectionError before anything runs)."""
    from conformance.mutation import runner as mutation

    if names == "all":
        return
    try:
        mutation.select([names])
    except mutation.MutationError as e:
        raise SelectionError(f"--mutants {names!r}: {e}") from None


def _mutation(names: str, out: Path) -> dict:
    """Run ``python -m conformance mutate`` (its own process and report) and return its report and exit code."""
    report = (out / "mutate.json").resolve()  # the child runs in the repository root
    command = [sys.executable, "-m", "conformance", "mutate", "--out", str(report)]
    if names != "all":
        command += ["--only", names]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    print("gate: mutation self-test: " + " ".join(command[1:]), flush=True)
    code = subprocess.run(command, cwd=ROOT, env=env).returncode
    data = json.loads(report.read_text()) if report.exists() else {"mutants": []}
    data["exit_code"] = code
    if code == 2 or not report.exists():
        data["problem"] = f"python -m conformance mutate exited with {code} (bad mutant name or failing baseline)"
    return data


def cmd_mutate(args) -> int:
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated run still removes its copies
    try:
        return _mutate(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _mutate(args) -> int:
    from conformance.mutation import report as mutation_report
    from conformance.mutation import runner as mutation

    try:
        refuse_unknown(args.scenario or [])
        _check_environment()
        _check_scale(scale_named(args.scale), args.backend, None)
        mutants = mutation.select(args.only)
        if args.list:
            for m in mutants:
                print(f"{m.name:34s} {m.file:32s} {m.breaks}")
            return 0
        _check_gpu(args.backend)
        print(f"mutate: {len(mutants)} mutant(s), backend {args.backend}{_scale_said(args)}, profile {args.profile}, "
              f"seed {mutation.SEED}")
        start = time.perf_counter()
        outcomes = mutation.run_mutants(mutants, scenarios=args.scenario, ranks=args.ranks, matrix=args.matrix,
                                        profile=args.profile, timeout=args.timeout,
                                        keep=args.keep, backend=args.backend, scale=args.scale)
    except (mutation.MutationError, SelectionError) as e:
        print(f"mutate: {e}", file=sys.stderr)
        return 2
    meta = {"backend": args.backend, "scale": args.scale, "profile": args.profile, "seed": mutation.SEED,
            "seconds": time.perf_counter() - start, "scenarios": args.scenario, "ranks": args.ranks,
            "matrix": args.matrix, "argv": sys.argv[1:]}
    mutation_report.write_report(args.out, outcomes, meta)
    print(mutation_report.table(outcomes))
    if args.matrix:
        print(mutation_report.unique_kills(outcomes))
    print(f"report: {args.out} ({meta['seconds']:.0f} s)")
    return mutation_report.exit_code(outcomes, survivors_allowed=bool(args.scenario))


def main(argv=None) -> int:
    # a scenario importing the kit's old paths says so here too (Python shows a DeprecationWarning only in __main__)
    warnings.filterwarnings("default", message=r"conformance\.\w+ is deprecated", category=DeprecationWarning)
    args = _parser().parse_args(argv)
    if args.command == "list":
        return cmd_list()
    if args.command == "new":
        return scaffold(args.name, template=args.template)
    if args.command == "mutate":
        return cmd_mutate(args)
    try:
        return cmd_gate(args) if args.command == "gate" else cmd_run(args)
    except SelectionError as e:
        print(f"python -m conformance {args.command}: {e}", file=sys.stderr)
        return 2
