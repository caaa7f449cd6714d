"""Deprecated: the old path of ``conformance.kit.strategies``, kept for one release and removed in the next.

Importing it warns (once per process, pointing at the importer) and gives the new module itself, so every name,
private ones too, is the same object.
"""

import sys
import warnings

import conformance.kit.strategies

warnings.warn("conformance.strategies is deprecated: import conformance.kit.strategies "
              "(the old path is removed in the next release)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = conformance.kit.strategies
