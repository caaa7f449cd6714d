"""Importing iris (the home modules and the upstream aliases) patches nothing, even under TRITON_INTERPRET=1.

The Gluon interpreter shim and the interpreter fixes are installed where worlds start
(``iris.world.install_interpreter``), so a process that only imports iris keeps Triton and Gluon as they are.
"""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.cpu_unit

PROBE = """
import triton.experimental.gluon as gluon
from triton.experimental.gluon import _runtime
from triton.runtime import interpreter
jit, run, patch_lang = gluon.jit, _runtime.GluonJITFunction.run, interpreter._patch_lang
import iris, iris.gluon, iris.experimental, iris.experimental.iris_gluon, iris.host.tracing.events
from iris import interpreter_gluon as gluon_interpret
print(gluon_interpret.is_installed(), gluon.jit is jit, _runtime.GluonJITFunction.run is run,
      interpreter._patch_lang is patch_lang)
from iris.world import install_interpreter
install_interpreter()
print(gluon_interpret.is_installed(), interpreter._patch_lang is patch_lang)
"""


def test_imports_patch_nothing_and_world_start_installs_the_interpreter():
    env = {"TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    after_import, after_install = out.stdout.split("\n")[:2]
    assert after_import == "False True True True", f"after the imports: {after_import!r} (installed, jit, run, " \
                                                   "patch_lang unchanged), but should be 'False True True True'"
    assert after_install == "True False", f"after install_interpreter(): {after_install!r}, but should be 'True False'"
