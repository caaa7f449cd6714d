"""Where and when an event happened: the one per-backend module for clocks, chip ids and the one lane read.

Each reader is a Triton builtin, so the same function serves Triton and Gluon kernels and
cross-compiles for every target from one machine. The target is read from the compiler
options; the interpreter (no compiler, ``_semantic`` is None) gets a host fallback.

| backend | timestamp (and _after)      | cu_id                      | xcc_id        | load_lane0 (lane 0's load)     |
| cuda    | ``%globaltimer`` (ns)       | ``%smid``                  | 0             | ``ld.relaxed.cta``, shfl x 2   |
| hip     | ``s_memrealtime`` (100 MHz) | HW_REG_HW_ID: (SE, SH, CU) | HW_REG_XCC_ID | a load, ``v_readlane_b32`` x 2 |
| interp. | host monotonic clock (ns)   | 0                          | 0             | a load                         |
"""

from __future__ import annotations

import time

import numpy as np
import triton.language as tl

from iris._builtins import builtin

# Ticks per second of the raw timestamp, by backend name.
TICKS_PER_SECOND: dict[str, float] = {"cuda": 1e9, "hip": 1e8, "interpreter": 1e9}
# Exclusive bound of xcc_id per backend (AMD CDNA3/4 have up to 8 XCDs per device).
XCC_ID_LIMIT: dict[str, int] = {"cuda": 1, "hip": 8, "interpreter": 1}


def cu_id_limit(backend: str, device) -> int:
    """Exclusive bound of the recorded ``cu_id`` on ``device`` (host side, for validity checks).

    cuda: the SM count; hip: 256, the packed (SE, SH, CU) id space of HW_REG_HW_ID; interpreter: 1.
    """
    if backend == "cuda":
        import torch

        return torch.cuda.get_device_properties(device).multi_processor_count
    return 256 if backend == "hip" else 1

_ASM: dict[str, dict[str, tuple[str, str, object]]] = {
    "cuda": {
        "timestamp": ("mov.u64 $0, %globaltimer;", "=l", tl.int64),
        "timestamp_after": ("mov.u64 $0, %globaltimer;", "=l,l", tl.int64),
        "cu_id": ("mov.u32 $0, %smid;", "=r", tl.int32),
        # lane 0 alone loads (one lane: no half-warp can read another value), then every lane takes lane 0's
        "load_lane0": ("{\n.reg .pred %p;\n.reg .b32 %lane, %lo, %hi;\n.reg .b64 %v;\n"
                       "mov.u32 %lane, %laneid;\nsetp.eq.u32 %p, %lane, 0;\nmov.b64 %v, 0;\n"
                       "@%p ld.relaxed.cta.global.b64 %v, [$1];\nmov.b64 {%lo, %hi}, %v;\n"
                       "shfl.sync.idx.b32 %lo, %lo, 0, 0x1f, 0xffffffff;\n"
                       "shfl.sync.idx.b32 %hi, %hi, 0, 0x1f, 0xffffffff;\nmov.b64 $0, {%lo, %hi};\n}",
                       "=l,l", tl.int64),
    },
    "hip": {
        "timestamp": ("s_memrealtime $0\ns_waitcnt lgkmcnt(0)", "=s", tl.int64),
        "timestamp_after": ("s_memrealtime $0\ns_waitcnt lgkmcnt(0)", "=s,v", tl.int64),
        # HW_ID bits: CU_ID [11:8], SH_ID [12], SE_ID [15:13]; decoded below in Triton arithmetic.
        "cu_id": ("s_getreg_b32 $0, hwreg(HW_REG_HW_ID)", "=s", tl.int32),
        "xcc_id": ("s_getreg_b32 $0, hwreg(HW_REG_XCC_ID)", "=s", tl.int32),
        "lane0": ("v_readlane_b32 $0, $1, 0", "=s,v", tl.int32),
    },
}


def backend_name(_semantic) -> str:
    """``"cuda"``, ``"hip"`` or ``"interpreter"`` for the kernel being built."""
    if _semantic is None:
        return "interpreter"
    name = _semantic.builder.options.backend_name
    if name not in _ASM:
        raise NotImplementedError(f"iris tracing has no clock/id readers for backend {name!r}; supported: cuda, hip")
    return name


def _host_scalar(value: int, dtype) -> tl.tensor:
    from triton.runtime.interpreter import TensorHandle

    np_dtype = np.int64 if dtype == tl.int64 else np.int32
    return tl.tensor(TensorHandle(np.array([value], dtype=np_dtype), dtype), dtype)


