"""Many ``python -m MODULE ARGV...`` command lines in one child process, each run as ``-m`` runs it.

A child process that imports torch costs seconds; tests that only need to see what a user sees (the exit code,
stdout, stderr, the files left behind) for a dozen command lines pay that once here. Each line runs in its own
folder with ``runpy.run_module(MODULE, run_name="__main__", alter_sys=True)`` (what ``python -m`` does), its stdout
and stderr captured; an exception that escapes is its traceback on stderr and exit code 1, as Python prints it.
A test that needs a fresh interpreter per line (import side effects, the process's own exit) starts its own.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from conformance.mutation.probe_starter import run_module_as_main

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Ran:
    """What one command line did: its exit code, stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


def run_as_users(lines: list[tuple[str, list[str], Path]], timeout: float = 300) -> list[Ran]:
    """Run each ``(module, argv, folder)`` as ``python -m module *argv`` from ``folder``, in order, in one child
    process (no ``TRITON_INTERPRET``, the repository on the path); one :class:`Ran` per line."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"PYTHONPATH": str(ROOT)}
    request = json.dumps([[module, list(argv), str(folder)] for module, argv, folder in lines])
    done = subprocess.run([sys.executable, "-m", "tests.as_users"], input=request, env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, f"the child running the command lines failed ({done.returncode}): {done.stderr}"
    return [Ran(*row) for row in json.loads(done.stdout)]


def run_in_folders(tmp_path_factory, lines: list[tuple[str, list[str]]]) -> dict[tuple, tuple[Ran, Path]]:
    """Each ``(module, argv)`` run as :func:`run_as_users` runs it, from a new folder holding only ``afile`` (a file
    where a user might name a folder): ``{(module, *argv): (what it did, its folder)}``."""
    folders = [tmp_path_factory.mktemp("user") for _ in lines]
    for folder in folders:
        (folder / "afile").write_text("not a folder")
    ran = run_as_users([(module, argv, folder) for (module, argv), folder in zip(lines, folders, strict=True)])
    return {(module, *argv): (done, folder) for (module, argv), done, folder in zip(lines, ran, folders, strict=True)}


def _run_one(module: str, argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    sys.argv = [module, *argv]
    if not hasattr(sys.modules.get(module), "__path__"):  # as in a fresh ``-m``: an earlier line's script may have
        sys.modules.pop(module, None)  # imported this one (a package stays: ``-m`` imports it, then its __main__)
    sys.modules.pop(f"{module}.__main__", None)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_module_as_main(module)
    return code, out.getvalue(), err.getvalue()


def main() -> None:
    rows = []
    for module, argv, folder in json.loads(sys.stdin.read()):
        os.chdir(folder)
        rows.append(_run_one(module, argv))
    sys.stdout.write(json.dumps(rows))


if __name__ == "__main__":
    main()
