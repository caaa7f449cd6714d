"""cpu-compile tier: ``CompilerTime`` counts the seconds Triton's compiler spends in a block, cold compile and
disk-cache load alike, keeps calling a listener installed before it, and puts it back afterwards."""

from __future__ import annotations

import tempfile

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from conformance.harness.rank_side import CompilerTime, PhaseClock

pytestmark = pytest.mark.cpu_compile


@triton.jit
def _copy(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs))


def _compile(cache: str) -> None:
    src = ASTSource(_copy, signature={"src": "*fp32", "dst": "*fp32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 64})
    with triton.knobs.cache.scope():
        triton.knobs.cache.dir = cache
        triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})


def test_compile_and_cache_load_are_counted_and_the_earlier_listener_kept():
    seen = []

    def earlier(**event):
        seen.append(event["cache_hit"])

    before = triton.knobs.compilation.listener
    triton.knobs.compilation.listener = earlier
    try:
        cache = tempfile.mkdtemp()
        with CompilerTime() as cold:
            _compile(cache)
        with CompilerTime() as hit:
            _compile(cache)
        with CompilerTime() as idle:
            pass
        assert triton.knobs.compilation.listener is earlier, "the earlier listener was not put back"
    finally:
        triton.knobs.compilation.listener = before
    assert seen == [False, True], seen
    assert cold.seconds > 0 and hit.seconds > 0, (cold.seconds, hit.seconds)
    assert hit.seconds < cold.seconds, (hit.seconds, cold.seconds)
    assert idle.seconds == 0.0


def test_phase_clock_moves_a_measured_part_to_its_own_phase():
    clock = PhaseClock()
    clock.seconds = {"launch": 0.5}
    clock.move("launch", "compile", 0.25)
    clock.move("launch", "compile", 0.0)
    assert clock.seconds == {"launch": 0.25, "compile": 0.25}
