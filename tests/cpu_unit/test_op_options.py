"""iris.op_options on the host: accepted values pass through unchanged; anything else names itself and the choices."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import triton.language as tl

from iris import op_options as O

pytestmark = pytest.mark.cpu_unit


@pytest.mark.parametrize("value", [None, "", ".ca", ".cg", ".cv"])
def test_load_cache_modifiers_pass_through(value):
    assert O.load_cache_modifier(value) == value


@pytest.mark.parametrize("value", [None, "", ".wb", ".cg", ".cs", ".wt"])
def test_store_cache_modifiers_pass_through(value):
    assert O.store_cache_modifier(value) == value


@pytest.mark.parametrize("check, value, keyword, choices", [
    (O.load_cache_modifier, ".wb", "load_cache_modifier", "None, '.ca', '.cg', '.cv'"),
    (O.load_cache_modifier, "cg", "cache_modifier", "None, '.ca', '.cg', '.cv'"),
    (O.load_cache_modifier, 1, "cache_modifier", "None, '.ca', '.cg', '.cv'"),
    (O.store_cache_modifier, ".cv", "store_cache_modifier", "None, '.wb', '.cg', '.cs', '.wt'"),
    (O.store_cache_modifier, ".CS", "cache_modifier", "None, '.wb', '.cg', '.cs', '.wt'"),
])  # fmt: skip
def test_bad_cache_modifier_names_value_and_choices(check, value, keyword, choices):
    args = (value,) if keyword == "cache_modifier" else (value, keyword)
    with pytest.raises(ValueError) as e:
        check(*args)
    assert str(e.value) == f"{keyword}={value!r} is not a {check.fn.__name__.replace('_', ' ')}; expected one of " \
                           f"{choices}", str(e.value)


@pytest.mark.parametrize("value", [None, "acquire", "release", "acq_rel", "relaxed"])
def test_memory_semantics_pass_through(value):
    assert O.memory_semantic(value) == value


@pytest.mark.parametrize("value", [None, "gpu", "cta", "sys"], ids=repr)  # a bare "gpu" id would mark the gpu tier
def test_memory_scopes_pass_through(value):
    assert O.memory_scope(value) == value


def test_bad_sem_and_scope_name_value_and_choices():
    with pytest.raises(ValueError, match=re.escape("sem='seq_cst' is not a memory semantic; expected one of None, "
                                                   "'acquire', 'release', 'acq_rel', 'relaxed'")):
        O.memory_semantic("seq_cst")
    with pytest.raises(ValueError, match=re.escape("scope='system' is not a scope; expected one of None, 'gpu', "
                                                   "'cta', 'sys'")):
        O.memory_scope("system")


def _pointer(shape):
    """What ``hint_values`` reads from a pointer block: its shape."""
    return SimpleNamespace(shape=shape)


@pytest.mark.parametrize("hint, shape, values", [
    (16, [], [16]), (16, [32], [16]), (1, [32], [1]),
    ((16,), [], [16]), ((16,), [32], [16]), ((1, 64), [16, 64], [1, 64]), ([1, 64], [16, 64], [1, 64]),
    (tl.constexpr(16), [tl.constexpr(32)], [16]),  # as a compiled kernel passes them
    (tl.constexpr((1, 64)), [16, 64], [1, 64]),  # a tuple passed into the kernel as a constexpr
    ((tl.constexpr(1), tl.constexpr(64)), [tl.constexpr(16), tl.constexpr(64)], [1, 64]),  # a literal tuple
])  # fmt: skip
def test_valid_hints(hint, shape, values):
    assert O.hint_error(hint, shape) is None
    assert O.hint_values(hint, _pointer(shape)) == values  # the interpreter's form: plain ints


def test_no_hint_is_valid_for_any_block():
    assert O.hint_error(None, []) is None
    assert O.hint_error(None, [32, 64]) is None


def test_compiled_hint_values_are_a_tuple_of_constexprs():
    values = O.hint_values((1, 64), _pointer([16, 64]), _semantic=object())
    assert isinstance(values, tl.tuple), type(values)
    assert [type(v) for v in values] == [tl.constexpr, tl.constexpr]
    assert [v.value for v in values] == [1, 64]


@pytest.mark.parametrize("hint, shape, why", [
    (0, [32], "hint=0 is not a valid pointer hint"),
    (-4, [32], "hint=-4 is not a valid pointer hint"),
    (True, [32], "hint=True is not a valid pointer hint"),
    (2.0, [32], "hint=2.0 is not a valid pointer hint"),
    ("16", [32], "hint='16' is not a valid pointer hint"),
    ((), [32], "hint=() is not a valid pointer hint"),
    ((16, 0), [4, 32], "hint=(16, 0) is not a valid pointer hint"),
    (64, [16, 64], "hint=64 is one int, but the pointer block has 2 dimensions"),
    ((1, 64), [64], "hint=(1, 64) has 2 entries, but the pointer block has 1"),
    ((1, 1, 64), [16, 64], "hint=(1, 1, 64) has 3 entries, but the pointer block has 2"),
])  # fmt: skip
def test_invalid_hints_name_value_and_choices(hint, shape, why):
    dims = len(shape)
    expected = (f"{why}; expected None, a positive int (1-D block or scalar pointer) or a tuple of {dims} positive "
                f"ints, one per dimension of the pointer block (shape {shape})")
    assert O.hint_error(hint, shape) == expected
    with pytest.raises(ValueError) as e:
        O.hint_values(hint, _pointer(shape))
    assert str(e.value) == expected


def _semantic(backend: str):
    """What ``volatile_load_cache_modifier`` reads from the code generator: the target's backend name."""
    return SimpleNamespace(builder=SimpleNamespace(options=SimpleNamespace(backend_name=backend)))


@pytest.mark.parametrize("backend", ["cuda", "hip", None], ids=["cuda", "hip", "interpreter"])
@pytest.mark.parametrize("value", [None, ".ca", ".cg", ".cv"])
@pytest.mark.parametrize("volatile", [False, True])
def test_volatile_load_cache_modifier(backend, value, volatile):
    semantic = None if backend is None else _semantic(backend)
    refused = backend == "cuda" and volatile and value in (".ca", ".cg")
    if refused:
        with pytest.raises(ValueError) as e:
            O.volatile_load_cache_modifier(value, volatile, _semantic=semantic)
        assert str(e.value) == (f"cache_modifier={value!r} with volatile=True does not compile for cuda; expected one "
                                "of None, '.cv' there, or volatile=False")
        return
    got = O.volatile_load_cache_modifier(tl.constexpr(value), tl.constexpr(volatile), _semantic=semantic)
    assert (got if semantic is None else got.value) == value


def test_volatile_load_cache_modifier_still_checks_the_modifier():
    with pytest.raises(ValueError, match=re.escape("cache_modifier='.wt' is not a load cache modifier")):
        O.volatile_load_cache_modifier(".wt", False, _semantic=_semantic("hip"))
