"""What one run yields, in one place: the checks of a case, case ids, the replay command and the result types.

Every example has three checks (named by ``conformance.check.divergence``): each API of the scenario contract's
``APIS`` against the model, and the two APIs against each other (``CHECKS`` is their order in reports;
``VERDICT_KEY`` the key of each in a case's verdicts, an API's own check keyed by the API's name). A case is one
backend x scenario x world size, named by its stable id ``<backend>-<scenario>-<R>r`` (the pytest id of
``test_conformance``); under compute-sanitizer tools each case runs once per tool, a record of its own:
``record_id`` is the case id with ``@<tool>``. One example's outcome is an :class:`ExampleResult` (its
:class:`Divergence` list, empty when it passed); a case folds its examples into a :class:`CaseResult`, the record
``results.json`` holds. A case passes only when examples ran, every one of them to a verdict, and none failed: an
error, or no example at all, is never a pass. An example whose ranks do not all answer within its budget
(``conformance.harness.budget``) is a :class:`Hang`: the case's verdict is ``hang``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from conformance.check.divergence import Divergence, between, vs_model
from conformance.kit.patterns import compact
from conformance.kit.scenario import APIS

if TYPE_CHECKING:
    from conformance.check.observation import RankObservation
    from conformance.kit.example_settings import ExampleSettings


# ------------------------------------------------------------------------------------------------ the checks

CHECKS: tuple[str, ...] = (*(vs_model(api) for api in APIS), between(*APIS))
VERDICT_KEY: dict[str, str] = {**{vs_model(api): api for api in APIS}, between(*APIS): between(*APIS)}

# ---------------------------------------------------------------------------------------- case ids and replay

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


def record_id(case: str, sanitizer: str = "") -> str:
    """A case's record in a run: its id, with ``@<tool>`` when it ran under a compute-sanitizer tool."""
    return f"{case}@{sanitizer}" if sanitizer else case


def replay_command(scenario: str, world_size: int, backend: str, params: dict, chunk: int | None = None,
                   num_warps: int | None = None, scale: str = "small", sanitizer: str = "") -> str:
    """A shell command that runs exactly this example again: its params (each long list drawn as a pattern
    written as its spec, ``conformance.kit.patterns.compact``), its ``scale`` past ``small``, its trace ``chunk``
    and ``num_warps`` where given, and the compute-sanitizer tool it ran under, if any."""
    return (f"python -m conformance run --scenario {scenario} --ranks {world_size} --backend {backend} "
            + (f"--scale {scale} " if scale != "small" else "")
            + (f"--sanitize {sanitizer} " if sanitizer else "")
            + (f"--chunk {chunk} " if chunk is not None else "")
            + (f"--num-warps {num_warps} " if num_warps is not None else "")
            + f"--params {shlex.quote(json.dumps(compact(params), separators=(',', ':')))}")