def _asm(name: str, what: str, _semantic, *args, pure: bool = False) -> tl.tensor:
    asm, constraint, dtype = _ASM[name][what]
    return tl.inline_asm_elementwise(asm, constraint, list(args), dtype=dtype, is_pure=pure, pack=1,
                                     _semantic=_semantic)


@builtin
def timestamp(_semantic=None):
    """Raw global-clock ticks (int64); see ``TICKS_PER_SECOND``."""
    name = backend_name(_semantic)
    if name == "interpreter":
        return _host_scalar(time.monotonic_ns(), tl.int64)
    return _asm(name, "timestamp", _semantic)


@builtin
def timestamp_after(x, _semantic=None):
    """``timestamp()``, read by an instruction that takes ``x`` (an int64 scalar) as an input: no compiler can
    move it before ``x`` exists (the end of a range that holds an op's round trip: ``x`` comes from its value)."""
    name = backend_name(_semantic)
    if name == "interpreter":
        return _host_scalar(time.monotonic_ns(), tl.int64)
    return _asm(name, "timestamp_after", _semantic, x)


@builtin
def cu_id(_semantic=None):
    """The SM (NVIDIA) or CU (AMD, with shader engine and array) running this program (int32)."""
    name = backend_name(_semantic)
    if name == "interpreter":
        return _host_scalar(0, tl.int32)
    raw = _asm(name, "cu_id", _semantic)
    if name == "cuda":
        return raw
    cu = _semantic.and_(_semantic.lshr(raw, _semantic.to_tensor(8)), _semantic.to_tensor(0xF))
    sh = _semantic.and_(_semantic.lshr(raw, _semantic.to_tensor(12)), _semantic.to_tensor(0x1))
    se = _semantic.and_(_semantic.lshr(raw, _semantic.to_tensor(13)), _semantic.to_tensor(0x7))
    array = _semantic.add(_semantic.mul(se, _semantic.to_tensor(2), True), sh, True)
    return _semantic.add(_semantic.mul(array, _semantic.to_tensor(16), True), cu, True)


@builtin
def xcc_id(_semantic=None):
    """The accelerator complex die (AMD XCC) running this program; 0 where there is none (int32)."""
    name = backend_name(_semantic)
    if name == "hip":
        return _semantic.and_(_asm(name, "xcc_id", _semantic), _semantic.to_tensor(0xF))
    if name == "interpreter":
        return _host_scalar(0, tl.int32)
    return _semantic.to_tensor(0)


@builtin
def load_lane0(pointer, _semantic=None):
    """The int64 at ``pointer`` as lane 0 of the calling warp loads it, for every lane of the warp: a value all of a
    warp's lanes branch on alike, read from a cell another thread may be writing (the trace cursor: thread 0
    writes it, every thread reads it). Call it where every thread of the program is (it is a warp-wide exchange).

    cuda: lane 0 alone loads (relaxed, CTA scope) and the two halves are shuffled from it. Not a plain load that
    every lane makes: ptxas takes a load of one address to give every lane of a warp one value (it keeps it in the
    warp's uniform registers, removes a shuffle of it, and branches on it with no reconvergence point), but a
    warp's 64-bit load is served a half-warp at a time and a store by another warp can land between the halves.
    Seen on one H200: lanes 0-15 and 16-31 of a warp took the two sides of the chunk-refill branch, both advanced
    the one uniform loop counter, and the half that missed the loop's exit looped on.
    hip: a load, then each half read from lane 0 (``v_readlane_b32``; LLVM keeps a global load the kernel also
    stores to per lane, and may forward a lane's own earlier load to it).
    """
    name = backend_name(_semantic)
    if name == "interpreter":
        return tl.load(pointer)
    if name == "cuda":
        return _asm(name, "load_lane0", _semantic, _semantic.cast(pointer, tl.int64))
    x = tl.load(pointer, _semantic=_semantic)
    lo = _asm(name, "lane0", _semantic, _semantic.cast(x, tl.int32))
    hi = _asm(name, "lane0", _semantic, _semantic.cast(_semantic.lshr(x, _semantic.to_tensor(32)), tl.int32))
    low_bits = _semantic.and_(_semantic.cast(lo, tl.int64), _semantic.to_tensor(0xFFFFFFFF))
    return _semantic.or_(_semantic.shl(_semantic.cast(hi, tl.int64), _semantic.to_tensor(32)), low_bits)
