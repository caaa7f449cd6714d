"""How rank processes start: forked from a server process that has already imported torch.

Importing torch is most of a rank's start-up (about 2 s of CPU each, so 8 ranks on a 2-core machine wait ~10 s). A
pool's ranks are therefore forked by multiprocessing's fork server, which imports torch once per pool-owning process
and never touches a GPU (CUDA is first initialized in the rank). Triton and iris are not preloaded: what they define
at import depends on ``TRITON_INTERPRET``, which differs between cpu and gpu ranks, so every rank imports them
itself after taking its environment (:func:`iris.ranks.child.rank_main` adopts the pool's whole ``os.environ``,
as a spawned process would have inherited it). Ranks run under a wrapper executable (a compute-sanitizer tool) are
spawned through it instead.

One thing a rank cannot take from its pool: a forked rank imports iris (and with it Triton, which reads
``TRITON_INTERPRET`` at import) to unpickle its entry point, before it adopts its environment, so it imports them under
the fork server's ``TRITON_INTERPRET``: the value of the environment the server started in, at the first pool's
first rank. The server is this process's one (multiprocessing keeps one): a pool whose ranks need another value (a
cpu world after a gpu world in one process, as a test worker may run), or any pool once something other than a pool
started the server, spawns its ranks instead (a full Python and torch start each).
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.context import BaseContext

PRELOAD = ("torch", "torch.distributed")  # import nothing here whose import reads TRITON_INTERPRET


_server_interpret: str | None = None  # TRITON_INTERPRET of the environment a pool started the fork server in


def rank_context(executable: str | None, interpret: str = "") -> BaseContext:
    """The multiprocessing context that starts ranks whose ``TRITON_INTERPRET`` is ``interpret`` ("" when unset):
    ``spawn`` through ``executable`` when given; else the fork server with :data:`PRELOAD` imported (the preload
    takes effect when this process's server first starts, as the caller's first rank starts) when the server is not
    running yet or a pool started it for the same ``interpret``; else ``spawn``."""
    global _server_interpret
    if executable is not None:
        return mp.get_context("spawn")
    if not _server_running():
        _server_interpret = interpret
    elif _server_interpret != interpret:  # None: started by something other than a pool, in an environment unknown
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def _server_running() -> bool:
    from multiprocessing import forkserver

    return getattr(forkserver._forkserver, "_forkserver_pid", None) is not None
