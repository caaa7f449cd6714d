"""The Gluon API at upstream iris's import path: ``IrisGluon`` (the host object), ``iris()``, and ``IrisDeviceCtx``.

The host side is the foundation's ``Iris`` unchanged (heap, world, context layout, ``Tracing``); the device context
``IrisDeviceCtx`` lives in ``iris/experimental/context.py``, the twin of ``iris/device/context.py``, and is
re-exported here (``iris.gluon`` is an alias of this module).
"""

from iris.experimental.context import IrisDeviceCtx
from iris.iris import Iris

__all__ = ["IrisDeviceCtx", "IrisGluon", "iris"]


class IrisGluon(Iris):
    """Host object of the Gluon API: the foundation's ``Iris`` (heap, barrier, context, tracing)."""

    api = "gluon"


def iris(heap_size: int = 1 << 30) -> IrisGluon:
    """Create this rank's Gluon host object (collective over the current torch.distributed world)."""
    return IrisGluon(heap_size)
