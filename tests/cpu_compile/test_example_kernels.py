"""cpu-compile tier: the collective examples' kernels compile for NVIDIA (sm_90) and AMD (gfx942, 64 threads a warp)
as their launches compile them, and the fused kernel's flag handshake is a system-scope release exchange and an
acquire compare-and-swap in the machine code (beside tracing's relaxed slot claims)."""

from __future__ import annotations

import pytest

from examples import all_gather_gluon, all_gather_triton, fused_gather_compute_gluon, fused_gather_compute_triton
from tests.cpu_compile.compile_helpers import MACHINE_CODE, TARGETS, atomic_instructions, compile_function

pytestmark = pytest.mark.cpu_compile

TILES = {"BLOCK_M": 16, "BLOCK_N": 16}  # the examples' launches (num_warps 4)
GATHER = {"context_tensor": "*i64", "src": "*fp32", "out": "*fp32", "M": "i32", "N": "i32", "stride_src": "i32",
          "stride_out": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"}
FUSED = {"context_tensor": "*i64", "src": "*fp32", "inbox": "*fp32", "flags": "*i32", "out": "*fp32", "M": "i32",
         "N": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"}
CLAIM = {"sm_90": "atom.global.gpu.relaxed.add.u64", "gfx942": "global_atomic_add_x2"}  # tracing's chunk claims
HANDSHAKE = {"sm_90": ["atom.global.acquire.sys.cas.b32", "atom.global.sys.release.exch.b32"],
             "gfx942": ["global_atomic_cmpswap", "global_atomic_swap"]}
KERNELS = [("triton", all_gather_triton.all_gather, GATHER), ("gluon", all_gather_gluon.all_gather, GATHER),
           ("triton", fused_gather_compute_triton.gather_compute, FUSED),
           ("gluon", fused_gather_compute_gluon.gather_compute, FUSED)]


@pytest.mark.parametrize("target", ["sm_90", "gfx942"])
@pytest.mark.parametrize(("api", "kernel", "signature"), KERNELS,
                         ids=["all_gather-triton", "all_gather-gluon", "fused-triton", "fused-gluon"])
def test_example_kernel_compiles_with_its_atomics(api, kernel, signature, target):
    code = MACHINE_CODE[TARGETS[target].backend]
    asm = compile_function(api, kernel, target, TILES, signature, num_warps=4)
    atomics = sorted(set(atomic_instructions(asm[code], code)))
    expected = sorted([CLAIM[target], *(HANDSHAKE[target] if signature is FUSED else [])])
    assert atomics == expected, f"{api} {signature is FUSED and 'fused' or 'all_gather'} on {target}: {atomics}"
