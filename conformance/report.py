"""Results of a conformance run: the summary table, the JSON results, one Perfetto trace per scenario.

A case is one backend x scenario x world size, named by its stable id ``<backend>-<scenario>-<R>r`` (the pytest
id of ``test_conformance``); each case has three checks (``CHECKS``), each with its own verdict.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from conformance.checks import VERDICT_KEY
from conformance.runner import ExampleResult
from iris.tracing.events import TRACE_FIELDS
from iris.tracing.export import write_trace
from iris.tracing.records import TraceRecords
from iris.tracing.timeline import RankTrace

_CASE_ID = re.compile(r"(?P<backend>[a-z]+)-(?P<scenario>[A-Za-z0-9_.]+)-(?P<world_size>[0-9]+)r")


def case_id(backend: str, scenario: str, world_size: int) -> str:
    """The stable id of a case: ``<backend>-<scenario>-<R>r``, as in ``test_conformance[<id>]``."""
    return f"{backend}-{scenario}-{world_size}r"


def parse_case_id(text: str) -> tuple[str, str, int]:
    """``(backend, scenario, world_size)`` of a case id; ValueError naming the expected form otherwise."""
    match = _CASE_ID.fullmatch(text)
    if not match:
        raise ValueError(f"case id {text!r} is not of the form <backend>-<scenario>-<R>r (e.g. cpu-store-2r)")
    return match["backend"], match["scenario"], int(match["world_size"])


def params_digest(previous: str, params: dict) -> str:
    """``previous`` chained with one example's params: equal digests mean the same examples in the same order."""
    text = previous + json.dumps(params, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class CaseResult:
    """One scenario x world size: per-API verdicts over every example run."""

    scenario: str
    world_size: int
    backend: str
    examples: int = 0
    seconds: float = 0.0
    verdict: dict[str, str] = field(
        default_factory=lambda: {"triton": "pass", "gluon": "pass", "triton vs gluon": "pass"}
    )
    compiles_after_warmup: int = 0
    warm_examples: int = 0
    jit_compiled: int = 0  # kernels Triton compiled over the case (every rank and API), and loaded from its cache
    jit_loaded: int = 0
    variants_per_config: dict[str, int | None] = field(default_factory=lambda: {"triton": None, "gluon": None})
    failure: str = ""
    error: str = ""
    params_digest: str = ""  # of every example drawn, in order (``drew``): the same seed gives the same digest
    failing_params: dict | None = None  # the (shrunk) example that failed, or the one a rank failed on
    replay: str = ""  # the command that runs ``failing_params`` again
    replay_outcome: str = ""  # "reproduced" / "not reproduced" once the failure was replayed, else ""
    seen: set = field(default_factory=set, repr=False)

    @property
    def ok(self) -> bool:
        return not self.error and all(v == "pass" for v in self.verdict.values())

    @property
    def case_id(self) -> str:
        return case_id(self.backend, self.scenario, self.world_size)

    def drew(self, params: dict) -> None:
        """Record that an example with ``params`` is about to run."""
        self.params_digest = params_digest(self.params_digest, params)

    def check_failed(self, check: str) -> bool:
        """Whether ``check`` (one of ``CHECKS``) failed in some example."""
        return self.verdict[VERDICT_KEY[check]] != "pass"

    def add(self, result: ExampleResult, compile_key: tuple) -> None:
        """Fold one example in; once its compile-time values were seen, any compile counts against warm-up."""
        self.examples += 1
        self.seconds += result.seconds
        if compile_key in self.seen:
            self.warm_examples += 1
            self.compiles_after_warmup += sum(result.compiles.values())
        self.seen.add(compile_key)
        self.jit_compiled += result.jit.get("compiled", 0)
        self.jit_loaded += result.jit.get("loaded", 0)
        for api, count in result.variants.items():
            if count is not None:
                self.variants_per_config[api] = max(count, self.variants_per_config.get(api) or 0)
        for d in result.divergences:
            self.verdict[VERDICT_KEY[d.check]] = "FAIL"
        if result.divergences and not self.failure:
            self.failure = result.report()


def variants_cell(variants: dict[str, int | None]) -> str:
    """``"<triton>/<gluon>"`` compiled variants per configuration across ranks; ``-`` where nothing compiled."""
    return "/".join("-" if variants.get(api) is None else str(variants[api]) for api in ("triton", "gluon"))


def summary_table(cases: list[CaseResult]) -> str:
    """Scenario x world size rows with a column per API, the cross check, examples, time and compiles.

    ``variants t/g``: the most compiled variants of the Triton / Gluon kernel across the ranks for one
    configuration (Gluon must be 1: one compile serves every rank; ``-`` under the interpreter).
    """
    head = ("scenario", "ranks", "triton", "gluon", "triton=gluon", "examples", "seconds", "compiles/ex",
            "variants t/g")
    rows = [head]
    for c in cases:
        verdict = ("ERROR",) * 3 if c.error else (c.verdict["triton"], c.verdict["gluon"], c.verdict["triton vs gluon"])
        per = f"{c.compiles_after_warmup / c.warm_examples:.2f}" if c.warm_examples else "-"
        rows.append((c.scenario, str(c.world_size), *verdict, str(c.examples), f"{c.seconds:.1f}", per,
                     variants_cell(c.variants_per_config)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    passed = sum(c.ok for c in cases)
    lines.append(f"{passed} passed, {len(cases) - passed} failed")
    return "\n".join(lines)


def write_results(path: Path, cases: list[CaseResult], meta: dict, extra: dict[str, dict] | None = None,
                  top: dict | None = None) -> None:
    """JSON results: run metadata and one record per case (plus ``extra[case_id]``), plus ``top``'s keys."""
    records = [{"case_id": c.case_id} | {k: v for k, v in asdict(c).items() if k != "seen"} | {"ok": c.ok}
               | (extra or {}).get(c.case_id, {}) for c in cases]
    path.write_text(json.dumps({"meta": meta, "cases": records} | (top or {}), indent=2))


def _records(rows: list[dict], rank: int, backend: str, tps: float, dropped: int, capacity: int) -> TraceRecords:
    data = np.array([[r[f] for r in rows] for f in TRACE_FIELDS], dtype=np.int64).reshape(len(TRACE_FIELDS), -1)
    return TraceRecords.from_fields(data, dropped, max(capacity, len(rows)), rank=rank, backend=backend,
                                    ticks_per_second=tps)


def write_example_trace(path: Path, result: ExampleResult) -> str:
    """Perfetto trace of one example: every rank of both APIs, aligned on each API's launch start.

    The format follows the suffix of ``path`` (``.json`` or ``.pftrace``).
    """
    traces = []
    for obs in result.observations:
        for api, a in obs["apis"].items():
            rec = _records(a["rows"], obs["rank"], obs["backend"], obs["ticks_per_second"], a["dropped"],
                           a["capacity"])
            traces.append(RankTrace(rec, a["window"][0], api))
    if not traces:
        raise ValueError(f"{result.scenario}: no observations to trace")
    clock = {"method": "each rank and API from its own launch start: a device clock read after a barrier",
             "error_bound_ns": None}
    return write_trace(path, traces, clock=clock)
