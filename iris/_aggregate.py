"""``aggregate``: Triton's aggregate decorator, plus method binding under the interpreter.

Compiled kernels bind ``obj.method`` through the code generator. Under ``TRITON_INTERPRET=1``
methods are ``InterpretedFunction`` objects, which Triton's decorator does not copy onto the
aggregate and which are not descriptors (``ctx.load(...)`` would lose ``self``). This wrapper
copies them, binding the instance on access (static methods stay unbound); the same class then
works compiled and interpreted, for Triton and Gluon alike.
"""

from __future__ import annotations

import functools

from triton.language.core import _aggregate


class _BoundOnAccess:
    """Descriptor binding an interpreted kernel function to the aggregate instance it is read from."""

    def __init__(self, fn):
        self.fn = fn

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self.fn
        return functools.partial(self.fn, obj)


def _is_interpreted(member) -> bool:
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(member, InterpretedFunction) or type(member).__name__ == "InterpretedGluonFunction"


def aggregate(cls):
    """Decorate ``cls`` as a Triton aggregate whose jit methods also bind under the interpreter."""
    value_cls = _aggregate(cls)
    for name, member in vars(cls).items():
        fn = member.__func__ if isinstance(member, staticmethod) else member
        if _is_interpreted(fn):
            setattr(value_cls, name, fn if isinstance(member, staticmethod) else _BoundOnAccess(fn))
    return value_cls
