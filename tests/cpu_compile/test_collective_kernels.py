"""cpu-compile tier: ``benchmarks/collective_kernels.py`` compiles for NVIDIA (sm_90) and AMD (gfx942) as
``bench_collectives`` launches it: tracing's slot claim only where tracing is compiled in, the fused kernel's acquire
compare-and-swap on its flag, and its matmul on the target's matrix instruction (Triton's ``tl.dot``: wgmma on sm_90;
Gluon's ``mma_v2``: mma.sync; both mfma on gfx942)."""

from __future__ import annotations

import pytest

from benchmarks import bench_collectives as bench
from benchmarks import collective_kernels as C
from tests.cpu_compile.compile_helpers import MACHINE_CODE, TARGETS, atomic_instructions, compile_function

pytestmark = pytest.mark.cpu_compile

CLAIM = {"sm_90": "atom.global.gpu.relaxed.add.u64", "gfx942": "global_atomic_add_x2"}  # tracing's chunk claims
ACQUIRE = {"sm_90": "atom.global.acquire.sys.cas.b32", "gfx942": "global_atomic_cmpswap"}
MATRIX = {("triton", "sm_90"): "wgmma.mma_async", ("gluon", "sm_90"): "mma.sync.aligned",
          ("triton", "gfx942"): "v_mfma", ("gluon", "gfx942"): "v_mfma"}
CASES = [(k, v, t) for k in bench.KERNELS for v in ("untraced", "both") for t in ("sm_90", "gfx942")]
CASES += [(k, v, "sm_90") for k in ("all_gather", "gather_matmul") for v in bench.SPANS]


def _compiled(api: str, kernel: str, variant: str, target: str) -> str:
    signature = bench.SIGNATURES[kernel]
    pointers = tuple(name for name, kind in signature.items() if kind.startswith("*"))
    asm = compile_function(api, getattr(C, f"{api}_{kernel}"), target, bench.constexprs(kernel, variant), signature,
                           divisible_by_16=pointers, num_warps=bench.NUM_WARPS)
    return asm[MACHINE_CODE[TARGETS[target].backend]]


@pytest.mark.parametrize("api", ["triton", "gluon"])
@pytest.mark.parametrize(("kernel", "variant", "target"), CASES)
def test_collective_kernel_compiles_with_its_claims_and_matmul(api, kernel, variant, target):
    code = _compiled(api, kernel, variant, target)
    kind = MACHINE_CODE[TARGETS[target].backend]
    atomics = set(atomic_instructions(code, kind))
    traced = bench.VARIANTS[variant][0]
    assert (CLAIM[target] in atomics) == traced, f"{api} {kernel} {variant} on {target}: {sorted(atomics)}"
    if kernel == "gather_matmul":
        assert ACQUIRE[target] in atomics, f"{api} {variant} on {target}: {sorted(atomics)}"
        assert MATRIX[(api, target)] in code, f"{api} {variant} on {target}: no {MATRIX[(api, target)]}"


def test_resources_prints_each_variant_as_cross_compiled(capsys):
    """``--resources``: a row per kernel, API and target, a cell per variant (untraced first) of registers, programs
    an SM and instructions; tracing adds instructions, and a record made from the mask's bounds (no reduction) adds
    fewer than one that reduces the block."""
    assert bench.main(["--resources", "sm_90", "--kernels", "all_gather", "--variants", "bracketed,bounds"]) == []
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("cross-compiled, num_warps 4, triton ") and out[1] == bench.RESOURCE_HEADER, out
    assert [line.split()[:3] for line in out[2:]] == [["all_gather", api, "sm_90"] for api in ("triton", "gluon")]
    for line in out[2:]:
        cells = dict(cell.split() for cell in line.split(None, 3)[3].split(", "))
        assert list(cells) == ["untraced", "bracketed", "bounds"], line
        figures = {v: tuple(map(int, cell.split("/"))) for v, cell in cells.items()}
        assert all(r > 0 and p >= 1 and n > 0 for r, p, n in figures.values()), line
        assert figures["untraced"][2] < figures["bounds"][2] < figures["bracketed"][2], line
