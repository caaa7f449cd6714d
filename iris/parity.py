"""Triton/Gluon device-API parity: which classes are twins, how they are compared, the deliberate differences.

A Triton device module and its Gluon twin share a file name: ``iris/device/<name>.py`` and
``iris/experimental/<name>.py`` (``twin_file``). ``TWINS`` pairs the device class each such pair of modules defines
(found by reading the files, not by a list): the device contexts (``context.py``: ``DeviceContext`` /
``IrisDeviceCtx``) and the two tracing implementations (``tracing.py``: ``DeviceTracing`` / ``GluonDeviceTracing``).
``methods(cls)`` lists a device class's jit methods in definition order with their parameters
(name, kind, default); ``fields(cls)`` the fields it declares. ``DIFFERENCES`` is the one place that lists, per
Gluon class, the methods allowed to differ from the Triton twin, with the reason, and ``FIELD_DIFFERENCES`` the
classes whose fields may differ; everything else must match exactly. The device contexts are also checked
against the op contract, ``iris.op_contract``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRITON_DIR, GLUON_DIR = "iris/device", "iris/experimental"  # twins: the same file name in both


def twin_file(path: str) -> str:
    """The twin of a device module (repository-relative): ``iris/device/x.py`` <-> ``iris/experimental/x.py``."""
    folder, _, name = path.rpartition("/")
    if folder not in (TRITON_DIR, GLUON_DIR):
        raise ValueError(f"{path} is not a device module (expected a file in {TRITON_DIR}/ or {GLUON_DIR}/)")
    twin = f"{GLUON_DIR if folder == TRITON_DIR else TRITON_DIR}/{name}"
    if not (ROOT / twin).is_file():
        raise ValueError(f"{path} has no twin: {twin} does not exist")
    return twin


def _device_class(path: str) -> str:
    """``"module:Class"`` of the one ``@aggregate`` class the file at ``path`` defines (read, not imported)."""
    tree = ast.parse((ROOT / path).read_text())
    found = [n.name for n in tree.body if isinstance(n, ast.ClassDef)
             and any(isinstance(d, ast.Name) and d.id == "aggregate" for d in n.decorator_list)]
    if len(found) != 1:
        raise ValueError(f"{path} defines {len(found)} @aggregate classes {found}; a device module defines one")
    return f"{path[:-3].replace('/', '.')}:{found[0]}"


def _twins() -> tuple[tuple[str, str], ...]:
    names = sorted(p.name for p in (ROOT / TRITON_DIR).glob("*.py") if not p.name.startswith("_")
                   and (ROOT / GLUON_DIR / p.name).is_file())
    return tuple((_device_class(f"{TRITON_DIR}/{n}"), _device_class(f"{GLUON_DIR}/{n}")) for n in names)


# (Triton class, Gluon class), as "module:Class" so that importing this module compiles nothing.
TWINS: tuple[tuple[str, str], ...] = _twins()

# Gluon class -> {method: reason}. Each entry must correspond to a real difference (the parity test checks both ways).
DIFFERENCES: dict[str, dict[str, str]] = {
    "IrisDeviceCtx": {
        "initialize": (
            "Triton takes optional rank and world_size (upstream's form): given as constexprs, translation indexes "
            "the heap bases with constants (one compile per rank); left out, they are read from the context tensor "
            "at run time. Gluon always reads both at run time (one compile serves every rank)."
        ),
    },
    "GluonDeviceTracing": {},  # none: the two tracing implementations share every name, parameter and default
}

# Gluon class -> why its fields (names, in order) differ from its Triton twin's; a class not listed must match.
FIELD_DIFFERENCES: dict[str, str] = {
    "IrisDeviceCtx": (
        "Triton holds rank and world_size (upstream's names), constexprs when initialize was given them, else "
        "tensors read from the context; Gluon holds cur_rank and num_ranks, always tensors read from the context "
        "tensor at run time (see DIFFERENCES['IrisDeviceCtx']['initialize'])."
    ),
}


def load_class(path: str) -> type:
    """The class named by ``"module:Class"``."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _python_function(member):
    member = getattr(member, "__func__", member)
    return getattr(member, "fn", member)


def methods(cls) -> list[tuple[str, tuple[tuple[str, str, object], ...]]]:
    """``[(name, ((param, kind, default), ...)), ...]`` of ``cls``'s jit methods, in definition order."""
    found = []
    for name in dir(cls):
        fn = _python_function(inspect.getattr_static(cls, name))
        if name.startswith("__") or not inspect.isfunction(fn) or fn.__module__.startswith("triton."):
            continue  # skip what Triton's aggregate machinery adds
        params = tuple(
            (p.name, p.kind.name, None if p.default is inspect.Parameter.empty else repr(p.default))
            for p in inspect.signature(fn).parameters.values()
        )
        found.append((fn.__code__.co_firstlineno, name, params))
    return [(name, params) for _, name, params in sorted(found)]


def fields(cls) -> tuple[str, ...]:
    """The fields ``cls`` declares (its class-body annotations, in order): an aggregate's members."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    return tuple(n.target.id for n in body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))
