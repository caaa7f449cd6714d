"""Fixes to the Triton interpreter (``TRITON_INTERPRET=1``) that CPU worlds need, applied once per process.

Triton 3.6's interpreter turns a tensor into a Python int with ``int(handle.data)``, which numpy 2.4 refuses for
the one-element arrays that hold scalars; a run-time trip count (``for i in range(n)``) then fails. The fix
reads the element instead, inside every interpreted run.

The interpreter also re-patches ``triton.language`` on every device-function call inside a kernel (a scan of the
module per call: a third of a traced kernel's run time). Inside a run whose patches already cover the caller's
language modules, a call now reuses them. A launch patches by setting again the values the first launch's scan set
(``replayed``), a setattr each, instead of scanning the modules and making every wrapper anew.

Every interpreted op also builds Triton's type objects from scratch and walks Triton's general typing rules,
which dominates a traced kernel's run time once the ops themselves are numpy calls (``_install_cheaper_types``).
The same values come out, with less work:

- the numpy dtype of a Triton dtype is looked up once; a tensor's or block type's shape tuple, numel and name are
  made once per shape;
- a binary op whose operands Triton's promotion would leave as they are (two tensors of one integer or float type,
  a pointer and an integer offset, a tensor and a Python number that fits its type) skips the promotion; fp16 and
  bf16 division and modulo still promote to fp32, and anything else takes Triton's own path, errors included;
- broadcasting two blocks of one shape does nothing, and a scalar made a block reuses the block type;
- the integer-overflow check Triton builds for ``+``, ``-`` and ``*`` is skipped unless the kernel runs with
  ``debug`` (it only feeds an assert that ``debug`` turns on);
- a language builtin is called without Triton's wrapper layers, and a dtype compared with itself is equal at once;
- a tensor made a tensor (every assignment in an interpreted kernel is one) is returned at once, and a handle's
  numpy data is checked against its type (and a binary op's result narrowed to it) without a call per handle;
- a cast to the scalar type the tensor has returns it at once, and one from an integer type to another (not to
  bool) goes straight to the integer cast Triton's rules reach.

Measured on call-shapes examples on one rank: one took 4.2 s of CPU with none of these and 2.0 s with the first;
three took 7.7 s with the first and 4.9 s with all of them. ``tests/cpu_unit/interpreter_rules.py`` checks the
shortcuts against Triton's own rules on 29,586 calls.
"""

from __future__ import annotations

import builtins
import inspect
import math

_installed = False
_patched: set[int] | None = None  # ids of the language modules the running kernel patched; None outside a run
_made: dict[object, list[tuple[object, str, object]]] = {}  # a patch's key -> the (object, name, value) it set


def replayed(key, patch):
    """A patch scope (Triton's ``_LangPatchScope``) holding what ``patch()`` sets: made by ``patch()`` the first time
    for ``key``, after that by setting the values it set again, in order. ``patch`` must set the same values for the
    same ``key`` (the language patches do: wrappers of the same builtins over the one interpreter builder)."""
    from triton.runtime import interpreter

    made = _made.get(key)
    if made is None:
        scope = patch()
        _made[key] = [(obj, name, vars(obj)[name]) for obj, name, _ in scope._changes]  # a name set twice: its last
        return scope
    scope = interpreter._LangPatchScope()
    for obj, name, value in made:
        scope.set_attr(obj, name, value)
    return scope


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

        def patch():
            scope = original(fn)
            scope.set_attr(core.tensor, "__index__", _scalar_index)
            return scope

        if _patched is not None:  # a device function that sees a module the kernel does not: patched for the run
            scope = patch()  # made over the run's patches: not what a launch sets, so not replayed
            _patched |= used
            return scope
        scope = replayed(("triton", used), patch)
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
    _install_typing_shortcuts(core)
    _install_cheaper_calls(core, interpreter)
    _install_cheaper_handles(core, interpreter)
    _installed = True


def _install_cheaper_types(core, interpreter) -> None:
    """Replace Triton's constructors of type values by ones that build equal values with less work, shared per
    shape."""
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

    def tensor_shape(shape: tuple) -> tuple:  # (shape, numel) of a tensor of this shape, one pair per shape
        return shape_tuple(shape), core.constexpr(math.prod(shape))

    core.dtype._iris_tensor_shape = tensor_shape(())  # a scalar type
    core.block_type._iris_tensor_shape = None  # set per block type by block_type_init

    def tensor_init(self, handle, type) -> None:  # core.tensor.__init__, its shape and numel shared per shape
        self.handle = handle
        self.type = type
        self.dtype = type.scalar
        found = getattr(type, "_iris_tensor_shape", None)
        if found is None:
            found = tensor_shape(tuple(type.shape) if type.is_block() else ())
        self.shape, self.numel = found

    def unwrap_shape(shape) -> list:  # core._unwrap_shape without building a tuple per level
        if isinstance(shape, core.constexpr):
            shape = shape.value
        if isinstance(shape, core.tuple):
            shape = shape.values
        return [s.value if isinstance(s, core.constexpr) else s for s in shape]

    blocks: dict[tuple, tuple] = {}  # shape -> (the shape as Triton's tuple of ints, elements, tensor_shape)
    block_names: dict[tuple, str] = {}

    def block_type_init(self, element_ty, shape) -> None:  # core.block_type.__init__, shared shape tuples
        self.element_ty = element_ty
        assert isinstance(shape, (list, builtins.tuple, core.tuple))
        key = builtins.tuple(unwrap_shape(shape))
        found = blocks.get(key)
        if found is None:
            if not key:
                raise TypeError("0d block_type is forbidden")
            found = blocks[key] = (core.tuple(list(key)), validate_block_shape(key), tensor_shape(key))
        self.shape, self.numel, self._iris_tensor_shape = found
        name_key = (key, str(element_ty))
        name = block_names.get(name_key)
        if name is None:
            name = block_names[name_key] = f"<{self.shape}, {element_ty}>"
        self.name = name

    interpreter._get_np_dtype = get_np_dtype
    core.tensor.__init__ = tensor_init
    core._unwrap_shape = unwrap_shape
    core.block_type.__init__ = block_type_init


