"""Deprecated: the old path of ``iris.device.tracing`` (the Triton ``DeviceTracing``), kept for one release and
removed in the next.

Importing it warns (pointing at the importer) and gives the new module itself, so every name is the same object.
"""

import sys
import warnings

import iris.device.tracing

warnings.warn("iris.tracing.device is deprecated: import iris.device.tracing "
              "(the old path is removed in the next release)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = iris.device.tracing
