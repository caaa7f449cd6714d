"""``python -m conformance``: run the suite, list scenarios, scaffold a new one, run the mutation self-test."""

from __future__ import annotations

import argparse
import json
import platform
import signal
import sys
import time
from pathlib import Path

from conformance import profiles
from conformance.report import CaseResult, summary_table, write_example_trace, write_results
from conformance.runner import detect_backend
from conformance.scaffold import scaffold
from conformance.scenario import all_scenarios, load, names
from conformance.session import run_case
from iris.ranks import Pools


def _ranks(text: str) -> tuple[int, ...]:
    try:
        ranks = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--ranks {text!r}: expected comma-separated ints such as 1,2,4") from None
    if not ranks or min(ranks) < 1:
        raise argparse.ArgumentTypeError(f"--ranks {text!r}: world sizes must be >= 1")
    return ranks


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m conformance", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run scenarios on the hardware present and write a report")
    run.add_argument("--scenario", action="append", help="scenario name (repeatable; default: all)")
    run.add_argument("--ranks", type=_ranks, default=None, help="world sizes, e.g. 1,2,4 (default: each scenario's)")
    run.add_argument("--backend", choices=("cpu", "gpu"), default=None, help="default: gpu if one is visible")
    run.add_argument("--profile", choices=sorted(profiles.EXAMPLES), default=None, help="Hypothesis profile")
    run.add_argument("--params", default=None, help="JSON parameters: run exactly this example (replay)")
    run.add_argument("--out", type=Path, default=Path("conformance-out"), help="folder for results and traces")
    sub.add_parser("list", help="list the scenarios")
    new = sub.add_parser("new", help="scaffold conformance/scenarios/NAME.py")
    new.add_argument("name")
    mut = sub.add_parser("mutate", help="mutation self-test: every mutant of conformance/mutants.py must be killed")
    mut.add_argument("--only", action="append", metavar="NAME", help="mutant name or comma list (repeatable)")
    mut.add_argument("--list", action="store_true", help="list the mutants: name, file, what each breaks")
    mut.add_argument("--scenario", action="append", help="run only this scenario (repeatable): which mutants it "
                     "kills alone; survivors then do not fail the run")
    mut.add_argument("--ranks", type=_ranks, default=None, help="world sizes to run, e.g. 1,2 (default: all)")
    mut.add_argument("--matrix", action="store_true", help="run every case for every mutant (kill matrix)")
    mut.add_argument("--profile", choices=sorted(profiles.EXAMPLES), default=profiles.DEFAULT,
                     help=f"Hypothesis profile (default {profiles.DEFAULT})")
    mut.add_argument("--timeout", type=float, default=None, help="seconds per mutant (default 1800)")
    mut.add_argument("--out", type=Path, default=Path("conformance-out") / "mutate.json", help="JSON report")
    mut.add_argument("--keep", type=Path, default=None, help="keep the mutated copies under this folder")
    return p


def cmd_list() -> int:
    for s in all_scenarios():
        print(f"{s.name:28s} ranks {','.join(map(str, s.world_sizes)):8s} {s.description}")
    return 0


def cmd_run(args) -> int:
    backend = args.backend or detect_backend()
    profile_name = profiles.chosen(args.profile)
    settings = profiles.load(profile_name)
    selected = args.scenario or names()
    scenarios = [load(n) for n in selected]
    params = json.loads(args.params) if args.params else None
    cases = [(s, ws) for s in scenarios for ws in (args.ranks or s.world_sizes) if ws in s.world_sizes]
    if not cases:
        print(f"no case to run: scenarios {selected} support none of the world sizes {args.ranks}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "traces").mkdir(exist_ok=True)
    print(f"conformance: {len(cases)} cases, backend {backend}, profile {profile_name}, output {args.out}/")
    results: list[CaseResult] = []
    start = time.perf_counter()
    traced: dict[str, tuple[int, object]] = {}
    with Pools() as pools:
        for i, (s, ws) in enumerate(cases, 1):
            print(f"[{i}/{len(cases)}] {s.name} on {ws} rank(s) ...", end="", flush=True)
            try:
                case, last = run_case(pools, s, ws, backend, settings, params)
            except Exception as e:  # a broken scenario module: that case fails, the run goes on
                case, last = CaseResult(s.name, ws, backend), None
                case.error = f"{type(e).__name__}: {e}"
            results.append(case)
            status = "ok" if case.ok else "FAIL"
            print(f" {status} ({case.examples} examples, {case.seconds:.1f} s)", flush=True)
            if not case.ok:
                print("    " + (case.failure or case.error).replace("\n", "\n    "), flush=True)
            if last is not None and ws >= traced.get(s.name, (0, None))[0]:
                traced[s.name] = (ws, last)
    for name, (_, last) in traced.items():
        write_example_trace(args.out / "traces" / f"{name}.json", last)
    meta = {"backend": backend, "profile": profile_name, "seconds": time.perf_counter() - start,
            "python": platform.python_version(), "argv": sys.argv[1:]}
    write_results(args.out / "results.json", results, meta)
    print(summary_table(results))
    print(f"results: {args.out / 'results.json'}; traces: {args.out / 'traces'}/ ({meta['seconds']:.0f} s)")
    return 0 if all(c.ok for c in results) else 1


def cmd_mutate(args) -> int:
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated run still removes its copies
    try:
        return _mutate(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _mutate(args) -> int:
    from conformance import mutation, mutation_report

    try:
        mutants = mutation.select(args.only)
        if args.list:
            for m in mutants:
                print(f"{m.name:34s} {m.file:32s} {m.breaks}")
            return 0
        print(f"mutate: {len(mutants)} mutant(s), backend cpu, profile {args.profile}, seed {mutation.SEED}")
        start = time.perf_counter()
        outcomes = mutation.run_mutants(mutants, scenarios=args.scenario, ranks=args.ranks, matrix=args.matrix,
                                        profile=args.profile, timeout=args.timeout or mutation.MUTANT_TIMEOUT_S,
                                        keep=args.keep)
    except mutation.MutationError as e:
        print(f"mutate: {e}", file=sys.stderr)
        return 2
    meta = {"backend": "cpu", "profile": args.profile, "seed": mutation.SEED, "seconds": time.perf_counter() - start,
            "scenarios": args.scenario, "ranks": args.ranks, "matrix": args.matrix, "argv": sys.argv[1:]}
    mutation_report.write_report(args.out, outcomes, meta)
    print(mutation_report.table(outcomes))
    if args.matrix:
        print(mutation_report.unique_kills(outcomes))
    print(f"report: {args.out} ({meta['seconds']:.0f} s)")
    return mutation_report.exit_code(outcomes, survivors_allowed=bool(args.scenario))


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "list":
        return cmd_list()
    if args.command == "new":
        return scaffold(args.name)
    if args.command == "mutate":
        return cmd_mutate(args)
    return cmd_run(args)
