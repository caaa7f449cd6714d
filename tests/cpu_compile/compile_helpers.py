"""Cross-compile the test kernels of ``tests/ops`` for GPU targets on a machine without a GPU.

``compile_kernel(api, kernel, target_name, constexprs)`` compiles ``tests/ops/<api>_kernels.<kernel>``
(``api`` is "triton" or "gluon"; the Gluon twin has the same kernel names and parameters, less the
``rank``/``world`` constexprs, which only Triton kernels take and which are dropped for Gluon here) for one of
``TARGETS`` and returns its text stages: ``ttir``, ``ttgir``, ``llir`` and the machine code (``ptx`` for
cuda, ``amdgcn`` for hip; ``MACHINE_CODE``), plus ``sass`` for cuda when asked (disassembled with the
``cuobjdump`` bundled in the Triton wheel).
``compile_function(api, fn, target_name, constexprs, signature)`` does the same for any jit function, and
``compile_scenario(scenario, api, target_name)`` for a conformance scenario's kernel, as the first launch of its
simplest example (``simplest_launches``, typed by ``launch_signature``) compiles it.

The compiles go through ``benchmarks/cross_compile.py`` (its own Triton cache, keyed on iris's sources, which
pytest-xdist workers share); results are also kept in this process.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import os
import re

import torch
import triton
from hypothesis import Phase, find, settings

from benchmarks.cross_compile import TARGETS, compile_jit, disassembled
from conformance.harness.stand_in import captured_launches
from tests.ops.op_jobs import NUM_WARPS

APIS = ("triton", "gluon")
GLUON_KERNELS = "tests.ops.gluon_kernels"

# The machine code each backend's compile yields as text (SASS needs cuobjdump; see ``compile_kernel``).
MACHINE_CODE: dict[str, str] = {"cuda": "ptx", "hip": "amdgcn"}

# Triton signature of every kernel of tests/ops/{triton,gluon}_kernels.py, in parameter order (the Gluon
# twin's is the same without WORLD_CONSTEXPRS; see ``api_signature``).
_1D = {
    "ctx_t": "*i64", "buf": "*i32", "n": "i32", "target": "i32", "payload": "i32",
    "rank": "constexpr", "world": "constexpr", "BLOCK": "constexpr", "USE_MASK": "constexpr", "TRACING": "constexpr",
}  # fmt: skip
_SHAPES = {"ctx_t": "*i64", "buf": "*i32", "bits": "*i8", "rank": "constexpr", "world": "constexpr",
           "TRACING": "constexpr"}
SIGNATURES: dict[str, dict[str, str]] = {
    "op_kernel": {
        "ctx_t": "*i64", "src": "*i32", "dst": "*i32", "ret": "*i32", "n": "i32", "peer": "i32", "peer2": "i32",
        "rank": "constexpr", "world": "constexpr", "OP": "constexpr", "BLOCK": "constexpr", "TRACE_OPS": "constexpr",
    },
    "trace_1d_kernel": _1D,
    "trace_mask_kernel": {
        "ctx_t": "*i64", "buf": "*i32", "bits": "*i8", "rank": "constexpr", "world": "constexpr", "BLOCK": "constexpr",
    },
    "trace_2d_kernel": {
        "ctx_t": "*i64", "buf": "*i64", "M": "i32", "N": "i32", "stride": "i32",
        "rank": "constexpr", "world": "constexpr", "BM": "constexpr", "BN": "constexpr",
    },
    "trace_loop_kernel": {"ctx_t": "*i64", "buf": "*i32", "ITERS": "constexpr", "rank": "constexpr",
                          "world": "constexpr"},
    "trace_layouts_kernel": {
        "ctx_t": "*i64", "buf": "*i32", "bits": "*i8", "flags": "*i32",
        "rank": "constexpr", "world": "constexpr", "BM": "constexpr", "BN": "constexpr",
    },
    "untraced_1d_kernel": _1D,
    "trace_unfinished_kernel": {"ctx_t": "*i64", "buf": "*i32", "rank": "constexpr", "world": "constexpr"},
    "trace_shapes_kernel": _SHAPES,
    "untraced_shapes_kernel": _SHAPES,
    "rank_check_kernel": {"ctx_t": "*i64", "rank": "constexpr", "world": "constexpr"},
    "rank_forms_kernel": {"ctx_t": "*i64", "buf": "*i32", "out": "*i64", "rank_arg": "i32", "world_arg": "i32",
                          "FORM": "constexpr"},
}  # fmt: skip

# Kernels with no Gluon twin, and why (tests/ops/test_tracing.py runs rank_check_kernel for Triton only).
TRITON_ONLY: dict[str, str] = {
    "rank_check_kernel": "Gluon's IrisDeviceCtx reads rank and world from the context (no constexpr copy to check)",
    "rank_forms_kernel": "Gluon's IrisDeviceCtx.initialize has one form (rank and world read from the context), "
                         "which every Gluon kernel uses",
}

WORLD_CONSTEXPRS = ("rank", "world")  # Triton kernels only: Gluon reads both from the context at run time

_CACHE: dict[tuple, dict[str, str]] = {}
_CUBINS: dict[tuple, bytes] = {}


def gluon_kernels_exist() -> bool:
    return importlib.util.find_spec(GLUON_KERNELS) is not None


def kernel_module(api: str):
    """``tests.ops.triton_kernels`` or ``tests.ops.gluon_kernels``."""
    if api not in APIS:
        raise ValueError(f"api must be one of {APIS}, not {api!r}")
    return importlib.import_module(f"tests.ops.{api}_kernels")


def api_signature(api: str, kernel: str) -> dict[str, str]:
    """``SIGNATURES[kernel]`` as ``api``'s kernel declares it (Gluon: without ``WORLD_CONSTEXPRS``)."""
    full = SIGNATURES[kernel]
    return dict(full) if api == "triton" else {k: v for k, v in full.items() if k not in WORLD_CONSTEXPRS}


def api_constexprs(api: str, constexprs: dict) -> dict:
    """``constexprs`` as ``api``'s kernel takes them (Gluon: without ``WORLD_CONSTEXPRS``)."""
    return dict(constexprs) if api == "triton" else {k: v for k, v in constexprs.items() if k not in WORLD_CONSTEXPRS}


def kernel_function(api: str, kernel: str):
    """The jit function ``kernel`` of ``api``'s module, checked against ``api_signature(api, kernel)``."""
    module = kernel_module(api)
    fn = getattr(module, kernel, None)
    if fn is None:
        raise LookupError(f"{module.__name__} has no {kernel} (twin of tests.ops.triton_kernels.{kernel})")
    expected = list(api_signature(api, kernel))
    if list(fn.arg_names) != expected:
        raise TypeError(f"{module.__name__}.{kernel} has parameters {list(fn.arg_names)}, expected {expected} "
                        "(tests/cpu_compile/compile_helpers.py SIGNATURES)")
    return fn


def sass_tool() -> str | None:
    """Path of the cuobjdump that ships with Triton's NVIDIA backend, or None if it cannot run here."""
    try:
        path = triton.knobs.nvidia.cuobjdump.path
    except Exception:  # no NVIDIA backend, or the knob cannot resolve a binary
        return None
    return path if path and os.access(path, os.X_OK) else None


def compile_kernel(api: str, kernel: str, target_name: str, constexprs: dict, signature: dict | None = None, *,
                   sass: bool = False, num_warps: int = NUM_WARPS) -> dict[str, str]:
    """Text stages of ``kernel`` (a name from ``SIGNATURES``) compiled by ``api`` for ``TARGETS[target_name]``.

    ``signature`` defaults to ``api_signature(api, kernel)``; ``constexprs`` may name ``rank``/``world``, which
    a Gluon compile drops. With ``sass=True`` a cuda compile also returns
    ``sass`` (``cuobjdump -sass`` of the cubin; see ``sass_tool``). Repeated calls in one process return
    copies of the first result.
    """
    signature = api_signature(api, kernel) if signature is None else signature
    constexprs = api_constexprs(api, constexprs)
    return compile_function(api, kernel_function(api, kernel), target_name, constexprs, signature, sass=sass,
                            num_warps=num_warps)


