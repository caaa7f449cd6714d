"""Triton device tracing: ``ctx.tracing.record_event_start/end`` and ``record_event``.

Record semantics (the Gluon twin ``GluonDeviceTracing`` in ``iris/experimental/tracing.py`` is written
separately and keeps them identical; the conformance suite compares the two):

    slot = atomic_add(counter, 1, relaxed)          # op_index; the counter counts attempts
    if slot < max_events: write every field at row[field] + slot, else write nothing
    pid          = linear program id over the whole grid
    address      = min over active lanes of the pointer block (0 if no lane is active)
    payload_size = active lanes x element bytes (no mask: every element; scalar pointer: 1)
    duration     = end - start ticks for a range; DURATION_OPEN until ended; DURATION_INSTANT for an instant

With ``tracing`` compiled off every method is empty; compiled on but switched off at run time
(context tracing block all zeros) it records nothing and touches no memory.
"""


import triton
import triton.language as tl

from iris import layout_constexpr as L
from iris._aggregate import aggregate
from iris.layout_constexpr import SOURCE_KEY
from iris.tracing import hw
from iris.tracing.record_constexpr import NO_ADDRESS, element_bytes


@triton.jit
def _linear_pid():
    return (
        tl.program_id(0)
        + tl.program_id(1) * tl.num_programs(0)
        + tl.program_id(2) * tl.num_programs(0) * tl.num_programs(1)
    )


@triton.jit
def _block_min(x):
    for _ in tl.static_range(len(x.shape)):
        x = tl.min(x, axis=0)
    return x


@triton.jit
def _block_sum(x):
    for _ in tl.static_range(len(x.shape)):
        x = tl.sum(x, axis=0)
    return x


@triton.jit
def _address_and_size(address, mask):
    """(min active address, active elements x element bytes) of a pointer or pointer block."""
    addr = address.to(tl.int64, bitcast=False)
    if mask is None:
        lowest = _block_min(addr)
        count = address.numel
    else:
        lowest = _block_min(tl.where(mask, addr, NO_ADDRESS))
        lowest = tl.where(lowest == NO_ADDRESS, 0, lowest)
        zero = addr * 0  # int64 zeros of the block's shape (a scalar for a scalar pointer)
        count = _block_sum(tl.where(mask, zero + 1, zero))
    return lowest, count * element_bytes(address.dtype)


@triton.jit
def _store_field(records, max_events, slot, field: tl.constexpr, value, ok):
    tl.store(records + field * max_events + slot, value, mask=ok)


@aggregate
class DeviceTracing:
    """Per-kernel view of the rank's trace buffers (see the module docstring for semantics)."""

    enabled: tl.constexpr
    active: tl.tensor
    max_events: tl.tensor
    counter: tl.tensor
    records: tl.tensor
    cur_rank: tl.tensor

    @triton.constexpr_function
    def __init__(self, enabled, active, max_events, counter, records, cur_rank):
        self.enabled = tl.constexpr(enabled)
        self.active = active
        self.max_events = max_events
        self.counter = counter
        self.records = records
        self.cur_rank = cur_rank

    @staticmethod
    @triton.jit
    def initialize(context_tensor, enabled: tl.constexpr = False):
        tl.static_assert(SOURCE_KEY == SOURCE_KEY, "keys the compile cache on iris's builtin sources")
        cur_rank = tl.load(context_tensor + L.CUR_RANK)
        if enabled:
            active = tl.load(context_tensor + L.TRACE_ENABLED)
            max_events = tl.load(context_tensor + L.TRACE_MAX_EVENTS)
            counter = tl.load(context_tensor + L.TRACE_COUNTER_PTR).to(tl.pointer_type(tl.int64))
            records = tl.load(context_tensor + L.TRACE_RECORDS_PTR).to(tl.pointer_type(tl.int64))
        else:
            active = cur_rank * 0
            max_events = active
            counter = context_tensor
            records = context_tensor
        return DeviceTracing(enabled, active, max_events, counter, records, cur_rank)

    @triton.jit
    def _record(self, event_id, target_rank, address, pid_m, pid_n, mask, payload, duration):
        slot = self.cur_rank * 0 - 1
        start = self.cur_rank * 0
        if self.enabled:
            if self.active != 0:
                slot = tl.atomic_add(self.counter, 1, sem="relaxed")
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

    @triton.jit
    def record_event_start(self, event_id, target_rank, address, pid_m, pid_n, mask=None, payload=None):
        """Open a range; returns the handle to pass to ``record_event_end``."""
        return self._record(event_id, target_rank, address, pid_m, pid_n, mask, payload, L.DURATION_OPEN)

    @triton.jit
    def record_event_end(self, handle):
        """Close the range ``handle``: its duration becomes now - start, in clock ticks."""
        if self.enabled:
            now = hw.timestamp()
            slot = handle[0]
            ok = (slot >= 0) & (slot < self.max_events)
            _store_field(self.records, self.max_events, slot, L.FIELD_DURATION_CYCLES, now - handle[1], ok)

    @triton.jit
    def record_event(self, event_id, target_rank, address, pid_m, pid_n, mask=None, payload=None):
        """Record an instant (an event with no duration)."""
        self._record(event_id, target_rank, address, pid_m, pid_n, mask, payload, L.DURATION_INSTANT)
