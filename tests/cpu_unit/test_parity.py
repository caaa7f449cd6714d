"""Parity by reflection: each Triton device class and its Gluon twin expose the same methods.

The twins are ``iris.parity.TWINS``: DeviceContext / IrisDeviceCtx and DeviceTracing / GluonDeviceTracing.
"""

import ast
import inspect

import pytest

from iris.device.context import DeviceContext
from iris.experimental import iris_gluon
from iris.parity import DIFFERENCES, TWINS, load_class, methods

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


# The documented signature of every op (upstream iris's keyword names, order and defaults), without ``self``.
_DATA = ("mask=None", "other=None", "load_cache_modifier=None", "store_cache_modifier=None", "hint=None")
_ATOMIC = ("mask=None", "sem=None", "scope=None", "hint=None")
DOCUMENTED = {
    "load": ("pointer", "from_rank", "mask=None", "other=None", "cache_modifier=None", "volatile=False", "hint=None"),
    "store": ("pointer", "value", "to_rank", "mask=None", "cache_modifier=None", "hint=None"),
    "get": ("from_ptr", "to_ptr", "from_rank", *_DATA),
    "put": ("from_ptr", "to_ptr", "to_rank", *_DATA),
    "copy": ("src_ptr", "dst_ptr", "from_rank", "to_rank", *_DATA),
    "atomic_cas": ("pointer", "cmp", "val", "to_rank", "sem=None", "scope=None", "hint=None"),
    **{f"atomic_{op}": ("pointer", "val", "to_rank", *_ATOMIC)
       for op in ("add", "sub", "xchg", "xor", "and", "or", "min", "max")},
}


def _documented_form(params) -> tuple[str, ...]:
    return tuple(name if default is None else f"{name}={default}" for name, _, default in params[1:])


@pytest.mark.parametrize("cls", [DeviceContext, iris_gluon.IrisDeviceCtx], ids=["triton", "gluon"])
@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_op_has_the_documented_signature(cls, name):
    """Upstream-style calls (keywords by name, in upstream's order) bind to the same parameters in both APIs."""
    found = _documented_form(dict(methods(cls))[name])
    assert found == DOCUMENTED[name], f"{cls.__name__}.{name} parameters={found}, but should be {DOCUMENTED[name]}"


def test_every_public_op_is_documented():
    public = sorted(name for name, _ in methods(DeviceContext) if not name.startswith("_") and name != "initialize")
    assert public == sorted(DOCUMENTED), f"DeviceContext ops={public}, but DOCUMENTED lists {sorted(DOCUMENTED)}"


def test_the_two_apis_use_two_tracing_implementations():
    """IrisDeviceCtx.tracing is the Gluon implementation; DeviceContext.tracing the Triton one."""
    from iris.device import context
    from iris.experimental import iris_gluon, tracing
    from iris.tracing import device

    assert tracing.GluonDeviceTracing is not device.DeviceTracing
    assert iris_gluon.GluonDeviceTracing is tracing.GluonDeviceTracing
    import iris.gluon

    assert iris.gluon.GluonDeviceTracing is tracing.GluonDeviceTracing, "iris.gluon exports the Gluon tracing"
    assert context.DeviceTracing is device.DeviceTracing
    assert not hasattr(iris_gluon, "DeviceTracing"), "iris_gluon still imports the Triton DeviceTracing"
    names = [name for name, _ in methods(tracing.GluonDeviceTracing)]
    assert names == ["initialize", "_claim", "_record", "record_event_start", "record_event_end", "record_event"], names
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
    forbidden = sorted(m for m in imported if m.startswith(("iris.tracing.device", "triton.language")))
    assert not forbidden, f"iris/experimental/tracing.py imports {forbidden}; it must be written with gl.* only"
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert "tl" not in names, "iris/experimental/tracing.py uses a name 'tl' (tl.* calls)"
    gl_calls = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name) and node.value.id == "gl"]
    assert len(gl_calls) >= 10, f"iris/experimental/tracing.py uses gl.* only {len(gl_calls)} times"


def test_triton_tracing_is_written_in_triton():
    """The mirror check: iris/tracing/device.py imports nothing of the Gluon side and uses no ``gl.``."""
    from iris.tracing import device

    tree = _source_tree(device)
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    gluon = sorted(m for m in modules if "gluon" in m or m.startswith("iris.experimental"))
    assert not gluon, f"iris/tracing/device.py imports {gluon}"
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
