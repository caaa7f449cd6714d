"""Parity by reflection: each Triton device class and its Gluon twin expose the same methods and fields.

The twins are ``iris.parity.TWINS``, found by file name: DeviceContext / IrisDeviceCtx (``context.py``) and
DeviceTracing / GluonDeviceTracing (``tracing.py``).
Both device contexts are also checked against the op contract, ``iris.op_contract``: the ops in its order, with
its parameters and defaults, its hint pointers and meanings, and its fields.
"""

import ast
import inspect
import textwrap

import pytest

from iris.device.context import DeviceContext
from iris.experimental import iris_gluon
from iris.op_contract import FIELDS, OPS
from iris.parity import DIFFERENCES, FIELD_DIFFERENCES, TWINS, _python_function, fields, load_class, methods

pytestmark = pytest.mark.cpu_unit

TWIN_PARAMS = [pytest.param(t, g, id=g.rsplit(":", 1)[1]) for t, g in TWINS]
METHOD_PARAMS = [
    pytest.param(t, g, name, id=f"{g.rsplit(':', 1)[1]}.{name}")
    for t, g in TWINS for name, _ in methods(load_class(t))
]  # fmt: skip


@pytest.mark.parametrize(("triton_path", "gluon_path"), TWIN_PARAMS)
def test_same_methods_in_the_same_order(triton_path, gluon_path):
    tri, glu = load_class(triton_path), load_class(gluon_path)
    triton_names = [name for name, _ in methods(tri)]
    gluon_names = [name for name, _ in methods(glu)]
    assert gluon_names == triton_names, f"{glu.__name__} methods={gluon_names}, but should be {triton_names}"
    assert len(triton_names) >= 5, f"{tri.__name__} methods={triton_names}: reflection found too few"


@pytest.mark.parametrize(("triton_path", "gluon_path", "name"), METHOD_PARAMS)
def test_same_parameters_and_defaults(triton_path, gluon_path, name):
    tri_cls, glu_cls = load_class(triton_path), load_class(gluon_path)
    tri = dict(methods(tri_cls))[name]
    glu = dict(methods(glu_cls)).get(name)
    assert glu is not None, f"{glu_cls.__name__} has no method {name} (as {tri_cls.__name__}.{name})"
    if name in DIFFERENCES[glu_cls.__name__]:
        assert tri != glu, f"{glu_cls.__name__}.{name} is listed in iris.parity.DIFFERENCES but no longer differs"
        return
    assert glu == tri, f"{glu_cls.__name__}.{name} parameters={glu}, but should be {tri} (as {tri_cls.__name__}.{name})"


def test_every_listed_difference_names_a_method_of_a_twin():
    gluon_classes = {g.rsplit(":", 1)[1]: t for t, g in TWINS}
    assert set(DIFFERENCES) == set(gluon_classes), (
        f"iris.parity.DIFFERENCES covers {sorted(DIFFERENCES)}, but should cover every Gluon twin "
        f"{sorted(gluon_classes)}"
    )
    for gluon_name, listed in DIFFERENCES.items():
        names = {name for name, _ in methods(load_class(gluon_classes[gluon_name]))}
        unknown = sorted(set(listed) - names)
        assert not unknown, f"iris.parity.DIFFERENCES[{gluon_name!r}] names {unknown}, which its Triton twin lacks"


CONTEXTS = [pytest.param(DeviceContext, id="triton"), pytest.param(iris_gluon.IrisDeviceCtx, id="gluon")]
OP_PARAMS = [pytest.param(op, id=op.name) for op in OPS]


def _contract_form(params) -> tuple[str, ...]:
    """Reflected parameters in the contract's form: ``"name"`` or ``"name=default"``, without ``self``."""
    return tuple(name if default is None else f"{name}={default}" for name, _, default in params[1:])


def _listed_difference(cls, name: str) -> str | None:
    return DIFFERENCES.get(cls.__name__, {}).get(name)


