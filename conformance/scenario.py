"""Deprecated: the old path of ``conformance.kit.scenario``, kept for one release and removed in the next.

Importing it warns (once per process, pointing at the importer) and gives the new module itself, so every name,
private ones too, is the same object.
"""

import sys
import warnings

import conformance.kit.scenario

warnings.warn("conformance.scenario is deprecated: import conformance.kit.scenario "
              "(the old path is removed in the next release)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = conformance.kit.scenario
