"""Kernels for the interpreter-fix tests: run-time trip counts, and binary ops on two tensors of one type (imported
inside rank processes)."""

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@triton.jit
def triton_sum_to(out, n):
    total = tl.zeros((), dtype=tl.int64)
    for i in range(n):
        total += i
    tl.store(out, total)


@gluon.jit
def gluon_sum_to(out, n):
    total = n * 0
    for i in range(n):
        total += i
    gl.store(out, total.to(gl.int64))


@triton.jit
def triton_same_type_ops(h1, h2, b1, b2, i1, i2, out_div, out_add, out_mod, out_int, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(h1 + offs)
    y = tl.load(h2 + offs)
    tl.store(out_div + offs, x / y)  # fp16 / fp16: computed in fp32
    tl.store(out_add + offs, x + y)  # fp16 + fp16: computed in fp16
    tl.store(out_mod + offs, tl.load(b1 + offs) % tl.load(b2 + offs))  # bf16 % bf16: computed in fp32
    tl.store(out_int + offs, tl.load(i1 + offs) + tl.load(i2 + offs))  # int8 + int8: wraps in int8