@pytest.mark.parametrize("cls", CONTEXTS)
@pytest.mark.parametrize("op", OP_PARAMS)
def test_op_has_the_documented_signature(cls, op):
    """Upstream-style calls (keywords by name, in upstream's order) bind to the same parameters in both APIs."""
    if _listed_difference(cls, op.name):
        pytest.skip(f"iris.parity.DIFFERENCES lists {cls.__name__}.{op.name}")
    reflected = dict(methods(cls))
    assert op.name in reflected, f"{cls.__name__} has no op {op.name} (iris.op_contract.OPS lists it)"
    found = _contract_form(reflected[op.name])
    assert found == op.params, f"{cls.__name__}.{op.name} parameters={found}, but should be {op.params} " \
                               "(iris.op_contract)"


def test_every_public_op_is_documented():
    """Both device contexts' public ops are the contract's, in its order."""
    expected = [op.name for op in OPS]
    for cls in (DeviceContext, iris_gluon.IrisDeviceCtx):
        public = [name for name, _ in methods(cls) if not name.startswith("_") and name != "initialize"]
        assert public == expected, f"{cls.__name__} ops={public}, but iris.op_contract.OPS lists {expected}"


def _translated_pointers(fn) -> list[str]:
    """The first argument of every ``self._translate(...)`` call in ``fn``, asserting each passes ``hint``."""
    found = []
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn)))):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "self._translate":
            assert ast.unparse(node.args[-1]) == "hint", f"{fn.__name__}: {ast.unparse(node)} does not pass hint"
            found.append(ast.unparse(node.args[0]))
    return sorted(found)


@pytest.mark.parametrize("cls", CONTEXTS)
@pytest.mark.parametrize("op", OP_PARAMS)
def test_hint_applies_to_the_contracts_pointers(cls, op):
    """Source check: the pointers an op translates to the peer (and hands ``hint``) are the contract's."""
    fn = _python_function(inspect.getattr_static(cls, op.name))
    found = _translated_pointers(fn)
    assert found == sorted(op.hint), f"{cls.__name__}.{op.name} translates {found} with the hint, but " \
                                     f"iris.op_contract says {sorted(op.hint)}"


@pytest.mark.parametrize("cls", CONTEXTS)
@pytest.mark.parametrize("op", OP_PARAMS)
def test_op_docstring_is_the_contracts_meaning(cls, op):
    doc = " ".join((inspect.getdoc(_python_function(inspect.getattr_static(cls, op.name))) or "").split())
    assert doc == op.docstring, f"{cls.__name__}.{op.name} docstring={doc!r}, but should be {op.docstring!r} " \
                                "(iris.op_contract)"


def test_the_contract_is_well_formed():
    names = [op.name for op in OPS]
    assert len(names) == len(set(names)) == 14, names
    for op in OPS:
        params = [p.split("=")[0] for p in op.params]
        assert len(params) == len(set(params)), f"{op.name}: repeated parameter in {op.params}"
        assert op.params[-1] == "hint=None", f"{op.name}: hint=None must be the last parameter, got {op.params}"
        assert op.hint and set(op.hint) <= set(params), f"{op.name}: hint applies to {op.hint}, not parameters"
        assert "\n" not in op.meaning and op.meaning.endswith("."), f"{op.name}: meaning {op.meaning!r}: one line"


@pytest.mark.parametrize("cls", CONTEXTS)
def test_device_context_fields_are_the_contracts(cls):
    assert set(FIELDS) == {"DeviceContext", "IrisDeviceCtx"}, f"iris.op_contract.FIELDS covers {sorted(FIELDS)}"
    assert fields(cls) == FIELDS[cls.__name__], f"{cls.__name__} fields={fields(cls)}, but iris.op_contract.FIELDS " \
                                                f"says {FIELDS[cls.__name__]}"


