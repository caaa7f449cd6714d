"""Compile a Triton or Gluon kernel for a GPU target on any machine, a GPU or none (no kernel runs).

Shared by the cpu-compile tests (``tests/cpu_compile/compile_helpers.py``) and ``benchmarks/bench_tile_resources.py``.
Triton's on-disk cache key hashes the ``@jit`` functions a kernel calls but not the ``__triton_builtin__`` helpers it
calls (``iris/tracing/hw.py``, ``iris/_builtins.py``, ``iris/experimental/layouts.py``): after an edit there, the
default cache serves stale code. So these compiles go to a cache of their own, ``<triton cache dir>/iris-cpu-compile/
<hash of iris/**/*.py>``, through ``iris.ranks.compile_once``'s cache manager: processes that miss one kernel at once
(pytest-xdist workers, a benchmark's subprocess beside them) compile it once and load it from the cache.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import iris
from iris.ranks.compile_once import SharedCompileCache

TARGETS: dict[str, GPUTarget] = {
    "sm_90": GPUTarget("cuda", 90, 32),
    "sm_100": GPUTarget("cuda", 100, 32),
    "gfx942": GPUTarget("hip", "gfx942", 64),
    "gfx950": GPUTarget("hip", "gfx950", 64),
}


@functools.cache
def cache_dir() -> str:
    """Triton cache directory for these compiles: a fresh one whenever any iris source file changes."""
    root = Path(iris.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return os.path.join(triton.knobs.cache.dir, "iris-cpu-compile", digest.hexdigest()[:16])


def compile_jit(api: str, fn, target_name: str, constexprs: dict, signature: dict, *,
                divisible_by_16: tuple[str, ...] = (), num_warps: int = 4):
    """The ``triton.compile`` result of the jit function ``fn`` (``api`` "triton" or "gluon") for
    ``TARGETS[target_name]``: ``signature`` types every parameter in order (``"constexpr"`` for those in
    ``constexprs``); ``divisible_by_16`` names arguments specialized as a launch specializes an int or a pointer that
    is a multiple of 16; ``num_warps`` is the launch option."""
    if target_name not in TARGETS:
        raise ValueError(f"target {target_name!r} is not one of {sorted(TARGETS)}")
    if api == "gluon":
        from triton.experimental.gluon._runtime import GluonASTSource as source_type
    elif api == "triton":
        source_type = ASTSource
    else:
        raise ValueError(f"api must be 'triton' or 'gluon', not {api!r}")
    names = list(signature)
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in divisible_by_16}
    src = source_type(fn, signature=dict(signature), constexprs=dict(constexprs), attrs=attrs)
    with triton.knobs.cache.scope():
        triton.knobs.cache.dir = cache_dir()
        triton.knobs.cache.manager_class = SharedCompileCache
        return triton.compile(src, target=TARGETS[target_name], options={"num_warps": num_warps})


def cuobjdump(cubin: bytes, *options: str) -> str:
    """What the cuobjdump that ships with Triton prints for ``cubin`` with ``options`` (such as ``-sass``)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([triton.knobs.nvidia.cuobjdump.path, *options, f.name], capture_output=True, text=True,
                              check=True).stdout


def cubin_resources(cubin: bytes) -> dict[str, int]:
    """What a cubin's kernel needs per thread and block, as ``cuobjdump --dump-resource-usage`` prints it: ``REG``,
    ``STACK`` (bytes of local memory a thread: its frame and spills), ``SHARED``, ``LOCAL`` and the rest, by name."""
    usage = cuobjdump(cubin, "--dump-resource-usage")
    fields = {name: int(value) for name, value in re.findall(r"\b([A-Z]+(?:\[\d+\])?):(\d+)", usage)}
    if "REG" not in fields:
        raise RuntimeError(f"cuobjdump --dump-resource-usage printed no REG: {usage[:200]!r}")
    return fields
