"""Triton ``DeviceContext``: remote load/store/get/put/copy and atomics on the symmetric heap.

A pointer into this rank's heap is translated to the same byte offset in a peer's heap using the
heap bases in the context tensor (``iris.context_layout``). The Gluon twin is ``IrisDeviceCtx`` in the file of the same
name under ``iris/experimental/`` (``iris/experimental/context.py``): same methods, order, parameters and defaults.

The ops' names, parameters, defaults, meanings and the pointers ``hint`` applies to are defined once,
in ``iris.op_contract`` (tests/cpu_unit/test_parity.py checks this class against it); the accepted
keyword values, in ``iris.op_options``; what each op records when auto-traced (``trace_ops=True``), in
``iris.op_trace``.
"""


import triton
import triton.language as tl

from iris import context_layout_constexpr as L
from iris import op_options as O
from iris._aggregate import aggregate
from iris._builtins import context_assert
from iris.device.tracing import DeviceTracing
from iris.tracing.events import TraceEvent


@aggregate
class DeviceContext:
    """This rank's view of the symmetric heap inside a Triton kernel (rank and world size: compile-time constants
    when ``initialize`` is given them, else read from the context at run time)."""

    # A tl.constexpr when initialize() was given it (one compile per value), else a tl.tensor read from the
    # context tensor at run time (one compile serves every rank).
    rank: tl.constexpr | tl.tensor
    world_size: tl.constexpr | tl.tensor
    heap_bases: tl.tensor
    tracing: DeviceTracing
    trace_ops: tl.constexpr  # every op records its own events (iris.op_trace)

    @triton.constexpr_function
    def __init__(self, rank, world_size, heap_bases, tracing, trace_ops):
        # A run-time tensor stays one; anything else (an int, unwrapped from a constexpr) becomes a constexpr again.
        self.rank = rank if isinstance(rank, tl.tensor) else tl.constexpr(rank)
        self.world_size = world_size if isinstance(world_size, tl.tensor) else tl.constexpr(world_size)
        self.heap_bases = heap_bases
        self.tracing = tracing
        self.trace_ops = tl.constexpr(trace_ops)

    @staticmethod
    @triton.jit
    def initialize(context_tensor, rank=None, world_size=None, tracing: tl.constexpr = False,
                   trace_ops: tl.constexpr = False):
        """Build the context from ``iris.get_device_context()``.

        ``tracing``: compile ``ctx.tracing`` in. ``trace_ops`` (needs ``tracing``): every op records its own events
        as ``iris.op_trace`` says; left False, the ops hold no tracing code.

        ``rank``/``world_size`` given (ints or constexprs, upstream iris's form): compile-time constants, so the
        kernel compiles once per rank and world size; they must match the context, which a device assertion
        checks in debug builds (``TRITON_DEBUG=1``) and always under the interpreter. Left out (None): read from
        the context tensor at run time, as ``IrisDeviceCtx`` does, so one compile serves every rank. Run-time
        tensors (loaded by the caller) are accepted too, and checked against the context like constants.
        """
        if rank is None:
            rank = tl.load(context_tensor + L.CUR_RANK)
        else:
            context_assert(tl.load(context_tensor + L.CUR_RANK) == rank, "DeviceContext: rank differs from the context")
        if world_size is None:
            world_size = tl.load(context_tensor + L.NUM_RANKS)
        else:
            context_assert(
                tl.load(context_tensor + L.NUM_RANKS) == world_size,
                "DeviceContext: world_size differs from the context",
            )
        tl.static_assert(tracing or not trace_ops, "DeviceContext.initialize: trace_ops=True records through "
                         "ctx.tracing; pass tracing=True too")
        device_tracing = DeviceTracing.initialize(context_tensor, tracing)
        return DeviceContext(rank, world_size, context_tensor + L.HEAP_BASES, device_tracing, trace_ops)

    @triton.jit
    def _op_start(self, event_id, peer, address, mask):
        """The range an auto-traced op opens (``iris.op_trace``); nothing when ``trace_ops`` is off."""
        if self.trace_ops:
            return self.tracing.record_event_start(event_id, peer, address, tl.program_id(0), tl.program_id(1),
                                                   mask=mask)

    @triton.jit
    def _op_end(self, handle):
        """Close an auto-traced op's range once the op is issued."""
        if self.trace_ops:
            self.tracing.record_event_end(handle)

    @triton.jit
    def _op_end_on(self, handle, value):
        """Close an auto-traced op's range on the value it returned (or loaded)."""
        if self.trace_ops:
            self.tracing._end_on(handle, value)

    @triton.jit
    def _translate(self, pointer, to_rank, hint: tl.constexpr = None):
        """``pointer`` (into this rank's heap) moved to the same offset in ``to_rank``'s heap, carrying ``hint``.

        The hint is attached here, to the op that makes the translated pointer: Triton keeps ``multiple_of``
        and ``max_contiguous`` only on an op result, not on a value passed into another jit function.
        """
        from_base = tl.load(self.heap_bases + self.rank)
        to_base = tl.load(self.heap_bases + to_rank)
        offset = pointer.to(tl.int64, bitcast=False) - from_base
        translated = (to_base.to(tl.pointer_type(tl.int8)) + offset).to(pointer.dtype, bitcast=True)
        if hint is not None:  # inline: a name bound to hint_values' tuple would hold tensors, not constexprs
            translated = tl.multiple_of(translated, O.hint_values(hint, translated))
            if len(pointer.shape) > 0:  # a scalar pointer takes the alignment only
                translated = tl.max_contiguous(translated, O.hint_values(hint, translated))
        return translated

    @triton.jit
    def load(self, pointer, from_rank, mask=None, other=None, cache_modifier: tl.constexpr = None,
             volatile: tl.constexpr = False, hint: tl.constexpr = None):
        """Values at ``pointer``'s offset in ``from_rank``'s heap."""
        h = self._op_start(TraceEvent().load, from_rank, pointer, mask)
        value = tl.load(self._translate(pointer, from_rank, hint), mask=mask, other=other,
                        cache_modifier=O.volatile_load_cache_modifier(cache_modifier, volatile), volatile=volatile)
        self._op_end_on(h, value)
        return value

    @triton.jit
    def store(self, pointer, value, to_rank, mask=None, cache_modifier: tl.constexpr = None,
              hint: tl.constexpr = None):
        """Write ``value`` at ``pointer``'s offset in ``to_rank``'s heap."""
        h = self._op_start(TraceEvent().store, to_rank, pointer, mask)
        tl.store(self._translate(pointer, to_rank, hint), value, mask=mask,
                 cache_modifier=O.store_cache_modifier(cache_modifier))
        self._op_end(h)

    @triton.jit
    def get(self, from_ptr, to_ptr, from_rank, mask=None, other=None, load_cache_modifier: tl.constexpr = None,
            store_cache_modifier: tl.constexpr = None, hint: tl.constexpr = None):
        """Copy ``from_rank``'s data at ``from_ptr``'s offset into local ``to_ptr``."""
        h = self._op_start(TraceEvent().get, from_rank, from_ptr, mask)
        data = tl.load(self._translate(from_ptr, from_rank, hint), mask=mask, other=other,
                       cache_modifier=O.load_cache_modifier(load_cache_modifier, "load_cache_modifier"))
        tl.store(to_ptr, data, mask=mask,
                 cache_modifier=O.store_cache_modifier(store_cache_modifier, "store_cache_modifier"))
        self._op_end_on(h, data)

    @triton.jit
    def put(self, from_ptr, to_ptr, to_rank, mask=None, other=None, load_cache_modifier: tl.constexpr = None,
            store_cache_modifier: tl.constexpr = None, hint: tl.constexpr = None):
        """Copy local data at ``from_ptr`` to ``to_ptr``'s offset in ``to_rank``'s heap."""
        h = self._op_start(TraceEvent().put, to_rank, to_ptr, mask)
        data = tl.load(from_ptr, mask=mask, other=other,
                       cache_modifier=O.load_cache_modifier(load_cache_modifier, "load_cache_modifier"))
        tl.store(self._translate(to_ptr, to_rank, hint), data, mask=mask,
                 cache_modifier=O.store_cache_modifier(store_cache_modifier, "store_cache_modifier"))
        self._op_end(h)

    @triton.jit
    def copy(self, src_ptr, dst_ptr, from_rank, to_rank, mask=None, other=None,
             load_cache_modifier: tl.constexpr = None, store_cache_modifier: tl.constexpr = None,
             hint: tl.constexpr = None):
        """Copy ``from_rank``'s data at ``src_ptr``'s offset to ``dst_ptr``'s offset in ``to_rank``'s heap."""
        h = self._op_start(TraceEvent().copy, from_rank, src_ptr, mask)
        data = tl.load(self._translate(src_ptr, from_rank, hint), mask=mask, other=other,
                       cache_modifier=O.load_cache_modifier(load_cache_modifier, "load_cache_modifier"))
        self._op_end_on(h, data)
        h = self._op_start(TraceEvent().copy, to_rank, dst_ptr, mask)
        tl.store(self._translate(dst_ptr, to_rank, hint), data, mask=mask,
                 cache_modifier=O.store_cache_modifier(store_cache_modifier, "store_cache_modifier"))
        self._op_end(h)

    @triton.jit
    def atomic_add(self, pointer, val, to_rank, mask=None, sem: tl.constexpr = None, scope: tl.constexpr = None,
                   hint: tl.constexpr = None):
        """Atomic add of ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_add, to_rank, pointer, mask)
        value = tl.atomic_add(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @triton.jit
    def atomic_sub(self, pointer, val, to_rank, mask=None, sem: tl.constexpr = None, scope: tl.constexpr = None,
                   hint: tl.constexpr = None):
        """Atomic subtraction of ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_sub, to_rank, pointer, mask)
        value = tl.atomic_add(self._translate(pointer, to_rank, hint), -val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @triton.jit
    def atomic_cas(self, pointer, cmp, val, to_rank, sem: tl.constexpr = None, scope: tl.constexpr = None,
                   hint: tl.constexpr = None):
        """Atomic compare-and-swap at ``pointer``'s offset in ``to_rank``'s heap (``val`` where the old value is
        ``cmp``); returns the old values."""
        h = self._op_start(TraceEvent().atomic_cas, to_rank, pointer, None)
        value = tl.atomic_cas(self._translate(pointer, to_rank, hint), cmp, val, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @triton.jit
    def atomic_xchg(self, pointer, val, to_rank, mask=None, sem: tl.constexpr = None, scope: tl.constexpr = None,
                    hint: tl.constexpr = None):
        """Atomic exchange for ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_xchg, to_rank, pointer, mask)
        value = tl.atomic_xchg(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                               scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @triton.jit
    def atomic_xor(self, pointer, val, to_rank, mask=None, sem: tl.constexpr = None, scope: tl.constexpr = None,
                   hint: tl.constexpr = None):
        """Atomic bitwise xor with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_xor, to_rank, pointer, mask)
        value = tl.atomic_xor(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @triton.jit
    def atomic_and(self, pointer, val, to_rank, mask=None, sem: tl.constexpr = None, scope: tl.constexpr = None,
                   hint: tl.constexpr = None):
        """Atomic bitwise and with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_and, to_rank, pointer, mask)
        value = tl.atomic_and(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @triton.jit
    def atomic_or(self, pointer, val, to_rank, mask=None, sem: tl.constexpr = None, scope: tl.constexpr = None,
                  hint: tl.constexpr = None):
        """Atomic bitwise or with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_or, to_rank, pointer, mask)
        value = tl.atomic_or(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                             scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @triton.jit
    def atomic_min(self, pointer, val, to_rank, mask=None, sem: tl.constexpr = None, scope: tl.constexpr = None,
                   hint: tl.constexpr = None):
        """Atomic minimum with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_min, to_rank, pointer, mask)
        value = tl.atomic_min(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value

    @triton.jit
    def atomic_max(self, pointer, val, to_rank, mask=None, sem: tl.constexpr = None, scope: tl.constexpr = None,
                   hint: tl.constexpr = None):
        """Atomic maximum with ``val`` at ``pointer``'s offset in ``to_rank``'s heap; returns the old values."""
        h = self._op_start(TraceEvent().atomic_max, to_rank, pointer, mask)
        value = tl.atomic_max(self._translate(pointer, to_rank, hint), val, mask=mask, sem=O.memory_semantic(sem),
                              scope=O.memory_scope(scope))
        self._op_end_on(h, value)
        return value
