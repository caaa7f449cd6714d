"""``python -m conformance``: run the suite, list scenarios, scaffold a new one."""

from __future__ import annotations

import argparse
import json
import platform
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


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "list":
        return cmd_list()
    if args.command == "new":
        return scaffold(args.name)
    return cmd_run(args)
