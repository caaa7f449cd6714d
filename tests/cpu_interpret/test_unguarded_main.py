"""A script that starts ranks at its top level, without ``if __name__ == "__main__":``, ends with one line saying so.

Each rank process runs the main script again as it starts (multiprocessing recreates the main module), so such a
script would start ranks from every rank: they exit quietly at that point, and the script's own process raises
``UnguardedMain``, a ``RankDied`` that Python shows as its one-line message (exit code 1), not a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.cpu_interpret

REPO = Path(__file__).resolve().parents[2]

SCRIPTS = {
    "launch": """
        import iris

        def rank_of():
            import torch.distributed as dist
            return dist.get_rank()

        try:
            print(iris.launch(rank_of, 2))
        except iris.ranks.RankDied as e:  # a caller can catch it; raised on, it ends the script as uncaught
            print(type(e).__name__, e.ranks, sorted(e.exitcodes.items()))
            raise
    """,
    "pool": """
        from iris.ranks import RankPool
        from tests.cpu_interpret import pool_jobs as jobs

        with RankPool(2, "cpu") as pool:
            pool.run(jobs.noop)
    """,
}


def _run(tmp_path: Path, source: str) -> tuple[subprocess.CompletedProcess, Path]:
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path), script


@pytest.mark.parametrize(("how", "where", "caught"), [
    ("launch", "launch (2 ranks)", "UnguardedMain [0, 1] [(0, 78), (1, 78)]\n"),
    ("pool", "RankPool(2 ranks, cpu, generation 1)", ""),
], ids=["launch", "pool"])
def test_an_unguarded_script_ends_with_one_line(tmp_path, how, where, caught):
    """The launch script also catches the failure as a ``RankDied`` (``caught``: what it printed) before raising it
    on."""
    result, script = _run(tmp_path, SCRIPTS[how])
    expected = (f"{where}: the rank processes died at start-up: each runs {script} again, whose top level starts "
                f'ranks again; put that code under if __name__ == "__main__": in {script}\n')
    assert result.returncode == 1, f"exit code={result.returncode}, but should be 1: {result.stderr}"
    assert result.stderr == expected, result.stderr
    assert result.stdout == caught, result.stdout


def test_a_guarded_script_runs(tmp_path):
    guarded = """
        import iris

        def rank_of():
            import torch.distributed as dist
            return dist.get_rank()

        if __name__ == "__main__":
            print(iris.launch(rank_of, 2))
    """
    result, _ = _run(tmp_path, guarded)
    assert result.returncode == 0 and result.stdout == "[0, 1]\n", (result.stdout, result.stderr)
