"""Gluon device tracing: ``ctx.tracing.record_event_start/end`` and ``record_event`` in Gluon kernels.

``GluonDeviceTracing`` is the Gluon twin of the Triton ``DeviceTracing`` (``iris/device/tracing.py``):
same methods, order, parameters and record semantics, but written separately, in Gluon, on purpose, so
that the conformance suite compares two implementations. Shared with Triton, defined once: the context
layout and record words (``iris.context_layout_constexpr``), the clock/id readers (``iris.tracing.hw``), the record
constexprs (``iris.tracing.record_constexpr``) and the aggregate decorator (``iris._aggregate``).

    initialize  base = atomic_add(claimed, chunk, relaxed)            # the program's first chunk
                if base < max_events: cursor := chunk_cursor(base)     # else the program has no room
    record      if base >= max_events: dropped += 1
                else: (end, slot) = cursor
                      if slot == end:                                  # the chunk is used up, or the buffer full
                          if end < max_events: (end, slot) = chunk_cursor(atomic_add(claimed, chunk, relaxed))
                          if slot == end: dropped += 1                 # full: slot = end = max_events
                      if slot < max_events: cursor := (end, slot + 1); read the clock, write the record at slot
    chunk_cursor(b) = (min(b + chunk, max_events), min(b, max_events))  # the chunk's slots below max_events
    pid          = linear program id over the whole grid
    address      = min over active lanes of the pointer block (0 if no lane is active); given a span
                   (``span(block, mask)``, made once for many records), the span's
    payload_size = active lanes x element bytes (no mask: every element; scalar pointer: 1)
    duration     = end - start ticks for a range; DURATION_OPEN until ended; DURATION_INSTANT for an instant

The cursor is one word in global memory, (end of chunk << 32) | next slot, in the cell of the program's first chunk
(``cursors[base // chunk]``), as in the Triton twin, and needs no barrier for the same reason: thread 0 writes it and
reads it back, and every write a record makes is thread 0's or a record lane's. Every warp reads it with
``hw.load_lane0`` (lane 0 loads, the warp takes its value: a warp's lanes branch alike); other warps may see an older
value and branch differently from warp 0, but write nothing; a new chunk is claimed by thread 0 alone (``_refill``),
so no barrier hides in such a branch. A record branches once, to the slow path at a chunk's end: chunks end at
``max_events`` at the latest (``chunk_cursor``), so a full buffer shows there too, and the record's store, the
cursor's advance and a range end's store are masked, not branched on. The record is one block of ``RECORD_WORDS``
words in a layout of two words (16 bytes) a thread (``_record_layout``): lanes 0 .. RECORD_WORDS / 2 - 1 of warp 0
store it with one 16-byte store each, with warp 0's slot (thread 0's); the clock is read last, just before that
store. The words every record of a program shares (pid, cu_id, xcc_id) are built once, at ``initialize``. Reductions
run on the pointer block's own distributed layout, axis by axis (``gl.min``/``gl.sum`` over axis 0 as often as the
block has axes), so a ``BlockedLayout`` of any rank, a ``SliceLayout`` block or a scalar pointer all work, with no
mask, a mask of the block's shape or a scalar mask. Not ``axis=None`` as in the Triton twin: Gluon flattens the block
first, into a linear layout, and Triton 3.6 reduces a linear layout whose lanes repeat elements (a layout wider than
the block) over the wrong lanes: for an [8, 16] block in ``BlockedLayout([1, 4], [4, 8], [1, 1], [1, 0])`` its
shuffles cross lane offsets 1, 2, 4, 8 where the rows sit at 16, so thread 0's minimum misses rows 2-3 and 6-7 (a
gathered one-lane mask there records no address on one H200). The counters and the chunk are read from the
context where the refill and the drop count use them, as in the Triton twin. The reductions run inside the run-time
switch's branch, unlike the Triton twin's: Gluon's compiler does not move a loop-invariant reduction out of a loop,
so outside the branch they would only cost (the tile load's traced kernel: 147 registers a thread against 121
inside, sm_90, ``benchmarks/bench_tile_resources.py``). With ``tracing`` compiled off every method is empty;
compiled on but switched off at run time (context tracing block all zeros) it records nothing and touches no global
memory (a span still reduces its block when it is made, in registers and shared memory).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from iris import context_layout_constexpr as L
from iris._aggregate import aggregate
from iris.context_layout_constexpr import SOURCE_KEY
from iris.experimental.layouts import warp_size
from iris.tracing import hw
from iris.tracing.record_constexpr import MAX_THREADS, NO_ADDRESS, bits_type, element_bytes
from iris.tracing.span import TraceSpan


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
        one = (addr * 0 + 1).to(gl.int32)  # the block's shape: a scalar mask covers every element
        count = _block_sum(gl.where(mask, one, 0))
    return lowest, count * element_bytes(address.dtype)


@gluon.constexpr_function
def _thread_layout(warp_size, num_warps):
    """One element per thread, in thread order (a block longer than the CTA wraps: still one owner each)."""
    return gl.BlockedLayout([1], [warp_size], [num_warps], [0])


@gluon.constexpr_function
def _record_layout(warp_size, num_warps):
    """Two words (16 bytes) a thread, in thread order: a record is lanes 0 .. RECORD_WORDS / 2 - 1 of warp 0 (every
    other thread holds a copy, which no store writes)."""
    return gl.BlockedLayout([2], [warp_size], [num_warps], [0])


@gluon.jit
def _fields(address, mask):
    """A record's (address, payload_size) fields: reduced from a pointer block under ``mask``, or a span's."""
    if isinstance(address, TraceSpan):
        gl.static_assert(mask is None, "a record given a span takes no mask: pass it to ctx.tracing.span")
        lowest = address.lowest
        nbytes = address.nbytes
    else:
        lowest, nbytes = _address_and_size(address, mask)
    return lowest, nbytes


@gluon.jit
def _value_bits(value):
    """An int64 scalar computed from every element of ``value`` (a scalar or a block of any dtype): the largest of
    their bits. What a range that ends on an op's value reads its end clock after."""
    x = value
    if x.dtype.is_ptr():
        x = x.to(gl.int64, bitcast=False)
    elif x.dtype.primitive_bitwidth == 1:
        x = x.to(gl.int8)
    else:
        x = x.to(bits_type(x.dtype), bitcast=True)
    for _ in gl.static_range(len(x.shape)):
        x = gl.max(x, axis=0)
    return x.to(gl.int64)


