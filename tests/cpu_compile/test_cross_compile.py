"""cpu-compile tier: the op and tracing kernels of tests/ops cross-compiled for sm_90, sm_100, gfx942 and
gfx950 through both device APIs, with checks on the machine code (no GPU needed).

Checks: every kernel compiles for every target, the run-time forms of the Triton context's rank and world size
included; traced kernels read the backend's clock and chip ids;
kernels compiled with tracing off carry no tracing code (same machine code as the untraced twin, no
clock/id reads, no atomics beyond the op's own), every layout of the call-shape family included (at every
num_warps on one target per backend); the trace slot claim is a relaxed atomic; an unknown backend is refused by name.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from conformance.kit.call_shapes import NUM_WARPS as NUM_WARPS_SET
from iris.tracing import hw
from tests.cpu_compile.compile_helpers import (
    APIS,
    MACHINE_CODE,
    SIGNATURES,
    TARGETS,
    TRITON_ONLY,
    WORLD_CONSTEXPRS,
    api_signature,
    atomic_instructions,
    compile_kernel,
    first_difference,
    gluon_kernels_exist,
    kernel_module,
    normalize,
    sass_tool,
)
from tests.ops.op_jobs import ATOMIC_OPS, DATA_OPS, NUM_WARPS

pytestmark = pytest.mark.cpu_compile

API_PARAMS = [
    pytest.param(api, marks=pytest.mark.skipif(
        api == "gluon" and not gluon_kernels_exist(),
        reason="tests/ops/gluon_kernels.py (the Gluon twin of triton_kernels.py) does not exist yet",
    ))
    for api in APIS
]  # fmt: skip

RANK, WORLD, BLOCK = 1, 4, 32  # BLOCK and the 2-D tile are the ones tests/ops/trace_jobs.py launches
ALL_TARGETS = tuple(TARGETS)


def _cx(**constexprs) -> dict:
    return {"rank": RANK, "world": WORLD, **constexprs}


TRACED = [  # kernels compiled with tracing on
    *(("trace_1d_kernel", _cx(BLOCK=BLOCK, USE_MASK=m, TRACING=True)) for m in (True, False)),
    ("trace_mask_kernel", _cx(BLOCK=BLOCK)),
    ("trace_2d_kernel", _cx(BM=16, BN=32)),
    ("trace_layouts_kernel", _cx(BM=16, BN=32)),  # SliceLayout rows/columns, tiles, scalars; scalar masks
    ("trace_loop_kernel", _cx(ITERS=3)),
    ("trace_unfinished_kernel", _cx()),
]
UNTRACED = [  # kernels compiled with tracing off (op_kernel and rank_check_kernel: the default)
    *(("trace_1d_kernel", _cx(BLOCK=BLOCK, USE_MASK=m, TRACING=False)) for m in (True, False)),
    *(("untraced_1d_kernel", _cx(BLOCK=BLOCK, USE_MASK=m, TRACING=False)) for m in (True, False)),
    ("rank_check_kernel", _cx()),
]
OPS = [(op, t) for t in TARGETS for op in DATA_OPS + ATOMIC_OPS]  # every op on every target: 0.1-0.6 s a compile

CLOCK_AND_IDS = {  # what hw.timestamp / cu_id / xcc_id must leave in the machine code
    "cuda": ("%globaltimer", "%smid"),
    "hip": ("s_memrealtime", "hwreg(HW_REG_HW_ID)", "hwreg(HW_REG_XCC_ID)"),
}
ALL_CLOCK_AND_IDS = tuple(s for strings in CLOCK_AND_IDS.values() for s in strings)

# Atomic mnemonics of each op, by machine-code kind (atomic_sub is an add of -val; atomic_or at system
# scope is a compare-and-swap loop on CDNA).
OP_ATOMICS = {
    "ptx": {
        "atomic_add": r"\.add\.", "atomic_sub": r"\.add\.", "atomic_cas": r"\.cas\.", "atomic_xchg": r"\.exch\.",
        "atomic_xor": r"\.xor\.", "atomic_and": r"\.and\.", "atomic_or": r"\.or\.", "atomic_min": r"\.min\.",
        "atomic_max": r"\.max\.",
    },
    "amdgcn": {
        "atomic_add": r"_add$", "atomic_sub": r"_(add|sub)$", "atomic_cas": r"_cmpswap$", "atomic_xchg": r"_swap$",
        "atomic_xor": r"_xor$", "atomic_and": r"_and$", "atomic_or": r"_(or|cmpswap)$", "atomic_min": r"_smin$",
        "atomic_max": r"_smax$",
    },
}  # fmt: skip


def _id(kernel: str, constexprs: dict) -> str:
    extra = ",".join(f"{k}={v}" for k, v in constexprs.items() if k not in ("rank", "world"))
    return f"{kernel}[{extra}]" if extra else kernel


def _kind(target: str) -> str:
    return MACHINE_CODE[TARGETS[target].backend]


def _case_params(cases):
    return [pytest.param(kernel, cx, id=_id(kernel, cx)) for kernel, cx in cases]


def _skip_if_triton_only(api: str, kernel: str) -> None:
    if api == "gluon" and kernel in TRITON_ONLY:
        pytest.skip(f"{kernel} has no Gluon twin: {TRITON_ONLY[kernel]}")


def _check_stages(api: str, asm: dict, kernel: str, target: str) -> None:
    __tracebackhide__ = True
    t = TARGETS[target]
    kind = _kind(target)
    stages = {"ttgir", "llir", kind} | ({"ttir"} if api == "triton" else set())  # Gluon starts at ttgir
    missing = stages - set(asm)
    assert not missing, f"{kernel} on {target}: stages {sorted(missing)} missing (got {sorted(asm)})"
    header = f'ttg.target = "{t.backend}:{t.arch}", "ttg.threads-per-warp" = {t.warp_size} : i32'
    assert header in asm["ttgir"], f"{kernel} on {target}: ttgir module lacks {header!r}"
    entry = f".entry {kernel}(" if kind == "ptx" else f"\n{kernel}:"
    assert entry in asm[kind], f"{kernel} on {target}: {kind} has no kernel entry {entry.strip()!r}"


# ---- 1. everything compiles for every target --------------------------------------------------------


@pytest.mark.parametrize("api", API_PARAMS)
def test_signature_table_matches_kernels(api):
    """SIGNATURES lists exactly the kernels of the api's module, with their parameters in order."""
    module = kernel_module(api)
    kernels = {name: fn for name, fn in vars(module).items()
               if hasattr(fn, "arg_names") and getattr(getattr(fn, "fn", None), "__module__", None) == module.__name__}
    expected = sorted(k for k in SIGNATURES if api == "triton" or k not in TRITON_ONLY)
    assert sorted(kernels) == expected, f"{module.__name__} kernels differ from SIGNATURES"
    for name, fn in kernels.items():
        assert list(fn.arg_names) == list(api_signature(api, name)), f"{module.__name__}.{name} parameters"
        takes_world = [p for p in WORLD_CONSTEXPRS if p in fn.arg_names]
        if api == "gluon":
            assert not takes_world, f"{module.__name__}.{name} takes {takes_world}: one Gluon compile serves every rank"


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("kernel, constexprs", _case_params(TRACED + UNTRACED))
@pytest.mark.parametrize("api", API_PARAMS)
def test_kernel_compiles(api, kernel, constexprs, target):
    _skip_if_triton_only(api, kernel)
    _check_stages(api, compile_kernel(api, kernel, target, constexprs), kernel, target)


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("form", ["context", "tensor"])
def test_run_time_rank_forms_compile(form, target):
    """Triton ``DeviceContext.initialize`` with rank/world_size left out (read from the context: the kernel takes no
    rank, so one compile serves every rank) or given as run-time values compiles, traced."""
    code = compile_kernel("triton", "rank_forms_kernel", target, {"FORM": form})
    _check_stages("triton", code, "rank_forms_kernel", target)
    backend = TARGETS[target].backend
    missing = [s for s in CLOCK_AND_IDS[backend] if s not in code[MACHINE_CODE[backend]]]
    assert not missing, f"rank_forms_kernel[FORM={form}] on {target}: traced {MACHINE_CODE[backend]} lacks {missing}"


@pytest.mark.parametrize("op, target", OPS, ids=[f"{op}-{t}" for op, t in OPS])
@pytest.mark.parametrize("api", API_PARAMS)
def test_op_kernel_compiles_with_only_its_own_atomics(api, op, target):
    """op_kernel compiles; tracing is off, so its only atomics are the op's and no clock/id is read."""
    kind = _kind(target)
    code = compile_kernel(api, "op_kernel", target, _cx(OP=op, BLOCK=BLOCK, TRACE_OPS=False))
    _check_stages(api, code, "op_kernel", target)
    atomics = atomic_instructions(code[kind], kind)
    if op in DATA_OPS:
        assert atomics == [], f"{op} on {target}: a data op emitted atomics {atomics}"
    else:
        pattern = re.compile(OP_ATOMICS[kind][op])
        assert atomics, f"{op} on {target}: no atomic instruction in the {kind}"
        foreign = [a for a in atomics if not pattern.search(a)]
        assert not foreign, f"{op} on {target}: atomics other than the op's own: {foreign}"
    reads = [s for s in ALL_CLOCK_AND_IDS if s in code[kind]]
    assert not reads, f"{op} on {target}: tracing is off, yet the {kind} reads {reads}"


# ---- 2. tracing on: the backend's clock and chip ids are read ---------------------------------------


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("kernel, constexprs", _case_params(TRACED))
@pytest.mark.parametrize("api", API_PARAMS)
def test_traced_kernel_reads_clock_and_ids(api, kernel, constexprs, target):
    backend = TARGETS[target].backend
    kind = MACHINE_CODE[backend]
    code = compile_kernel(api, kernel, target, constexprs)[kind]
    missing = [s for s in CLOCK_AND_IDS[backend] if s not in code]
    assert not missing, f"{kernel} on {target}: traced {kind} lacks {missing}"
    other = [s for b, strings in CLOCK_AND_IDS.items() if b != backend for s in strings if s in code]
    assert not other, f"{kernel} on {target}: {kind} holds another backend's readers {other}"


_TRACING_SOURCES = {"triton": "iris/device/tracing.py", "gluon": "iris/experimental/tracing.py"}


def _source_files(llir: str) -> set[str]:
    """Every source the llir's debug info names, as a path ending in ``iris/...`` where it is one of ours.

    Paths are cut at the last ``/iris/`` folder rather than at this checkout's root: a cached compile made in
    another checkout of the same source names that checkout's folders.
    """
    found = re.findall(r'!DIFile\(filename: "([^"]+)", directory: "([^"]*)"', llir)
    paths = {f if f.startswith("/") else f"{d}/{f}" for f, d in found}
    return {("iris/" + p.rsplit("/iris/", 1)[1]) if "/iris/" in p else p for p in paths}


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("kernel, constexprs", _case_params(TRACED))
@pytest.mark.parametrize("api", API_PARAMS)
def test_traced_kernel_records_through_its_own_tracing(api, kernel, constexprs, target):
    """Gluon kernels record through GluonDeviceTracing (iris/experimental/tracing.py), Triton kernels through
    DeviceTracing (iris/device/tracing.py): the llir's debug info names the one and never the other."""
    files = _source_files(compile_kernel(api, kernel, target, constexprs)["llir"])
    other = "triton" if api == "gluon" else "gluon"
    own = _TRACING_SOURCES[api]
    assert own in files, f"{kernel} ({api}) on {target}: no code from {own}; debug info names {sorted(files)}"
    assert _TRACING_SOURCES[other] not in files, f"{kernel} ({api}) on {target}: code from the {other} tracing"


# ---- 3. tracing compiled off: no tracing code at all ------------------------------------------------


def _assert_same_code(a: str, b: str, kind: str, names: tuple[str, str], where: str) -> None:
    __tracebackhide__ = True
    diff = first_difference(normalize(a, kind, names[0]), normalize(b, kind, names[1]), names)
    assert diff is None, f"{where}: {kind} of {names[0]} differs from {names[1]}\n{diff}"


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("use_mask", [True, False], ids=["masked", "full"])
@pytest.mark.parametrize("api", API_PARAMS)
def test_tracing_off_is_the_untraced_kernel(api, use_mask, target):
    """trace_1d_kernel with TRACING=False compiles to untraced_1d_kernel's machine code (SASS too, for cuda,
    where Triton's bundled cuobjdump runs): no clock/id reads and no atomics."""
    kind = _kind(target)
    cx = _cx(BLOCK=BLOCK, USE_MASK=use_mask, TRACING=False)
    with_sass = TARGETS[target].backend == "cuda" and sass_tool() is not None
    off = compile_kernel(api, "trace_1d_kernel", target, cx, sass=with_sass)
    untraced = compile_kernel(api, "untraced_1d_kernel", target, cx, sass=with_sass)
    names = ("trace_1d_kernel", "untraced_1d_kernel")
    where = f"{api} on {target}, TRACING=False"
    _assert_same_code(off[kind], untraced[kind], kind, names, where)
    if with_sass:
        _assert_same_code(off["sass"], untraced["sass"], "sass", names, where)
    reads = [s for s in ALL_CLOCK_AND_IDS if s in off[kind]]
    assert not reads, f"{where}: {kind} reads {reads}"
    atomics = atomic_instructions(off[kind], kind)
    assert atomics == [], f"{where}: the store kernel has atomics {atomics}"
    # The comparison can see tracing code: with tracing on, the same kernel differs.
    on = compile_kernel(api, "trace_1d_kernel", target, dict(cx, TRACING=True))
    assert first_difference(normalize(on[kind], kind, names[0]), normalize(untraced[kind], kind, names[1]),
                            names) is not None, f"{api} on {target}: normalization hides the tracing code"


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("kernel, constexprs", _case_params(UNTRACED))
@pytest.mark.parametrize("api", API_PARAMS)
def test_untraced_kernel_has_no_tracing_code(api, kernel, constexprs, target):
    _skip_if_triton_only(api, kernel)
    kind = _kind(target)
    code = compile_kernel(api, kernel, target, constexprs)[kind]
    reads = [s for s in ALL_CLOCK_AND_IDS if s in code]
    assert not reads, f"{kernel} on {target}: tracing is off, yet the {kind} reads {reads}"
    atomics = atomic_instructions(code, kind)
    assert atomics == [], f"{kernel} on {target}: tracing is off, yet the {kind} has atomics {atomics}"


# The layouts of the call-shape family follow the warp size and num_warps, which iris chooses by backend alone
# (iris/tracing/hw.py): every num_warps on the first target of each backend, the default on the second.
FIRST_OF_BACKEND = ("sm_90", "gfx942")
SHAPE_WARPS = [(nw, t) for t in ALL_TARGETS for nw in NUM_WARPS_SET if t in FIRST_OF_BACKEND or nw == NUM_WARPS]


@pytest.mark.parametrize("num_warps, target", SHAPE_WARPS, ids=[f"{nw}-{t}" for nw, t in SHAPE_WARPS])
@pytest.mark.parametrize("api", API_PARAMS)
def test_every_call_shape_layout_compiles_traced_and_off(api, num_warps, target):
    """Every layout of the call-shape family's sets (each num_warps, both warp sizes) compiles traced, reading
    the clock and ids; compiled with tracing off it is the untraced kernel's machine code, with no clock and no
    atomics. Each num_warps on sm_90 and gfx942, the default on sm_100 and gfx950 (``FIRST_OF_BACKEND``)."""
    kind = _kind(target)
    where = f"trace_shapes_kernel ({api}, num_warps={num_warps}) on {target}"
    on = compile_kernel(api, "trace_shapes_kernel", target, _cx(TRACING=True), num_warps=num_warps)
    _check_stages(api, on, "trace_shapes_kernel", target)
    missing = [s for s in CLOCK_AND_IDS[TARGETS[target].backend] if s not in on[kind]]
    assert not missing, f"{where}: traced {kind} lacks {missing}"
    off = compile_kernel(api, "trace_shapes_kernel", target, _cx(TRACING=False), num_warps=num_warps)
    untraced = compile_kernel(api, "untraced_shapes_kernel", target, _cx(TRACING=False), num_warps=num_warps)
    _assert_same_code(off[kind], untraced[kind], kind, ("trace_shapes_kernel", "untraced_shapes_kernel"),
                      f"{where}, TRACING=False")
    reads = [s for s in ALL_CLOCK_AND_IDS if s in off[kind]]
    assert not reads, f"{where}, TRACING=False: {kind} reads {reads}"
    assert atomic_instructions(off[kind], kind) == [], f"{where}, TRACING=False: atomics in the {kind}"


# ---- 4. the slot claim is relaxed -------------------------------------------------------------------


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("kernel, constexprs", _case_params(TRACED))
@pytest.mark.parametrize("api", API_PARAMS)
def test_slot_claim_is_relaxed(api, kernel, constexprs, target):
    """The traced kernels' only atomics are the slot claims: a relaxed 64-bit add. cuda: the PTX atom
    carries ``.relaxed``; hip: LLVM's atomicrmw is ``monotonic`` and no release/acquire cache maintenance
    (``buffer_wbl2``/``buffer_inv``, which acq_rel atomics get on CDNA3/4) is emitted."""
    kind = _kind(target)
    asm = compile_kernel(api, kernel, target, constexprs)
    atomics = atomic_instructions(asm[kind], kind)
    assert atomics, f"{kernel} on {target}: no slot-claim atomic in the {kind}"
    if kind == "ptx":
        bad = [a for a in atomics if not re.fullmatch(r"atom\.global\.(gpu\.)?relaxed\.(gpu\.)?add\.u64", a)]
        assert not bad, f"{kernel} on {target}: slot claims should be relaxed 64-bit adds, got {bad}"
    else:
        bad = [a for a in atomics if a != "global_atomic_add_x2"]
        assert not bad, f"{kernel} on {target}: slot claims should be 64-bit adds, got {bad}"
        rmw = [line.strip() for line in asm["llir"].splitlines() if "atomicrmw" in line]
        not_relaxed = [line for line in rmw if " monotonic" not in line]
        assert rmw and not not_relaxed, f"{kernel} on {target}: llir slot claims not monotonic: {not_relaxed or rmw}"
        fences = [line for line in normalize(asm[kind], kind, kernel) if re.match(r"buffer_(wbl2|inv)\b", line)]
        assert not fences, f"{kernel} on {target}: acquire/release cache maintenance around the claim: {fences}"


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_acq_rel_atomic_is_distinguishable(target):
    """Control for the slot-claim check: the default (acq_rel) atomic_add does show its ordering."""
    kind = _kind(target)
    code = compile_kernel("triton", "op_kernel", target, _cx(OP="atomic_add", BLOCK=BLOCK, TRACE_OPS=False))[kind]
    if kind == "ptx":
        assert all(".acq_rel." in a for a in atomic_instructions(code, kind)), atomic_instructions(code, kind)
    else:
        assert re.search(r"^\s*buffer_wbl2\b", code, re.M) and re.search(r"^\s*buffer_inv\b", code, re.M)


# ---- 5. an unknown backend is refused by name -------------------------------------------------------


def test_unsupported_backend_is_refused():
    semantic = SimpleNamespace(builder=SimpleNamespace(options=SimpleNamespace(backend_name="metal")))
    with pytest.raises(NotImplementedError, match="'metal'"):
        hw.backend_name(semantic)
    with pytest.raises(NotImplementedError, match="'metal'"):
        hw.timestamp(_semantic=semantic)


