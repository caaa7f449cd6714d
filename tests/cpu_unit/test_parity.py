"""Parity by reflection: DeviceContext (Triton) and IrisDeviceCtx (Gluon) expose the same methods."""

import pytest

from iris.device.context import DeviceContext
from iris.experimental import iris_gluon
from iris.parity import DIFFERENCES, methods
from iris.tracing.device import DeviceTracing

pytestmark = pytest.mark.cpu_unit


def test_same_methods_in_the_same_order():
    triton_names = [name for name, _ in methods(DeviceContext)]
    gluon_names = [name for name, _ in methods(iris_gluon.IrisDeviceCtx)]
    assert gluon_names == triton_names, f"IrisDeviceCtx methods={gluon_names}, but should be {triton_names}"
    assert len(triton_names) >= 15, f"DeviceContext methods={triton_names}: reflection found too few"


@pytest.mark.parametrize("name", [name for name, _ in methods(DeviceContext)])
def test_same_parameters_and_defaults(name):
    tri = dict(methods(DeviceContext))[name]
    glu = dict(methods(iris_gluon.IrisDeviceCtx))[name]
    if name in DIFFERENCES:
        assert tri != glu, f"{name} is listed in iris.parity.DIFFERENCES but no longer differs: remove it"
        return
    assert glu == tri, f"IrisDeviceCtx.{name} parameters={glu}, but should be {tri} (as DeviceContext.{name})"


def test_every_listed_difference_names_a_method():
    names = {name for name, _ in methods(DeviceContext)}
    unknown = sorted(set(DIFFERENCES) - names)
    assert not unknown, f"iris.parity.DIFFERENCES names {unknown}, which DeviceContext does not have"


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


def test_gluon_uses_the_same_device_tracing():
    """One tracing implementation serves both APIs, so recorded values agree by construction."""
    assert iris_gluon.DeviceTracing is DeviceTracing
    names = [name for name, _ in methods(DeviceTracing)]
    assert names == ["initialize", "_record", "record_event_start", "record_event_end", "record_event"], names


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
