"""Alias of ``iris.experimental.iris_gluon`` at upstream iris's import path: ``from iris.gluon import IrisDeviceCtx``.

Nothing is defined here; the Gluon API lives in ``iris/experimental/`` (``iris_gluon.py``: the host,
``context.py``: the device context). Like the home module, importing it patches nothing: on CPU worlds the Gluon
interpreter shim is installed where the world starts (:func:`iris.world.install_interpreter`).
"""

from iris.experimental.iris_gluon import IrisDeviceCtx, IrisGluon, iris
from iris.experimental.tracing import GluonDeviceTracing

__all__ = ["GluonDeviceTracing", "IrisDeviceCtx", "IrisGluon", "iris"]
