"""The gate's Markdown summary, fit for a CI job summary page.

Verdict and counts; what fails the gate (with replay commands and whether each failure reproduced); the cases
that hung (which ranks, where each was, the budget, the replay); the cases not run, and why; the pass/fail table of
every case and check; newly failing and fixed checks against a baseline; the sanitizer reports that are not ours;
the slowest cases; the mutation score when the mutation self-test ran. Cases are named by their record ids
(``<case id>@<tool>`` under a compute-sanitizer tool).
"""

from __future__ import annotations

from conformance.report.gate import CheckOutcome, counts
from conformance.results import CHECKS, CaseResult

MARK = {"passed": "pass", "failed": "**FAIL**", "xfailed": "xfail", "xpassed": "**XPASS**", "error": "**ERROR**",
        "hang": "**HANG**", "skipped": "skipped"}
SLOWEST = 10


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def summary(cases: list[CaseResult], outcomes: list[CheckOutcome], meta: dict, *, passed: bool,
            comparison: tuple[list, list] | None = None, mutation: dict | None = None) -> str:
    """The Markdown text (see the module docstring)."""
    n = counts(outcomes)
    lines = [f"# Conformance gate: {'PASSED' if passed else 'FAILED'}", "",
             f"backend {meta['backend']}, profile {meta['profile']}, world sizes {meta['world_sizes']}, "
             f"seed {meta['seed'] if meta['seed'] is not None else 'random'}"
             f"{_sanitized(meta)}: {len(cases)} cases, {len(outcomes)} checks "
             f"in {meta['seconds']:.0f} s", "",
             "| passed | failed | expected failures | strict XPASS | errors | hangs | skipped |",
             "| --- | --- | --- | --- | --- | --- | --- |",
             f"| {n['passed']} | {n['failed']} | {n['xfailed']} | {n['xpassed']} | {n['error']} | {n['hang']} "
             f"| {n['skipped']} |", ""]
    blocking = [o for o in outcomes if o.fails_gate]
    by_id = {c.record_id: c for c in cases}
    if blocking:
        lines += ["## What fails the gate", "", "| case | check | status | why | replayed | replay |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for o in blocking:
            c = by_id[o.case_id]
            lines.append(f"| `{o.case_id}` | {o.check} | {MARK[o.status]} | {_cell(o.message)} | "
                         f"{_cell(c.replayed) or '-'} | {f'`{_cell(c.replay)}`' if c.replay else '-'} |")
        lines.append("")
    hung = [c for c in cases if c.hang is not None]
    if hung:
        lines += ["## Hangs", "", "| case | ranks that did not finish | where each was | budget | replayed | replay |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for c in hung:
            where = "; ".join(f"rank {r}: {c.hang.doing.get(r, 'unknown')}" for r in c.hang.ranks)
            lines.append(f"| `{c.record_id}` | {', '.join(map(str, c.hang.ranks))} | {_cell(where)} | "
                         f"{c.hang.timeout:g} s | {_cell(c.replayed) or '-'} | `{_cell(c.hang.replay)}` |")
        lines.append("")
    skipped = [c for c in cases if c.skipped]
    if skipped:
        lines += ["## Not run", "", "| case | why |", "| --- | --- |"]
        lines += [f"| `{c.record_id}` | {_cell(c.skipped)} |" for c in skipped] + [""]
    expected = [o for o in outcomes if o.status == "xfailed"]
    if expected:
        lines += ["## Expected failures (known divergences)", ""]
        lines += [f"- `{o.case_id}` {o.check}: {o.known.reason} ({o.known.link})" for o in expected]
        lines.append("")
    if comparison is not None:
        newly, fixed = comparison
        lines += ["## Against the baseline", "", f"newly failing: {len(newly)}, fixed: {len(fixed)}", ""]
        lines += [f"- newly failing: `{cid}` {check}" for cid, check in newly]
        lines += [f"- fixed: `{cid}` {check}" for cid, check in fixed]
        lines.append("")
    if mutation is not None:
        lines += _mutation(mutation)
    lines += _not_ours(cases)
    lines += ["## Slowest cases", "", "| case | seconds | examples |", "| --- | --- | --- |"]
    for c in sorted(cases, key=lambda c: -c.seconds)[:SLOWEST]:
        lines.append(f"| `{c.record_id}` | {c.seconds:.1f} | {c.examples} |")
    lines += ["", "## Every case", "", "| case | " + " | ".join(CHECKS) + " | examples | seconds |",
              "| --- | " + " | ".join("---" for _ in CHECKS) + " | --- | --- |"]
    status = {(o.case_id, o.check): o.status for o in outcomes}
    for c in cases:
        marks = " | ".join(MARK[status[(c.record_id, check)]] for check in CHECKS)
        lines.append(f"| `{c.record_id}` | {marks} | {c.examples} | {c.seconds:.1f} |")
    return "\n".join(lines) + "\n"


def _sanitized(meta: dict) -> str:
    """The compute-sanitizer tools of the run, for the summary's first line ("" when none)."""
    tools = meta.get("sanitize")
    return f", under compute-sanitizer {', '.join(tools)}" if tools else ""


def _not_ours(cases: list[CaseResult]) -> list[str]:
    """The sanitizer reports that are not ours, per record: count, the tool's first lines, and why."""
    rows = [(c, e) for c in cases for e in c.not_ours]
    if not rows:
        return []
    lines = ["## Sanitizer reports that are not ours", "", "| case | reports | the tool's words | why |",
             "| --- | --- | --- | --- |"]
    lines += [f"| `{c.record_id}` | {e['count']} | `{_cell(e['report'])}` | {_cell(e['why'])} |" for c, e in rows]
    return lines + [""]


def _mutation(mutation: dict) -> list[str]:
    """The mutation score section from a ``mutate`` report (``mutants[].status``) and its exit code."""
    mutants = mutation.get("mutants", [])
    killed = sum(m["status"] == "killed" for m in mutants)
    lines = ["## Mutation score", ""]
    if mutation.get("problem"):
        return lines + [f"the mutation self-test did not finish: {mutation['problem']}", ""]
    lines.append(f"{killed}/{len(mutants)} mutants killed ({100 * killed / max(len(mutants), 1):.0f}%)")
    lines += [f"- `{m['name']}` {m['status']}: {m['breaks']}" for m in mutants if m["status"] != "killed"]
    return lines + [""]
