"""Gluon device tracing: ``ctx.tracing.record_event_start/end`` and ``record_event`` in Gluon kernels.

``GluonDeviceTracing`` is the Gluon twin of the Triton ``DeviceTracing`` (``iris/tracing/device.py``):
same methods, order, parameters and record semantics, but written separately, in Gluon, on purpose, so
that the conformance suite compares two implementations. Shared with Triton, defined once: the context
layout, record words and counters (``iris.layout_constexpr``), the clock/id readers (``iris.tracing.hw``)
and the record constexprs (``iris.tracing.record_constexpr``).

    initialize  base = atomic_add(claimed, chunk, relaxed)            # the program's first chunk
                if base < max_events: cursor := (base, base + chunk)   # else the program has no room
    record      if base >= max_events: dropped += 1
                else: (slot, end) = cursor
                      if slot == end: slot = atomic_add(claimed, chunk, relaxed); end = slot + chunk
                      cursor := (slot + 1, end)
                      if slot < max_events: write the record at slot, then its timestamp
                      else: dropped += 1
    pid          = linear program id over the whole grid
    address      = min over active lanes of the pointer block (0 if no lane is active)
    payload_size = active lanes x element bytes (no mask: every element; scalar pointer: 1)
    duration     = end - start ticks for a range; DURATION_OPEN until ended; DURATION_INSTANT for an instant

The cursor is a cell in global memory, the one of the program's first chunk (``cursors[base // chunk]``), as in
the Triton twin, and needs no barrier for the same reason: thread 0 writes it and reads it back, and every write
a record makes is thread 0's or that of a lane of warp 0 (the record block, one word per lane), lanes that take
thread 0's slot (``hw.lane0``). Other warps may see an older value and branch differently,
but write nothing; a new chunk is claimed by thread 0 alone (``_refill``), so no barrier hides in such a branch.
The record, its timestamp (read just before) included, is one 16-word block store.
The words every record of a program shares (pid, cur_rank, xcc_id, cu_id) are built once, at ``initialize``.
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
from iris.experimental.layouts import warp_size
from iris.layout_constexpr import SOURCE_KEY
from iris.tracing import hw
from iris.tracing.record_constexpr import MAX_THREADS, NO_ADDRESS, element_bytes


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


@gluon.constexpr_function
def _thread_layout(warp_size, num_warps):
    """One element per thread, in thread order (a block longer than the CTA wraps: still one owner each)."""
    return gl.BlockedLayout([1], [warp_size], [num_warps], [0])


@gluon.jit
def _record_index():
    """Word numbers 0 .. RECORD_WORDS - 1 of a record block, a word per thread."""
    layout: gl.constexpr = _thread_layout(warp_size(), gl.num_warps())
    w = gl.arange(0, L.RECORD_WORDS, layout=layout)
    return w


@gluon.jit
def _program_words(cur_rank):
    """The words every record of this program shares (pid, cur_rank, xcc_id, cu_id), the rest 0: built once, at
    ``initialize``, so that a record reads no program id nor chip register."""
    w = _record_index()
    words = (w * 0).to(gl.int64)
    words = gl.where(w == L.FIELD_PID, _linear_pid(), words)
    words = gl.where(w == L.FIELD_CUR_RANK, cur_rank, words)
    words = gl.where(w == L.FIELD_XCC_ID, hw.xcc_id(), words)
    words = gl.where(w == L.FIELD_CU_ID, hw.cu_id(), words)
    return words


@gluon.jit
def _record_words(program, event_id, pid_m, pid_n, target_rank, lowest, duration, slot, start, nbytes, payload):
    """Every word of a record, as one block: the program's words, then this event's. The fields that are often
    the same at one call site come first, so the compiler can hoist them out of a loop; the slot and the
    timestamp, known last, come last."""
    w = _record_index()
    words = gl.where(w == L.FIELD_EVENT_ID, event_id, program)
    words = gl.where(w == L.FIELD_DURATION_CYCLES, duration, words)
    words = gl.where(w == L.FIELD_PAYLOAD_SIZE, nbytes, words)
    words = gl.where(w == L.FIELD_TARGET_RANK, target_rank, words)
    words = gl.where(w == L.FIELD_PID_M, pid_m, words)
    words = gl.where(w == L.FIELD_PID_N, pid_n, words)
    words = gl.where(w == L.FIELD_ADDRESS, lowest, words)
    if payload is not None:
        words = gl.where(w == L.FIELD_PAYLOAD, payload, words)
    words = gl.where(w == L.FIELD_OP_INDEX, slot, words)
    words = gl.where(w == L.FIELD_TIMESTAMP, start, words)
    return w, words


@gluon.jit
def _refill(counters, chunk, cursor):
    """Thread 0 claims the next chunk and points the cursor at it, with no barrier: the claim is a block atomic of
    ``MAX_THREADS`` elements (one owner each, so no result is broadcast) masked to element 0, thread 0's."""
    layout: gl.constexpr = _thread_layout(warp_size(), gl.num_warps())
    i = gl.arange(0, MAX_THREADS, layout=layout)
    first = i == 0
    zero = i * 0
    base = gl.atomic_add(counters + L.COUNTER_CLAIMED + zero, chunk + zero, mask=first, sem="relaxed")
    gl.store(cursor + zero, base, mask=first)
    gl.store(cursor + 1 + zero, base + chunk, mask=first)


