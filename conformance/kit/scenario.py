"""The scenario API: what one paired scenario module provides, and the registry that finds them.

A scenario module in ``conformance/scenarios/`` defines ``SCENARIO = Scenario(...)``:

- ``triton_kernel`` / ``gluon_kernel``: the same work through ``DeviceContext`` and ``IrisDeviceCtx``,
  with the same parameter names. Both read rank and world size from the context at run time
  (``DeviceContext.initialize(ctx_t, tracing=...)``, then ``ctx.rank``/``ctx.world_size``, as the Gluon kernel
  uses ``ctx.cur_rank``/``ctx.num_ranks``), so one compile serves every rank. A Triton kernel may instead take
  both ``rank: tl.constexpr, world: tl.constexpr`` and pass them to ``DeviceContext.initialize``: the
  compile-time form upstream code uses, one compile per rank; its module docstring says why it needs it
  (``tracing_1d_address`` keeps it to check that form). The Gluon kernel never takes them;
- ``params(world_size)``: a Hypothesis strategy of one example's parameters (a dict of plain values);
- ``setup(rank, p)``: allocates and fills named heap buffers on every rank (``rank.buffer(...)``); ``rank`` is a
  ``RankView`` (``conformance.kit.rank_view``): what a scenario may use of a rank;
- ``launch(kernel, rank, p)``: launches ``kernel`` (either API's) with those buffers, passing
  ``**rank.world_constexprs`` (``world_constexprs``: the ``rank``/``world`` the kernel takes, if any; nothing
  otherwise) before the other constexpr keywords;
- ``model(p, world_size)``: the events each rank must record and the memory each rank must end
  with, in plain Python (``conformance.check.model``). A model that depends on the trace chunk takes a third
  argument, the example's ``ExampleSettings`` (``conformance.kit.example_settings``): ``model(p, world_size,
  settings)`` reads ``settings.chunk``.

A scenario is named by its module name (``store``), or by the dotted path of a module of a scenario package: the
packages are ``conformance.scenarios`` and those ``IRIS_SCENARIO_PACKAGES`` lists (a comma list; the tests list theirs
of test-only scenarios). Any other name is refused (``is_scenario``) without being imported.

Any world size R >= 1 runs every scenario; one that really cannot run on some R says so with a
``WorldConstraint`` (a rule and its reason). The trace buffers of an example hold ``max_events`` plus a chunk
per program (``max_programs``: record semantics v2 gives every program that initializes tracing a chunk of
slots), and at the GPU scale at least what the example itself records and launches (``conformance.harness.
sizing``); an overflow scenario sets ``overflow_at``, the trace slots it asks for, read from its own params.
Runs without ``--ranks`` use ``default_world_sizes()``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import os
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conformance.kit.example_settings import ExampleSettings

if TYPE_CHECKING:
    from conformance.check.model import Model
    from conformance.kit.rank_view import RankView

APIS = ("triton", "gluon")  # the two device APIs every scenario pairs, in the order reports give them
WORLD_CONSTEXPRS = ("rank", "world")  # a Triton kernel's compile-time rank and world size, if it takes them
PACKAGE = "conformance.scenarios"  # the scenarios, each named by its module name
PACKAGES_ENV = "IRIS_SCENARIO_PACKAGES"  # more packages of scenario modules, a comma list (named by dotted path)
BASE_WORLD_SIZES = (1, 2, 4)
MANY_GPUS = 8  # from this many visible GPUs on, the default world sizes add one rank per GPU


@functools.cache
def default_world_sizes() -> tuple[int, ...]:
    """1, 2, 4, plus the number of visible GPUs G when G >= 8 (one rank per GPU on a multi-GPU node)."""
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return BASE_WORLD_SIZES + ((gpus,) if gpus >= MANY_GPUS and gpus not in BASE_WORLD_SIZES else ())


@dataclass(frozen=True)
class WorldConstraint:
    """A world-size rule a scenario really needs (``accepts(R)``), with the reason shown when it refuses an R."""

    accepts: Callable[[int], bool]
    reason: str


@dataclass(frozen=True)
class Scenario:
    """One paired scenario (see the module docstring for each member's contract)."""

    name: str
    description: str  # one sentence, what ``python -m conformance list`` shows (``first_sentence(__doc__)``)
    triton_kernel: object
    gluon_kernel: object
    params: Callable
    setup: Callable[[RankView, dict], None]
    launch: Callable[[Any, RankView, dict], None]
    model: Callable[..., Model]
    world_constraint: WorldConstraint | None = None  # None: any R >= 1
    max_events: int = 1024  # events one example records per rank and API (room beyond what the model expects)
    max_programs: int = 256  # program instances one example starts per rank and API, every launch counted
    waits_on_peers: bool = False  # a rank's kernel waits for what a peer's kernel does: the ranks' must run at once
    overflow_at: Callable[[dict], int] | None = None  # an overflow scenario's trace slots, from its params
    ref: str = ""  # what load() was given (a name, or a dotted module path): the rank side loads it the same way
    where: str = ""  # the module's file, for messages

    def refusal(self, world_size: int) -> str | None:
        """Why this scenario cannot run on ``world_size`` ranks, or None when it can."""
        if world_size < 1:
            return f"{self.name}: world size {world_size} is not a world (expected R >= 1)"
        c = self.world_constraint
        if c is not None and not c.accepts(world_size):
            return f"{self.name} refuses {world_size} rank(s): {c.reason}"
        return None

    @property
    def world_sizes(self) -> tuple[int, ...]:
        """The default world sizes (``default_world_sizes()``) this scenario accepts."""
        return tuple(ws for ws in default_world_sizes() if self.refusal(ws) is None)

    def compile_key(self, params: dict) -> tuple:
        """The example's compile-time values: params named like a constexpr kernel parameter, and dtypes."""
        constexprs = set()
        for kernel in (self.triton_kernel, self.gluon_kernel):
            fn = getattr(kernel, "fn", kernel)
            constexprs |= {n for n, p in inspect.signature(fn).parameters.items() if "constexpr" in str(p.annotation)}
        return tuple(sorted((k, str(v)) for k, v in params.items() if k in constexprs or k.endswith("dtype")))

    def trace_slots(self, params: dict, chunk: int, room: tuple[int, int] | None = None) -> int:
        """Trace slots per rank for one example: ``overflow_at(params)`` for an overflow scenario, else room for
        ``max_events`` events and a chunk for each of ``max_programs`` programs; ``room`` = (events, programs): what
        the example needs (at a scale ``sized_by_model``, ``conformance.harness.sizing``), where it needs more."""
        if self.overflow_at is not None:
            return self.overflow_at(params)
        declared = self.max_events + self.max_programs * chunk
        if room is None:
            return declared
        events, programs = room
        return max(declared, events + programs * chunk)

    def settings(self, params: dict, chunk: int | None = None, *, num_warps: int | None = None,
                 scale: str = "small", room: tuple[int, int] | None = None) -> ExampleSettings:
        """The harness's settings of an example of ``params`` with trace chunk ``chunk`` (default
        ``iris.tracing.core.DEFAULT_CHUNK``, what a replay without ``--chunk`` runs with), ``num_warps`` for the
        launches that give none (None: as written), drawn at ``scale``; ``room``: as ``trace_slots``."""
        from iris.tracing.core import DEFAULT_CHUNK

        chunk = DEFAULT_CHUNK if chunk is None else chunk
        return ExampleSettings(chunk, self.trace_slots(params, chunk, room), num_warps, scale)

    def expected(self, params: dict, world_size: int, settings: ExampleSettings) -> Model:
        """The model of one example: ``model(params, world_size)``, or ``model(params, world_size, settings)`` for
        a model that takes a third parameter (one that depends on the trace chunk)."""
        if len(inspect.signature(self.model).parameters) >= 3:
            return self.model(params, world_size, settings)
        return self.model(params, world_size)

    def kernel(self, api: str):
        """The kernel of ``api`` ("triton" or "gluon")."""
        if api not in APIS:
            raise ValueError(f"api={api!r}, expected one of {APIS}")
        return self.triton_kernel if api == "triton" else self.gluon_kernel


def first_sentence(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, on one line: a scenario's ``description``
    (``description=first_sentence(__doc__)``), whole however the docstring wraps it."""
    paragraph = " ".join((doc or "").strip().split("\n\n")[0].split())
    end = re.search(r"[.!?](?=\s|$)", paragraph)
    return paragraph[: end.end()] if end else paragraph


class ScenarioError(Exception):
    """A scenario module that is wrong (cannot be imported, no SCENARIO, kernels that do not pair, ...).

    The message names the module and the problem; the case of that scenario fails with it and the run goes on.
    """


def scenario_packages() -> tuple[str, ...]:
    """The packages whose modules are scenarios: ``conformance.scenarios``, then those ``IRIS_SCENARIO_PACKAGES``
    lists (read at each call: rank processes inherit it)."""
    listed = [p.strip() for p in os.environ.get(PACKAGES_ENV, "").split(",") if p.strip()]
    return tuple(dict.fromkeys([PACKAGE, *listed]))


def package_scenarios(package: str) -> list[str]:
    """The scenario modules of ``package`` by short name, sorted: its modules less the private ones (``_name``).

    Imports the package, never its modules; ScenarioError naming ``IRIS_SCENARIO_PACKAGES`` when it is no package.
    """
    try:
        path = getattr(importlib.import_module(package), "__path__", None)
    except Exception as e:
        raise ScenarioError(f"{PACKAGES_ENV} lists {package!r}, which cannot be imported ({type(e).__name__}: {e}); "
                            "expected a comma list of packages of scenario modules") from None
    if path is None:
        raise ScenarioError(f"{PACKAGES_ENV} lists {package!r}, a module; expected a comma list of packages of "
                            "scenario modules")
    return sorted(m.name for m in pkgutil.iter_modules(path) if not m.name.startswith("_") and not m.ispkg)


def _modules() -> list[str]:
    return package_scenarios(PACKAGE)


def is_scenario(ref: str) -> bool:
    """Whether ``ref`` names a scenario: a module name of ``conformance/scenarios``, or ``<package>.<module>`` of a
    module of a scenario package (``scenario_packages``). Imports no module that is not one."""
    package, _, short = ref.rpartition(".")
    if not package:
        return ref in names()
    return package in scenario_packages() and short in package_scenarios(package)


def canonical(ref: str) -> str:
    """The one spelling of scenario ``ref``: a module of ``conformance.scenarios`` by its short name (``store`` for
    ``conformance.scenarios.store``), any other ref as given. Imports nothing."""
    package, _, short = ref.rpartition(".")
    return short if package == PACKAGE and short else ref


def known_scenarios() -> str:
    """What a scenario ref may be, for a refusal: every scenario name, and the modules of the other packages."""
    said = f"known scenarios: {', '.join(names())}"
    for package in scenario_packages()[1:]:
        said += f"; in {package}: {', '.join(package_scenarios(package))}"
    return said + f" (a dotted path names a module of {PACKAGE} or of a package {PACKAGES_ENV} lists)"


def _parameters(kernel) -> list[str]:
    fn = getattr(kernel, "fn", kernel)
    return list(inspect.signature(fn).parameters)


def world_constexprs(kernel, rank: int, world_size: int) -> dict[str, int]:
    """The launch keywords for the ``WORLD_CONSTEXPRS`` ``kernel`` takes: ``{"rank": rank, "world": world_size}``
    for a Triton kernel in the compile-time-rank form, ``{}`` for one that reads both from the context (every
    Gluon kernel, and most Triton kernels). Launch with ``kernel[grid](..., **world_constexprs(...), BLOCK=...)``.
    """
    values = {"rank": rank, "world": world_size}
    taken = _parameters(kernel)
    return {name: values[name] for name in WORLD_CONSTEXPRS if name in taken}


def check(scenario: Scenario, where: str) -> None:
    """Raise :class:`ScenarioError` naming ``where`` if ``scenario`` breaks the scenario contract."""
    for member in ("params", "setup", "launch", "model"):
        if not callable(getattr(scenario, member)):
            raise ScenarioError(f"{where}: {member} must be a function, got {getattr(scenario, member)!r}")
    if scenario.overflow_at is not None and not callable(scenario.overflow_at):
        raise ScenarioError(f"{where}: overflow_at must be a function of the params, got {scenario.overflow_at!r}")
    constraint = scenario.world_constraint
    if constraint is not None and not (isinstance(constraint, WorldConstraint) and callable(constraint.accepts)
                                       and constraint.reason):
        raise ScenarioError(f"{where}: world_constraint must be WorldConstraint(accepts, reason), got {constraint!r}")
    triton_all = _parameters(scenario.triton_kernel)
    taken = [n for n in WORLD_CONSTEXPRS if n in triton_all]
    if taken and len(taken) != len(WORLD_CONSTEXPRS):
        raise ScenarioError(
            f"{where}: triton_kernel takes {taken[0]} but not the other of {', '.join(WORLD_CONSTEXPRS)}; take both "
            "(compile-time rank) or neither (DeviceContext.initialize(ctx_t, ...) reads them from the context)"
        )
    triton = [n for n in triton_all if n not in WORLD_CONSTEXPRS]
    gluon = _parameters(scenario.gluon_kernel)
    if triton != gluon:
        raise ScenarioError(
            f"{where}: triton_kernel and gluon_kernel must take the same parameters (the Triton kernel may also "
            f"take {', '.join(WORLD_CONSTEXPRS)}); triton has {triton}, gluon has {gluon}"
        )


def load(name: str) -> Scenario:
    """The scenario ``name``: module ``conformance.scenarios.<name>``, or the dotted path of a module of a scenario
    package (``is_scenario``: test-only scenarios kept outside ``conformance/scenarios``, selected explicitly).

    KeyError for a name that is no scenario (nothing imported); :class:`ScenarioError` for a module that is wrong.
    """
    if not is_scenario(name):
        raise KeyError(f"unknown scenario {name!r}; {known_scenarios()}")
    if "." in name:
        module_name, short = name, name.rsplit(".", 1)[1]
        where = name.replace(".", "/") + ".py"
    else:
        module_name, short, where = f"{PACKAGE}.{name}", name, f"conformance/scenarios/{name}.py"
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise ScenarioError(f"{where}: importing it raised {type(e).__name__}: {e}") from e
    scenario = getattr(module, "SCENARIO", None)
    if not isinstance(scenario, Scenario):
        raise ScenarioError(f"{where} must define SCENARIO = Scenario(...)")
    if scenario.name != short:
        raise ScenarioError(f"{where} defines a scenario named {scenario.name!r}; use {short!r}")
    check(scenario, where)
    return dataclasses.replace(scenario, ref=name, where=where)


def names() -> list[str]:
    """Every scenario name, sorted."""
    return _modules()


def all_scenarios() -> list[Scenario]:
    """Every scenario, sorted by name (a broken module raises :class:`ScenarioError`)."""
    return [load(n) for n in names()]