@gluon.jit
def _halves(low, high):
    """Two 32-bit fields as one int64 record word: ``low`` in bits 0-31, ``high`` in bits 32-63."""
    return (gl.cast(high, gl.int64) << 32) | (gl.cast(low, gl.int64) & L.LOW_BITS)


@gluon.jit
def _chunk_cursor(base, chunk, max_events):
    """The cursor of the chunk claimed at ``base``: its slots below ``max_events`` (none: next slot = end)."""
    return _halves(gl.minimum(base, max_events), gl.minimum(base + chunk, max_events))


@gluon.jit
def _used_up(cursor):
    """Whether the cursor's next slot is its chunk's end (compared as the word's two 32-bit halves)."""
    return cursor.to(gl.int32) == (cursor >> 32).to(gl.int32)


@gluon.jit
def _refill(counters, chunk, max_events, cursor):
    """Thread 0 claims the next chunk and points the cursor at it, with no barrier: the claim is a block atomic of
    ``MAX_THREADS`` elements (one owner each, so no result is broadcast) masked to element 0, thread 0's."""
    layout: gl.constexpr = _thread_layout(warp_size(), gl.num_warps())
    i = gl.arange(0, MAX_THREADS, layout=layout)
    first = i == 0
    zero = (i * 0).to(gl.int64)
    base = gl.atomic_add(counters + L.COUNTER_CLAIMED + zero, chunk + zero, mask=first, sem="relaxed")
    gl.store(cursor + zero, _chunk_cursor(base, chunk + zero, max_events + zero), mask=first)


@gluon.jit
def _payload(payload):
    """The payload word: the caller's value, or 0 without one."""
    word = 0
    if payload is not None:
        word = payload
    return gl.cast(word, gl.int64)


