"""Deprecated: the old path of ``iris.interpreter_gluon`` (Gluon kernels on the Triton interpreter), kept for one
release and removed in the next.

Importing it warns (pointing at the importer) and gives the new module itself, so every name is the same object.
"""

import sys
import warnings

import iris.interpreter_gluon

warnings.warn("iris.experimental.gluon_interpret is deprecated: import iris.interpreter_gluon "
              "(the old path is removed in the next release)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = iris.interpreter_gluon
