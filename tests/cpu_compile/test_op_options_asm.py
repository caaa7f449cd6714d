"""cpu-compile tier: the ops' cache modifiers and pointer hint reach the compiler and the machine code, in both
APIs, on sm_90, sm_100, gfx942 and gfx950; invalid values fail at compile time naming the value.

What Triton 3.6 emits for each cache modifier (asserted below; the data here are 32-bit accesses):

    load   PTX ld.global        AMDGCN global_load_dword        store  PTX st.global   AMDGCN global_store_dword
    None   (no qualifier)       (no bits)                       None   (none)          (no bits)
    .ca    .ca                  (no bits)                       .wb    .wb             (no bits)
    .cg    .cg                  nt                              .cg    .cg             (no bits)
    .cv    (none: 3.6 drops it) sc0 sc1                         .cs    .cs             nt
                                                                .wt    .wt             sc0 sc1

Every modifier other than None also shows in the TTGIR as ``cacheModifier = <name>`` on the op.
A hint becomes ``tt.divisibility``/``tt.contiguity`` on each translated pointer, and lets the remote accesses
be 128-bit (``.v4.b32`` / ``dwordx4``); without it they stay 32-bit, except for Gluon on AMD, where the
layout's 4 contiguous elements per thread already give ``dwordx4`` (AMD needs no 16-byte alignment for it).
"""

from __future__ import annotations

import re

import pytest

from iris import op_options
from tests.cpu_compile.compile_helpers import APIS, MACHINE_CODE, TARGETS, compile_function, normalize
from tests.cpu_compile.option_kernels import KERNELS, SIGNATURE, TILE_KERNELS, TILE_SIGNATURE

pytestmark = pytest.mark.cpu_compile

BLOCK = 1024  # 8 elements per thread on NVIDIA, 4 on AMD (num_warps 4): room for 128-bit accesses
HINT = BLOCK
REMOTE = {"load": ("load",), "store": ("store",), "get": ("load",), "put": ("store",), "copy": ("load", "store"),
          "atomic_add": ()}  # which accesses of each op go through a translated pointer
CARRIES = {"load": ("load",), "store": ("store",), "get": ("load", "store"), "put": ("load", "store"),
           "copy": ("load", "store")}  # which accesses of each op take the op's cache modifiers

# Qualifiers (PTX) / cache-policy bits (AMDGCN) each modifier leaves on a 32-bit data access, by access kind.
CACHE_BITS = {
    "ptx": {
        "load": {None: set(), ".ca": {"ca"}, ".cg": {"cg"}, ".cv": set()},
        "store": {None: set(), ".wb": {"wb"}, ".cg": {"cg"}, ".cs": {"cs"}, ".wt": {"wt"}},
    },
    "amdgcn": {
        "load": {None: set(), ".ca": set(), ".cg": {"nt"}, ".cv": {"sc0", "sc1"}},
        "store": {None: set(), ".wb": set(), ".cg": set(), ".cs": {"nt"}, ".wt": {"sc0", "sc1"}},
    },
}  # fmt: skip
_PTX_ACCESS = re.compile(r"\b(?P<kind>ld|st)\.global(?P<quals>(?:\.[a-z0-9]+)*?)\.b32\b")
_AMD_ACCESS = re.compile(r"^global_(?P<kind>load|store)_dword(?P<width>x[234])?\s+(?P<operands>.*)$")
_AMD_BITS = {"sc0", "sc1", "nt"}


def _compile(api, target, op, load_cm=None, store_cm=None, hint=None, volatile=False) -> dict[str, str]:
    constexprs = {"rank": 0, "world": 2, "OP": op, "LOAD_CM": load_cm, "STORE_CM": store_cm, "VOLATILE": volatile,
                  "HINT": hint, "BLOCK": BLOCK}
    return compile_function(api, KERNELS[api], target, constexprs, SIGNATURE, divisible_by_16=("n",))


