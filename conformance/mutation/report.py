"""Results of ``python -m conformance mutate``: an ``Outcome`` per mutant, the table, JSON report and kill matrix."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

STATUSES = ("killed", "survived", "skipped", "stale", "timeout", "error")


@dataclass
class Outcome:
    """What happened to one mutant. ``kills``: the failing cases (one unless ``--matrix``), in run order."""

    name: str
    file: str
    breaks: str
    status: str = "survived"
    kills: list[dict] = field(default_factory=list)
    cases_run: int = 0
    seconds: float = 0.0
    message: str = ""

    @property
    def killed_by(self) -> str:
        """``scenario@R (checks)`` of the first kill, or '' if none."""
        if not self.kills:
            return ""
        k = self.kills[0]
        more = f" +{len(self.kills) - 1} more" if len(self.kills) > 1 else ""
        return f"{k['scenario']}@{k['world_size']} ({', '.join(k['checks'])}){more}"


def table(outcomes: list[Outcome]) -> str:
    """Mutant, target file, status, killed by, cases run, seconds; and a count per status."""
    head = ("mutant", "file", "status", "killed by", "cases", "seconds")
    rows = [head] + [(o.name, o.file, o.status, o.killed_by or _first_line(o.message), str(o.cases_run),
                      f"{o.seconds:.0f}") for o in outcomes]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  -------")
    counts = {s: sum(o.status == s for o in outcomes) for s in STATUSES}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n or s in ("killed", "survived")))
    return "\n".join(lines)


def unique_kills(outcomes: list[Outcome]) -> str:
    """Kill matrix summary (``--matrix``): per scenario, how many mutants it kills and which only it kills."""
    kills: dict[str, list[str]] = {}
    only: dict[str, list[str]] = {}
    for o in outcomes:
        scenarios = dict.fromkeys(k["scenario"] for k in o.kills)
        for s in scenarios:
            kills.setdefault(s, []).append(o.name)
        if len(scenarios) == 1:
            only.setdefault(next(iter(scenarios)), []).append(o.name)
    lines = ["kill matrix: scenario, mutants killed, mutants killed by no other scenario"]
    for s, names in sorted(kills.items()):
        lines.append(f"  {s}: {len(names)}; only here: {', '.join(only.get(s, [])) or '-'}")
    return "\n".join(lines)


def _first_line(text: str, width: int = 90) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= width else line[: width - 3] + "..."


def write_report(path: Path, outcomes: list[Outcome], meta: dict) -> None:
    """The JSON report: ``meta`` and one record per mutant (see CONTRIBUTING.md for the fields)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "mutants": [asdict(o) for o in outcomes]}, indent=2))


def exit_code(outcomes: list[Outcome], survivors_allowed: bool = False) -> int:
    """0 when every mutant was killed or skipped (a bug this backend cannot show: the message says why), or, with
    ``survivors_allowed``, only survived; 1 otherwise."""
    allowed = {"killed", "skipped", "survived"} if survivors_allowed else {"killed", "skipped"}
    return 0 if all(o.status in allowed for o in outcomes) else 1
