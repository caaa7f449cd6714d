"""Alias of ``iris.experimental.iris_gluon`` at upstream iris's import path: ``from iris.gluon import IrisDeviceCtx``.

Nothing is defined here; the Gluon API lives in ``iris/experimental/iris_gluon.py``. Importing this module
imports ``iris.experimental`` first, so under ``TRITON_INTERPRET=1`` the Gluon interpreter shim is installed
exactly as when the home module is imported (before any ``@gluon.jit`` kernel of the caller is decorated).
"""

from iris.experimental.iris_gluon import IrisDeviceCtx, IrisGluon, iris

__all__ = ["IrisDeviceCtx", "IrisGluon", "iris"]
