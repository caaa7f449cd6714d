"""How rank processes start: forked from a server process that has already imported torch.

Importing torch is most of a rank's start-up (about 2 s of CPU each, so 8 ranks on a 2-core machine wait ~10 s). A
pool's ranks are therefore forked by multiprocessing's fork server, which imports torch once per pool-owning process
and never touches a GPU (CUDA is first initialized in the rank). Triton and iris are not preloaded: what they define
at import depends on ``TRITON_INTERPRET``, which differs between cpu and gpu ranks, so every rank imports them
itself after taking its environment (:func:`iris.ranks.child.rank_main` adopts the pool's whole ``os.environ``,
as a spawned process would have inherited it). Ranks run under a wrapper executable (a compute-sanitizer tool) are
spawned through it instead.
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.context import BaseContext

PRELOAD = ("torch", "torch.distributed")  # import nothing here whose import reads TRITON_INTERPRET


def rank_context(executable: str | None) -> BaseContext:
    """The multiprocessing context that starts ranks: ``spawn`` through ``executable`` when given, else the fork
    server with :data:`PRELOAD` imported (the preload takes effect when this process's server first starts)."""
    if executable is not None:
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx
