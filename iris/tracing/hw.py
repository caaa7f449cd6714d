"""Where and when an event happened: the one per-backend module for clocks, chip ids and the one lane read.

Each reader is a Triton builtin, so the same function serves Triton and Gluon kernels and
cross-compiles for every target from one machine. The target is read from the compiler
options; the interpreter (no compiler, ``_semantic`` is None) gets a host fallback.

| backend | timestamp (and _after)      | cu_id                      | xcc_id        | lane0 (lane 0's value)  |
| cuda    | ``%globaltimer`` (ns)       | ``%smid``                  | 0             | the value itself        |
| hip     | ``s_memrealtime`` (100 MHz) | HW_REG_HW_ID: (SE, SH, CU) | HW_REG_XCC_ID | ``v_readlane_b32`` x 2  |
| interp. | host monotonic clock (ns)   | 0                          | 0             | the value itself        |
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
def lane0(x, _semantic=None):
    """``x`` (an int64 scalar) as lane 0 of the calling warp holds it, for every lane of the warp.

    The tracing cursor is thread 0's: its other lanes must take thread 0's value, not their own view of memory.
    hip: ``v_readlane`` of each half (LLVM forwards a lane's loads and stores per lane, so after a store only
    thread 0 made, another lane's reload may be its earlier load). cuda: ``x`` itself: the loads are ``ld``
    instructions LLVM cannot forward through, a warp's load of one address gives all its lanes one value, and
    ptxas treats it so (it removes a shuffle of such a load).
    """
    name = backend_name(_semantic)
    if name != "hip":
        return x
    lo = _asm(name, "lane0", _semantic, _semantic.cast(x, tl.int32), pure=True)
    hi = _asm(name, "lane0", _semantic, _semantic.cast(_semantic.lshr(x, _semantic.to_tensor(32)), tl.int32),
              pure=True)
    low_bits = _semantic.and_(_semantic.cast(lo, tl.int64), _semantic.to_tensor(0xFFFFFFFF))
    return _semantic.or_(_semantic.shl(_semantic.cast(hi, tl.int64), _semantic.to_tensor(32)), low_bits)
