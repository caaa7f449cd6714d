"""Fixes to the Triton interpreter (``TRITON_INTERPRET=1``) that CPU worlds need, applied once per process.

Triton 3.6's interpreter turns a tensor into a Python int with ``int(handle.data)``, which numpy 2.4 refuses for
the one-element arrays that hold scalars; a run-time trip count (``for i in range(n)``) then fails. The fix
reads the element instead, inside every interpreted run.
"""

from __future__ import annotations

_installed = False


def _scalar_index(tensor) -> int:
    return int(tensor.handle.data.item())


def install() -> None:
    """Apply the fixes (idempotent)."""
    global _installed
    if _installed:
        return
    from triton.language import core
    from triton.runtime import interpreter

    original = interpreter._patch_lang

    def patch_lang(fn):
        scope = original(fn)
        scope.set_attr(core.tensor, "__index__", _scalar_index)
        return scope

    interpreter._patch_lang = patch_lang
    _installed = True
