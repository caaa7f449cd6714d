"""Gluon ``IrisDeviceCtx``: remote load/store/get/put/copy and atomics on the symmetric heap, in Gluon kernels.

The twin of the Triton ``DeviceContext`` (``iris/device/context.py``: same file name, same methods, order, parameters
and defaults, checked by reflection in tests/cpu_unit/test_parity.py); the deliberate differences are listed in
``iris.parity``. ``ctx.tracing`` is a ``GluonDeviceTracing`` (``iris/experimental/tracing.py``), the Gluon tracing
implementation, written separately from the Triton ``DeviceTracing`` and checked against it by the conformance
suite. Import it from ``iris.experimental.iris_gluon`` (or ``iris.gluon``), upstream iris's paths, or from here.

The ops' names, parameters, defaults, meanings and the pointers ``hint`` applies to are defined once,
in ``iris.op_contract``; the accepted keyword values, in ``iris.op_options``; what each op records when
auto-traced (``trace_ops=True``), in ``iris.op_trace``.
"""

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from iris import context_layout_constexpr as L
from iris import op_options as O
from iris._aggregate import aggregate
from iris.experimental.tracing import GluonDeviceTracing
from iris.tracing.events import TraceEvent


@aggregate
class IrisDeviceCtx:
    """This rank's view of the symmetric heap inside a Gluon kernel (rank and world read at run time)."""

    cur_rank: gl.tensor
    num_ranks: gl.tensor
    heap_bases: gl.tensor
    tracing: GluonDeviceTracing
    trace_ops: gl.constexpr  # every op records its own events (iris.op_trace)

    @triton.constexpr_function
    def __init__(self, cur_rank, num_ranks, heap_bases, tracing, trace_ops):
        self.cur_rank = cur_rank
        self.num_ranks = num_ranks
        self.heap_bases = heap_bases
        self.tracing = tracing
        self.trace_ops = gl.constexpr(trace_ops)

    @staticmethod
    @gluon.jit
    def initialize(context_tensor, tracing: gl.constexpr = False, trace_ops: gl.constexpr = False):
        """Build the context from ``iris_gluon.iris(...).get_device_context()``.

        ``tracing``: compile ``ctx.tracing`` in. ``trace_ops`` (needs ``tracing``): every op records its own events
        as ``iris.op_trace`` says; left False, the ops hold no tracing code.
        """
        cur_rank = gl.load(context_tensor + L.CUR_RANK)
        num_ranks = gl.load(context_tensor + L.NUM_RANKS)
        gl.static_assert(tracing or not trace_ops, "IrisDeviceCtx.initialize: trace_ops=True records through "
                         "ctx.tracing; pass tracing=True too")
        device_tracing = GluonDeviceTracing.initialize(context_tensor, tracing)
        return IrisDeviceCtx(cur_rank, num_ranks, context_tensor + L.HEAP_BASES, device_tracing, trace_ops)

    @gluon.jit
    def _op_start(self, event_id, peer, address, mask):
        """The range an auto-traced op opens (``iris.op_trace``); nothing when ``trace_ops`` is off."""
        if self.trace_ops:
            return self.tracing.record_event_start(event_id, peer, address, gl.program_id(0), gl.program_id(1),
                                                   mask=mask)

    @gluon.jit
    def _op_end(self, handle):
        """Close an auto-traced op's range once the op is issued."""
        if self.trace_ops:
            self.tracing.record_event_end(handle)

    @gluon.jit
    def _op_end_on(self, handle, value):
        """Close an auto-traced op's range on the value it returned (or loaded)."""
        if self.trace_ops:
            self.tracing._end_on(handle, value)

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
        h = self._op_start(TraceEvent().load, from_rank, pointer, mask)
        value = gl.load(self._translate(pointer, from_rank, hint), mask=mask, other=other,
                        cache_modifier=O.volatile_load_cache_modifier(cache_modifier, volatile), volatile=volatile)
        self._op_end_on(h, value)
        return value

    @gluon.jit
    def store(self, pointer, value, to_rank, mask=None, cache_modifier: gl.constexpr = None,
              hint: gl.constexpr = None):
        """Write ``value`` at ``pointer``'s offset in ``to_rank``'s heap."""
        h = self._op_start(TraceEvent().store, to_rank, pointer, mask)
        gl.store(self._translate(pointer, to_rank, hint), value, mask=mask,
                 cache_modifier=O.store_cache_modifier(cache_modifier))
        self._op_end(h)

    @gluon.jit
    def get(self, from_ptr, to_ptr, from_rank, mask=None, other=None, load_cache_modifier: gl.constexpr = None,
            store_cache_modifier: gl.constexpr = None, hint: gl.constexpr = None):
        """Copy ``from_rank``'s data at ``from_ptr``'s offset into local ``to_ptr``."""
        h = self._op_start(TraceEvent().get, from_rank, from_ptr, mask)
        data = gl.load(self._translate(from_ptr, from_rank, hint), mask=mask, other=other,
                       cache_modifier=O.load_cache_modifier(load_cache_modifier, "load_cache_modifier"))
        gl.store(to_ptr, data, mask=mask,
                 cache_modifier=O.store_cache_modifier(store_cache_modifier, "store_cache_modifier"))
        self._op_end_on(h, data)

    @gluon.jit
    def put(self, from_ptr, to_ptr, to_rank, mask=None, other=None, load_cache_modifier: gl.constexpr = None,
            store_cache_modifier: gl.constexpr = None, hint: gl.constexpr = None):
        """Copy local data at ``from_ptr`` to ``to_ptr``'s offset in ``to_rank``'s heap."""
        h = self._op_start(TraceEvent().put, to_rank, to_ptr, mask)
        data = gl.load(from_ptr, mask=mask, other=other,
                       cache_modifier=O.load_cache_modifier(load_cache_modifier, "load_cache_modifier"))
        gl.store(self._translate(to_ptr, to_rank, hint), data, mask=mask,
                 cache_modifier=O.store_cache_modifier(store_cache_modifier, "store_cache_modifier"))
        self._op_end(h)

    @gluon.jit
    def copy(self, src_ptr, dst_ptr, from_rank, to_rank, mask=None, other=None,
             load_cache_modifier: gl.constexpr = None, store_cache_modifier: gl.constexpr = None,
             hint: gl.constexpr = None):
        """Copy ``from_rank``'s data at ``src_ptr``'s offset to ``dst_ptr``'s offset in ``to_rank``'s heap."""
        h = self._op_start(TraceEvent().copy, from_rank, src_ptr, mask)
        data = gl.load(self._translate(src_ptr, from_rank, hint), mask=mask, other=other,
                       cache_modifier=O.load_cache_modifier(load_cache_modifier, "load_cache_modifier"))
        self._op_end_on(h, data)
        h = self._op_start(TraceEvent().copy, to_rank, dst_ptr, mask)
        gl.store(self._translate(dst_ptr, to_rank, hint), data, mask=mask,
                 cache_modifier=O.store_cache_modifier(store_cache_modifier, "store_cache_modifier"))
        self._op_end(h)

    @gluon.jit
    def atomic_add(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic add of ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_add, to_rank, pointer, mask)
        value = gl.atomic_add(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @gluon.jit
    def atomic_sub(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic subtraction of ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_sub, to_rank, pointer, mask)
        value = gl.atomic_add(self._translate(pointer, to_rank, hint), -val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @gluon.jit
    def atomic_cas(self, pointer, cmp, val, to_rank, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic compare-and-swap at ``pointer``'s offset in ``to_rank``'s heap (``val`` where the old value is
        ``cmp``); returns the old values."""
        h = self._op_start(TraceEvent().atomic_cas, to_rank, pointer, None)
        value = gl.atomic_cas(self._translate(pointer, to_rank, hint), cmp, val, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @gluon.jit
    def atomic_xchg(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                    hint: gl.constexpr = None):
        """Atomic exchange for ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_xchg, to_rank, pointer, mask)
        value = gl.atomic_xchg(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                               scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @gluon.jit
    def atomic_xor(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic bitwise xor with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_xor, to_rank, pointer, mask)
        value = gl.atomic_xor(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @gluon.jit
    def atomic_and(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic bitwise and with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_and, to_rank, pointer, mask)
        value = gl.atomic_and(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @gluon.jit
    def atomic_or(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                  hint: gl.constexpr = None):
        """Atomic bitwise or with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_or, to_rank, pointer, mask)
        value = gl.atomic_or(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                             scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @gluon.jit
    def atomic_min(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic minimum with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_min, to_rank, pointer, mask)
        value = gl.atomic_min(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @gluon.jit
    def atomic_max(self, pointer, val, to_rank, mask=None, sem: gl.constexpr = None, scope: gl.constexpr = None,
                   hint: gl.constexpr = None):
        """Atomic maximum with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_max, to_rank, pointer, mask)
        value = gl.atomic_max(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value