def compile_function(api: str, fn, target_name: str, constexprs: dict, signature: dict, *,
                     divisible_by_16: tuple[str, ...] = (), sass: bool = False,
                     num_warps: int = NUM_WARPS) -> dict[str, str]:
    """Text stages of the jit function ``fn`` (of ``api``) compiled for ``TARGETS[target_name]``; see
    ``compile_kernel``. ``divisible_by_16`` names arguments specialized as a launch specializes an int or a
    pointer that is a multiple of 16 (``tt.divisibility = 16``); the others are not specialized. A Gluon compile
    drops ``rank``/``world`` from ``constexprs`` and ``signature`` (Gluon kernels read both at run time).
    ``num_warps``: the launch option the kernel is compiled for (default ``tests.ops.op_jobs.NUM_WARPS``)."""
    constexprs = api_constexprs(api, constexprs)
    if api == "gluon":
        signature = {k: v for k, v in signature.items() if k not in WORLD_CONSTEXPRS}
    target = TARGETS[target_name]
    python_fn = getattr(fn, "fn", fn)
    key = (api, python_fn.__module__, python_fn.__qualname__, target_name, tuple(sorted(constexprs.items())),
           tuple(signature.items()), divisible_by_16, num_warps)
    if key not in _CACHE:
        compiled = compile_jit(api, fn, target_name, constexprs, signature, divisible_by_16=divisible_by_16,
                               num_warps=num_warps)
        _CACHE[key] = {stage: text for stage, text in compiled.asm.items() if isinstance(text, str)}
        if "cubin" in compiled.asm:
            _CUBINS[key] = compiled.asm["cubin"]
    asm = _CACHE[key]
    if sass and target.backend == "cuda" and "sass" not in asm:
        asm["sass"] = disassembled(_CUBINS[key])
    return dict(asm)


# ---- conformance scenarios' kernels ------------------------------------------------------------------------

SCENARIO_WORLD = 2  # the world size of the captured launches
_SIMPLEST = settings(database=None, max_examples=1, phases=(Phase.generate,))  # the first example generated
_TYPES = {torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64", torch.float16: "fp16",
          torch.bfloat16: "bf16", torch.float32: "fp32", torch.float64: "fp64"}


def _scalar_type(value) -> str:
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, float):
        return "fp32"
    return "i32" if -(2**31) <= value < 2**31 else "i64"


def launch_signature(fn, args: tuple, kwargs: dict) -> tuple[dict, dict]:
    """(signature, constexprs) of one captured launch of the jit function ``fn``."""
    params = inspect.signature(getattr(fn, "fn", fn)).parameters
    bound = dict(zip(params, args, strict=False)) | {k: v for k, v in kwargs.items() if k in params}
    signature, constexprs = {}, {}
    for name, param in params.items():
        value = bound.get(name, param.default)
        if "constexpr" in str(param.annotation):
            signature[name], constexprs[name] = "constexpr", value
        elif isinstance(value, torch.Tensor):
            signature[name] = "*" + _TYPES[value.dtype]
        else:
            signature[name] = _scalar_type(value)
    return signature, constexprs


