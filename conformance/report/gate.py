"""The gate's judgement: one outcome per case and check, known divergences applied, and the verdict.

    check failed, not listed      failed    fails the gate
    check failed, listed          xfailed   expected: does not fail the gate
    check passed, listed          xpassed   strict: fails the gate ("remove it from the file")
    check passed, not listed      passed
    an example hung (its ranks did not answer within its budget), listed or not: hang, fails the gate
    case errored (dead rank, broken module), or ran no example, listed or not: error, fails the gate
    case not run under its tool, saying why (``CaseResult.skipped``): skipped, fails nothing by itself; a gate
    whose every check was skipped checked nothing, and fails

Compared with a baseline ``results.json``: checks newly failing (failing now, not failing there) and fixed
(failing there, passing now). Outcomes and comparisons name a case's record (``CaseResult.record_id``: the case
id, with ``@<tool>`` under a compute-sanitizer tool); a known divergence names the case id and applies under every
tool, and a sanitizer's finding is an error, which no entry lists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from conformance.report.known import Known
from conformance.results import CHECKS, VERDICT_KEY, CaseResult

STATUSES = ("passed", "failed", "xfailed", "xpassed", "error", "hang", "skipped")
FAILING = ("failed", "xpassed", "error", "hang")  # the statuses that fail the gate


@dataclass
class CheckOutcome:
    """The gate's verdict on one check of one case; ``message`` is one line, ``detail`` the full text."""

    case_id: str  # the case's record id (``CaseResult.record_id``)
    check: str
    status: str
    seconds: float
    message: str = ""
    detail: str = ""
    known: Known | None = None

    @property
    def fails_gate(self) -> bool:
        return self.status in FAILING


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _divergence(failure: str, check: str) -> str:
    """The first divergence line of ``check`` in a failure report (else the report's first line)."""
    return next((line for line in failure.splitlines() if f"[{check}," in line), _first_line(failure))


def _replayed(case: CaseResult) -> str:
    return f"\nreplayed once: {case.replayed}" if case.replay_outcome else ""


def _on_replay(case: CaseResult) -> str:
    return f" ({case.replayed} on replay)" if case.replay_outcome else ""


def judge(cases: list[CaseResult], known: dict[tuple[str, str], Known], known_file: str) -> list[CheckOutcome]:
    """Every check of every case, in order, with its status (see the module docstring)."""
    outcomes = []
    for case in cases:
        share = case.seconds / len(CHECKS)
        for check in CHECKS:
            entry = known.get((case.case_id, check))
            o = CheckOutcome(case.record_id, check, "passed", share, known=entry)
            if case.hang is not None:
                o.status = "hang"
                o.message = f"hang: {case.hang.summary()}{_on_replay(case)}; replay: {case.hang.replay}"
                o.detail = case.problem + _replayed(case)
            elif case.problem:
                o.status, o.message = "error", f"error: {_first_line(case.problem)}"
                o.detail = case.problem + _replayed(case)
            elif case.skipped:
                o.status, o.message = "skipped", f"skipped: {case.skipped}"
            elif case.check_failed(check):
                if entry:
                    o.status, o.message = "xfailed", f"expected failure: {entry.reason} ({entry.link})"
                else:
                    o.status = "failed"
                    o.message = f"{_divergence(case.failure, check)}{_on_replay(case)}; replay: {case.replay}"
                o.detail = case.failure + _replayed(case)
            elif entry:
                o.status = "xpassed"
                o.message = (f"{case.case_id} {check} passes but {known_file} lists it as a known divergence "
                             f"({entry.reason}): remove it from the file")
            outcomes.append(o)
    return outcomes


def counts(outcomes: list[CheckOutcome]) -> dict[str, int]:
    """How many checks have each status."""
    return {s: sum(o.status == s for o in outcomes) for s in STATUSES}


def passes(outcomes: list[CheckOutcome], mutation_ok: bool = True) -> bool:
    """The gate's verdict: no unlisted failure, no error, no hang, no strict XPASS, some check not skipped, and the
    mutation run (if any) clean."""
    return mutation_ok and not any(o.fails_gate for o in outcomes) and any(o.status != "skipped" for o in outcomes)


def _failing_checks(record: dict) -> set[str]:
    """The checks a ``results.json`` case record failed (an error or a hang fails all of them; a verdict of ``error``
    or ``hang`` too; a case not run, ``skipped``, failed none)."""
    if record.get("error"):
        return set(CHECKS)
    return {c for c in CHECKS if record.get("verdict", {}).get(VERDICT_KEY[c], "pass") not in ("pass", "skipped")}


def load_baseline(path: Path) -> dict[str, dict]:
    """The case records of a baseline ``results.json`` by record id (a results.json older than record ids: by case
    id); ValueError naming the file if unreadable."""
    try:
        data = json.loads(path.read_text())
        records = {r.get("record_id") or r["case_id"]: r for r in data["cases"]}
        wrong = next((rid for rid, r in records.items() if not isinstance(rid, str)
                      or not isinstance(r.get("verdict", {}), dict)), None)
        if wrong is not None:
            raise TypeError(f"case {wrong!r}: expected a record id and a verdict object")
        return records
    except FileNotFoundError:
        raise ValueError(f"--baseline {path}: no such file (a results.json of an earlier gate or run)") from None
    except RecursionError:
        raise ValueError(f"--baseline {path}: not a conformance results.json (lists or objects nested too "
                         "deep)") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:  # JSON and decoding errors are ValueErrors
        raise ValueError(f"--baseline {path}: not a conformance results.json ({type(e).__name__}: {e})") from None
    except OSError as e:
        raise ValueError(f"--baseline {path}: cannot be read ({e.strerror}); expected a results.json of an earlier "
                         "gate or run") from None


def compare(cases: list[CaseResult], baseline: dict[str, dict]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(newly failing, fixed)`` as (record id, check) pairs; a record absent from the baseline counts as passing."""
    newly, fixed = [], []
    for case in cases:
        now = set(CHECKS) if case.problem else {c for c in CHECKS if case.check_failed(c)}
        rid = case.record_id
        before = _failing_checks(baseline[rid]) if rid in baseline else set()
        newly += [(rid, c) for c in CHECKS if c in now - before]
        fixed += [(rid, c) for c in CHECKS if c in before - now]
    return newly, fixed
