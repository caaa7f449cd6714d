"""cpu-compile tier: the ranks of a world compile a kernel once (``iris.ranks.compile_once``).

Processes that miss the same kernel (or the same launcher module) at once: one builds it, the others load what it
wrote. A miss holds the key's lock until the compile's files are written or the compile that missed has raised; gpu
ranks select the cache by ``TRITON_CACHE_MANAGER`` unless the user names another one.
"""

from __future__ import annotations

import multiprocessing
import os
import threading

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from iris.ranks import backend_env
from iris.ranks import compile_once as C
from iris.ranks.env import CACHE_MANAGER, SHARED_COMPILE_CACHE

pytestmark = pytest.mark.cpu_compile

PROCESSES = 4


@triton.jit
def _scale(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs) * 3)


def _at_once(child, tmp_path) -> list:
    """What ``child(start)`` returns in each of ``PROCESSES`` spawned processes on one empty cache (``tmp_path``, the
    shared cache selected), sorted; ``start`` is a barrier they all reach before building."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as m, ctx.Pool(PROCESSES) as pool:
        start = m.Barrier(PROCESSES)
        return sorted(pool.starmap(_in_cache, [(child, str(tmp_path), start)] * PROCESSES))


def _in_cache(child, cache: str, start):
    os.environ["TRITON_CACHE_DIR"] = cache
    os.environ[CACHE_MANAGER] = SHARED_COMPILE_CACHE
    return child(start)


def _compile_at_once(start) -> tuple[int, int]:
    """Child: wait for every process, then compile ``_scale`` for sm_90; (compiled, loaded from the cache)."""
    seen = {"compiled": 0, "loaded": 0}

    def listener(**event) -> None:
        seen["loaded" if event.get("cache_hit") else "compiled"] += 1

    triton.knobs.compilation.listener = listener
    src = ASTSource(_scale, signature={"src": "*fp32", "dst": "*fp32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 128})
    start.wait()
    triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    return seen["compiled"], seen["loaded"]


def test_processes_missing_one_kernel_at_once_compile_it_once(tmp_path):
    got = _at_once(_compile_at_once, tmp_path)
    assert got == [(0, 1)] * (PROCESSES - 1) + [(1, 0)], got


PROBE_MODULE = """
#include <Python.h>
static struct PyModuleDef probe = {PyModuleDef_HEAD_INIT, "iris_probe", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_iris_probe(void) { return PyModule_Create(&probe); }
"""


def _build_at_once(start) -> int:
    """Child: wait for every process, then have Triton build (or load) an extension module as it builds a kernel's
    launcher; how many times this process ran the C compiler."""
    from triton.runtime import build

    builds = []
    compiler = build._build

    def counted(*args, **kwargs):
        builds.append(args[0])
        return compiler(*args, **kwargs)

    build._build = counted
    start.wait()
    assert build.compile_module_from_src(PROBE_MODULE, "iris_probe").__name__ == "iris_probe"
    return len(builds)


def _can_build_extensions() -> bool:
    import shutil
    import sysconfig

    include = sysconfig.get_paths()["include"]
    return (shutil.which("gcc") or shutil.which("clang")) is not None and os.path.exists(f"{include}/Python.h")


@pytest.mark.skipif(not _can_build_extensions(), reason="no C compiler or Python headers to build a launcher with")
def test_processes_missing_one_launcher_at_once_build_it_once(tmp_path):
    got = _at_once(_build_at_once, tmp_path)
    assert got == [0] * (PROCESSES - 1) + [1], got


def _miss_then_raise(manager, meanwhile) -> None:
    """As Triton's ``compile`` whose kernel fails: a miss (this frame compiles), then an error before any file."""
    assert manager.get_group("k.json") is None and manager._held is not None, "the first miss holds the key"
    meanwhile()
    raise RuntimeError("the kernel does not compile")


def _join_watches() -> None:
    for t in threading.enumerate():
        if t.name == "iris-compile-once":
            t.join(timeout=60)


def test_a_miss_holds_the_key_until_its_files_are_written_or_its_compile_has_raised(tmp_path, monkeypatch):
    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path))
    monkeypatch.setattr(C, "WAIT_S", 0.0)

    def another_process_misses() -> None:
        waiting = C.SharedCompileCache("key")
        assert waiting.get_group("k.json") is None and waiting._held is None, "past its wait, it compiles unheld"

    first = C.SharedCompileCache("key")
    with pytest.raises(RuntimeError) as kept:  # the traceback keeps the compile's frame and its manager alive
        _miss_then_raise(first, another_process_misses)
    _join_watches()
    assert first._held is None, f"released once the compile that raised left the stack ({kept.value})"
    second = C.SharedCompileCache("key")
    assert second.get_group("k.json") is None and second._held is not None, "the key is free again"
    path = second.put("{}", "k.json")
    second.put_group("k.json", {"k.json": path})
    assert second._held is None, "released when the compile's files are written"
    third = C.SharedCompileCache("key")
    assert third.get_group("k.json") == {"k.json": path} and third._held is None, "a hit takes no lock"
    assert third.get_group("other.ttir") is None and third._held is None, "only a compile's metadata is locked"
    _join_watches()
    assert second._held is None


def test_gpu_ranks_use_it_unless_the_user_names_another_cache(monkeypatch):
    monkeypatch.delenv(CACHE_MANAGER, raising=False)
    assert backend_env("gpu")[CACHE_MANAGER] == SHARED_COMPILE_CACHE
    assert CACHE_MANAGER not in backend_env("cpu"), "the interpreter compiles nothing"
    monkeypatch.setenv(CACHE_MANAGER, SHARED_COMPILE_CACHE)
    assert triton.knobs.cache.manager_class is C.SharedCompileCache, "Triton resolves the name to the class"
    monkeypatch.setenv(CACHE_MANAGER, "somewhere.else:Cache")
    assert CACHE_MANAGER not in backend_env("gpu"), "the user's own cache manager is kept"