def test_known_backends_pass_through():
    for name in ("cuda", "hip"):
        semantic = SimpleNamespace(builder=SimpleNamespace(options=SimpleNamespace(backend_name=name)))
        assert hw.backend_name(semantic) == name
    assert hw.backend_name(None) == "interpreter"


# ---- 5. a record takes no barrier -------------------------------------------------------------------

BARRIER = {"ptx": r"(bar|barrier)\.sync\b", "amdgcn": r"s_barrier\b"}


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("api", API_PARAMS)
def test_a_record_takes_no_barrier(api, target):
    """Thread 0 owns the trace cursor, so records need no CTA barrier: a kernel recording 3 x 2 events on scalar
    addresses (no reduction) has one barrier, initialize's (its claim's result reaches every thread). On hip
    every cursor read takes lane 0's value (``hw.load_lane0``: a ``v_readlane_b32`` of each half, at every copy of
    a claim site the compiler makes); on cuda there is no such instruction (shuffles instead: the next test)."""
    kind = _kind(target)
    asm = compile_kernel(api, "trace_loop_kernel", target, _cx(ITERS=3))
    lines = normalize(asm[kind], kind, "trace_loop_kernel")
    barriers = [line for line in lines if re.match(BARRIER[kind], line)]
    assert len(barriers) == 1, f"trace_loop_kernel on {target}: {len(barriers)} barriers, expected initialize's only"
    readlanes = [line for line in lines if line.startswith("v_readlane_b32")]
    if kind == "amdgcn":
        assert readlanes and len(readlanes) % 2 == 0, f"trace_loop_kernel on {target}: {readlanes}"
    else:
        assert not readlanes, f"trace_loop_kernel on {target}: {readlanes}"


# ---- 6. a warp reads the trace cursor through lane 0 ------------------------------------------------------

CUDA_TARGETS = tuple(t for t in ALL_TARGETS if TARGETS[t].backend == "cuda")
LANE0_LOAD = r"@%p ld\.relaxed\.cta\.global\.b64"


@pytest.mark.parametrize("target", CUDA_TARGETS)
@pytest.mark.parametrize("api", API_PARAMS)
def test_the_cursor_is_read_by_lane_0_and_shuffled(api, target):
    """Every read of the trace cursor is ``hw.load_lane0``: one relaxed load predicated to lane 0 and a shuffle of
    each half from lane 0, which ptxas keeps (a plain load of one address, which every lane makes, ptxas takes as
    one value for the warp: a store by another warp between the half-warps of a 64-bit load then split a warp's
    lanes across the refill branch, and a 4-warp traced loop hung on one H200). In the SASS every such load is
    followed by two ``SHFL.IDX`` from lane 0 before any branch."""
    asm = compile_kernel(api, "trace_loop_kernel", target, _cx(ITERS=3), sass=sass_tool() is not None)
    ptx = asm["ptx"]
    loads = re.findall(LANE0_LOAD, ptx)
    shuffles = re.findall(r"shfl\.sync\.idx\.b32 %\w+, %\w+, 0, 0x1f, 0xffffffff", ptx)
    assert loads and len(shuffles) == 2 * len(loads), f"{target}: {len(loads)} lane-0 loads, {len(shuffles)} shuffles"
    if "sass" not in asm:
        return
    lines = [line.split("\t")[-1].strip() for line in asm["sass"].splitlines() if line.strip()]
    strong = [i for i, line in enumerate(lines) if "LDG.E.64.STRONG.SM" in line]
    assert strong, f"{target}: no relaxed CTA-scope 64-bit load in the SASS"
    for i in strong:
        following = []
        for line in lines[i + 1:]:
            if re.search(r"\bBRA\b", line):
                break
            following.append(line)
        from_lane0 = [line for line in following if re.match(r"SHFL\.IDX PT, R\d+, R\d+, RZ, 0x1f", line)]
        assert len(from_lane0) == 2, f"{target}: {lines[i]} then {following[:8]}"
