"""Compile-time options of the device ops (cache modifiers, sem, scope, pointer hint): the one definition.

Both device APIs (``DeviceContext`` and ``IrisDeviceCtx``) pass every option through the checks here
before handing it to ``tl``/``gl``, so a bad value fails while the kernel compiles (and under the
interpreter, on the first call) with a message that names the value and what is accepted.

Cache modifiers (Triton 3.6 accepts the same ones on every target; what each becomes in the machine code
is checked by tests/cpu_compile/test_op_options_asm.py):

    load:  None (the default), ".ca" (cache at all levels), ".cg" (bypass L1), ".cv" (do not cache, fetch again)
    store: None (the default), ".wb" (write back), ".cg" (bypass L1), ".cs" (streaming), ".wt" (write through)

Pointer hint, applied to the pointer block an op translates to a peer's heap (the translation hides the
block's structure from the compiler, which then keeps Triton's remote accesses one element wide):

    hint = None                no promise (default)
    hint = h (an int)          for a 1-D block or a scalar pointer
    hint = (h0, h1, ...)       one int per dimension of the block
    promise along dimension d: the pointers run in contiguous groups of h_d elements and the first pointer
    of each group is a multiple of h_d bytes (``multiple_of(p, h)`` then ``max_contiguous(p, h)``; a scalar
    pointer gets only the alignment). A false promise gives wrong results on the GPU.
"""

from __future__ import annotations

import triton

LOAD_CACHE_MODIFIERS: tuple[str, ...] = (".ca", ".cg", ".cv")
STORE_CACHE_MODIFIERS: tuple[str, ...] = (".wb", ".cg", ".cs", ".wt")
SEMANTICS: tuple[str, ...] = ("acquire", "release", "acq_rel", "relaxed")
SCOPES: tuple[str, ...] = ("gpu", "cta", "sys")


# Helpers are constexpr functions too: Triton refuses plain functions reached from a kernel.
@triton.constexpr_function
def _value(x):
    return getattr(x, "value", x)  # a tl.constexpr (compiled) or the plain value (interpreter)


@triton.constexpr_function
def _one_of(keyword: str, value, accepted: tuple[str, ...], what: str):
    if value is None or (isinstance(value, str) and (value == "" or value in accepted)):
        return value
    choices = ", ".join(["None", *(repr(a) for a in accepted)])
    raise ValueError(f"{keyword}={value!r} is not {what}; expected one of {choices}")


@triton.constexpr_function
def load_cache_modifier(value, keyword="cache_modifier"):
    """``value`` if it is None, "" or one of ``LOAD_CACHE_MODIFIERS``; else ValueError naming ``keyword``."""
    return _one_of(keyword, value, LOAD_CACHE_MODIFIERS, "a load cache modifier")


@triton.constexpr_function
def store_cache_modifier(value, keyword="cache_modifier"):
    """``value`` if it is None, "" or one of ``STORE_CACHE_MODIFIERS``; else ValueError naming ``keyword``."""
    return _one_of(keyword, value, STORE_CACHE_MODIFIERS, "a store cache modifier")


@triton.constexpr_function
def memory_semantic(value):
    """``value`` (an atomic's ``sem``) if it is None (acq_rel) or one of ``SEMANTICS``; else ValueError."""
    return _one_of("sem", value, SEMANTICS, "a memory semantic")


@triton.constexpr_function
def memory_scope(value):
    """``value`` (an atomic's ``scope``) if it is None (gpu) or one of ``SCOPES``; else ValueError."""
    return _one_of("scope", value, SCOPES, "a scope")


@triton.constexpr_function
def hint_error(hint, shape) -> str | None:
    """Why ``hint`` cannot describe a pointer block of ``shape`` (a list of ints), or None if it can."""
    shape = [int(_value(s)) for s in shape]
    dims = len(shape)
    expected = (f"None, a positive int (1-D block or scalar pointer) or a tuple of {dims} positive ints, one per "
                f"dimension of the pointer block (shape {shape})")
    if hint is None:
        return None
    if isinstance(hint, str) or not hasattr(hint, "__iter__"):
        values, is_int = [hint], True
    else:
        values, is_int = [_value(h) for h in hint], False
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in values):
        return f"hint={_shown(hint)} is not a valid pointer hint; expected {expected}"
    if is_int and dims > 1:
        return f"hint={_shown(hint)} is one int, but the pointer block has {dims} dimensions; expected {expected}"
    if not is_int and len(values) != max(1, dims):
        return f"hint={_shown(hint)} has {len(values)} entries, but the pointer block has {dims}; expected {expected}"
    return None


@triton.constexpr_function
def _shown(hint):
    if isinstance(hint, str) or not hasattr(hint, "__iter__"):
        return repr(hint)
    return repr(tuple(_value(h) for h in hint))


@triton.constexpr_function
def check_hint(hint, shape):
    """Raise ValueError unless ``hint`` can describe a pointer block of ``shape``; returns True."""
    error = hint_error(hint, shape)
    if error is not None:
        raise ValueError(error)
    return True
