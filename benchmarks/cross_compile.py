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
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import iris
from iris.ranks.compile_once import SharedCompileCache
from iris.world import is_interpreter

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
                divisible_by_16: tuple[str, ...] = (), num_warps: int = 4, cache: str | None = None):
    """The ``triton.compile`` result of the jit function ``fn`` (``api`` "triton" or "gluon") for
    ``TARGETS[target_name]``: ``signature`` types every parameter in order (``"constexpr"`` for those in
    ``constexprs``); ``divisible_by_16`` names arguments specialized as a launch specializes an int or a pointer that
    is a multiple of 16; ``num_warps`` is the launch option. ``cache``: a Triton cache folder of the caller's, in place
    of ``cache_dir()`` (which the processes compiling at once share)."""
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
        if cache is None:
            triton.knobs.cache.dir = cache_dir()
            triton.knobs.cache.manager_class = SharedCompileCache
        else:
            triton.knobs.cache.dir = cache
        return triton.compile(src, target=TARGETS[target_name], options={"num_warps": num_warps})


def run_script(main, module: str) -> None:
    """Run the cross-compiling script ``module``'s ``main`` (``python -m module``) with Triton's compiler. Its kernels
    were made by ``triton.jit`` when it was imported, as interpreted functions if ``TRITON_INTERPRET`` was on, which
    cannot be compiled: then the script starts again, in this process, without it (read as ``triton.jit`` read it:
    ``iris.world.is_interpreter``)."""
    if is_interpreter():
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        os.execve(sys.executable, [sys.executable, "-m", module, *sys.argv[1:]], env)
    main()


def cuobjdump(cubin: bytes, *options: str) -> str:
    """What the cuobjdump that ships with Triton prints for ``cubin`` with ``options`` (such as ``-sass``)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([triton.knobs.nvidia.cuobjdump.path, *options, f.name], capture_output=True, text=True,
                              check=True).stdout


def disassembled(cubin: bytes) -> str:
    """``triton.tools.disasm.get_sass`` of ``cubin``, kept in ``cache_dir()`` by the cubin's digest: a disassembly
    takes cuobjdump about 0.4 s a kernel, and a cubin is the same from run to run where its compile is."""
    from triton.tools.disasm import get_sass

    path = Path(cache_dir()) / "sass" / f"{triton.__version__}-{hashlib.sha256(cubin).hexdigest()}.sass"
    if path.is_file():
        return path.read_text()
    text = get_sass(cubin)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".part", delete=False) as f:
        f.write(text)
    os.replace(f.name, path)  # whole or absent, whichever process writes it
    return text


def cubin_resources(cubin: bytes) -> dict[str, int]:
    """What a cubin's kernel needs per thread and block, as ``cuobjdump --dump-resource-usage`` prints it: ``REG``,
    ``STACK`` (bytes of local memory a thread: its frame and spills), ``SHARED``, ``LOCAL`` and the rest, by name."""
    usage = cuobjdump(cubin, "--dump-resource-usage")
    fields = {name: int(value) for name, value in re.findall(r"\b([A-Z]+(?:\[\d+\])?):(\d+)", usage)}
    if "REG" not in fields:
        raise RuntimeError(f"cuobjdump --dump-resource-usage printed no REG: {usage[:200]!r}")
    return fields


SASS_INSTRUCTION_BYTES = 16  # every SASS instruction since Volta (sm_70) is 128 bits


def sass_instructions(cubin: bytes) -> int:
    """The SASS instructions of a cubin's code, as many as ``cuobjdump -sass`` lists (the trailing self-branch and
    padding included): the bytes of its ELF ``.text.*`` sections over ``SASS_INSTRUCTION_BYTES``, read without
    disassembling (which takes ``cuobjdump`` about 0.4 s a kernel)."""
    if cubin[:5] != b"\x7fELF\x02":
        raise ValueError(f"not a 64-bit ELF cubin (it starts {cubin[:5]!r})")
    (sections_at,) = struct.unpack_from("<Q", cubin, 0x28)
    entry_size, count, names_index = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", cubin, sections_at + i * entry_size) for i in range(count)]
    names_at = headers[names_index][4]

    def name(offset: int) -> bytes:
        start = names_at + offset
        return cubin[start:cubin.index(b"\0", start)]

    code = sum(size for name_offset, _, _, _, _, size in headers if name(name_offset).startswith(b".text."))
    if code == 0 or code % SASS_INSTRUCTION_BYTES:
        raise ValueError(f"the cubin's .text sections hold {code} bytes, not a positive multiple of "
                         f"{SASS_INSTRUCTION_BYTES}")
    return code // SASS_INSTRUCTION_BYTES
