"""The kit's old import paths still work for one release: each warns (a DeprecationWarning naming the new path,
pointing at the importing module) and is the new module, and a scenario written against them passes.

Python runs a module only on its first import in a process, so the tests that need the warning first forget the old
modules (and the test scenario that imports them): they do not depend on what other tests imported before.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from conformance.harness.drawing import Example
from conformance.harness.example import run_example
from conformance.kit.scenario import load, names

pytestmark = pytest.mark.cpu_interpret

MOVED = {
    "conformance.strategies": "conformance.kit.strategies",
    "conformance.helpers": "conformance.kit.helpers",
    "conformance.model": "conformance.check.model",
    "conformance.scenario": "conformance.kit.scenario",
}
SCENARIO = "tests.conformance.faulty.old_paths"
AUTHOR = "tests/conformance/scenario_by_an_author.py"  # the file name the imports below are compiled under


@pytest.fixture
def first_import(monkeypatch):
    """The next import of an old path (or of the test scenario) in this test is its first one in the process."""
    for new in MOVED.values():
        importlib.import_module(new)  # so that only the old paths' own warnings are left to record
    for name in (*MOVED, SCENARIO):
        monkeypatch.delitem(sys.modules, name, raising=False)
        parent, short = name.rsplit(".", 1)
        monkeypatch.delattr(importlib.import_module(parent), short, raising=False)


def _deprecations(statement: str) -> tuple[dict, list[warnings.WarningMessage]]:
    """Run ``statement`` as if a scenario module (``AUTHOR``) held it; its namespace and the DeprecationWarnings."""
    namespace: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(statement, AUTHOR, "exec"), namespace)
    return namespace, [w for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("form", ["import {old}", "from conformance import {short}"])
@pytest.mark.parametrize(("old", "new"), MOVED.items())
def test_an_old_path_warns_naming_the_new_one_and_is_the_new_module(first_import, old, new, form):
    short = old.rsplit(".", 1)[1]
    namespace, caught = _deprecations(form.format(old=old, short=short))
    module = namespace["conformance"].__dict__[short] if form.startswith("import") else namespace[short]
    assert module is importlib.import_module(new), f"{old} is {module!r}, not {new}"
    assert [str(w.message) for w in caught] == [f"{old} is deprecated: import {new} (the old path is removed in the "
                                                "next release)"], caught
    assert (caught[0].filename, caught[0].lineno) == (AUTHOR, 1), "the warning does not point at the importer"


def test_the_old_modules_give_every_name_of_the_new_ones_private_ones_too(first_import):
    with pytest.warns(DeprecationWarning):
        from conformance import helpers, model, scenario, strategies
    for old, new in MOVED.items():
        module, target = sys.modules[old], importlib.import_module(new)
        mismatched = [k for k, v in vars(target).items() if getattr(module, k) is not v]
        assert not mismatched, f"{old}: {mismatched} differ from {new}'s"

    used = (strategies.mask_bits, strategies.masked_block, strategies._payload, helpers.cdiv, helpers.block_event,
            model.Model, model.Event, scenario.Scenario, scenario.WorldConstraint, scenario._modules)
    assert all(callable(f) for f in used)


def test_importing_conformance_and_the_new_paths_does_not_warn_and_the_old_ones_are_no_scenarios():
    code = "\n".join([f"import {', '.join(['conformance', *MOVED.values()])}",
                      "from conformance.kit import strategies, helpers, scenario",
                      "from conformance.check import model"])
    result = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    shims = [old.rsplit(".", 1)[1] for old in MOVED]
    assert not set(shims) & set(names()), names()
    with pytest.raises(KeyError):
        load("strategies")


def test_a_scenario_written_against_the_old_paths_passes_with_the_warnings(first_import, pools):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scenario = load(SCENARIO)
    shown = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert sorted(str(w.message).split(":")[0] for w in shown) == sorted(f"{old} is deprecated" for old in MOVED)
    assert all(w.filename.endswith("tests/conformance/faulty/old_paths.py") for w in shown), \
        [w.filename for w in shown]
    params = {"n": 40, "BLOCK": 32, "dtype": "int32", "TRACE_OPS": True, "offset": 0, "bits": [[1, 0] * 32]}
    result = run_example(pools, scenario, 1, Example(params, scenario.settings(params, 3)), "cpu")
    assert result.ok, result.report()


def test_the_command_line_shows_the_warnings_a_script_would_hide():
    """Python shows a DeprecationWarning only where __main__ triggers it; a scenario module is not __main__, yet
    ``python -m conformance`` shows its warnings (the same import without the command line's filter shows none)."""
    importing = f"from conformance.kit.scenario import load; load({SCENARIO!r})"
    cli = "from conformance.cli import main; main(['list']); "
    runs = {with_cli: subprocess.run([sys.executable, "-c", (cli if with_cli else "") + importing],
                                     capture_output=True, text=True, timeout=120) for with_cli in (True, False)}
    assert all(r.returncode == 0 for r in runs.values()), [r.stderr for r in runs.values()]
    assert "DeprecationWarning: conformance.strategies is deprecated" in runs[True].stderr, runs[True].stderr
    assert "DeprecationWarning" not in runs[False].stderr, runs[False].stderr
