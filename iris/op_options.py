"""Compile-time options of the device ops (cache modifiers, sem, scope, pointer hint): the one definition.

Both device APIs (``DeviceContext`` and ``IrisDeviceCtx``) pass every option through the checks here
before handing it to ``tl``/``gl``, so a bad value fails while the kernel compiles (and under the
interpreter, on the first call) with a message that names the value and what is accepted.

Cache modifiers (Triton 3.6 accepts the same ones on every target; what each becomes in the machine code
is checked by tests/cpu_compile/test_op_options_asm.py):

    load:  None (the default), ".ca" (cache at all levels), ".cg" (bypass L1), ".cv" (do not cache, fetch again)
    store: None (the default), ".wb" (write back), ".cg" (bypass L1), ".cs" (streaming), ".wt" (write through)
    a volatile load: only what its backend can encode (``VOLATILE_LOAD_CACHE_MODIFIERS``)

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
import triton.language as tl

from iris._builtins import builtin

LOAD_CACHE_MODIFIERS: tuple[str, ...] = (".ca", ".cg", ".cv")
STORE_CACHE_MODIFIERS: tuple[str, ...] = (".wb", ".cg", ".cs", ".wt")
SEMANTICS: tuple[str, ...] = ("acquire", "release", "acq_rel", "relaxed")
SCOPES: tuple[str, ...] = ("gpu", "cta", "sys")
# What a volatile load accepts as cache modifier, by backend; backends not listed accept every load modifier.
# NVIDIA: PTX ld.volatile takes no cache operator (ptxas refuses .ca and .cg; Triton 3.6 drops .cv, so it passes).
VOLATILE_LOAD_CACHE_MODIFIERS: dict[str, tuple[str, ...]] = {"cuda": (".cv",)}


# Helpers of the constexpr functions are constexpr functions too: Triton refuses plain functions reached from a
# kernel. ``hint_values`` is a builtin (it returns a tuple of constexprs, which a constexpr function cannot), so
# its helpers are plain functions, and layout_constexpr.SOURCE_KEY covers this file.
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


def _value(x):
    return getattr(x, "value", x)  # a tl.constexpr (compiled) or the plain value (interpreter)


@builtin
def volatile_load_cache_modifier(value, volatile, _semantic=None):
    """``load``'s ``cache_modifier`` checked as ``load_cache_modifier`` does, and against ``volatile`` for the
    kernel's backend (``VOLATILE_LOAD_CACHE_MODIFIERS``); ValueError names what that backend accepts."""
    value = load_cache_modifier(_value(value))
    backend = "interpreter" if _semantic is None else _semantic.builder.options.backend_name
    accepted = VOLATILE_LOAD_CACHE_MODIFIERS.get(backend)
    if _value(volatile) and value and accepted is not None and value not in accepted:
        choices = ", ".join(["None", *(repr(a) for a in accepted)])
        raise ValueError(f"cache_modifier={value!r} with volatile=True does not compile for {backend}; expected "
                         f"one of {choices} there, or volatile=False")
    return value if _semantic is None else tl.constexpr(value)


def _is_sequence(hint) -> bool:
    return not isinstance(hint, str) and hasattr(hint, "__iter__")


def _shown(hint) -> str:
    return repr(tuple(_value(h) for h in hint)) if _is_sequence(hint) else repr(hint)


def hint_error(hint, shape) -> str | None:
    """Why ``hint`` cannot describe a pointer block of ``shape`` (a sequence of ints), or None if it can."""
    shape = [int(_value(s)) for s in shape]
    dims = len(shape)
    expected = (f"None, a positive int (1-D block or scalar pointer) or a tuple of {dims} positive ints, one per "
                f"dimension of the pointer block (shape {shape})")
    hint = _value(hint)
    if hint is None:
        return None
    values = [_value(h) for h in hint] if _is_sequence(hint) else [hint]
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in values):
        return f"hint={_shown(hint)} is not a valid pointer hint; expected {expected}"
    if not _is_sequence(hint) and dims > 1:
        return f"hint={_shown(hint)} is one int, but the pointer block has {dims} dimensions; expected {expected}"
    if _is_sequence(hint) and len(values) != max(1, dims):
        return f"hint={_shown(hint)} has {len(values)} entries, but the pointer block has {dims}; expected {expected}"
    return None


@builtin
def hint_values(hint, pointer, _semantic=None):
    """``hint`` for ``pointer``'s block as one int per dimension (a scalar pointer: one), for ``multiple_of`` and
    ``max_contiguous``; ValueError if it cannot describe that block. Accepts a literal tuple written in a kernel
    and a tuple passed in as a constexpr alike."""
    error = hint_error(hint, pointer.shape)
    if error is not None:
        raise ValueError(error)
    hint = _value(hint)
    values = [int(_value(h)) for h in hint] if _is_sequence(hint) else [int(hint)]
    if _semantic is None:  # the interpreter takes plain ints
        return values
    return tl.tuple([tl.constexpr(v) for v in values])
