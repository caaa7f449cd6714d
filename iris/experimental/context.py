"""Gluon ``IrisDeviceCtx``: remote load/store/get/put/copy and atomics on the symmetric heap, in Gluon kernels.

The twin of the Triton ``DeviceContext`` (``iris/device/context.py``: same file name, same methods, order, parameters
and defaults, checked by reflection in tests/cpu_unit/test_parity.py); the deliberate differences are listed in
``iris.parity``. ``ctx.tracing`` is a ``GluonDeviceTracing`` (``iris/experimental/tracing.py``), the Gluon tracing
implementation, written separately from the Triton ``DeviceTracing`` and checked against it by the conformance
suite. Import it from ``iris.experimental.iris_gluon`` (or ``iris.gluon``), upstream iris's paths, or from here.

The ops' names, parameters, defaults, meanings and the pointers ``hint`` applies to are defined once,
in ``iris.op_contract``; the accepted keyword values, in ``iris.op_options``.
"""

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from iris import layout_constexpr as L
from iris import op_options as O
from iris._aggregate import aggregate
from iris.experimental.tracing import GluonDeviceTracing


@aggregate
class IrisDeviceCtx:
    """This rank's view of the symmetric heap inside a Gluon kernel (rank and world read at run time)."""

    cur_rank: gl.tensor
    num_ranks: gl.tensor
    heap_bases: gl.tensor
    tracing: GluonDeviceTracing

    @triton.constexpr_function
    def __init__(self, cur_rank, num_ranks, heap_bases, tracing):
        self.cur_rank = cur_rank
        self.num_ranks = num_ranks
        self.heap_bases = heap_bases
        self.tracing = tracing

    @staticmethod
    @gluon.jit
    def initialize(context_tensor, tracing: gl.constexpr = False):
        """Build the context from ``iris_gluon.iris(...).get_device_context()``."""
        cur_rank = gl.load(context_tensor + L.CUR_RANK)
        num_ranks = gl.load(context_tensor + L.NUM_RANKS)
        device_tracing = GluonDeviceTracing.initialize(context_tensor, tracing)
        return IrisDeviceCtx(cur_rank, num_ranks, context_tensor + L.HEAP_BASES, device_tracing)

    @gluon.jit
    def _translate(self, pointer, to_rank, hint: gl.constexpr = None):
        """``pointer`` (into this rank's heap) moved to the same offset in ``to_rank``'s heap, carrying ``hint``.

        The hint is attached here, to the op that makes the translated pointer: Gluon keeps ``multiple_of``
        and ``max_contiguous`` only on an op result, not on a value passed into another jit function.
        """
        from_base = gl.load(self.heap_bases + self.cur_rank)
        to_base = gl.load(self.heap_bases + to_rank)
        offset = pointer.to(gl.int64, bitcast=False) - from_base
        translated = (to_base.to(gl.pointer_type(gl.int8)) + offset).to(pointer.dtype, bitcast=True)
        if hint is not None:  # inline: a name bound to hint_values' tuple would hold tensors, not constexprs
            translated = gl.multiple_of(translated, O.hint_values(hint, translated))
            if len(pointer.shape) > 0:  # a scalar pointer takes the alignment only
                translated = gl.max_contiguous(translated, O.hint_values(hint, translated))
        return translated

    @gluon.jit
    def load(self, pointer, from_rank, mask=None, other=None, cache_modifier: gl.constexpr = None,
             volatile: gl.constexpr = False, hint: gl.constexpr = None):
        """Values at ``pointer``'s offset in ``from_rank``'s heap."""
        return gl.load(self._translate(pointer, from_rank, hint), mask=mask, other=other,
                       cache_modifier=O.volatile_load_cache_modifier(cache_modifier, volatile), volatile=volatile)

    @gluon.jit
    def store(self, pointer, value, to_rank, mask=None, cache_modifier: gl.constexpr = None,
              hint: gl.constexpr = None):
        """Write ``value`` at ``pointer``'s offset in ``to_rank``'s heap."""
        gl.store(self._translate(pointer, to_rank, hint), value, mask=mask,
                 cache_modifier=O.store_cache_modifier(cache_modifier))

    @gluon.jit
    def get(self, from_ptr, to_ptr, from_rank, mask=None, other=None, load_cache_modifier: gl.constexpr = None,
            store_cache_modifier: gl.constexpr = None, hint: gl.constexpr = None):
        """Copy ``from_rank``'s data at ``from_ptr``'s offset into local ``to_ptr``."""
        data = gl.load(self._translate(from_ptr, from_rank, hint), mask=mask, other=other,
                       cache_modifier=O.load_cache_modifier(load_cache_modifier, "load_cache_modifier"))
        gl.store(to_ptr, data, mask=mask,
                 cache_modifier=O.store_cache_modifier(store_cache_modifier, "store_cache_modifier"))

    @gluon.jit
    def put(self, from_ptr, to_ptr, to_rank, mask=None, other=None, load_cache_modifier: gl.constexpr = None,
            store_cache_modifier: gl.constexpr = None, hint: gl.constexpr = None):
        """Copy local data at ``from_ptr`` to ``to_ptr``'s offset in ``to_rank``'s heap."""
        data = gl.load(from_ptr, mask=mask, other=other,
                       cache_modifier=O.load_cache_modifier(load_cache_modifier, "load_cache_modifier"))
        gl.store(self._translate(to_ptr, to_rank, hint), data, mask=mask,
                 cache_modifier=O.store_cache_modifier(store_cache_modifier, "store_cache_modifier"))

    @gluon.jit
    def copy(self, src_ptr, dst_ptr, from_rank, to_rank, mask=None, other=None,
             load_cache_modifier: gl.constexpr = None, store_cache_modifier: gl.constexpr = None,
             hint: gl.constexpr = None):
        """Copy ``from_rank``'s data at ``src_ptr``'s offset to ``dst_ptr``'s offset in ``to_rank``'s heap."""
        data = gl.load(self._translate(src_ptr, from_rank, hint), mask=mask, other=other,
                       cache_modifier=O.load_cache_modifier(load_cache_modifier, "load_cache_modifier"))
        gl.store(self._translate(dst_ptr, to_rank, hint), data, mask=mask,
                 cache_modifier=O.store_cache_modifier(store_cache_modifier, "store_cache_modifier"))

    @gluon.jit
    def atomic_add(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic add of ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        return gl.atomic_add(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                             scope=O.memory_scope(scope))

    @gluon.jit
    def atomic_sub(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic subtraction of ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        return gl.atomic_add(self._translate(pointer, to_rank, hint), -val, mask=mask, sem=O.memory_semantic(sem),
                             scope=O.memory_scope(scope))

    @gluon.jit
    def atomic_cas(self, pointer, cmp, val, to_rank, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic compare-and-swap at ``pointer``'s offset in ``to_rank``'s heap (``val`` where the old value is
        ``cmp``); returns the old values."""
        return gl.atomic_cas(self._translate(pointer, to_rank, hint), cmp, val, sem=O.memory_semantic(sem),
                             scope=O.memory_scope(scope))

    @gluon.jit
    def atomic_xchg(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                    hint: gl.constexpr = None):
        """Atomic exchange for ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        return gl.atomic_xchg(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))

    @gluon.jit
    def atomic_xor(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic bitwise xor with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        return gl.atomic_xor(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                             scope=O.memory_scope(scope))

    @gluon.jit
    def atomic_and(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic bitwise and with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        return gl.atomic_and(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                             scope=O.memory_scope(scope))

    @gluon.jit
    def atomic_or(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                  hint: gl.constexpr = None):
        """Atomic bitwise or with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        return gl.atomic_or(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                            scope=O.memory_scope(scope))

    @gluon.jit
    def atomic_min(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic minimum with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        return gl.atomic_min(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                             scope=O.memory_scope(scope))

    @gluon.jit
    def atomic_max(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic maximum with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        return gl.atomic_max(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                             scope=O.memory_scope(scope))