@gluon.jit
def _write_record(records, slot, kept, event, pids, size, program, lowest, payload, duration):
    """Read the clock and write the record at ``slot``, the start timestamp included, with one block store (two
    words a lane, 16 bytes: lanes 0 .. RECORD_WORDS / 2 - 1 of warp 0, which hold thread 0's slot)."""
    record = records + slot * L.RECORD_WORDS
    record = gl.multiple_of(record, L.RECORD_WORDS * 8)  # records are 64-byte aligned: 16-byte stores
    layout: gl.constexpr = _record_layout(warp_size(), gl.num_warps())
    w = gl.arange(0, L.RECORD_WORDS, layout=layout)
    words = gl.where(w == L.WORD_EVENT, event, program)
    words = gl.where(w == L.WORD_PIDS, pids, words)
    words = gl.where(w == L.WORD_SIZE, size, words)
    words = gl.where(w == L.WORD_ADDRESS, lowest, words)
    words = gl.where(w == L.WORD_PAYLOAD, payload, words)
    words = gl.where(w == L.WORD_DURATION, duration, words)
    start = hw.timestamp()
    words = gl.where(w == L.WORD_TIMESTAMP, start, words)
    gl.store(record + w, words, mask=kept)
    return start


@aggregate
class GluonDeviceTracing:
    """Per-program view of the rank's trace buffers in a Gluon kernel (see the module docstring)."""

    compiled: gl.constexpr  # tracing code compiled in (initialize's switch); the run-time switch is active
    active: gl.tensor
    max_events: gl.tensor
    context: gl.tensor
    records: gl.tensor
    base: gl.tensor
    cursor: gl.tensor
    program: gl.tensor  # record word WORD_PROGRAM (pid | cu_id), the same for every record of the program
    xcc: gl.tensor  # xcc_id in the high half of record word WORD_SIZE

    @gluon.constexpr_function
    def __init__(self, compiled, active, max_events, context, records, base, cursor, program, xcc):
        self.compiled = gl.constexpr(compiled)
        self.active = active
        self.max_events = max_events
        self.context = context
        self.records = records
        self.base = base
        self.cursor = cursor
        self.program = program
        self.xcc = xcc

    @staticmethod
    @gluon.jit
    def initialize(context_tensor, compiled: gl.constexpr = False):
        gl.static_assert(SOURCE_KEY == SOURCE_KEY, "keys the compile cache on iris's builtin sources")
        if compiled:
            active = gl.load(context_tensor + L.TRACE_ENABLED)
            max_events = gl.load(context_tensor + L.TRACE_MAX_EVENTS)
            chunk = gl.load(context_tensor + L.TRACE_CHUNK)
            counters = gl.load(context_tensor + L.TRACE_COUNTERS_PTR).to(gl.pointer_type(gl.int64))
            records = gl.load(context_tensor + L.TRACE_RECORDS_PTR).to(gl.pointer_type(gl.int64))
            cursors = gl.load(context_tensor + L.TRACE_CURSORS_PTR).to(gl.pointer_type(gl.int64))
            program = _halves(_linear_pid(), hw.cu_id())
            xcc = hw.xcc_id().to(gl.int64) << 32
            base = max_events  # no room, unless the claim below finds some
            cursor = cursors
            if active != 0:
                base = gl.atomic_add(counters + L.COUNTER_CLAIMED, chunk, sem="relaxed")
                if base < max_events:  # then base < SLOT_LIMIT: 32-bit division
                    cursor = cursors + (base.to(gl.int32) // chunk.to(gl.int32)) * L.CURSOR_WORDS
                    gl.store(cursor, _chunk_cursor(base, chunk, max_events))
        else:
            active = gl.load(context_tensor + L.CUR_RANK) * 0
            max_events = active
            records = context_tensor
            base = active
            cursor = context_tensor
            program = active
            xcc = active
        return GluonDeviceTracing(compiled, active, max_events, context_tensor, records, base, cursor, program, xcc)

    @gluon.jit
    def span(self, address, mask=None):
        """The record fields of the pointer block ``address`` under ``mask``, computed here once: pass the span as
        a record's ``address`` (with no ``mask``) to record the block without reducing it again."""
        if self.compiled:
            lowest, nbytes = _address_and_size(address, mask)
        else:  # tracing compiled off: records write nothing
            lowest = gl.program_id(0).to(gl.int64) * 0
            nbytes = gl.program_id(0) * 0
        return TraceSpan(lowest, nbytes)

    @gluon.jit
    def contiguous_span(self, base, first, count):
        """The record fields of ``count`` elements in a row from ``base + first``, from these scalars alone (no
        reduction): exact where the active lanes are those elements, as under a mask ``offs < n`` (``first`` the
        block's first offset, ``count`` ``min(max(n - first, 0), BLOCK)``); no element, no address. Pass the span
        as a record's ``address`` (with no ``mask``)."""
        if self.compiled:
            lowest = gl.where(count > 0, (base + first).to(gl.int64, bitcast=False), 0)
            nbytes = count * element_bytes(base.dtype)
        else:  # tracing compiled off: records write nothing
            lowest = gl.program_id(0).to(gl.int64) * 0
            nbytes = gl.program_id(0) * 0
        return TraceSpan(lowest, nbytes)

    @gluon.jit
    def _counters(self):
        """The counters, read from the context where the rare refill and drop count need them (each call a load: a
        full buffer's record loads them twice, but bound once in ``_claim`` they cost the Triton all-scatter 11
        registers a thread, ``benchmarks/bench_tile_resources.py``)."""
        return gl.load(self.context + L.TRACE_COUNTERS_PTR).to(gl.pointer_type(gl.int64))

    @gluon.jit
    def _claim(self):
        """The program's next slot from its cursor, claiming a new chunk when the current one is used up (each warp
        takes the value its lane 0 reads, warp 0 thread 0's; see the module docstring); ``max_events`` or more, and
        a drop counted, when the rank's buffer is full."""
        cursor = hw.load_lane0(self.cursor)
        if _used_up(cursor):  # the chunk is used up, or the buffer full
            if (cursor >> 32) < self.max_events:
                _refill(self._counters(), gl.load(self.context + L.TRACE_CHUNK), self.max_events, self.cursor)
                cursor = hw.load_lane0(self.cursor)
            if _used_up(cursor):
                gl.atomic_add(self._counters() + L.COUNTER_DROPPED, 1, sem="relaxed")
        slot = cursor & L.LOW_BITS
        gl.store(self.cursor, cursor + 1, mask=slot < self.max_events)
        return slot

    @gluon.jit
    def _record(self, event_id, target_rank, address, pid_m, pid_n, mask, payload, duration):
        slot = self.max_events * 0 - 1
        start = self.max_events * 0
        if self.compiled:
            if self.active != 0:
                lowest, nbytes = _fields(address, mask)
                slot = self.max_events
                if self.base < self.max_events:
                    slot = self._claim()
                else:
                    gl.atomic_add(self._counters() + L.COUNTER_DROPPED, 1, sem="relaxed")
                start = _write_record(self.records, slot, slot < self.max_events, _halves(event_id, target_rank),
                                      _halves(pid_m, pid_n), _halves(nbytes, 0) | self.xcc, self.program, lowest,
                                      _payload(payload), duration)
        return slot, start

    @gluon.jit
    def record_event_start(self, event_id, target_rank, address, pid_m, pid_n, mask=None, payload=None):
        """Open a range; returns the handle to pass to ``record_event_end``."""
        return self._record(event_id, target_rank, address, pid_m, pid_n, mask, payload, L.DURATION_OPEN)

    @gluon.jit
    def record_event_end(self, handle):
        """Close the range ``handle``: its duration becomes now - start, in clock ticks."""
        if self.compiled:
            self._close(handle, hw.timestamp())

    @gluon.jit
    def _end_on(self, handle, value):
        """Close the range ``handle`` at a clock read that takes ``value`` as an input (an auto-traced op's returned
        or loaded value): the range cannot end before the op's value exists."""
        if self.compiled:
            self._close(handle, hw.timestamp_after(_value_bits(value)))

    @gluon.jit
    def _close(self, handle, now):
        """Write the duration of the range ``handle``, ending at ``now``, if it claimed a slot."""
        slot = handle[0]
        gl.store(self.records + slot * L.RECORD_WORDS + L.WORD_DURATION, now - handle[1],
                 mask=(slot >= 0) & (slot < self.max_events))

    @gluon.jit
    def record_event(self, event_id, target_rank, address, pid_m, pid_n, mask=None, payload=None):
        """Record an instant (an event with no duration)."""
        self._record(event_id, target_rank, address, pid_m, pid_n, mask, payload, L.DURATION_INSTANT)