@aggregate
class GluonDeviceTracing:
    """Per-program view of the rank's trace buffers in a Gluon kernel (see the module docstring)."""

    enabled: gl.constexpr
    active: gl.tensor
    max_events: gl.tensor
    chunk: gl.tensor
    counters: gl.tensor
    records: gl.tensor
    base: gl.tensor
    cursor: gl.tensor
    cur_rank: gl.tensor
    program: gl.tensor  # the words every record of the program shares (_program_words)

    @gluon.constexpr_function
    def __init__(self, enabled, active, max_events, chunk, counters, records, base, cursor, cur_rank, program):
        self.enabled = gl.constexpr(enabled)
        self.active = active
        self.max_events = max_events
        self.chunk = chunk
        self.counters = counters
        self.records = records
        self.base = base
        self.cursor = cursor
        self.cur_rank = cur_rank
        self.program = program

    @staticmethod
    @gluon.jit
    def initialize(context_tensor, enabled: gl.constexpr = False):
        gl.static_assert(SOURCE_KEY == SOURCE_KEY, "keys the compile cache on iris's builtin sources")
        cur_rank = gl.load(context_tensor + L.CUR_RANK)
        if enabled:
            active = gl.load(context_tensor + L.TRACE_ENABLED)
            max_events = gl.load(context_tensor + L.TRACE_MAX_EVENTS)
            chunk = gl.load(context_tensor + L.TRACE_CHUNK)
            counters = gl.load(context_tensor + L.TRACE_COUNTERS_PTR).to(gl.pointer_type(gl.int64))
            records = gl.load(context_tensor + L.TRACE_RECORDS_PTR).to(gl.pointer_type(gl.int64))
            cursors = gl.load(context_tensor + L.TRACE_CURSORS_PTR).to(gl.pointer_type(gl.int64))
            base = max_events  # no room, unless the claim below finds some
            program = _program_words(cur_rank)
            cursor = cursors
            if active != 0:
                base = gl.atomic_add(counters + L.COUNTER_CLAIMED, chunk, sem="relaxed")
                if base < max_events:
                    cursor = cursors + (base // chunk) * L.CURSOR_WORDS
                    gl.store(cursor, base)
                    gl.store(cursor + 1, base + chunk)
        else:
            active = cur_rank * 0
            max_events = active
            chunk = active
            counters = context_tensor
            records = context_tensor
            base = active
            program = active
            cursor = context_tensor
        return GluonDeviceTracing(enabled, active, max_events, chunk, counters, records, base, cursor, cur_rank,
                                  program)

    @gluon.jit
    def _claim(self):
        """The program's next slot from its cursor, claiming a new chunk when the current one is used up (the
        values are thread 0's and warp 0's; see the module docstring)."""
        slot = gl.load(self.cursor)
        end = gl.load(self.cursor + 1)
        if slot == end:
            _refill(self.counters, self.chunk, self.cursor)
            slot = gl.load(self.cursor)
        gl.store(self.cursor, slot + 1)
        return hw.lane0(slot)  # thread 0's slot, for every lane of warp 0 (the lanes of the record block)

    @gluon.jit
    def _record(self, event_id, target_rank, address, pid_m, pid_n, mask, payload, duration):
        slot = self.cur_rank * 0 - 1
        start = self.cur_rank * 0
        if self.enabled:
            if self.active != 0:
                lowest, nbytes = _address_and_size(address, mask)
                slot = self.max_events
                if self.base < self.max_events:
                    slot = self._claim()
                if slot < self.max_events:
                    start = hw.timestamp()
                    w, words = _record_words(self.program, event_id, pid_m, pid_n, target_rank, lowest, duration, slot,
                                             start, nbytes, payload)
                    gl.store(self.records + slot * L.RECORD_WORDS + w, words)
                else:
                    gl.atomic_add(self.counters + L.COUNTER_DROPPED, 1, sem="relaxed")
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
            if (slot >= 0) & (slot < self.max_events):
                gl.store(self.records + slot * L.RECORD_WORDS + L.FIELD_DURATION_CYCLES, now - handle[1])

    @gluon.jit
    def record_event(self, event_id, target_rank, address, pid_m, pid_n, mask=None, payload=None):
        """Record an instant (an event with no duration)."""
        self._record(event_id, target_rank, address, pid_m, pid_n, mask, payload, L.DURATION_INSTANT)
