"""Gluon kernels on CPU through ``iris.interpreter_gluon`` (Triton's interpreter, layouts erased).

The pytest process runs with the interpreter off (the root conftest removes ``TRITON_INTERPRET`` before
Triton is imported, and Triton decides at decoration time whether ``tl.sum`` & co. are interpreted). So the
``check_*`` functions below run, all together and in order, in one fresh ``python`` subprocess started with
``TRITON_INTERPRET=1``; each ``test_interpreted[check_*]`` reports one of them. Kernels live in
``_gluon_kernels.py``, imported there only after ``install()``. The ``test_*`` functions at the end run in
the pytest process itself.
"""

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from iris import interpreter_gluon as gi

pytestmark = [pytest.mark.cpu_interpret, pytest.mark.shares_setup]  # a module fixture: one group

_ROOT = Path(__file__).resolve().parents[2]
_RESULT_TAG = "GLUON_INTERPRET_RESULTS="
K = None  # the kernels module, set by _main() in the subprocess


def check_install_is_idempotent_and_replaces_gluon_jit():
    from triton.experimental import gluon
    from triton.experimental.gluon import _runtime

    gi.install()
    gi.install()
    assert gi.is_installed()
    assert gluon.jit is _runtime.jit is gi._jit
    assert isinstance(K.vector_add, gi.InterpretedGluonFunction)


def check_vector_add_masked_tail():
    n = 1000
    for num_warps in (1, 2, 4):
        x, y = torch.randn(n), torch.randn(n)
        out = torch.full((n,), float("nan"))
        block = 4 * 32 * num_warps
        K.vector_add[(triton.cdiv(n, block),)](x, y, out, n, 4, num_warps=num_warps)
        torch.testing.assert_close(out, x + y, atol=0, rtol=0)


def check_num_warps_and_defaults():
    out = torch.zeros(2, dtype=torch.int32)
    K.report_launch[(1,)](out, num_warps=8)
    assert out.tolist() == [8, 1]
    K.report_launch[(1,)](out)
    assert out.tolist() == [4, 1]


def check_2d_tile_expand_dims_broadcast_masks():
    m, n = 37, 45
    x = torch.randint(-100, 100, (m, 64), dtype=torch.int32)  # row stride 64 != n
    out = torch.full((m, n), -1, dtype=torch.int32)
    K.tile_affine[(triton.cdiv(m, 16), triton.cdiv(n, 16))](x, out, m, n, x.stride(0), 16, 16, num_warps=4)
    assert torch.equal(out, x[:, :n] * 3 + 7)


def check_reductions_and_scan():
    m, n = 8, 16
    x = torch.randint(-50, 50, (m, n), dtype=torch.int32)
    out = torch.zeros(3 * n + 2 * m + 4, dtype=torch.int32)
    K.reductions[(1,)](x, out, m, n)
    expected = torch.cat([
        x.sum(0), x.min(1).values, x.max(1).values,
        x.sum().view(1), x.min().view(1), x.max().view(1),
        x.abs().max().view(1), x.abs().max(0).values,
        x.cumsum(1).sum(0),
    ]).to(torch.int32)
    assert torch.equal(out, expected)


def check_atomics_many_programs():
    grid = 20
    counter = torch.zeros(2, dtype=torch.int32)
    flag = torch.zeros(1, dtype=torch.int32)
    xchg = torch.full((1,), -1, dtype=torch.int32)
    minmax = torch.tensor([1000, -1000], dtype=torch.int32)
    bits = torch.tensor([0, 0, -1], dtype=torch.int32)
    old = torch.full((grid,), -5, dtype=torch.int32)
    K.atomics[(grid,)](counter, flag, xchg, minmax, bits, old, 32)
    assert counter.tolist() == [3 * grid, grid]
    assert flag.item() == 1 and old.tolist() == [0] + [1] * (grid - 1)  # program 0 wins the cas
    assert xchg.item() == grid - 1  # programs run in order
    assert minmax.tolist() == [10, grid - 1 + 10]
    all_bits = (1 << grid) - 1
    assert bits.tolist() == [all_bits, all_bits, -1 & ~all_bits]


