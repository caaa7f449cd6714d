"""Kernels with a run-time trip count, for the interpreter-fix test (imported inside rank processes)."""

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
