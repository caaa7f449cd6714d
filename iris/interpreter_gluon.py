"""Run ``@gluon.jit`` kernels under ``TRITON_INTERPRET=1`` by reusing Triton's interpreter and erasing layouts.

One concept: a Gluon kernel *is* a Triton kernel plus layouts. With layouts dropped, every ``gl.*``
builtin is either a ``tl`` builtin re-exported by Gluon (``gl.load``, ``gl.atomic_add``, ``gl.where``, ...),
which we run through Triton's interpreter semantic unchanged, or a Gluon-only builtin, which we map to its
layout-free ``tl`` equivalent (``gl.arange(0, N, layout=L)`` -> ``tl.arange(0, N)``,
``gl.convert_layout(x, L)`` -> ``x``, ``gl.num_warps()`` -> the launch's ``num_warps``) or refuse with a
clear ``NotImplementedError``. Kernels run on the host through Triton's ``GridExecutor``, one program
after another. The ``gl``/``tl`` patches live only for the duration of a kernel run (or of a direct call
of a device function) and are restored afterwards, so plain ``@triton.jit`` kernels keep working.

Activation: ``TRITON_INTERPRET=1`` must be in the environment before ``triton`` is first imported, and
``install()`` must run before the first launch. Run it before the kernel modules are imported: ``@gluon.jit``
then yields ``InterpretedGluonFunction`` (binds ``self`` as an aggregate method). Kernels decorated earlier
(``GluonJITFunction``) still launch, call each other and bind as aggregate methods, but only inside a run.

Shared memory is a host array per allocation (``allocate_shared_memory``, ``.load``, ``.store``; no views).
Limits: no tensor memory, TMA, warp specialization, inline asm (the caller must provide an interpreter
fallback), or NVIDIA/AMD-specific ``gl.*`` builtins; ``x.type.layout`` reads as ``AutoLayout()``;
builtins must be reached through the ``gl`` module (``gl.load``), not imported by name; programs run
sequentially, so atomics are exact and cross-program spin-waits deadlock. Written for Triton 3.6.x.
"""

import contextlib
import inspect
import sys
import types

import numpy as np
import triton
import triton.language as tl
from triton import knobs

_SUPPORTED = "3.6"


def _triton_version() -> str:
    return triton.__version__


def _check_triton_version() -> None:
    found = _triton_version()
    if not found.startswith(_SUPPORTED):
        raise RuntimeError(
            f"iris.interpreter_gluon was written for Triton {_SUPPORTED}.x, found Triton {found}: "
            "Gluon kernels cannot run on CPU (TRITON_INTERPRET=1) with it; they still compile for GPU."
        )


if knobs.runtime.interpret:
    _check_triton_version()

from triton.experimental import gluon as _gluon  # noqa: E402
from triton.experimental.gluon import _runtime as _gluon_runtime  # noqa: E402
from triton.experimental.gluon import language as _gluon_language  # noqa: E402
from triton.runtime import interpreter as _interp  # noqa: E402
from triton.runtime.jit import JITCallable  # noqa: E402

from iris import interpreter as _interpreter  # noqa: E402

_GL_PREFIX = "triton.experimental.gluon.language"
_gl_shared_memory_descriptor = _gluon_language.shared_memory_descriptor
_TL_LANGS = types.SimpleNamespace(__globals__={"tl": tl, "core": tl.core})  # what Triton's _patch_lang reads
_STATIC_RANGE = tl.core.static_range
_orig_patch_lang = _interp._patch_lang
_installed = False
_active = False  # True while the gl/tl patches are in place
_num_warps = 4


class GluonInterpreterUnsupported(NotImplementedError):
    """A Gluon feature with no CPU-interpreter equivalent was used."""


def _unsupported(what: str, why: str):
    def stub(*args, **kwargs):
        raise GluonInterpreterUnsupported(f"{what} is not supported under TRITON_INTERPRET=1: {why}")

    return stub


class _SharedMemory(_gl_shared_memory_descriptor):
    """A program's shared memory allocation: a host array (programs run one after another, so one per call).

    A ``shared_memory_descriptor`` only to pass the type checks of aggregates that hold one; none of its state.
    """

    def __init__(self, element_ty, shape, value=None) -> None:
        from triton.runtime.interpreter import _get_np_dtype

        self._dtype = tl.core._unwrap_if_constexpr(element_ty)
        self._shape = [int(tl.core._unwrap_if_constexpr(d)) for d in shape]
        self._data = np.zeros(self._shape, dtype=_get_np_dtype(self._dtype))
        if value is not None:
            self.store(value)

    def load(self, layout=None):
        from triton.runtime.interpreter import TensorHandle

        return tl.tensor(TensorHandle(self._data.copy(), self._dtype), tl.block_type(self._dtype, self._shape))

    def store(self, value) -> None:
        self._data[...] = np.broadcast_to(value.handle.data, self._shape)