def _install_typing_shortcuts(core) -> None:
    """Skip Triton's typing rules where they would leave the operands as they are (checked against Triton's own rules
    by ``tests/cpu_unit/interpreter_rules.py``)."""
    from triton.language.semantic import TritonSemantic

    broadcast = TritonSemantic.broadcast_impl_value

    splat_types: dict[tuple, tuple] = {}  # (block shape's id, scalar type) -> (block type, its IR type)

    def splattable(block, scalar) -> bool:  # a block type whose shape tuple lives as long as the process
        return (type(block) is core.block_type and block._iris_tensor_shape is not None
                and not isinstance(scalar, core.pointer_type))  # pointer types cannot be hashed

    def splat(self, value, like):  # a scalar made a block of the shape of block type ``like``, as broadcast does
        scalar = value.type
        key = (id(like.shape), scalar)  # like.shape: the tuple block_type_init keeps for the shape
        found = splat_types.get(key)
        if found is None:
            block = like.with_element_ty(scalar)
            found = splat_types[key] = (block, block.to_ir(self.builder))
        return self.tensor(self.builder.create_splat(found[1], value.handle), found[0])

    def broadcast_impl_value(self, lhs, rhs):  # the cases of one shared shape tuple, and of a scalar and a block
        left, right = lhs.type, rhs.type
        if left.is_block():
            if right.is_block():
                if left.shape is right.shape:
                    return lhs, rhs
            elif splattable(left, right):
                return lhs, splat(self, rhs, left)
        elif right.is_block() and splattable(right, left):
            return splat(self, lhs, right), rhs
        return broadcast(self, lhs, rhs)

    binary_types = TritonSemantic.binary_op_type_checking_impl
    halves = (core.float16, core.bfloat16)
    signed = (core.int8, core.int16, core.int32, core.int64)

    def number_type(tensor_type, number, div_or_mod):  # the type Triton gives a Python number next to a tensor
        if tensor_type.is_floating():
            if type(number) in (int, float) and not (div_or_mod and tensor_type in halves):
                return tensor_type
        elif (tensor_type in signed and type(number) is int
              and tensor_type.get_int_min_value() <= number <= tensor_type.get_int_max_value()):
            return tensor_type
        return None  # anything else (unsigned, bool, out of range): Triton's own rules and errors

    def unchanged(a, b, allow_a_ptr, div_or_mod) -> bool:  # two tensor types that promotion leaves as they are
        if a.is_ptr():  # (called both ways round: offset + pointer is the same case)
            return allow_a_ptr and b.is_int()  # pointer + offset
        return a == b and (a.is_int() or a.is_floating()) and not (div_or_mod and a in halves)

    def binary_op_type_checking_impl(self, lhs, rhs, allow_lhs_ptr=False, allow_rhs_ptr=False, arithmetic_check=True,
                                     div_or_mod=False):  # the common cases that promotion would leave as they are
        if isinstance(lhs, core.tensor):
            a = lhs.type.scalar
            if isinstance(rhs, core.tensor):
                b = rhs.type.scalar
                if unchanged(a, b, allow_lhs_ptr, div_or_mod) or unchanged(b, a, allow_rhs_ptr, div_or_mod):
                    return self.broadcast_impl_value(lhs, rhs)
            elif type(rhs) is int and a.is_ptr() and allow_lhs_ptr:
                return self.broadcast_impl_value(lhs, self.to_tensor(rhs))
            elif arithmetic_check and (dtype := number_type(a, rhs, div_or_mod)) is not None:
                return self.broadcast_impl_value(lhs, self.scalar_constant(rhs, dtype=dtype))
        elif isinstance(rhs, core.tensor):
            b = rhs.type.scalar
            if type(lhs) is int and b.is_ptr() and allow_rhs_ptr:
                return self.broadcast_impl_value(self.to_tensor(lhs), rhs)
            if arithmetic_check and (dtype := number_type(b, lhs, div_or_mod)) is not None:
                return self.broadcast_impl_value(self.scalar_constant(lhs, dtype=dtype), rhs)
        return binary_types(self, lhs, rhs, allow_lhs_ptr, allow_rhs_ptr, arithmetic_check, div_or_mod)

    sanitize_overflow = TritonSemantic.binary_op_sanitize_overflow_impl

    def binary_op_sanitize_overflow_impl(self, lhs, rhs, binary_op):  # its ops only feed an assert that needs debug
        if self.builder.options.debug:
            sanitize_overflow(self, lhs, rhs, binary_op)

    TritonSemantic.broadcast_impl_value = broadcast_impl_value
    TritonSemantic.binary_op_type_checking_impl = binary_op_type_checking_impl
    TritonSemantic.binary_op_sanitize_overflow_impl = binary_op_sanitize_overflow_impl


