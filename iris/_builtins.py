"""Builtins shared by the Triton and Gluon device code that must behave differently per backend.

A builtin receives the code generator's ``_semantic`` when compiled and ``None`` under the
interpreter, so one function serves Triton kernels, Gluon kernels and both interpreters.
"""

import numpy as np


def builtin(fn):
    """Mark ``fn`` as a Triton builtin: compiled kernels pass ``_semantic``; the interpreter passes none."""
    fn.__triton_builtin__ = True
    return fn


@builtin
def context_assert(cond, msg, _semantic=None):
    """``device_assert(cond, msg)`` in debug builds; always checked (AssertionError) under the interpreter."""
    if _semantic is None:
        if not bool(np.all(cond.handle.data)):
            raise AssertionError(msg.value if hasattr(msg, "value") else msg)
        return None
    return _semantic.device_assert(_semantic.to_tensor(cond), msg.value if hasattr(msg, "value") else msg, None)
