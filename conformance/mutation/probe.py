"""Child side of ``python -m conformance mutate``: run conformance cases, in order, on one copy of the package.

``python -m conformance.mutation.probe SPEC.json RESULT.json``, started with the copy's root as working
directory. SPEC holds ``root`` (the copy), ``cases`` (``[scenario, world size]`` pairs), ``stop_at_first``,
``seed``, ``profile``, ``job_timeout``, ``backend`` and ``scale``. Every case runs on that backend (the CPU
interpreter by default), at that scale (null: the backend's own; ``"gpu"``: the draws of ``--scale gpu``), with the
profile's example count, a fixed seed, no shrinking and no constants taken from the (mutated) sources, so the same
cases see the same examples in every copy. RESULT.json is rewritten after each case (a parent that times out still
reads the finished ones): one record per case with ``ok``, the ``checks`` that failed (``triton vs model``, ``gluon
vs model``, ``triton vs gluon``; ``hang`` when an example's ranks did not finish within its budget, capped by
``job_timeout``; ``error`` for any other problem) and the first divergence, hang or error as ``detail``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path

from hypothesis import Phase, settings


def probe_settings(profile: str) -> settings:
    """The profile's settings without an example database and without shrinking (the first failure is enough)."""
    from conformance.harness.profiles import load_profile

    return settings(load_profile(profile), database=None, phases=(Phase.explicit, Phase.generate))


def ignore_local_constants() -> bool:
    """Stop Hypothesis from mixing integer constants of local source files into its draws; True if it took effect.

    A mutant adds or removes such constants (``& 0xFFFF``, ``return 4``), so without this the mutated copy would
    draw other examples than the baseline. This uses a private Hypothesis hook; where it has moved, examples stay
    deterministic per copy but may differ between copies.
    """
    try:
        from hypothesis.internal.conjecture import providers

        empty = type(providers._local_constants)()
        providers._get_local_constants = lambda: empty
    except (ImportError, AttributeError, TypeError):
        return False
    return True


def _check_imports(root: Path) -> None:
    import conformance
    import iris

    for module in (iris, conformance):
        where = Path(module.__file__).resolve()
        if root.resolve() not in where.parents:
            raise RuntimeError(f"{module.__name__} was imported from {where}, not from the copy under {root}; "
                               "run the probe with the copy as working directory and on PYTHONPATH")


def run_settings(spec: dict):
    """The ``RunSettings`` of every case of ``spec``: its backend, profile (``probe_settings``), seed, scale and
    per-example timeout."""
    from conformance.harness.run_settings import RunSettings
    from conformance.kit.scale import scale_named

    return RunSettings(spec.get("backend", "cpu"), probe_settings(spec["profile"]), seed=spec["seed"],
                       scale=scale_named(spec.get("scale") or "small"), timeout=spec["job_timeout"])


def prepared_for(name: str, world_size: int, spec: dict, compiler):
    """The case drawn and its kernels submitted to ``compiler`` (``preparing.prepare``), to compile while the case
    before it runs; None off a GPU, or where preparing raises (``run_one`` then meets and records the error)."""
    if spec.get("backend", "cpu") != "gpu" or compiler is None or not compiler.workers:
        return None
    try:
        from conformance.harness.preparing import prepare
        from conformance.kit.scenario import load

        return prepare(load(name), world_size, run_settings(spec), compiler)
    except Exception:  # a mutant can break the package itself
        return None


def run_one(pools, name: str, world_size: int, spec: dict, compiler=None, prepared=None) -> dict:
    """Run one case (``prepared``: by ``prepared_for``, with the same ``compiler``); its record (never raises)."""
    from conformance.harness.case import run_case
    from conformance.kit.scenario import load

    record = {"scenario": name, "world_size": world_size, "ok": True, "checks": [], "detail": "", "examples": 0}
    start = time.perf_counter()
    failing: list = []

    def seen(result) -> None:
        if not result.ok and not failing:
            failing.append(result)

    try:
        case, _ = run_case(pools, load(name), world_size, run_settings(spec), prepared or compiler, on_example=seen)
        record["examples"] = case.examples
        if case.problem:  # a hang, an error, or no example ran to a verdict
            record.update(ok=False, checks=["hang" if case.hang is not None else "error"], detail=case.problem)
        elif failing:
            divergences = failing[0].divergences
            record.update(ok=False, checks=list(dict.fromkeys(d.check for d in divergences)),
                          detail=failing[0].report(limit=3))
    except Exception:  # a mutant can break the package itself (import error, host-side exception)
        record.update(ok=False, checks=["error"], detail=traceback.format_exc(limit=6))
    record["seconds"] = round(time.perf_counter() - start, 2)
    return record


def main(argv: list[str]) -> int:
    from iris.ranks.child import _watch_parent

    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()  # never outlive the runner
    spec_path, result_path = (Path(a) for a in argv)
    spec = json.loads(spec_path.read_text())
    _check_imports(Path(spec["root"]))
    ignore_local_constants()
    from conformance.harness.compile_ahead import Compiler
    from iris.ranks import Pools

    records: list[dict] = []
    gpu = spec.get("backend", "cpu") == "gpu"
    cases = spec["cases"]
    with Pools() as pools, Compiler(None if gpu else 0) as compiler:  # on a GPU, the copy's kernels compiled ahead
        following = prepared_for(*cases[0], spec, compiler) if cases else None
        for i, (name, world_size) in enumerate(cases):
            current = following  # the next case compiles while this one runs (one ahead: a kill stops the probe)
            following = prepared_for(*cases[i + 1], spec, compiler) if i + 1 < len(cases) else None
            record = run_one(pools, name, world_size, spec, compiler, current)
            records.append(record)
            result_path.write_text(json.dumps(records))
            verdict = "ok" if record["ok"] else "FAIL (" + ", ".join(record["checks"]) + ")"
            print(f"  {name}@{world_size}: {verdict} [{record['seconds']:.1f} s]", flush=True)
            if not record["ok"] and spec["stop_at_first"]:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
