"""Deprecated: the old path of ``iris.context_layout`` (the context tensor's layout), kept for one release and
removed in the next.

Importing it warns (pointing at the importer) and gives the new module itself, so every name is the same object.
"""

import sys
import warnings

import iris.context_layout

warnings.warn("iris.layout is deprecated: import iris.context_layout "
              "(the old path is removed in the next release)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = iris.context_layout