def data_accesses(code: str, kind: str) -> list[tuple[str, int, frozenset]]:
    """The 32-bit data loads/stores of ``code``: (``"load"``/``"store"``, elements per access, cache bits)."""
    found = []
    for line in normalize(code, kind, "\0"):
        if kind == "ptx":
            m = _PTX_ACCESS.search(line)
            if m:
                quals = [q for q in m["quals"].split(".") if q]
                width = next((int(q[1:]) for q in quals if re.fullmatch(r"v\d", q)), 1)
                bits = frozenset(q for q in quals if not re.fullmatch(r"v\d", q))
                found.append(("load" if m["kind"] == "ld" else "store", width, bits))
        else:
            m = _AMD_ACCESS.match(line)
            if m:
                width = int(m["width"][1:]) if m["width"] else 1
                found.append((m["kind"], width, frozenset(_AMD_BITS & set(m["operands"].split()))))
    return found


def _accesses(asm, target, access):
    kind = MACHINE_CODE[TARGETS[target].backend]
    return [a for a in data_accesses(asm[kind], kind) if a[0] == access]


# ---- the helper itself ------------------------------------------------------------------------------------


def test_data_accesses_reads_widths_and_bits():
    ptx = "@%p1 ld.global.cg.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];\nld.global.b64 { %rd9 }, [ %rd2 + 0 ];\n" \
          "@%p2 st.global.wt.b32 [ %rd3 + 0 ], { %r5 };"
    assert data_accesses(ptx, "ptx") == [("load", 4, frozenset({"cg"})), ("store", 1, frozenset({"wt"}))]
    gcn = "global_load_dwordx4 v[4:7], v[2:3], off sc0 sc1\ns_load_dwordx2 s[0:1], s[2:3], 0x0\n" \
          "global_load_dwordx2 v[0:1], v[2:3], off\nglobal_store_dword v[0:1], v5, off offset:1024 nt"
    assert data_accesses(gcn, "amdgcn") == [("load", 4, frozenset({"sc0", "sc1"})), ("load", 2, frozenset()),
                                            ("store", 1, frozenset({"nt"}))]  # the scalar s_load is no data access


# ---- cache modifiers ----------------------------------------------------------------------------------------

MODIFIER_CASES = [
    *(("load", cm, None) for cm in op_options.LOAD_CACHE_MODIFIERS),
    *(("store", None, cm) for cm in op_options.STORE_CACHE_MODIFIERS),
    ("get", None, None), ("get", ".cg", ".wt"), ("put", ".cv", ".cs"), ("copy", ".ca", ".wb"), ("copy", ".cg", ".cg"),
]  # fmt: skip


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("op, load_cm, store_cm", MODIFIER_CASES, ids=["-".join(map(str, c)) for c in MODIFIER_CASES])
@pytest.mark.parametrize("api", APIS)
def test_cache_modifier_reaches_the_machine_code(api, op, load_cm, store_cm, target):
    asm = _compile(api, target, op, load_cm, store_cm)
    kind = MACHINE_CODE[TARGETS[target].backend]
    for access, modifier in (("load", load_cm), ("store", store_cm)):
        applied = modifier if access in CARRIES[op] else None
        expected = CACHE_BITS[kind][access][applied]
        found = _accesses(asm, target, access)
        assert found, f"{api} {op} on {target}: no 32-bit data {access} in the {kind}"
        wrong = [a for a in found if a[2] != expected]
        assert not wrong, (f"{api} {op} on {target}: {access}s with cache bits {sorted(wrong[0][2])}, but should be "
                           f"{sorted(expected)} ({access} modifier {applied!r})")
        ir_ops = [line for line in asm["ttgir"].splitlines() if re.search(rf"\btt\.{access} ", line)]
        marked = [line for line in ir_ops if "cacheModifier" in line]
        if applied is None:
            assert not marked, f"{api} {op} on {target}: ttgir {access}s carry a modifier: {marked[0].strip()}"
        else:
            needle = f"cacheModifier = {applied[1:]}"
            assert marked and all(needle in line for line in marked), \
                f"{api} {op} on {target}: ttgir {access}s should carry {needle!r}: {marked or ir_ops}"


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("load_cm", [None, *op_options.LOAD_CACHE_MODIFIERS])
@pytest.mark.parametrize("api", APIS)
def test_volatile_load_with_a_cache_modifier(api, load_cm, target):
    """A volatile load takes the modifiers its target can encode (``VOLATILE_LOAD_CACHE_MODIFIERS``): on NVIDIA
    ``ld.volatile`` has no cache operator, so ``.ca``/``.cg`` fail at compile time naming what is accepted."""
    backend = TARGETS[target].backend
    accepted = op_options.VOLATILE_LOAD_CACHE_MODIFIERS.get(backend, op_options.LOAD_CACHE_MODIFIERS)
    if load_cm is None or load_cm in accepted:
        asm = _compile(api, target, "load", load_cm=load_cm, volatile=True)
        if backend == "cuda":
            volatile_loads = re.findall(r"\bld\.volatile\.global\.b32\b", asm["ptx"])
            assert volatile_loads, f"{api} volatile load on {target}: no ld.volatile.global.b32 in the ptx"
        return
    with pytest.raises(Exception) as e:
        _compile(api, target, "load", load_cm=load_cm, volatile=True)
    message = (f"cache_modifier={load_cm!r} with volatile=True does not compile for {backend}; expected one of "
               f"None, {', '.join(repr(a) for a in accepted)} there, or volatile=False")
    assert any(message in m for m in _messages(e.value)), f"{api} on {target}: no error says {message!r}"