# Gluon-only builtins, mapped to layout-free tl (tl is patched by Triton's interpreter while they run).
_GLUON_ONLY = {
    "arange": lambda start, end, layout=None: tl.arange(start, end),
    "full": lambda shape, value, dtype, layout=None: tl.full(shape, value, dtype),
    "histogram": lambda input, num_bins, mask=None, layout=None: tl.histogram(input, num_bins, mask),
    "convert_layout": lambda value, layout, assert_trivial=False: value,
    "set_auto_layout": lambda value, layout: value,
    "num_warps": lambda: _num_warps,
    "num_ctas": lambda: 1,
    "thread_barrier": lambda: None,
    "dot_fma": lambda a, b, acc: tl.dot(a, b, acc),
    "inline_asm_elementwise": _unsupported(
        "gl.inline_asm_elementwise", "inline asm has no interpreter fallback; the caller must provide one"),
    "warp_specialize": _unsupported("gl.warp_specialize", "warp partitions cannot be interpreted"),
    "allocate_shared_memory": lambda element_ty, shape, layout, value=None: _SharedMemory(element_ty, shape, value),
}
# Re-exported tl builtins whose interpreter version Triton installs on tl.core itself (not via the semantic).
_FROM_PATCHED_TL_CORE = ("reduce", "associative_scan", "static_assert", "static_print", "multiple_of",
                         "max_contiguous", "max_constancy")


def _is_constexpr_annotation(ann) -> bool:
    if isinstance(ann, str):  # postponed: "gl.constexpr", "ttgl.constexpr", "'gl.constexpr'" (a string literal)
        return ann.strip().strip("'\"").rsplit(".", 1)[-1] == "constexpr"
    return isinstance(ann, type) and issubclass(ann, tl.constexpr)


class _GluonGridExecutor(_interp.GridExecutor):
    """``GridExecutor`` that also recognises ``gl.constexpr`` (Triton only normalises ``tl.constexpr``)."""

    def __init__(self, fn, arg_names, grid, pre_run_hooks):
        super().__init__(fn, arg_names, grid, pre_run_hooks)
        annotations = fn.__annotations__
        self.constexprs = [n for n in arg_names if _is_constexpr_annotation(annotations.get(n))]


class InterpretedGluonFunction(_interp.InterpretedFunction, JITCallable):
    """What ``@gluon.jit`` returns under the interpreter.

    Launch with ``kernel[grid](*args, num_warps=4)``; call as a device function from another kernel; bound to
    ``self`` when read from an instance (aggregate methods). ``JITCallable`` is a base only so that Triton's
    ``_aggregate`` copies it onto the aggregate; its compiler state is never initialised or used.
    """

    __hash__ = object.__hash__  # JITCallable hashes by source hash, which we do not compute

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def run(self, *args, grid, warmup, num_warps=4, **kwargs):
        if warmup:
            return None
        fn = self.rewrite()
        try:
            with _lang_patched(num_warps):
                return _GluonGridExecutor(fn, self.arg_names, grid, self.pre_run_hooks)(*args, **kwargs)
        except _interp.InterpreterError as e:
            cause = e.__cause__
            if isinstance(cause, GluonInterpreterUnsupported):  # surface it unwrapped
                raise cause from None
            raise

    def __call__(self, *args, **kwargs):  # device-function call; patches are already in place inside a run
        if _active:
            return self.rewrite()(*args, **kwargs)
        with _lang_patched(_num_warps):  # a direct call outside a run
            return self.rewrite()(*args, **kwargs)


_by_fn: dict = {}


def _interpreted(fn) -> InterpretedGluonFunction:
    if fn not in _by_fn:
        _by_fn[fn] = InterpretedGluonFunction(fn)
    return _by_fn[fn]


