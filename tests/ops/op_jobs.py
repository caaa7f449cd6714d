"""What the rank-side tracing jobs share: the kernel module and host object of an API, its launch constexprs.

The ops themselves are checked by the conformance scenarios (``conformance/scenarios``: data ops, the nine atomics
with every ``sem`` and ``scope``); ``op_kernel`` stays as the untraced twin the cross-compile tier compares with.
"""

from __future__ import annotations

import importlib

import iris

DATA_OPS = ("load", "store", "get", "put", "copy")
ATOMIC_OPS = (
    "atomic_add", "atomic_sub", "atomic_cas", "atomic_xchg", "atomic_xor",
    "atomic_and", "atomic_or", "atomic_min", "atomic_max",
)  # fmt: skip
NUM_WARPS = 4


def kernels(api: str):
    """The kernel module of ``api`` ("triton" or "gluon")."""
    return importlib.import_module(f"tests.ops.{api}_kernels")


def world_constexprs(api: str, rank: int, world: int) -> dict[str, int]:
    """The ``rank``/``world`` constexprs of ``api``'s kernels as launch keywords: Triton takes them, Gluon
    does not (it reads both from the context, so one compile serves every rank)."""
    return {"rank": rank, "world": world} if api == "triton" else {}


def host(api: str, heap_size: int = 1 << 22):
    """The host object of ``api``: ``iris.iris`` or ``iris_gluon.iris``."""
    if api == "gluon":
        from iris.experimental import iris_gluon

        return iris_gluon.iris(heap_size)
    return iris.iris(heap_size)