def check_control_flow():
    out = torch.zeros(8, dtype=torch.int32)
    K.control_flow[(4, 3)](out, 5, 1)
    # 0+1+2+3+4 + 3*100 + (0+1+2+3)*1000 = 6310, +/-10000 by pid parity, *2 for MODE == 1
    assert out.tolist() == [32620, -7380, 32620, -7380] + [2 * 10 + 3] * 4
    K.control_flow[(4,)](out, 5, 0, STEPS=2)
    assert out.tolist() == [11310, -8690, 11310, -8690] + [1] * 4


def check_device_function_calls_with_constexpr_defaults():
    x = torch.arange(64, dtype=torch.float32)
    out = torch.zeros(128)
    K.device_calls[(1,)](x, out, 64, num_warps=2)
    assert torch.equal(out[:64], x * 2) and torch.equal(out[64:], x * 3 + 1)


def check_casts_pointer_int_roundtrip():
    x = torch.arange(-10, 20, dtype=torch.int32)
    out = torch.zeros(32, dtype=torch.int32)
    K.casts[(1,)](x, out, 30)
    assert torch.equal(out[:30], (x.float() * 0.5).to(torch.int32) + x)
    assert out[30:].tolist() == [0, 0]


def check_aggregate_method_binds_self():
    base = torch.tensor([5.0])
    x = torch.arange(32, dtype=torch.float32)
    out = torch.zeros(64)
    K.aggregate_method[(1,)](base, x, out, 32)
    assert torch.equal(out[:32], x * 3 + 5) and torch.equal(out[32:], (x * 3 + 5) * 3 + 5)
    assert isinstance(K.Affine.apply, gi.InterpretedGluonFunction)  # through the class: the function itself


def check_gluon_jit_function_decorated_before_install():
    out = torch.zeros(64, dtype=torch.int32)
    K.fill_decorated_before_install[(1,)](out, torch.tensor([100], dtype=torch.int32), 9, 64, num_warps=2)
    assert out.tolist() == [109] * 64


def check_clear_errors():
    for kernel, message in [
        ("uses_inline_asm", "inline asm has no interpreter fallback; the caller must provide one"),
        ("uses_warp_specialize", "gl.warp_specialize is not supported"),
    ]:
        with pytest.raises(NotImplementedError, match=message):
            getattr(K, kernel)[(1,)](torch.zeros(32, dtype=torch.int32))
        check_patches_are_restored()


def check_patches_are_restored():
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonJITFunction
    from triton.runtime import interpreter

    K.report_launch[(1,)](torch.zeros(2, dtype=torch.int32))
    assert interpreter._patch_lang is gi._orig_patch_lang and not gi._active
    assert "__get__" not in vars(GluonJITFunction) and not hasattr(tl.core.block_type, "layout")
    with pytest.raises(ValueError, match="gluon.jit"):  # the real Gluon builtin is back
        gl.arange(0, 4)


def check_shared_memory_round_trip():
    """A shared allocation stored and loaded back in one program holds what was stored (a host array per call)."""
    out = torch.zeros(32, dtype=torch.int32)
    K.uses_shared_memory[(2,)](out)
    assert out.tolist() == [3 * j + 1 for j in range(32)], out.tolist()


