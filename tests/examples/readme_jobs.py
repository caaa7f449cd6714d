"""Rank-side job for ``test_readme_usage.py``: run a code block of README's "Usage" section as a script."""

from __future__ import annotations

import os
import re
import runpy
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def usage_blocks() -> list[str]:
    """The Python code blocks of README's "Usage" section, in order: the Triton form, the Gluon form, then fragments."""
    section = README.read_text().split("\n## Usage\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def run_script(script: str) -> dict:
    """Run ``script`` (a README block written to a file, so that ``jit`` finds its source) in its own folder, as
    a user would; this rank's events as ``tracing.events()`` reads them, then the heap is closed."""
    os.chdir(os.path.dirname(script))
    names = runpy.run_path(script, run_name="__main__")
    shmem = names["shmem"]
    out = {"rank": shmem.get_rank(), "rows": shmem.tracing.events().rows()}
    shmem.barrier()
    shmem.close()
    return out
