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