# ---- hint ---------------------------------------------------------------------------------------------------

HINT_OPS = ("load", "store", "get", "put", "copy", "atomic_add")


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("op", HINT_OPS)
@pytest.mark.parametrize("api", APIS)
def test_hint_marks_every_translated_pointer(api, op, target):
    """The hint is attached to each translated pointer (copy translates two), and only with a hint."""
    translated = {"copy": 2}.get(op, 1)
    attrs = f"tt.contiguity = dense<{HINT}> : tensor<1xi32>, tt.divisibility = dense<{HINT}> : tensor<1xi32>"
    hinted = _compile(api, target, op, hint=HINT)["ttgir"]
    assert hinted.count(attrs) == translated, f"{api} {op} on {target}: {hinted.count(attrs)} pointers carry " \
                                              f"{attrs!r}, but should be {translated}"
    plain = _compile(api, target, op)["ttgir"]
    assert "tt.contiguity" not in plain, f"{api} {op} on {target}: contiguity attributes without a hint"


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("op", [op for op in HINT_OPS if REMOTE[op]])
@pytest.mark.parametrize("api", APIS)
def test_hint_vectorizes_the_remote_accesses(api, op, target):
    layout_decides = api == "gluon" and TARGETS[target].backend == "hip"
    for hint, width in ((HINT, 4), (None, 4 if layout_decides else 1)):
        asm = _compile(api, target, op, hint=hint)
        for access in REMOTE[op]:
            widths = sorted({a[1] for a in _accesses(asm, target, access)})
            assert widths == [width], f"{api} {op} on {target}, hint={hint}: remote {access} widths {widths}, but " \
                                      f"should be [{width}]"


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("api", APIS)
def test_tuple_hint_on_a_2d_tile(api, target):
    """A tuple hint gives each dimension its own promise: rows of 256 contiguous elements, one row apart."""
    constexprs = {"rank": 0, "world": 2, "HINT": (1, 256), "BM": 8, "BN": 256}
    ttgir = compile_function(api, TILE_KERNELS[api], target, constexprs, TILE_SIGNATURE)["ttgir"]
    attrs = "tt.contiguity = dense<[1, 256]> : tensor<2xi32>, tt.divisibility = dense<[1, 256]> : tensor<2xi32>"
    assert ttgir.count(attrs) == 1, f"{api} tile on {target}: the translated tile lacks {attrs!r}"
    with pytest.raises(Exception) as e:
        compile_function(api, TILE_KERNELS[api], target, dict(constexprs, HINT=256), TILE_SIGNATURE)
    message = "hint=256 is one int, but the pointer block has 2 dimensions"
    assert any(message in m for m in _messages(e.value)), f"{api}: no error says {message!r}: {_messages(e.value)}"


# ---- invalid values -----------------------------------------------------------------------------------------

