"""``python -m tests.cpu_compile.mutant_machine_code SCENARIO TARGET OUT.json API [API ...]``: the machine code of a
conformance scenario's kernels (``compile_helpers.compile_scenario``, normalized), compiled from the ``iris`` this
process imports.

Run in a copy of the packages with one mutant applied (``tests/cpu_compile/test_gpu_mutants_compile.py``), with the
copy first on the path and this repository's ``tests`` after it. OUT.json: ``{"iris": <the folder iris was imported
from>, "code": {api: [lines]}}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import iris
from conformance.kit.scenario import load
from tests.cpu_compile.compile_helpers import MACHINE_CODE, TARGETS, compile_scenario, normalize


def machine_code(scenario_name: str, api: str, target: str) -> list[str]:
    """The normalized machine code of ``scenario_name``'s ``api`` kernel compiled for ``target``."""
    scenario = load(scenario_name)
    kind = MACHINE_CODE[TARGETS[target].backend]
    kernel = scenario.kernel(api)
    return normalize(compile_scenario(scenario, api, target)[kind], kind, getattr(kernel, "fn", kernel).__name__)


def main(argv: list[str]) -> int:
    scenario, target, out, *apis = argv
    code = {api: machine_code(scenario, api, target) for api in apis}
    Path(out).write_text(json.dumps({"iris": str(Path(iris.__file__).parent), "code": code}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