def params_digest(previous: str, params: dict, settings: ExampleSettings | None = None) -> str:
    """``previous`` chained with one example's params and settings: equal digests mean the same examples in the
    same order."""
    text = previous + json.dumps(params, sort_keys=True, separators=(",", ":"))
    if settings is not None:
        text += json.dumps(asdict(settings), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------- the results

NO_EXAMPLE = "no example ran to a verdict"  # a case's problem when none ran: it has nothing to pass on


@dataclass
class ExampleResult:
    """Outcome of one example: divergences (empty = pass), timing, compiles, variants, raw observations."""

    scenario: str
    world_size: int
    backend: str
    params: dict
    divergences: list[Divergence]
    seconds: float
    compiles: dict[str, int] = field(default_factory=dict)
    variants: dict[str, int | None] = field(default_factory=dict)
    observations: list[RankObservation] = field(default_factory=list, repr=False)
    timings: dict[str, float] = field(default_factory=dict)  # seconds by phase (``harness.example._breakdown``)
    jit: dict[str, int] = field(default_factory=dict)  # kernels Triton compiled / loaded from its disk cache
    settings: ExampleSettings | None = None  # the harness's settings beside the params (the trace chunk, slots)
    sanitizer: str = ""  # the compute-sanitizer tool the ranks ran under ("" when none)
    budget: float = 0.0  # seconds it was allowed on the ranks (``conformance.harness.budget``); 0: not known
    ranks_seconds: float = 0.0  # seconds it took on the ranks (the pool's job, round trip)

    @property
    def ok(self) -> bool:
        return not self.divergences

    @property
    def replay(self) -> str:
        if self.settings is None:
            return replay_command(self.scenario, self.world_size, self.backend, self.params, sanitizer=self.sanitizer)
        s = self.settings
        return replay_command(self.scenario, self.world_size, self.backend, self.params, s.chunk, s.num_warps, s.scale,
                              self.sanitizer)

    def report(self, limit: int = 6) -> str:
        """Human-readable divergence report with the replay command."""
        lines = [f"{self.scenario} on {self.world_size} rank(s), {self.backend}: {len(self.divergences)} divergence(s)"]
        lines += [str(d) for d in self.divergences[:limit]]
        if len(self.divergences) > limit:
            lines.append(f"... and {len(self.divergences) - limit} more")
        lines.append(f"replay: {self.replay}")
        return "\n".join(lines)


@dataclass
class Hang:
    """An example whose ranks did not all answer within its budget: every rank was killed and the pool is rebuilt.

    ``ranks``: those that had not answered; ``doing``: what each of them last said it was doing
    (``iris.ranks.progress``); ``timeout``: the example's budget in seconds; ``replay``: the command that runs it
    again; ``stacks``: rank -> its Python stack's frames when it was killed (``iris.ranks.stacks``), where it wrote
    them."""

    ranks: list[int]
    doing: dict[int, str]
    timeout: float
    replay: str
    stacks: dict[int, str] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: which ranks did not finish within how long, and where each was."""
        which = ("rank " if len(self.ranks) == 1 else "ranks ") + ", ".join(map(str, self.ranks))
        where = "; ".join(f"rank {r} at: {self.doing.get(r, 'unknown')}" for r in self.ranks)
        return f"{which} did not finish within the example's budget of {self.timeout:g} s ({where})"


@dataclass
class CaseResult:
    """One scenario x world size: per-API verdicts over every example run.

    ``verdict`` is what the examples found (``FAIL`` where one failed the check); the case's verdict of record is
    ``reported_verdict``: for every check that did not fail, ``hang`` when an example hung (``hang``), else ``error``
    when the case has a ``problem``. A hang is a problem too (its ``error`` holds the pool's message).
    """

    scenario: str
    world_size: int
    backend: str
    sanitizer: str = ""  # the compute-sanitizer tool its ranks ran under ("" when none)
    examples: int = 0  # examples run to a verdict (``add``)
    started: int = 0  # examples started on the ranks (``drew``): each ends in ``add`` or in ``error``
    seconds: float = 0.0
    verdict: dict[str, str] = field(
        default_factory=lambda: {"triton": "pass", "gluon": "pass", "triton vs gluon": "pass"}
    )
    compiles_after_warmup: int = 0
    warm_examples: int = 0
    jit_compiled: int = 0  # kernels Triton compiled over the case (every rank and API), and loaded from its cache
    jit_loaded: int = 0
    ahead_variants: int = 0  # compiled ahead (``harness.compile_ahead``): distinct variants, of them compiled, seconds
    ahead_compiled: int = 0
    ahead_seconds: float = 0.0
    ahead_error: str = ""
    variants_per_config: dict[str, int | None] = field(default_factory=lambda: {"triton": None, "gluon": None})
    failure: str = ""
    error: str = ""
    params_digest: str = ""  # of every example drawn, in order (``drew``): the same seed gives the same digest
    failing_params: dict | None = None  # the (shrunk) example that failed, or the one a rank failed on
    failing_settings: ExampleSettings | None = None  # the harness's settings of that example
    replay: str = ""  # the command that runs ``failing_params`` again
    replay_outcome: str = ""  # "reproduced" / "not reproduced" once the failure was replayed, else ""
    # under a sanitizer tool, the failing example run once more without it (the control): that run's ``status``
    # (pass, FAIL, error, hang), so a failure only the tool's run shows says so; "" when not run
    control_outcome: str = ""
    not_ours: list[dict] = field(default_factory=list)  # sanitizer reports that are not ours (tool, why, report, count)
    skipped: str = ""  # why the case ran no example under its tool (its ranks cannot run as the tool needs); "" ran
    hang: Hang | None = None  # the example that hung, if one did (the case ran no example after it)
    budget_used: float = 0.0  # the largest share of its budget an example took on the ranks (1 or more: it hung)
    seen: set = field(default_factory=set, repr=False)

    @property
    def problem(self) -> str:
        """Why the case has no verdict of its own ('' when it has one): its ``error``, or that no example ran, or
        that an example started and never ran to a verdict."""
        if self.error:
            return self.error
        if self.skipped:  # not run, and saying so: no verdict, and no problem either
            return ""
        if not self.examples:
            return NO_EXAMPLE
        if self.started > self.examples:
            return f"{self.started - self.examples} of {self.started} examples did not run to a verdict"
        return ""

    @property
    def replayed(self) -> str:
        """What the failure's replays showed, for reports: ``replay_outcome``, then the control's outcome
        ("reproduced; without initcheck: pass"); "" when not replayed."""
        control = f"; without {self.sanitizer}: {self.control_outcome}" if self.control_outcome else ""
        return self.replay_outcome + control

    @property
    def ok(self) -> bool:
        """Examples ran, every one to a verdict, and no check failed."""
        return not self.skipped and not self.problem and all(v == "pass" for v in self.verdict.values())

    @property
    def status(self) -> str:
        """The case in one word: ``hang`` (an example hung), ``error`` (another ``problem``), ``skipped`` (not run,
        ``skipped`` says why), ``FAIL`` (a check failed) or ``pass``."""
        if self.hang is not None:
            return "hang"
        if self.problem:
            return "error"
        if self.skipped:
            return "skipped"
        return "pass" if self.ok else "FAIL"

    @property
    def reported_verdict(self) -> dict[str, str]:
        """The verdict of each check, as reports give it: ``FAIL`` where an example failed it, else ``hang`` when an
        example hung, ``error`` when the case has another ``problem``, ``skipped`` when it was not run, else
        ``pass``."""
        instead = ("hang" if self.hang is not None else "error" if self.problem else "skipped" if self.skipped
                   else "pass")
        return {key: instead if v == "pass" else v for key, v in self.verdict.items()}

    @property
    def case_id(self) -> str:
        return case_id(self.backend, self.scenario, self.world_size)

    @property
    def record_id(self) -> str:
        """The case id, with ``@<tool>`` when its ranks ran under a compute-sanitizer tool (``record_id``)."""
        return record_id(self.case_id, self.sanitizer)

    def drew(self, params: dict, settings: ExampleSettings | None = None) -> None:
        """Record that an example with ``params`` (and ``settings``) is about to run."""
        self.started += 1
        self.params_digest = params_digest(self.params_digest, params, settings)

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
        if result.budget:
            self.budget_used = max(self.budget_used, round(result.ranks_seconds / result.budget, 4))
        self.jit_loaded += result.jit.get("loaded", 0)
        for api, count in result.variants.items():
            if count is not None:
                self.variants_per_config[api] = max(count, self.variants_per_config.get(api) or 0)
        for d in result.divergences:
            self.verdict[VERDICT_KEY[d.check]] = "FAIL"
        if result.divergences and not self.failure:
            self.failure = result.report()