INVALID = [
    ("load", {"LOAD_CM": ".wb"}, "cache_modifier='.wb' is not a load cache modifier; expected one of None, '.ca', "
                                 "'.cg', '.cv'"),
    ("store", {"STORE_CM": ".cv"}, "cache_modifier='.cv' is not a store cache modifier; expected one of None, "
                                   "'.wb', '.cg', '.cs', '.wt'"),
    ("get", {"LOAD_CM": "cg"}, "load_cache_modifier='cg' is not a load cache modifier"),
    ("put", {"STORE_CM": ".ca"}, "store_cache_modifier='.ca' is not a store cache modifier"),
    ("copy", {"HINT": (1, BLOCK)}, f"hint=(1, {BLOCK}) has 2 entries, but the pointer block has 1; expected None, "
                                   "a positive int"),
    ("atomic_add", {"HINT": 0}, "hint=0 is not a valid pointer hint"),
]  # fmt: skip


def _messages(error: BaseException) -> list[str]:
    out = []
    while error is not None:
        out.append(str(error))
        error = error.__cause__ or error.__context__
    return out


@pytest.mark.parametrize("op, bad, message", INVALID, ids=[f"{op}-{next(iter(bad))}" for op, bad, _ in INVALID])
@pytest.mark.parametrize("api", APIS)
def test_invalid_option_fails_at_compile_time(api, op, bad, message):
    options = {"load_cm": bad.get("LOAD_CM"), "store_cm": bad.get("STORE_CM"), "hint": bad.get("HINT")}
    with pytest.raises(Exception) as e:
        _compile(api, "sm_90", op, **options)
    messages = _messages(e.value)
    assert any(message in m for m in messages), f"{api} {op} with {bad}: no error says {message!r}: {messages}"


# ---- kernels of the other tiers that use the options compile for every target ------------------------------

_POINTERS = {"ctx_t": "*i64", "context_tensor": "*i64", "bits": "*i8"}  # every other pointer: int32 data


def _signature(fn, pointers, constexprs) -> dict[str, str]:
    return {name: "constexpr" if name in constexprs else _POINTERS.get(name, "*i32" if name in pointers else "i32")
            for name in fn.arg_names}


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("scenario", ["get_options", "put_options", "copy_options"])
@pytest.mark.parametrize("api", APIS)
def test_option_scenario_kernels_compile_with_every_modifier(api, scenario, target):
    """The conformance kernels that the gpu tier runs compile, and carry every cache modifier (TTGIR), with their
    ops auto-traced (``TRACE_OPS``, which the scenarios draw; on, a kernel holds all it holds off, and the ranges)."""
    from conformance.kit.scenario import load, world_constexprs

    fn = load(scenario).kernel(api)
    constexprs = {**world_constexprs(fn, 0, 2), "BLOCK": 64, "TRACE_OPS": True}
    ttgir = compile_function(api, fn, target, constexprs, _signature(fn, ("src", "dst"), constexprs))["ttgir"]
    for access, modifiers in (("load", op_options.LOAD_CACHE_MODIFIERS), ("store", op_options.STORE_CACHE_MODIFIERS)):
        found = set(re.findall(rf"\btt\.{access} .*cacheModifier = (\w+)", ttgir))
        assert found == {m[1:] for m in modifiers}, f"{scenario} {api} on {target}: {access} modifiers {found}"


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("api", APIS)
def test_upstream_style_kernels_compile(api, target):
    """tests/cpu_interpret/upstream_kernels.py (run on CPU worlds, and on GPUs by the gpu tier) compiles."""
    import iris.gluon
    from tests.cpu_interpret import upstream_kernels as k

    all_ops, flag_cas = k.KERNELS[api]
    pointers = ("src", "loaded", "stored", "got", "putted", "copied", "atom", "old", "vals", "cmps", "flag", "won")
    for fn, constexprs in ((all_ops, {"BLOCK": 32}), (flag_cas, {})):
        constexprs = {**constexprs, **({"rank": 0, "world_size": 2} if api == "triton" else
                                       {"IrisDeviceCtx": iris.gluon.IrisDeviceCtx})}
        asm = compile_function(api, fn, target, constexprs, _signature(fn, pointers, constexprs))
        assert MACHINE_CODE[TARGETS[target].backend] in asm, f"{fn.__name__} on {target}: no machine code"
