"""Gluon device tracing: ``ctx.tracing.record_event_start/end`` and ``record_event`` in Gluon kernels.

``GluonDeviceTracing`` is the Gluon twin of the Triton ``DeviceTracing`` (``iris/tracing/device.py``):
same methods, order, parameters and record semantics, but written separately, in Gluon, on purpose, so
that the conformance suite compares two implementations. Shared with Triton, defined once: the context
layout and field rows (``iris.layout_constexpr``), the clock/id readers (``iris.tracing.hw``) and the
record constexprs (``iris.tracing.record_constexpr``).

    slot = atomic_add(counter, 1, relaxed)          # op_index; the counter counts attempts
    if slot < max_events: write every field at row[field] + slot, else write nothing
    pid          = linear program id over the whole grid
    address      = min over active lanes of the pointer block (0 if no lane is active)
    payload_size = active lanes x element bytes (no mask: every element; scalar pointer: 1)
    duration     = end - start ticks for a range; DURATION_OPEN until ended; DURATION_INSTANT for an instant

Reductions run on the pointer block's own distributed layout: each ``gl.min``/``gl.sum`` over axis 0
yields the ``SliceLayout`` of its input, until a scalar is left, so a ``BlockedLayout`` of any rank, a
``SliceLayout`` block or a scalar pointer all work, with no mask, a mask of the block's shape or a scalar mask.
With ``tracing`` compiled off every method is empty; compiled on but switched off at run time
(context tracing block all zeros) it records nothing and touches no memory.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from iris import layout_constexpr as L
from iris._aggregate import aggregate
from iris.layout_constexpr import SOURCE_KEY
from iris.tracing import hw
from iris.tracing.record_constexpr import NO_ADDRESS, element_bytes


@gluon.jit
def _linear_pid():
    grid_m = gl.num_programs(0)
    grid_mn = grid_m * gl.num_programs(1)
    return gl.program_id(0) + gl.program_id(1) * grid_m + gl.program_id(2) * grid_mn


@gluon.jit
def _block_min(x):
    for _ in gl.static_range(len(x.shape)):
        x = gl.min(x, axis=0)
    return x


@gluon.jit
def _block_sum(x):
    for _ in gl.static_range(len(x.shape)):
        x = gl.sum(x, axis=0)
    return x


@gluon.jit
def _address_and_size(address, mask):
    """(min active address, active elements x element bytes) of a pointer or pointer block, in its layout."""
    addr = address.to(gl.int64, bitcast=False)
    if mask is None:
        lowest = _block_min(addr)
        count = address.numel
    else:
        lowest = _block_min(gl.where(mask, addr, NO_ADDRESS))
        lowest = gl.where(lowest == NO_ADDRESS, 0, lowest)
        zero = addr * 0  # int64 zeros in the block's layout (a scalar for a scalar pointer)
        count = _block_sum(gl.where(mask, zero + 1, zero))
    return lowest, count * element_bytes(address.dtype)


@gluon.jit
def _store_field(records, max_events, slot, field: gl.constexpr, value, ok):
    gl.store(records + field * max_events + slot, value, mask=ok)


@aggregate
class GluonDeviceTracing:
    """Per-kernel view of the rank's trace buffers in a Gluon kernel (see the module docstring)."""

    enabled: gl.constexpr
    active: gl.tensor
    max_events: gl.tensor
    counter: gl.tensor
    records: gl.tensor
    cur_rank: gl.tensor

    @gluon.constexpr_function
    def __init__(self, enabled, active, max_events, counter, records, cur_rank):
        self.enabled = gl.constexpr(enabled)
        self.active = active
        self.max_events = max_events
        self.counter = counter
        self.records = records
        self.cur_rank = cur_rank

    @staticmethod
    @gluon.jit
    def initialize(context_tensor, enabled: gl.constexpr = False):
        gl.static_assert(SOURCE_KEY == SOURCE_KEY, "keys the compile cache on iris's builtin sources")
        cur_rank = gl.load(context_tensor + L.CUR_RANK)
        if enabled:
            active = gl.load(context_tensor + L.TRACE_ENABLED)
            max_events = gl.load(context_tensor + L.TRACE_MAX_EVENTS)
            counter = gl.load(context_tensor + L.TRACE_COUNTER_PTR).to(gl.pointer_type(gl.int64))
            records = gl.load(context_tensor + L.TRACE_RECORDS_PTR).to(gl.pointer_type(gl.int64))
        else:
            active = cur_rank * 0
            max_events = active
            counter = context_tensor
            records = context_tensor
        return GluonDeviceTracing(enabled, active, max_events, counter, records, cur_rank)

    @gluon.jit
    def _record(self, event_id, target_rank, address, pid_m, pid_n, mask, payload, duration):
        slot = self.cur_rank * 0 - 1
        start = self.cur_rank * 0
        if self.enabled:
            if self.active != 0:
                slot = gl.atomic_add(self.counter, 1, sem="relaxed")
                ok = slot < self.max_events
                lowest, nbytes = _address_and_size(address, mask)
                r = self.records
                n = self.max_events
                _store_field(r, n, slot, L.FIELD_EVENT_ID, event_id, ok)
                _store_field(r, n, slot, L.FIELD_PID, _linear_pid(), ok)
                _store_field(r, n, slot, L.FIELD_PID_M, pid_m, ok)
                _store_field(r, n, slot, L.FIELD_PID_N, pid_n, ok)
                _store_field(r, n, slot, L.FIELD_CUR_RANK, self.cur_rank, ok)
                _store_field(r, n, slot, L.FIELD_TARGET_RANK, target_rank, ok)
                _store_field(r, n, slot, L.FIELD_XCC_ID, hw.xcc_id(), ok)
                _store_field(r, n, slot, L.FIELD_CU_ID, hw.cu_id(), ok)
                _store_field(r, n, slot, L.FIELD_ADDRESS, lowest, ok)
                _store_field(r, n, slot, L.FIELD_DURATION_CYCLES, duration, ok)
                _store_field(r, n, slot, L.FIELD_OP_INDEX, slot, ok)
                _store_field(r, n, slot, L.FIELD_PAYLOAD_SIZE, nbytes, ok)
                if payload is None:
                    _store_field(r, n, slot, L.FIELD_PAYLOAD, 0, ok)
                else:
                    _store_field(r, n, slot, L.FIELD_PAYLOAD, payload, ok)
                start = hw.timestamp()
                _store_field(r, n, slot, L.FIELD_TIMESTAMP, start, ok)
        return slot, start

    @gluon.jit
    def record_event_start(self, event_id, target_rank, address, pid_m, pid_n, mask=None, payload=None):
        """Open a range; returns the handle to pass to ``record_event_end``."""
        return self._record(event_id, target_rank, address, pid_m, pid_n, mask, payload, L.DURATION_OPEN)

    @gluon.jit
    def record_event_end(self, handle):
        """Close the range ``handle``: its duration becomes now - start, in clock ticks."""
        if self.enabled:
            now = hw.timestamp()
            slot = handle[0]
            ok = (slot >= 0) & (slot < self.max_events)
            _store_field(self.records, self.max_events, slot, L.FIELD_DURATION_CYCLES, now - handle[1], ok)

    @gluon.jit
    def record_event(self, event_id, target_rank, address, pid_m, pid_n, mask=None, payload=None):
        """Record an instant (an event with no duration)."""
        self._record(event_id, target_rank, address, pid_m, pid_n, mask, payload, L.DURATION_INSTANT)
