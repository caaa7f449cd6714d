"""Auto-tracing in compiled code, on sm_90, sm_100, gfx942 and gfx950, both APIs.

Compiled off (``trace_ops=False``, the default) the ops hold no tracing code: the machine code of the op kernel
(every op) and of the manually traced kernels, with tracing off and on, is byte-for-byte what it was before
auto-tracing existed. ``machine_code_before_auto_tracing.json`` holds the sha256 of each normalized listing
(``compile_helpers.normalize``), taken at the commit before auto-tracing (the manually traced kernels' digests
retaken at each deliberate change of the record code: the cursor read through lane 0, then one branch a record;
``trace_loop_kernel``'s when its events took upstream's ids, compute 16 -> 2048 and user 17 -> 4096: from the tree of
the previous retake with only the id table of ``iris/tracing/events.py`` changed, which equals the current tree's;
both when the tracing state slimmed and the Triton reductions left the run-time branch,
``benchmarks/bench_tile_resources.py``: no op kernel's digest changed);
``python -m tests.cpu_compile.test_auto_tracing_compile FILE`` writes the digests of the current tree, for a
deliberate change.
Compiled on, an op that returns a value ends its range on a clock read that takes the value as an input.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

from iris.op_trace import OP_EVENTS
from tests.cpu_compile.compile_helpers import MACHINE_CODE, TARGETS, compile_kernel, normalize
from tests.ops.op_jobs import ATOMIC_OPS, DATA_OPS

pytestmark = pytest.mark.cpu_compile

BEFORE = Path(__file__).with_name("machine_code_before_auto_tracing.json")
CASES = [("op_kernel", {"OP": op, "BLOCK": 32}) for op in DATA_OPS + ATOMIC_OPS] + [
    ("trace_1d_kernel", {"BLOCK": 32, "USE_MASK": True, "TRACING": t}) for t in (True, False)] + [
    ("trace_loop_kernel", {"ITERS": 3})]
WORLD = {"rank": 0, "world": 2}
# The end clock read of a range that ends on a value: the clock asm with an input operand (iris.tracing.hw).
END_ON_VALUE = {"cuda": re.compile(r'asm sideeffect "mov\.u64 \$0, %globaltimer;", "=l,l"'),
                "hip": re.compile(r'asm sideeffect "s_memrealtime \$0\\0As_waitcnt lgkmcnt\(0\)", "=s,v"')}


def _key(api: str, target: str, kernel: str, cx: dict) -> str:
    return f"{api} {target} {kernel} " + " ".join(f"{k}={v}" for k, v in sorted(cx.items()))


def digest(api: str, target: str, kernel: str, cx: dict) -> str:
    """sha256 of the normalized machine code of ``kernel`` (auto-tracing compiled off where it can be)."""
    extra = {"TRACE_OPS": False} if kernel == "op_kernel" else {}
    kind = MACHINE_CODE[TARGETS[target].backend]
    code = compile_kernel(api, kernel, target, {**WORLD, **cx, **extra})[kind]
    return hashlib.sha256("\n".join(normalize(code, kind, kernel)).encode()).hexdigest()


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("api", ["triton", "gluon"])
def test_compiled_off_is_the_code_before_auto_tracing(api, target):
    before = json.loads(BEFORE.read_text())
    changed = [_key(api, target, k, cx) for k, cx in CASES
               if digest(api, target, k, cx) != before[_key(api, target, k, cx)]]
    assert not changed, f"{api} on {target}: machine code differs from before auto-tracing for {changed}"


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("op", DATA_OPS + ATOMIC_OPS)
@pytest.mark.parametrize("api", ["triton", "gluon"])
def test_compiled_on_records_and_ends_on_the_value(api, op, target):
    backend = TARGETS[target].backend
    on = compile_kernel(api, "op_kernel", target, {**WORLD, "OP": op, "BLOCK": 32, "TRACE_OPS": True})
    off = compile_kernel(api, "op_kernel", target, {**WORLD, "OP": op, "BLOCK": 32, "TRACE_OPS": False})
    kind = MACHINE_CODE[backend]
    assert normalize(on[kind], kind, "op_kernel") != normalize(off[kind], kind, "op_kernel"), f"{api} {op} {target}"
    ends_on_value = sum(e.ends_on_value for e in OP_EVENTS[op])
    found = len(END_ON_VALUE[backend].findall(on["llir"]))
    assert found == ends_on_value, (f"{api} {op} on {target}: {found} end clock reads take a value, but "
                                    f"iris.op_trace says {ends_on_value}")


if __name__ == "__main__":
    out = {_key(api, target, k, cx): digest(api, target, k, cx)
           for api in ("triton", "gluon") for target in TARGETS for k, cx in CASES}
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
