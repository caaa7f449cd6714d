"""cpu-compile tier: the benchmark's tile kernels, traced, need no more registers and add no more instructions than
``benchmarks.bench_tile_resources.CEILINGS`` states (today's figures, triton 3.6.0), read from code cross-compiled
for sm_90 and gfx942: a change that makes a record dearer shows here, without a GPU. A change that makes it cheaper
lowers the ceiling it passes under (the failure message prints the new figure)."""

from __future__ import annotations

import re

import pytest
from triton.tools import disasm
from triton.tools.disasm import get_sass

from benchmarks import bench_tile_resources as B
from benchmarks import cross_compile
from benchmarks.cross_compile import cuobjdump, sass_instructions

pytestmark = pytest.mark.cpu_compile


def test_every_kernel_api_and_target_has_a_ceiling():
    expected = {(k, a, t) for k in B.KERNELS for a in ("triton", "gluon") for t in B.RESOURCE_TARGETS}
    assert set(B.CEILINGS) == expected


@pytest.mark.parametrize(("kernel", "api", "target"), sorted(B.CEILINGS))
def test_traced_kernel_stays_under_its_ceiling(kernel, api, target):
    registers, added = B.CEILINGS[(kernel, api, target)]
    traced, untraced = B.resources(kernel, api, target, True), B.resources(kernel, api, target, False)
    assert untraced.registers > 0 and untraced.instructions > 0, (kernel, api, target, untraced)
    assert traced.registers <= registers, (
        f"{kernel} {api} {target}: traced needs {traced.registers} registers a thread, ceiling {registers} "
        f"(untraced {untraced.registers})")
    assert traced.instructions - untraced.instructions <= added, (
        f"{kernel} {api} {target}: tracing adds {traced.instructions - untraced.instructions} instructions, ceiling "
        f"{added}")


@pytest.mark.parametrize(("target", "registers", "shared", "programs"), [
    ("sm_90", 116, 0, 4), ("sm_90", 128, 0, 4), ("sm_90", 129, 0, 3), ("sm_90", 148, 0, 3), ("sm_90", 168, 0, 3),
    ("sm_90", 184, 0, 2), ("sm_90", 32, 0, 16), ("sm_90", 32, 100000, 2),
    ("gfx942", 60, 0, 8), ("gfx942", 64, 0, 8), ("gfx942", 65, 0, 7), ("gfx942", 72, 0, 7), ("gfx942", 144, 0, 3),
    ("gfx942", 24, 40000, 1),
])
def test_programs_an_sm_or_cu_holds(target, registers, shared, programs):
    """Registers a thread in granules of 8: sm_90 65536 an SM, at most 64 warps (16 programs of 4); gfx942 512 a SIMD
    lane, at most 8 waves a SIMD, 4 SIMDs; shared memory (228 KiB an SM, 1 KiB of it a program's reserve; 64 KiB of
    LDS a CU) bounds them too."""
    assert B.Resources(registers, shared, 1).programs(target) == programs


@pytest.mark.parametrize(("kernel", "traced", "untraced", "met"), [
    ("all_scatter", (181, 0), (139, 0), False),  # 2 programs an SM against 3
    ("all_scatter", (147, 0), (139, 0), True),  # 8 more registers
    ("all_scatter", (168, 0), (139, 0), True),  # 3 and 3
    ("persistent", (105, 0), (72, 0), True),  # 4 against 7, but its launch puts 1 on an SM
    ("persistent", (105, 240000), (72, 0), False),  # its shared memory lets none fit
])
def test_the_goal_compares_the_programs_a_launch_puts_on_an_sm(kernel, traced, untraced, met):
    row = B.Row(kernel, "triton", "sm_90", B.Resources(*traced, 1), B.Resources(*untraced, 1))
    assert row.goal_met is met


@pytest.mark.parametrize("target", ["sm_90", "sm_100"])
def test_sass_instructions_are_the_lines_cuobjdump_lists(target):
    """The instruction count read from the cubin's code bytes is the count of instruction lines ``cuobjdump -sass``
    prints (what the table's instructions were read from before), for a traced kernel and its untraced twin."""
    for traced in (True, False):
        cubin = B.compiled("tile_load", "triton", target, traced).asm["cubin"]
        listed = re.findall(r"^\s+/\*[0-9a-f]{4,}\*/\s+\S", cuobjdump(cubin, "-sass"), re.M)
        assert sass_instructions(cubin) == len(listed) > 0, (target, traced)


def test_a_disassembly_is_kept_and_read_back_as_cuobjdump_printed_it(tmp_path, monkeypatch):
    """``disassembled`` keeps a cubin's SASS in the cross-compile cache by the cubin's digest: the first call writes
    what Triton's ``get_sass`` prints, the second reads it back without running cuobjdump."""
    cubin = B.compiled("tile_load", "triton", "sm_90", False).asm["cubin"]
    monkeypatch.setattr(cross_compile, "cache_dir", lambda: str(tmp_path))
    first = cross_compile.disassembled(cubin)
    assert first == get_sass(cubin) and "EXIT" in first
    (kept,) = (tmp_path / "sass").iterdir()
    assert kept.read_text() == first and not list((tmp_path / "sass").glob("*.part"))
    monkeypatch.setattr(disasm, "extract", lambda *args: pytest.fail("disassembled again"))
    assert cross_compile.disassembled(cubin) == first


def test_sass_instructions_refuses_what_is_not_a_cubin():
    with pytest.raises(ValueError, match=r"not a 64-bit ELF cubin \(it starts b'\\x7fELF\\x01'\)"):
        sass_instructions(b"\x7fELF\x01" + bytes(64))
