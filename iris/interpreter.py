"""Fixes to the Triton interpreter (``TRITON_INTERPRET=1``) that CPU worlds need, applied once per process.

Triton 3.6's interpreter turns a tensor into a Python int with ``int(handle.data)``, which numpy 2.4 refuses for
the one-element arrays that hold scalars; a run-time trip count (``for i in range(n)``) then fails. The fix
reads the element instead, inside every interpreted run.

The interpreter also re-patches ``triton.language`` on every device-function call inside a kernel (a scan of the
module per call: a third of a traced kernel's run time). Inside a run whose patches already cover the caller's
language modules, a call now reuses them.

Every interpreted op also builds Triton's type objects from scratch, which dominates a traced kernel's run time
once the ops themselves are numpy calls (``_install_cheaper_types``; a call-shapes example on one rank: 4.2 s of
CPU before, 2.0 s after). The same values come out, built with less work: the numpy dtype of a Triton dtype is
looked up once, a tensor's or block type's shape tuple and a block type's name are made once per shape, and two
Triton blocks of one shape (one shared tuple) skip the broadcast check that would leave them as they are, and a
binary op on two tensors of one integer or float type skips the promotion that would leave them as they are (fp16
and bf16 division and modulo still promote to fp32).
"""

from __future__ import annotations

import builtins
import inspect
import math

_installed = False
_patched: set[int] | None = None  # ids of the language modules the running kernel patched; None outside a run


def _scalar_index(tensor) -> int:
    return int(tensor.handle.data.item())


def install() -> None:
    """Apply the fixes (idempotent)."""
    global _installed
    if _installed:
        return
    import triton.language as tl
    from triton.language import core
    from triton.runtime import interpreter

    original = interpreter._patch_lang
    langs = (tl, tl.core)
    seen: dict[object, frozenset[int]] = {}  # function -> the language modules its globals hold

    def patch_lang(fn):
        global _patched
        used = seen.get(fn)
        if used is None:
            used = seen[fn] = frozenset(id(v) for v in fn.__globals__.values()
                                        if inspect.ismodule(v) and any(v is m for m in langs))
        if _patched is not None and used <= _patched:
            return interpreter._LangPatchScope()  # a device function inside a run: already patched
        scope = original(fn)
        scope.set_attr(core.tensor, "__index__", _scalar_index)
        if _patched is not None:  # a device function that sees a module the kernel does not: patched for the run
            _patched |= used
            return scope
        _patched = set(used)
        restore = scope.restore

        def restore_and_forget() -> None:
            global _patched
            _patched = None
            restore()

        scope.restore = restore_and_forget
        return scope

    interpreter._patch_lang = patch_lang
    _install_cheaper_types(core, interpreter)
    _installed = True


def _install_cheaper_types(core, interpreter) -> None:
    """Replace Triton's constructors of type values by ones that build equal values with less work."""
    from triton._utils import validate_block_shape

    np_dtype = interpreter._get_np_dtype
    np_dtypes: dict = {}

    def get_np_dtype(tt_dtype):
        try:
            found = np_dtypes.get(tt_dtype)
        except TypeError:  # an unhashable type (pointer_type): not cached
            return np_dtype(tt_dtype)
        if found is None:
            found = np_dtypes[tt_dtype] = np_dtype(tt_dtype)
        return found

    shapes: dict[tuple, object] = {}

    def shape_tuple(shape: tuple):
        found = shapes.get(shape)
        if found is None:
            found = shapes[shape] = core.tuple([core.constexpr(s) for s in shape])
        return found

    def tensor_init(self, handle, type) -> None:  # core.tensor.__init__, its shape tuple shared per shape
        self.handle = handle
        shape = tuple(type.shape) if type.is_block() else ()
        self.numel = core.constexpr(math.prod(shape))
        self.type = type
        self.dtype = type.scalar
        self.shape = shape_tuple(shape)

    def unwrap_shape(shape) -> list:  # core._unwrap_shape without building a tuple per level
        if isinstance(shape, core.constexpr):
            shape = shape.value
        if isinstance(shape, core.tuple):
            shape = shape.values
        return [s.value if isinstance(s, core.constexpr) else s for s in shape]

    blocks: dict[tuple, tuple] = {}  # shape -> (the shape as Triton's tuple of ints, elements)
    block_names: dict[tuple, str] = {}

    def block_type_init(self, element_ty, shape) -> None:  # core.block_type.__init__, shared shape tuples
        self.element_ty = element_ty
        assert isinstance(shape, (list, builtins.tuple, core.tuple))
        key = builtins.tuple(unwrap_shape(shape))
        found = blocks.get(key)
        if found is None:
            if not key:
                raise TypeError("0d block_type is forbidden")
            found = blocks[key] = (core.tuple(list(key)), validate_block_shape(key))
        self.shape, self.numel = found
        name_key = (key, str(element_ty))
        name = block_names.get(name_key)
        if name is None:
            name = block_names[name_key] = f"<{self.shape}, {element_ty}>"
        self.name = name

    from triton.language.semantic import TritonSemantic

    broadcast = TritonSemantic.broadcast_impl_value

    def broadcast_impl_value(self, lhs, rhs):  # two blocks of one shape (one shared shape tuple): nothing to do
        if lhs.type.is_block() and rhs.type.is_block() and lhs.type.shape is rhs.type.shape:
            return lhs, rhs
        return broadcast(self, lhs, rhs)

    binary_types = TritonSemantic.binary_op_type_checking_impl
    halves = (core.float16, core.bfloat16)

    def binary_op_type_checking_impl(self, lhs, rhs, allow_lhs_ptr=False, allow_rhs_ptr=False, arithmetic_check=True,
                                     div_or_mod=False):  # two tensors of one numeric type: no promotion, no cast
        if isinstance(lhs, core.tensor) and isinstance(rhs, core.tensor) and lhs.type == rhs.type:
            scalar = lhs.type.scalar
            if (scalar.is_int() or scalar.is_floating()) and not (div_or_mod and scalar in halves):
                return lhs, rhs
        return binary_types(self, lhs, rhs, allow_lhs_ptr, allow_rhs_ptr, arithmetic_check, div_or_mod)

    interpreter._get_np_dtype = get_np_dtype
    TritonSemantic.broadcast_impl_value = broadcast_impl_value
    TritonSemantic.binary_op_type_checking_impl = binary_op_type_checking_impl
    core.tensor.__init__ = tensor_init
    core._unwrap_shape = unwrap_shape
    core.block_type.__init__ = block_type_init