@pytest.mark.parametrize(("triton_path", "gluon_path"), TWIN_PARAMS)
def test_twins_declare_the_same_fields_unless_listed(triton_path, gluon_path):
    tri, glu = load_class(triton_path), load_class(gluon_path)
    assert set(FIELD_DIFFERENCES) <= {g.rsplit(":", 1)[1] for _, g in TWINS}, sorted(FIELD_DIFFERENCES)
    assert len(fields(tri)) >= 3, f"{tri.__name__} fields={fields(tri)}: reflection found too few"
    if glu.__name__ in FIELD_DIFFERENCES:
        assert fields(glu) != fields(tri), f"iris.parity.FIELD_DIFFERENCES lists {glu.__name__}, but its fields " \
                                           f"{fields(glu)} no longer differ from {tri.__name__}'s"
        return
    assert fields(glu) == fields(tri), f"{glu.__name__} fields={fields(glu)}, but should be {fields(tri)} " \
                                       f"(as {tri.__name__}; or list it in iris.parity.FIELD_DIFFERENCES)"


def test_the_two_apis_use_two_tracing_implementations():
    """IrisDeviceCtx.tracing is the Gluon implementation; DeviceContext.tracing the Triton one."""
    from iris.device import context
    from iris.device import tracing as device
    from iris.experimental import iris_gluon, tracing

    assert tracing.GluonDeviceTracing is not device.DeviceTracing
    assert iris_gluon.IrisDeviceCtx.__module__ == "iris.experimental.context"
    import iris.gluon

    assert iris.gluon.GluonDeviceTracing is tracing.GluonDeviceTracing, "iris.gluon exports the Gluon tracing"
    assert context.DeviceTracing is device.DeviceTracing
    assert not hasattr(iris_gluon, "DeviceTracing"), "iris_gluon still imports the Triton DeviceTracing"
    names = [name for name, _ in methods(tracing.GluonDeviceTracing)]
    assert names == ["initialize", "span", "contiguous_span", "_counters", "_claim", "_record", "record_event_start",
                     "record_event_end", "_end_on", "_close", "record_event"], names
    triton_names = [name for name, _ in methods(device.DeviceTracing)]
    assert triton_names == names, f"DeviceTracing methods {triton_names}, GluonDeviceTracing {names}: same order"


def _source_tree(module) -> ast.Module:
    return ast.parse(inspect.getsource(module))


def test_gluon_tracing_is_written_in_gluon():
    """Source check: iris/experimental/tracing.py imports no Triton tracing and calls no ``tl.`` function."""
    from iris.experimental import tracing

    tree = _source_tree(tracing)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {f"{node.module}.{alias.name}" for alias in node.names} | {node.module}
    forbidden = sorted(m for m in imported if m.startswith(("iris.device", "iris.tracing.device", "triton.language")))
    assert not forbidden, f"iris/experimental/tracing.py imports {forbidden}; it must be written with gl.* only"
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert "tl" not in names, "iris/experimental/tracing.py uses a name 'tl' (tl.* calls)"
    gl_calls = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name) and node.value.id == "gl"]
    assert len(gl_calls) >= 10, f"iris/experimental/tracing.py uses gl.* only {len(gl_calls)} times"


def test_triton_tracing_is_written_in_triton():
    """The mirror check: iris/device/tracing.py imports nothing of the Gluon side and uses no ``gl.``."""
    from iris.device import tracing as device

    tree = _source_tree(device)
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    gluon = sorted(m for m in modules if "gluon" in m or m.startswith("iris.experimental"))
    assert not gluon, f"iris/device/tracing.py imports {gluon}"
    assert "gl" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def test_parity_sees_a_changed_default():
    """The helper itself: a changed default shows up in the reflected parameters."""

    class A:
        def op(self, pointer, mask=None):
            pass

    class B:
        def op(self, pointer, mask=0):
            pass

    assert methods(A) != methods(B)
    assert methods(A) == [("op", (("self", "POSITIONAL_OR_KEYWORD", None), ("pointer", "POSITIONAL_OR_KEYWORD", None),
                                  ("mask", "POSITIONAL_OR_KEYWORD", "None")))]


