"""Fixes to the Triton interpreter (``TRITON_INTERPRET=1``) that CPU worlds need, applied once per process.

Triton 3.6's interpreter turns a tensor into a Python int with ``int(handle.data)``, which numpy 2.4 refuses for
the one-element arrays that hold scalars; a run-time trip count (``for i in range(n)``) then fails. The fix
reads the element instead, inside every interpreted run.

The interpreter also re-patches ``triton.language`` on every device-function call inside a kernel (a scan of the
module per call: a third of a traced kernel's run time). Inside a run whose patches already cover the caller's
language modules, a call now reuses them.
"""

from __future__ import annotations

import inspect

_installed = False
_patched: set[int] | None = None  # ids of the language modules the running kernel patched; None outside a run


def _scalar_index(tensor) -> int:
    return int(tensor.handle.data.item())


def install() -> None:
    """Apply the fixes (idempotent)."""
    global _installed
    if _installed:
        return
    import triton.language as tl
    from triton.language import core
    from triton.runtime import interpreter

    original = interpreter._patch_lang
    langs = (tl, tl.core)
    seen: dict[object, frozenset[int]] = {}  # function -> the language modules its globals hold

    def patch_lang(fn):
        global _patched
        used = seen.get(fn)
        if used is None:
            used = seen[fn] = frozenset(id(v) for v in fn.__globals__.values()
                                        if inspect.ismodule(v) and any(v is m for m in langs))
        if _patched is not None and used <= _patched:
            return interpreter._LangPatchScope()  # a device function inside a run: already patched
        scope = original(fn)
        scope.set_attr(core.tensor, "__index__", _scalar_index)
        if _patched is not None:  # a device function that sees a module the kernel does not: patched for the run
            _patched |= used
            return scope
        _patched = set(used)
        restore = scope.restore

        def restore_and_forget() -> None:
            global _patched
            _patched = None
            restore()

        scope.restore = restore_and_forget
        return scope

    interpreter._patch_lang = patch_lang
    _installed = True