class _Trace:
    """Trace buffers for one hand-built context: ``max_events`` slots in chunks of ``chunk``, every slot a hole
    (event_id EMPTY_EVENT, its other words -99)."""

    def __init__(self, max_events: int, chunk: int) -> None:
        from iris import context_layout as layout
        from iris.tracing.events import EMPTY_EVENT
        from iris.tracing.records import int32_column

        self.chunk = chunk
        self.counters = torch.zeros(layout.COUNTERS, dtype=torch.int64)
        self.records = torch.full((max_events, layout.RECORD_WORDS), -99, dtype=torch.int64)
        self.records.view(torch.int32)[:, int32_column("event_id")] = EMPTY_EVENT.value
        self.cursors = torch.zeros((layout.cursor_cells(max_events, chunk), layout.CURSOR_WORDS), dtype=torch.int64)

    def context(self, buf, enabled: bool) -> torch.Tensor:
        from iris import context_layout as layout

        block = layout.TracingBlock(1, self.records.shape[0], self.chunk, self.counters.data_ptr(),
                                    self.records.data_ptr(), self.cursors.data_ptr()) if enabled else None
        return torch.tensor(layout.encode(0, [buf.data_ptr()], block), dtype=torch.int64)


def check_native_gluon_tracing_records_every_field():
    """GluonDeviceTracing under the shim: 3 programs x 2 events into 4 slots in chunks of 2, every field of every
    slot; the third program's chunk starts at max_events, so both of its records are dropped."""
    import numpy as np

    from iris.tracing.events import DURATION_INSTANT, FIELD_INDEX
    from iris.tracing.records import decode_words

    block, programs = 32, 3
    buf = torch.zeros(block * programs, dtype=torch.int32)
    bits = (torch.arange(block * programs) % 3 == 1).to(torch.int8)
    bits[block:2 * block] = 0  # program 1: no active lane
    trace = _Trace(4, 2)
    K.native_tracing[(programs,)](trace.context(buf, True), buf, bits, block)
    assert trace.counters.tolist() == [6, 2], trace.counters  # slots claimed (3 chunks), records dropped
    base = buf.data_ptr()
    expected = {  # slots in claim order: programs run one after another under the interpreter
        "event_id": [3, 4, 3, 4], "pid": [0, 0, 1, 1], "pid_m": [0, 0, 1, 1], "pid_n": [7, 8, 7, 8],
        "cur_rank": [0] * 4, "target_rank": [1, 0, 1, 0], "xcc_id": [0] * 4, "cu_id": [0] * 4,
        "address": [base + 4, base, 0, base + 4], "op_index": [0, 1, 2, 3], "payload_size": [4 * 11, 4, 0, 4],
        "payload": [10, 0, 11, 0],
    }  # fmt: skip
    records = decode_words(np.ascontiguousarray(trace.records.numpy().T), 0, np.arange(4)).T  # [slot, field]
    for name, values in expected.items():
        got = records[:, FIELD_INDEX[name]].tolist()
        assert got == values, (name, got, values)
    durations = records[:, FIELD_INDEX["duration_cycles"]].tolist()
    assert durations[0] >= 0 and durations[2] >= 0 and durations[1] == durations[3] == DURATION_INSTANT, durations
    stamps = records[:, FIELD_INDEX["timestamp"]].tolist()
    assert 0 < stamps[0] <= stamps[1] <= stamps[2] <= stamps[3], stamps


def check_native_gluon_tracing_runtime_off_touches_nothing():
    """Compiled with tracing on, given a context whose tracing block is zeros: no claim, no store."""
    buf = torch.zeros(64, dtype=torch.int32)
    trace = _Trace(4, 1)
    before = trace.records.clone()
    K.native_tracing[(2,)](trace.context(buf, False), buf, torch.ones(64, dtype=torch.int8), 32)
    assert trace.counters.tolist() == [0, 0] and torch.equal(trace.records, before), (trace.counters, trace.records)
    assert not trace.cursors.any(), trace.cursors


@triton.jit
def _plain_triton_kernel(x_ptr, out_ptr, counter_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.cumsum(x, 0) + tl.sum(x))
    tl.atomic_add(counter_ptr, 1)


def check_plain_triton_kernel_after_gluon_kernel():
    K.vector_add[(1,)](torch.ones(8), torch.ones(8), torch.zeros(8), 8, 1)
    x = torch.arange(16, dtype=torch.int32)
    out = torch.zeros(16, dtype=torch.int32)
    counter = torch.zeros(1, dtype=torch.int32)
    _plain_triton_kernel[(3,)](x, out, counter, 16)
    assert torch.equal(out, x.cumsum(0).to(torch.int32) + x.sum().to(torch.int32))
    assert counter.item() == 3