def test_twins_are_found_by_file_name():
    """Each Triton device module's twin is the Gluon module of the same file name; TWINS is read off the files."""
    from iris.parity import twin_file

    check = {("iris.device.context:DeviceContext", "iris.experimental.context:IrisDeviceCtx"),
             ("iris.device.tracing:DeviceTracing", "iris.experimental.tracing:GluonDeviceTracing")}
    assert set(TWINS) == check, TWINS
    for t, g in TWINS:
        path = t.partition(":")[0].replace(".", "/") + ".py"
        assert twin_file(path) == g.partition(":")[0].replace(".", "/") + ".py"
        assert twin_file(twin_file(path)) == path
    with pytest.raises(ValueError, match=r"iris/tracing/core.py is not a device module \(expected a file in "
                                         r"iris/device/ or iris/experimental/\)"):
        twin_file("iris/tracing/core.py")
    with pytest.raises(ValueError, match="iris/experimental/layouts.py has no twin: iris/device/layouts.py does not"):
        twin_file("iris/experimental/layouts.py")


@pytest.mark.parametrize("old,new", [("iris.tracing.device", "iris.device.tracing"),
                                     ("iris.experimental.gluon_interpret", "iris.interpreter_gluon")])
def test_old_module_paths_warn_and_give_the_new_module(old, new):
    code = (f"import warnings, importlib; warnings.simplefilter('error', DeprecationWarning)\n"
            f"try:\n    importlib.import_module({old!r})\nexcept DeprecationWarning as e:\n    print('warned:', e)\n"
            f"warnings.simplefilter('ignore')\nimport sys\nprint(importlib.import_module({old!r}) is "
            f"importlib.import_module({new!r}))")
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines() == [f"warned: {old} is deprecated: import {new} (the old path is removed in the "
                                       "next release)", "True"], out.stdout


def _op_trace_calls(cls, op: str) -> list[tuple]:
    """The auto-tracing calls op ``op`` of ``cls`` makes, in source order: ("start", event, peer, address, mask)
    for ``self._op_start(...)``, ("end",) for ``self._op_end(h)``, ("end on", value) for ``self._op_end_on(h, v)``."""
    fn = _python_function(inspect.getattr_static(cls, op))
    calls = []
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn)))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
            args = [ast.unparse(a) for a in node.args]
            if node.func.attr == "_op_start":
                calls.append((node.lineno, "start", *args))
            elif node.func.attr == "_op_end":
                calls.append((node.lineno, "end"))
            elif node.func.attr == "_op_end_on":
                calls.append((node.lineno, "end on"))
    return [c[1:] for c in sorted(calls)]


@pytest.mark.parametrize("cls", CONTEXTS)
@pytest.mark.parametrize("op", [o.name for o in OPS])
def test_each_op_records_what_the_op_trace_table_says(cls, op):
    """iris.op_trace is the definition: every op opens one range per table entry, with the table's peer and address
    parameters, its own mask (atomic_cas: none) and its own event id, and closes it on its value where the table says
    so; nothing else records."""
    from iris.op_trace import OP_EVENTS

    mask = "None" if op == "atomic_cas" else "mask"
    expected = []
    for e in OP_EVENTS[op]:
        expected += [("start", f"TraceEvent().{op}", e.peer, e.address, mask), ("end on",) if e.ends_on_value
                     else ("end",)]
    got = _op_trace_calls(cls, op)
    assert got == expected, f"{cls.__name__}.{op} auto-tracing calls {got}, but iris.op_trace says {expected}"


def test_the_op_trace_table_covers_every_op():
    from iris.op_trace import OP_EVENTS

    assert list(OP_EVENTS) == [o.name for o in OPS]
    params = {o.name: {p.split("=")[0] for p in o.params} for o in OPS}
    for op, events in OP_EVENTS.items():
        for e in events:
            assert {e.peer, e.address} <= params[op], (op, e, params[op])
            assert e.peer.endswith("_rank") and (e.address == "pointer" or e.address.endswith("_ptr")), (op, e)
