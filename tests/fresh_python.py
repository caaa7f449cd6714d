"""``python -m MODULE ARGV...`` in a new process that has not imported iris, without paying for a torch import.

Importing torch is most of a Python start (about 2 CPU-seconds). A test that needs a process of its own only because
the process must import iris (or a copy of it) afresh gets one forked from the fork server that already imported
torch (``iris.ranks.forkserver``, as the ranks start), with the environment, working folder and path entries it
asks for; only this module (standard library imports) is imported before the module runs, as ``-m`` runs it.
A test about the interpreter itself (its flags, its warnings filters, the import of torch) starts a real one.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tests.as_users import Ran, run_as_main


def run_module(module: str, argv: list[str], *, cwd: Path, env: dict[str, str], path: tuple[str, ...] = (),
               timeout: float = 300) -> Ran:
    """Run ``module`` as ``python -m module *argv`` from ``cwd`` with exactly ``env`` and ``path`` first on
    ``sys.path``, in a child forked from the torch-holding server; its exit code, stdout and stderr. A child still
    running after ``timeout`` seconds is killed and the call raises ``TimeoutError``."""
    from iris.ranks.forkserver import rank_context

    with tempfile.TemporaryDirectory(prefix="iris-fresh-") as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        child = rank_context(None).Process(target=_child, args=(module, list(argv), str(cwd), dict(env),
                                                                 tuple(path), str(out), str(err)))
        child.start()
        child.join(timeout)
        if child.is_alive():
            child.kill()
            child.join()
            raise TimeoutError(f"python -m {module} {' '.join(argv)} ran past {timeout} s")
        said = [path.read_text() if path.exists() else "" for path in (out, err)]
        if not (out.exists() and err.exists()):  # it ended before taking its output: what the server printed says why
            said[1] = f"the child of the fork server ended (exit code {child.exitcode}) before running {module}"
        return Ran(child.exitcode, *said)


def _child(module: str, argv: list[str], cwd: str, env: dict[str, str], path: tuple[str, ...], out: str,
           err: str) -> None:
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.path[:0] = path
    for fd, name in ((1, out), (2, err)):
        os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    code = run_as_main(module, argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
