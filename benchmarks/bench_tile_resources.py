"""What tracing costs a tile kernel before it runs: registers, programs per SM (CU) and instructions, traced and
untraced, read from the code cross-compiled for sm_90 (NVIDIA H100/H200) and gfx942 (AMD MI300); no GPU needed.

    python -m benchmarks.bench_tile_resources [--kernels all_scatter,...|parts] [--targets sm_90,gfx942]

A traced kernel that needs more registers can fit fewer programs on an SM, which a grid of many short, memory-bound
programs (the all-scatter) pays in time; each record also adds instructions. Prints, per kernel, API and target:

  registers    per thread, traced/untraced: sm_90 from the cubin's resource usage, gfx942 the VGPRs (arch and
               accumulation) of the code object's metadata;
  programs     per SM (per CU on gfx942), traced/untraced, as the registers and shared memory (LDS) allow: sm_90
               65536 registers an SM allocated 256 a warp, at most 64 warps and 32 programs; gfx942 512 VGPRs a
               SIMD lane in granules of 8, at most 8 waves a SIMD, 4 SIMDs and 64 KiB of LDS a CU;
  instructions the static count of the machine code (SASS, amdgcn), traced/untraced, and what tracing adds;
  goal         ``ok`` where the traced kernel needs at most the untraced one's registers + 8 or fits as many programs
               as its launch puts on an SM (issue goal), else ``over``. The persistent kernels are launched one
               program an SM (CU), so any count of at least 1 is as many.

The kernels are the benchmark's 64x64-tile kernels at ``num_warps`` 4, as ``bench_tracing_device`` launches them:
``all_scatter`` (the scenario's kernel, one ``put`` range per tile and target), ``scatter_span`` (the same kernel
with ``SPAN``: the tile's record fields computed once, by ``ctx.tracing.span``, before the loop over targets),
``scatter_auto`` (its stores auto-traced instead), ``tile_load`` (a peer's tile loaded, auto-traced, and summed),
``persistent`` and ``persistent_auto`` (``benchmarks/tile_kernels.py``; Triton's compiled for one rank). The
cpu-compile tier checks the registers and the added instructions against ``CEILINGS``
(``tests/cpu_compile/test_tile_resources.py``), so a regression shows without a GPU. ``--kernels parts`` reads the
parts ``bench_scatter_parts`` times instead (``part_claim`` ... ``part_count``, each against the all-scatter
compiled without tracing): what each part of a traced tile adds, with no GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import re
import sys

import triton

from benchmarks import tile_kernels as K
from benchmarks.cross_compile import TARGETS, compile_jit, cubin_resources, run_script, sass_instructions
from conformance.scenarios import all_scatter
from iris.cli_args import OneLineParser, choice_list

TILE = 64
NUM_WARPS = 4
HINT = (1, TILE)
RESOURCE_TARGETS = ("sm_90", "gfx942")
_2D = {"ctx_t": "*i64", "out": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr",
       "TRACING": "constexpr", "HINT": "constexpr"}
_PERSISTENT = {"ctx_t": "*i64", "out": "*fp32", "tiles": "i32", "work": "i32", "rank": "constexpr",
               "world": "constexpr", "BM": "constexpr", "BN": "constexpr", "TRACING": "constexpr",
               "HINT": "constexpr", "AUTO": "constexpr"}
_TILE = {"BM": TILE, "BN": TILE, "HINT": HINT}


@dataclasses.dataclass(frozen=True)
class TileKernel:
    """One benchmark kernel: both APIs' jit functions, Triton's signature (Gluon's lacks ``rank``/``world``) and
    the constexprs of its traced and untraced compiles."""

    triton: object
    gluon: object
    signature: dict
    traced: dict
    untraced: dict
    launched: int | None = None  # programs its launch puts on an SM (CU): persistent, 1; None: grids of many waves


KERNELS: dict[str, TileKernel] = {
    "all_scatter": TileKernel(all_scatter.triton_kernel, all_scatter.gluon_kernel, _2D | {"TRACE_OPS": "constexpr"},
                              _TILE | {"TRACING": True, "TRACE_OPS": False},
                              _TILE | {"TRACING": False, "TRACE_OPS": False}),
    "scatter_span": TileKernel(all_scatter.triton_kernel, all_scatter.gluon_kernel,
                               _2D | {"TRACE_OPS": "constexpr", "SPAN": "constexpr"},
                               _TILE | {"TRACING": True, "TRACE_OPS": False, "SPAN": True},
                               _TILE | {"TRACING": False, "TRACE_OPS": False, "SPAN": True}),
    "scatter_auto": TileKernel(K.triton_scatter_auto, K.gluon_scatter_auto, _2D, _TILE | {"TRACING": True},
                               _TILE | {"TRACING": False}),
    "tile_load": TileKernel(K.triton_tile_load, K.gluon_tile_load,
                            {"ctx_t": "*i64", "src": "*fp32"} | dict(list(_2D.items())[1:]),
                            _TILE | {"TRACING": True}, _TILE | {"TRACING": False}),
    "persistent": TileKernel(K.triton_persistent, K.gluon_persistent, _PERSISTENT,
                             _TILE | {"rank": 0, "world": 1, "TRACING": True, "AUTO": False},
                             _TILE | {"rank": 0, "world": 1, "TRACING": False, "AUTO": False}, launched=1),
    "persistent_auto": TileKernel(K.triton_persistent, K.gluon_persistent, _PERSISTENT,
                                  _TILE | {"rank": 0, "world": 1, "TRACING": True, "AUTO": True},
                                  _TILE | {"rank": 0, "world": 1, "TRACING": False, "AUTO": False}, launched=1),
}

# scatter_parts (benchmarks/bench_scatter_parts.py): the all-scatter traced in part only, each part against part 0
# (tracing compiled off), so what each part of a traced tile adds reads without a GPU. Measurements, not kernels a
# user writes: no ceilings. ``--kernels parts`` names them all.
_PARTS_SIGNATURE = dict(list(_2D.items())[:6]) | {"PART": "constexpr", "HINT": "constexpr"}
PART_KERNELS: dict[str, TileKernel] = {
    f"part_{name}": TileKernel(K.triton_scatter_parts, K.gluon_scatter_parts, _PARTS_SIGNATURE,
                               _TILE | {"PART": part}, _TILE | {"PART": K.PARTS["untraced"]})
    for name, part in K.PARTS.items() if name != "untraced"}
COMPILED: dict[str, TileKernel] = KERNELS | PART_KERNELS

# (kernel, api, target) -> (registers, instructions tracing adds): today's figures, which a change may lower but not
# raise (lower them with it). The cross-compile is deterministic for a Triton version (triton==3.6.0).
CEILINGS: dict[tuple[str, str, str], tuple[int, int]] = {
    ("all_scatter", "triton", "sm_90"): (117, 928),
    ("all_scatter", "triton", "gfx942"): (64, 734),
    ("all_scatter", "gluon", "sm_90"): (181, 736),
    ("all_scatter", "gluon", "gfx942"): (72, 529),
    ("scatter_span", "triton", "sm_90"): (117, 928),
    ("scatter_span", "triton", "gfx942"): (64, 734),
    ("scatter_span", "gluon", "sm_90"): (168, 680),
    ("scatter_span", "gluon", "gfx942"): (72, 519),
    ("scatter_auto", "triton", "sm_90"): (111, 944),
    ("scatter_auto", "triton", "gfx942"): (64, 732),
    ("scatter_auto", "gluon", "sm_90"): (176, 744),
    ("scatter_auto", "gluon", "gfx942"): (72, 528),
    ("tile_load", "triton", "sm_90"): (64, 760),
    ("tile_load", "triton", "gfx942"): (40, 717),
    ("tile_load", "gluon", "sm_90"): (121, 744),
    ("tile_load", "gluon", "gfx942"): (56, 588),
    ("persistent", "triton", "sm_90"): (105, 536),
    ("persistent", "triton", "gfx942"): (112, 502),
    ("persistent", "gluon", "sm_90"): (128, 488),
    ("persistent", "gluon", "gfx942"): (144, 433),
    ("persistent_auto", "triton", "sm_90"): (105, 528),
    ("persistent_auto", "triton", "gfx942"): (112, 499),
    ("persistent_auto", "gluon", "sm_90"): (128, 496),
    ("persistent_auto", "gluon", "gfx942"): (144, 432),
}


@dataclasses.dataclass(frozen=True)
class Resources:
    """What one compile of a kernel needs."""

    registers: int  # per thread
    shared: int  # bytes of shared memory (LDS) a program
    instructions: int  # static count of the machine code

    def programs(self, target: str, num_warps: int = NUM_WARPS) -> int:
        """Programs of ``num_warps`` warps an SM (CU) holds at once, as registers and shared memory allow."""
        if TARGETS[target].backend == "cuda":
            warps = 65536 // (math.ceil(max(self.registers, 1) / 8) * 8 * 32)
            by_shared = (233472 // (self.shared + 1024)) if self.shared else 32
            return min(warps // num_warps, 64 // num_warps, 32, by_shared)
        waves = min(8, 512 // (math.ceil(max(self.registers, 1) / 8) * 8))  # a SIMD's waves
        by_lds = (65536 // self.shared) if self.shared else 32
        return min(4 * waves // num_warps, by_lds)


def _cuda_figures(cubin: bytes) -> tuple[int, int]:
    """(registers per thread, SASS instructions) of a cubin: the registers from the cuobjdump that ships with Triton,
    the instructions from the cubin's code bytes."""
    return cubin_resources(cubin)["REG"], sass_instructions(cubin)


def _hip_figures(amdgcn: str) -> tuple[int, int]:
    """(VGPRs per lane, arch and accumulation, instructions) of the amdgcn text of one kernel."""
    fields = {k: int(v) for k, v in re.findall(r"^\s+\.(vgpr_count|agpr_count):\s+(\d+)", amdgcn, re.M)}
    if "vgpr_count" not in fields:
        raise RuntimeError("the amdgcn code object has no .vgpr_count")
    vgprs = math.ceil(fields["vgpr_count"] / 4) * 4 + fields.get("agpr_count", 0)  # one file: arch, then accum
    body = amdgcn.split(".Lfunc_end0")[0]
    instructions = sum(1 for line in body.splitlines() if re.match(r"^\s+[a-z][a-z0-9_]*(\s|$)", line)
                       and not line.strip().startswith((";", ".")))
    return vgprs, instructions


def resources(name: str, api: str, target: str, traced: bool) -> Resources:
    """Compile kernel ``name`` of ``api`` for ``target``, traced or not, and read what it needs."""
    return _read(api, target, *_inputs(name, api, traced))


def compiled(name: str, api: str, target: str, traced: bool):
    """The compile of kernel ``name`` of ``api`` for ``target`` that ``resources`` reads (``triton.compile``'s)."""
    return _compile(api, target, *_inputs(name, api, traced))


def _inputs(name: str, api: str, traced: bool) -> tuple:
    """(jit function, constexprs, signature) of kernel ``name`` for ``api``, the last two as tuples of items."""
    kernel = COMPILED[name]
    constexprs = dict(kernel.traced if traced else kernel.untraced)
    signature = dict(kernel.signature)
    if api == "gluon":
        for key in ("rank", "world"):
            signature.pop(key, None)
            constexprs.pop(key, None)
    return getattr(kernel, api), tuple(constexprs.items()), tuple(signature.items())


def _compile(api: str, target: str, fn, constexprs: tuple, signature: tuple):
    signature = dict(signature)
    pointers = tuple(k for k, v in signature.items() if v.startswith("*"))
    return compile_jit(api, fn, target, dict(constexprs), signature, divisible_by_16=pointers, num_warps=NUM_WARPS)


@functools.cache
def _read(api: str, target: str, fn, constexprs: tuple, signature: tuple) -> Resources:
    """What one compile needs, read once per process: kernels that compile alike (every part's untraced all-scatter)
    share it."""
    compiled = _compile(api, target, fn, constexprs, signature)
    if TARGETS[target].backend == "cuda":
        registers, instructions = _cuda_figures(compiled.asm["cubin"])
    else:
        registers, instructions = _hip_figures(compiled.asm["amdgcn"])
    return Resources(registers, compiled.metadata.shared, instructions)


@dataclasses.dataclass(frozen=True)
class Row:
    kernel: str
    api: str
    target: str
    traced: Resources
    untraced: Resources

    @property
    def added(self) -> int:
        """Instructions tracing adds."""
        return self.traced.instructions - self.untraced.instructions

    @property
    def goal_met(self) -> bool:
        """At most 8 registers more than untraced, or as many programs an SM (CU)."""
        launched = COMPILED[self.kernel].launched or 1 << 30
        return (self.traced.registers <= self.untraced.registers + 8
                or min(self.traced.programs(self.target), launched)
                >= min(self.untraced.programs(self.target), launched))


def rows(kernels=tuple(KERNELS), targets=RESOURCE_TARGETS, progress=None) -> list[Row]:
    """A row per kernel, API and target; ``progress(text)`` hears each compile pair begin."""
    out = []
    for name in kernels:
        for api in ("triton", "gluon"):
            for target in targets:
                if progress:
                    progress(f"{name} {api} {target}")
                out.append(Row(name, api, target, resources(name, api, target, True),
                               resources(name, api, target, False)))
    return out


HEADER = (f"{'kernel':16s} {'api':7s} {'target':7s} {'registers t/u':>14s} {'programs t/u':>13s} "
          f"{'instructions t/u':>17s} {'added':>6s} {'goal':>5s}")


def line(r: Row) -> str:
    """One row of the table."""
    t, u = r.traced, r.untraced
    return (f"{r.kernel:16s} {r.api:7s} {r.target:7s} {f'{t.registers}/{u.registers}':>14s} "
            f"{f'{t.programs(r.target)}/{u.programs(r.target)}':>13s} {f'{t.instructions}/{u.instructions}':>17s} "
            f"{r.added:6d} {'ok' if r.goal_met else 'over':>5s}")


def main(argv: list[str] | None = None) -> list[Row]:
    """Print the table; return its rows. Bad input is refused in one line on stderr, exit code 2."""
    p = OneLineParser(prog="python -m benchmarks.bench_tile_resources", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernels", type=choice_list("--kernels", (*COMPILED, "parts"), item="kernel"),
                   default=tuple(KERNELS),
                   help=f"comma list of {', '.join(KERNELS)} (default: these), or scatter_parts' parts: "
                        f"{', '.join(PART_KERNELS)}, or parts (all of those)")
    p.add_argument("--targets", type=choice_list("--targets", RESOURCE_TARGETS, item="target"),
                   default=RESOURCE_TARGETS,
                   help="comma list of sm_90, gfx942 (default both)")
    args = p.parse_args(argv)
    kernels = [k for name in args.kernels for k in (PART_KERNELS if name == "parts" else (name,))]
    twice = sorted({k for k in kernels if kernels.count(k) > 1})
    if twice:
        p.error(f"--kernels {','.join(args.kernels)}: {', '.join(twice)} named again by parts (every part of "
                "scatter_parts); expected each kernel once")
    found = rows(kernels, args.targets,
                 progress=lambda text: print(f"bench_tile_resources: {text}", file=sys.stderr, flush=True))
    print(f"cross-compiled, {TILE}x{TILE} tiles, num_warps {NUM_WARPS}, triton {triton.__version__}; "
          f"t = traced, u = untraced; programs per SM (sm_90) or CU (gfx942)")
    print(HEADER)
    for r in found:
        print(line(r))
    return found


if __name__ == "__main__":
    run_script(main, __spec__.name)