def simplest_launches(scenario, api: str, rank: int = 0) -> list[tuple[tuple, dict]]:
    """(args, kwargs) of every launch ``scenario``'s ``api`` kernel makes on ``rank`` of ``SCENARIO_WORLD`` in
    Hypothesis's simplest example: the first one it generates (tests/cpu_unit/test_strategies.py), without shrinking
    or the explain phase, which ran the strategy a hundred more times (30 of the 32 s an atomic scenario's case
    took)."""
    params = find(scenario.params(SCENARIO_WORLD), lambda p: True, settings=_SIMPLEST)
    launches = captured_launches(scenario, api, params, rank, SCENARIO_WORLD)
    assert launches, f"{scenario.name}: launch() launched nothing"
    return [(launch.args, launch.kwargs) for launch in launches]


def compile_scenario(scenario, api: str, target_name: str, *, sass: bool = False) -> dict[str, str]:
    """Text stages of ``scenario``'s ``api`` kernel compiled for ``TARGETS[target_name]`` as the first launch of its
    simplest example compiles it (its arguments' types, its constexprs and its ``num_warps``); ``sass`` as in
    ``compile_kernel``."""
    args, kwargs = simplest_launches(scenario, api)[0]
    kernel = scenario.kernel(api)
    signature, constexprs = launch_signature(kernel, args, kwargs)
    return compile_function(api, kernel, target_name, constexprs, signature, sass=sass,
                            num_warps=kwargs.get("num_warps", NUM_WARPS))


# ---- machine-code text -------------------------------------------------------------------------------

_PTX_DROP = re.compile(r"^\s*(\.loc|\.file)\b|^\s*\$L__(tmp|func_begin|func_end)\d+:")
_AMDGCN_DROP = re.compile(r"^\s*(\.loc|\.file)\b|^\s*\.Ltmp\d+:")


def normalize(code: str, kind: str, kernel_name: str) -> list[str]:
    """``code`` (``kind`` = ptx, amdgcn or sass) without the kernel's name, debug locations, debug sections
    and comments, as stripped non-empty lines."""
    name = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(kernel_name))
    out = []
    in_debug = False
    for line in code.splitlines():
        stripped = line.strip()
        if kind == "ptx":
            if re.match(r"\.section\s+\.debug", stripped):
                break  # the DWARF sections close the PTX file
            if _PTX_DROP.search(line):
                continue
            line = line.split("//", 1)[0]
        elif kind == "amdgcn":
            if stripped.startswith(".section"):
                in_debug = bool(re.match(r"\.section\s+\.debug", stripped))
            elif stripped.startswith((".amdgpu_metadata", ".end_amdgpu_metadata")):
                in_debug = False
            if in_debug or _AMDGCN_DROP.search(line):
                continue
            line = line.split(";", 1)[0]
        elif kind != "sass":
            raise ValueError(f"unknown machine code kind {kind!r}")
        line = " ".join(name.sub("KERNEL", line).split())
        if line:
            out.append(line)
    return out


def first_difference(a: list[str], b: list[str], names: tuple[str, str], context: int = 3) -> str | None:
    """None if equal, else the first differing line of ``a`` and ``b`` with a little context."""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        before = a[max(0, i1 - context):i1]
        return "\n".join([
            f"first difference at line {i1 + 1} of {names[0]} / line {j1 + 1} of {names[1]} ({tag}):",
            *(f"    {line}" for line in before),
            *(f"  - {line}" for line in a[i1:min(i2, i1 + context)]),
            *(f"  + {line}" for line in b[j1:min(j2, j1 + context)]),
        ])  # fmt: skip
    return None


_ATOMIC = {
    "ptx": re.compile(r"^(@!?%p\d+\s+)?(atom|red)\.\S+"),
    "amdgcn": re.compile(r"^(global|buffer|flat|ds)_atomic_\w+"),
    "sass": re.compile(r"\b(ATOMG?|RED|ATOMS)\.[\w.]+"),
}


def atomic_instructions(code: str, kind: str) -> list[str]:
    """The atomic instructions of ``code`` (one string per instruction: its mnemonic with modifiers)."""
    found = []
    for line in normalize(code, kind, "\0"):
        m = _ATOMIC[kind].search(line)
        if m:
            found.append(m.group(0).split()[-1])
    return found
