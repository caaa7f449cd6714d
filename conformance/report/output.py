"""Results of a conformance run: the summary table, the JSON results, one Perfetto trace per scenario.

A case (``results.CaseResult``) is one backend x scenario x world size, named by its stable id
``<backend>-<scenario>-<R>r`` (the pytest id of ``test_conformance``); each case has three checks
(``results.CHECKS``), each with its own verdict. Under compute-sanitizer tools a case has a record per tool, named
by ``record_id`` (``<case id>@<tool>``), its tool in ``sanitizer``.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from conformance.kit.patterns import compact
from conformance.results import CaseResult, ExampleResult
from iris.tracing.export import write_trace
from iris.tracing.timeline import RankTrace


def variants_cell(variants: dict[str, int | None]) -> str:
    """``"<triton>/<gluon>"`` compiled variants per configuration across ranks; ``-`` where nothing compiled."""
    return "/".join("-" if variants.get(api) is None else str(variants[api]) for api in ("triton", "gluon"))


def summary_table(cases: list[CaseResult]) -> str:
    """Scenario x world size rows with a column per API, the cross check, examples, time and compiles; a ``tool``
    column (the compute-sanitizer tool each ran under) when any case ran under one.

    A case with a ``problem`` reads ``ERROR`` in every check's column, ``HANG`` where an example hung, ``SKIPPED``
    where it was not run (under a tool it cannot run under).
    ``variants t/g``: the most compiled variants of the Triton / Gluon kernel across the ranks for one
    configuration (Gluon must be 1: one compile serves every rank; ``-`` under the interpreter).
    """
    tools = any(c.sanitizer for c in cases)
    head = ("scenario", "ranks", *(("tool",) if tools else ()), "triton", "gluon", "triton=gluon", "examples",
            "seconds", "compiles/ex", "variants t/g")
    rows = [head]
    for c in cases:
        verdict = ((c.status.upper(),) * 3 if c.problem or c.skipped
                   else (c.verdict["triton"], c.verdict["gluon"], c.verdict["triton vs gluon"]))
        per = f"{c.compiles_after_warmup / c.warm_examples:.2f}" if c.warm_examples else "-"
        rows.append((c.scenario, str(c.world_size), *((c.sanitizer or "-",) if tools else ()), *verdict,
                     str(c.examples), f"{c.seconds:.1f}", per, variants_cell(c.variants_per_config)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    passed, hung = sum(c.ok for c in cases), sum(c.hang is not None for c in cases)
    skipped = sum(bool(c.skipped) for c in cases)
    lines.append(f"{passed} passed, {len(cases) - passed - skipped} failed" + (f" ({hung} hung)" if hung else "")
                 + (f", {skipped} skipped" if skipped else ""))
    return "\n".join(lines)


def write_results(path: Path, cases: list[CaseResult], meta: dict, extra: dict[str, dict] | None = None,
                  top: dict | None = None) -> None:
    """JSON results: run metadata and one record per case and tool (plus ``extra[record_id]``), plus ``top``'s keys.

    A record's ``verdict`` is the case's ``reported_verdict``, its ``status`` the case's (pass, FAIL, error, hang,
    skipped) and its ``error`` the case's ``problem``: a case that errored or ran no example says ``error`` for
    every check that did not fail, never ``pass``; one not run says ``skipped``, and its ``skipped`` why; one that
    hung says ``hang``, and its ``hang`` record gives the ranks that had not answered, what each was doing, the
    budget (``timeout``, seconds), the replay command and each rank's Python stack when it was killed (``stacks``;
    ``null`` when no example hung). Its ``failing_params`` are written as its replay line writes them (a list drawn
    as a pattern as its spec)."""
    records = [{"case_id": c.case_id, "record_id": c.record_id} | {k: v for k, v in asdict(c).items() if k != "seen"}
               | {"failing_params": compact(c.failing_params)}
               | {"verdict": c.reported_verdict, "status": c.status, "error": c.problem, "ok": c.ok}
               | (extra or {}).get(c.record_id, {}) for c in cases]
    path.write_text(json.dumps({"meta": meta, "cases": records} | (top or {}), indent=2))


def write_example_trace(path: Path, result: ExampleResult) -> str:
    """Perfetto trace of one example: every rank of both APIs, aligned on each API's launch start.

    The format follows the suffix of ``path`` (``.json`` or ``.pftrace``).
    """
    traces = [RankTrace(a.records, a.window[0], api) for obs in result.observations for api, a in obs.apis.items()]
    if not traces:
        raise ValueError(f"{result.scenario}: no observations to trace")
    clock = {"method": "each rank and API from its own launch start: a device clock read after a barrier",
             "error_bound_ns": None}
    return write_trace(path, traces, clock=clock)