def _patch_gluon(scope) -> None:
    from triton.experimental.gluon.language import AutoLayout

    GluonJITFunction = _gluon_runtime.GluonJITFunction
    for name, module in list(sys.modules.items()):
        if module is None or not (name == _GL_PREFIX or name.startswith(_GL_PREFIX + ".")):
            continue
        for attr, member in inspect.getmembers(module, inspect.isfunction):
            if not tl.core.is_builtin(member):
                continue
            if attr in _GLUON_ONLY:
                scope.set_attr(module, attr, _GLUON_ONLY[attr])
            elif attr in _FROM_PATCHED_TL_CORE:
                scope.set_attr(module, attr, getattr(tl.core, attr))
            elif not member.__module__.startswith("triton.experimental.gluon"):  # a tl builtin, re-exported
                _interp._patch_attr(module, attr, member, _interp.interpreter_builder, scope)
            else:
                scope.set_attr(module, attr, _unsupported(f"{name}.{attr}", "it is a Gluon-only builtin"))
        if getattr(module, "static_range", None) is _STATIC_RANGE:
            scope.set_attr(module, "static_range", tl.core.static_range)
    # Gluon jit functions decorated before install() (gl.sum, gl.zeros, ...) run interpreted too.
    scope.set_attr(GluonJITFunction, "__call__", lambda self, *a, **k: _interpreted(self.fn)(*a, **k))
    scope.set_attr(GluonJITFunction, "__get__", lambda self, obj, objtype=None: self if obj is None else
                   types.MethodType(self, obj))
    # Triton's int(handle.data) on a shape-(1,) array fails on numpy >= 2.4 (range(n) with a runtime n).
    scope.set_attr(tl.core.tensor, "__index__", lambda self: int(self.handle.data.item()))
    scope.set_attr(tl.core.block_type, "layout", AutoLayout())  # x.type.layout; instances may still set their own
    # GridExecutor would patch tl itself, asserting that tl is visible to the kernel; we already did.
    scope.set_attr(_interp, "_patch_lang", lambda fn: _interp._LangPatchScope())


_modules_seen: tuple[int, tuple[str, ...]] = (-1, ())  # (len(sys.modules), the Gluon modules then loaded)


def _gluon_modules() -> tuple[str, ...]:
    """The names of the loaded Gluon language modules (those ``_patch_gluon`` patches), scanned for again only once
    the number of loaded modules changed."""
    global _modules_seen
    if _modules_seen[0] != len(sys.modules):
        names = tuple(name for name, module in list(sys.modules.items())
                      if module is not None and (name == _GL_PREFIX or name.startswith(_GL_PREFIX + ".")))
        _modules_seen = (len(sys.modules), names)
    return _modules_seen[1]


def _patch_tl_and_gl():
    scope = _orig_patch_lang(_TL_LANGS)  # tl and tl.core builtins, ranges, reduce/scan, tensor dunders
    try:
        _patch_gluon(scope)
    except BaseException:
        scope.restore()
        raise
    return scope


@contextlib.contextmanager
def _lang_patched(num_warps: int):
    """Patch tl (as Triton's interpreter does) and gl for one kernel run; no-op when already patched."""
    global _active, _num_warps
    if _active:
        yield
        return
    scope = _interpreter.replayed(("gluon", _gluon_modules()), _patch_tl_and_gl)
    saved_warps = _num_warps
    try:
        _active, _num_warps = True, num_warps
        yield
    finally:
        _active, _num_warps = False, saved_warps
        scope.restore()


def _jit(fn=None, **kwargs):
    """``gluon.jit`` replacement: interpreted under ``TRITON_INTERPRET=1``, the original otherwise."""
    if not knobs.runtime.interpret:
        return _orig_jit(fn, **kwargs)
    return InterpretedGluonFunction(fn) if fn is not None else lambda f: InterpretedGluonFunction(f)


def _run_interpreted(self, *args, grid, warmup, **kwargs):
    if knobs.runtime.interpret:
        return _interpreted(self.fn).run(*args, grid=grid, warmup=warmup, **kwargs)
    return _orig_run(self, *args, grid=grid, warmup=warmup, **kwargs)


_orig_jit = _gluon_runtime.jit
_orig_run = _gluon_runtime.GluonJITFunction.run


def install() -> None:
    """Make ``@gluon.jit`` kernels run under ``TRITON_INTERPRET=1``; idempotent, a no-op when not interpreting."""
    global _installed
    if not knobs.runtime.interpret:
        return
    _check_triton_version()
    if _installed:
        return
    from triton.experimental.gluon.language import _standard

    for module in (_gluon, _gluon_runtime, _standard):  # every name a kernel module's @gluon.jit can resolve to
        module.jit = _jit
    _gluon_runtime.GluonJITFunction.run = _run_interpreted
    _installed = True


def is_installed() -> bool:
    return _installed