def _install_cheaper_calls(core, interpreter) -> None:
    """Call language builtins through one layer instead of three, and unwrap constants with the common case first."""
    from triton.language.semantic import TritonSemantic

    constexpr = core.constexpr
    containers = (list, builtins.tuple, core.tuple)
    unwrap_containers = core._unwrap_if_constexpr

    def unwrap_if_constexpr(o):  # core._unwrap_if_constexpr, the common cases first
        if isinstance(o, constexpr):
            return o.value
        return unwrap_containers(o) if isinstance(o, containers) else o

    def dtype_eq(self, other) -> bool:  # core.dtype.__eq__, one type compared with itself first
        if self is other:
            return True
        if isinstance(other, constexpr):
            other = other.value
        return isinstance(other, core.dtype) and self.name == other.name

    builtin_code = core.builtin(lambda: None).__code__  # the code of every @builtin wrapper

    def patch_attr(obj, name, member, builder, scope) -> None:  # interpreter._patch_attr, one call layer less
        semantic = TritonSemantic(builder)
        fn = member.__wrapped__ if getattr(member, "__code__", None) is builtin_code else member

        def call(*args, **kwargs):  # what the @builtin wrapper would check is given here
            kwargs["_semantic"] = semantic
            return fn(*args, **kwargs)

        scope.set_attr(obj, name, call)

    interpreter._patch_attr = patch_attr
    core._unwrap_if_constexpr = unwrap_if_constexpr
    core.dtype.__eq__ = dtype_eq


def _install_cheaper_handles(core, interpreter) -> None:
    """Make a tensor a tensor at once, and check a handle's data size (Triton's ``_validate_np_data_size``) without a
    call of its own."""
    from triton.language.semantic import TritonSemantic

    pointer = core.pointer_type
    handle = interpreter.TensorHandle
    tensor = TritonSemantic.tensor
    to_tensor = TritonSemantic.to_tensor

    def handle_post_init(self) -> None:  # TensorHandle.__post_init__: Triton's _validate_np_data_size, inline
        dtype = self.dtype
        if not isinstance(dtype, pointer):
            bits = dtype.primitive_bitwidth
            if self.data.itemsize * 8 > (bits if bits > 8 else 8):  # numpy holds 8 bits at least
                raise ValueError(f"numpy data itemsize ({self.data.itemsize * 8} bits) exceeds dtype "
                                 f"primitive_bitwidth ({bits} bits) for triton type {dtype}")

    def binary_op(self, lhs, rhs, op):  # InterpreterBuilder.binary_op: the result narrowed to the operand type
        output = op(lhs.data, rhs.data)
        dtype = lhs.dtype.scalar
        if not isinstance(dtype, pointer):
            bits = dtype.primitive_bitwidth
            if output.itemsize * 8 > (bits if bits > 8 else 8):
                output = output.astype(interpreter._get_np_dtype(dtype))
        return handle(output, dtype)

    def tensor_to_tensor(self, x, check_type: bool = True):  # TritonSemantic.to_tensor, a tensor first
        if type(x) is tensor:
            return x
        return to_tensor(self, x, check_type)

    cast = TritonSemantic.cast
    scalar_types = (core.dtype,)  # not pointer or block types (their subclasses)

    def int_cast(self, input, dst_ty, fp_downcast_rounding=None):  # TritonSemantic.cast, integer to integer first
        src_ty = input.type
        src, dst = src_ty.scalar, dst_ty.scalar
        if src is dst:  # the same type: Triton returns the input
            return input
        if (fp_downcast_rounding is None and type(src) in scalar_types and type(dst) in scalar_types
                and src.is_int() and dst.is_int() and not dst.is_bool()
                and (src.int_bitwidth != dst.int_bitwidth or src.int_signedness != dst.int_signedness)):
            if src_ty.is_block():
                dst_ty = src_ty.with_element_ty(dst)
            extend = src.is_int_signed() and not src.is_bool()
            return self.tensor(self.builder.create_int_cast(input.handle, dst_ty.to_ir(self.builder), extend), dst_ty)
        return cast(self, input, dst_ty, fp_downcast_rounding)

    TritonSemantic.cast = int_cast
    handle.__post_init__ = handle_post_init
    interpreter.InterpreterBuilder.binary_op = binary_op
    TritonSemantic.to_tensor = tensor_to_tensor