def _patched_state(modules: list) -> list[dict]:
    return [dict(vars(module)) for module in modules]


def _each_launch_patches_as_the_first(modules: list, patch) -> None:
    """Two launches' patches (``patch()`` applies them and returns what restores them), the second replayed
    (``iris.interpreter.replayed``): the same values on ``modules``, no more and no fewer, and every module as it was
    after each."""
    from iris import interpreter

    interpreter._made.clear()
    before, during = _patched_state(modules), []
    for _ in range(2):
        restore = patch()
        during.append(_patched_state(modules))
        restore()
        assert _patched_state(modules) == before
    assert during[0] == during[1] and during[0] != before


def check_every_launch_patches_as_the_first_did_and_restores_the_modules():
    """From the second launch on, a Gluon launch's patches are the values the first launch's set."""
    from triton.experimental.gluon._runtime import GluonJITFunction
    from triton.runtime import interpreter as ti

    def patch():
        launch = gi._lang_patched(4)
        launch.__enter__()
        return lambda: launch.__exit__(None, None, None)

    _each_launch_patches_as_the_first([tl, tl.core, tl.math, tl.core.tensor, tl.core.block_type, ti, GluonJITFunction,
                                       *(sys.modules[name] for name in gi._gluon_modules())], patch)


def check_every_triton_launch_patches_as_the_first_did_and_restores_the_modules():
    """The same for Triton's own patch of a launch, once ``iris.interpreter`` is installed (last: it stays)."""
    from triton.runtime import interpreter as ti

    from iris import interpreter

    interpreter.install()
    _each_launch_patches_as_the_first([tl, tl.core, tl.math, tl.core.tensor, tl.core.tensor_descriptor_base],
                                      lambda: ti._patch_lang(_plain_triton_kernel.fn).restore)
    check_plain_triton_kernel_after_gluon_kernel()


CHECKS = [name for name in list(globals()) if name.startswith("check_")]


def _main():
    """Subprocess entry point: run every check in order, print {check name: None or traceback}."""
    global K
    assert triton.knobs.runtime.interpret, "run with TRITON_INTERPRET=1 in the environment"
    gi.install()
    from tests.cpu_interpret import _gluon_kernels as K

    results = {}
    for name in CHECKS:
        try:
            globals()[name]()
            results[name] = None
        except BaseException:
            results[name] = traceback.format_exc()
    print(_RESULT_TAG + json.dumps(results), flush=True)


@pytest.fixture(scope="module")
def interpreted_results():
    code = "from tests.cpu_interpret import test_gluon_interpret as t; t._main()"
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=_ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(_RESULT_TAG)]
    assert proc.returncode == 0 and lines, f"interpreter subprocess failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[-1][len(_RESULT_TAG):])


@pytest.mark.parametrize("check", CHECKS)
def test_interpreted(interpreted_results, check):
    error = interpreted_results[check]
    assert error is None, error


def test_wrong_triton_version(monkeypatch):
    monkeypatch.setattr(triton.knobs.runtime, "interpret", True)
    monkeypatch.setattr(gi, "_triton_version", lambda: "3.7.0")
    with pytest.raises(RuntimeError, match=r"written for Triton 3\.6\.x, found Triton 3\.7\.0.*still compile for GPU"):
        gi.install()  # raises before patching anything


def test_not_interpreting_leaves_gluon_jit_compiling(monkeypatch):
    from triton.experimental import gluon
    from triton.experimental.gluon._runtime import GluonJITFunction

    monkeypatch.setattr(triton.knobs.runtime, "interpret", False)
    was_installed = gi.is_installed()
    gi.install()  # a no-op without the interpreter
    assert gi.is_installed() == was_installed
    if not was_installed:
        assert gluon.jit is not gi._jit
    assert isinstance(gi._jit(_plain_triton_kernel.fn), GluonJITFunction)
