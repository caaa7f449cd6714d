"""Run as ``python -m tests.cpu_unit.interpreter_rules`` under ``TRITON_INTERPRET=1``: apply Triton's own typing
rules to many operand pairs, and ``+ - *`` with and without ``debug`` (whose overflow check must still fire), make
every operand a tensor, make handles of numpy data of every width for every type and run the builder's binary ops on
them and cast every tensor to every type, then the same after :func:`iris.interpreter.install`, and print (as JSON)
how many calls were compared and every one whose result differs.

A result is the types, numpy dtypes and bytes of what a call returns, or the type and message of what it raises.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys

import numpy as np


def _tensor(tl, interpreter, dtype, values: np.ndarray, block: bool = True):
    """An interpreter tensor of ``dtype`` holding ``values``: a block of their shape, or a scalar (one value)."""
    handle = interpreter.TensorHandle(values.astype(interpreter._get_np_dtype(dtype)), dtype)
    return tl.tensor(handle, tl.block_type(dtype, list(values.shape)) if block else dtype)


def _operands(tl, interpreter) -> list:
    """Tensors (scalar, a block of 4, a block of 2x1) of many types, pointers included, and Python numbers."""
    types = [tl.int1, tl.int8, tl.int16, tl.int32, tl.int64, tl.uint8, tl.uint32, tl.float16, tl.bfloat16,
             tl.float32, tl.float64, tl.pointer_type(tl.int32), tl.pointer_type(tl.float16)]
    return [_tensor(tl, interpreter, dtype, (np.arange(int(np.prod(shape))) + 3).reshape(shape), shape != (1,))
            for dtype in types for shape in ((1,), (4,), (2, 1))] + [0, 3, -2, 200, 2**31, 2**40, 1.5, True]


def _describe(value) -> object:
    if isinstance(value, tuple):
        return [_describe(v) for v in value]
    if value is None:
        return None
    handle = value.handle
    return [str(value.type), type(value.type).__name__, str(handle.dtype), str(handle.data.dtype),
            list(handle.data.shape), handle.data.tobytes().hex()]


def _results(semantic, operands, constexpr) -> list:
    flags = [(False, False), (True, True), (True, False)]  # what Triton's operators pass
    out = []
    for lhs, rhs in itertools.product(operands, repeat=2):
        for (lhs_ptr, rhs_ptr), check, div in itertools.product(flags, (True, False), (False, True)):
            try:
                got = _describe(semantic.binary_op_type_checking_impl(lhs, rhs, lhs_ptr, rhs_ptr, check, div))
            except Exception as e:  # noqa: BLE001 - the error is part of the result
                got = [type(e).__name__, str(e)]
            out.append(got)
        if hasattr(lhs, "handle") and hasattr(rhs, "handle"):
            try:
                got = _describe(semantic.broadcast_impl_value(lhs, rhs))
            except Exception as e:  # noqa: BLE001
                got = [type(e).__name__, str(e)]
            out.append(got)
            out.append([lhs.type.scalar == rhs.type.scalar, lhs.type.scalar == constexpr(rhs.type.scalar)])
    return out


def _overflow_results(semantic, tl, interpreter) -> list:
    """``+ - *`` of int8/int16/int32 blocks that overflow in one lane and of ones that do not, with ``debug`` off and
    on (on: Triton's overflow check raises)."""
    builder = interpreter.interpreter_builder
    plain = builder.options
    out = []
    for dtype, big in ((tl.int8, 120), (tl.int16, 32_000), (tl.int32, 2**31 - 9)):
        for op, debug, lhs in itertools.product(("add", "sub", "mul"), (False, True), (big, 3)):
            rhs = -lhs if op == "sub" else lhs
            builder.options = dataclasses.replace(plain, debug=debug)
            try:
                got = _describe(getattr(semantic, op)(_tensor(tl, interpreter, dtype, np.array([lhs, 2])),
                                                      _tensor(tl, interpreter, dtype, np.array([rhs, 5])), True))
            except Exception as e:  # noqa: BLE001 - the error is part of the result
                got = [type(e).__name__, str(e)]
            finally:
                builder.options = plain
            out.append(got)
    return out


def _handle_results(semantic, operands, tl, interpreter) -> list:
    """``to_tensor`` of every operand (checked and not), handles of numpy data of every width for every type (too wide
    raises), and the builder's ``+`` and ``<<`` on them (a result wider than its type is narrowed to it)."""
    out = []
    for x, check in itertools.product([*operands, None, "text", tl.constexpr(5)], (True, False)):
        try:
            got = semantic.to_tensor(x, check)
            got = _describe(got) if hasattr(got, "handle") else ["returned", repr(got)]
        except Exception as e:  # noqa: BLE001 - the error is part of the result
            got = [type(e).__name__, str(e)]
        out.append(got)
    builder = interpreter.interpreter_builder
    types = [tl.int1, tl.int8, tl.int16, tl.int32, tl.int64, tl.uint8, tl.float16, tl.float32, tl.float64,
             tl.pointer_type(tl.int32)]
    for dtype, width in itertools.product(types, (np.int8, np.int16, np.int32, np.int64, np.uint64)):
        try:
            h = interpreter.TensorHandle(np.array([3, 120], dtype=width), dtype)
            got = [str(h.dtype), str(h.data.dtype)]
            for op in (builder.create_add, builder.create_shl):
                r = op(h, h)
                got.append([str(r.dtype), str(r.data.dtype), r.data.tobytes().hex()])
        except Exception as e:  # noqa: BLE001
            got = [type(e).__name__, str(e)]
        out.append(got)
    return out


def _cast_results(semantic, operands, tl) -> list:
    """``cast`` of every tensor operand to every type, pointers and bool included, with and without a rounding mode."""
    out = []
    types = [tl.int1, tl.int8, tl.int16, tl.int32, tl.int64, tl.uint8, tl.uint16, tl.uint32, tl.uint64, tl.float16,
             tl.bfloat16, tl.float32, tl.float64, tl.pointer_type(tl.int32), tl.pointer_type(tl.float16)]
    tensors = [x for x in operands if hasattr(x, "handle")]
    for x, dtype, rounding in itertools.product(tensors, types, (None, "rtne")):
        try:
            got = _describe(semantic.cast(x, dtype, rounding))
        except Exception as e:  # noqa: BLE001 - the error is part of the result
            got = [type(e).__name__, str(e)]
        out.append(got)
    return out


def _all_results(semantic, tl, interpreter) -> list:
    return (_results(semantic, _operands(tl, interpreter), tl.constexpr) + _overflow_results(semantic, tl, interpreter)
            + _handle_results(semantic, _operands(tl, interpreter), tl, interpreter)
            + _cast_results(semantic, _operands(tl, interpreter), tl))


def main() -> None:
    import triton.language as tl
    from triton.language.semantic import TritonSemantic
    from triton.runtime import interpreter

    semantic = TritonSemantic(interpreter.interpreter_builder)
    before = _all_results(semantic, tl, interpreter)
    from iris import interpreter as iris_interpreter

    iris_interpreter.install()
    after = _all_results(semantic, tl, interpreter)
    differ = [[i, b, a] for i, (b, a) in enumerate(zip(before, after, strict=True)) if b != a]
    json.dump({"compared": len(before), "differ": differ[:20], "differ_count": len(differ)}, sys.stdout)


if __name__ == "__main__":
    main()
