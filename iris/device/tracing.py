"""Triton device tracing: ``ctx.tracing.record_event_start/end`` and ``record_event``.

Record semantics (``docs/design.md``, "Trace records"; the Gluon twin ``GluonDeviceTracing`` in
``iris/experimental/tracing.py`` is written separately and keeps them identical; the conformance suite compares
the two):

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
(``cursors[base // chunk]``): programs of kernels that run at once never share a cursor, and a record costs one load
and one store of it. It needs no barrier: thread 0 writes it and reads it back (a thread sees its own writes), and
every write a record makes is thread 0's or that of a lane of warp 0 (the record block, a word per lane). Every warp
reads the cell with ``hw.load_lane0``: lane 0 loads and the warp takes its value, so a warp's lanes always branch
alike (warp 0's on thread 0's value); other warps may see an older value and branch differently from warp 0, but
write nothing. A new chunk is claimed by thread 0 alone (``_refill``: a block atomic masked to the element thread 0
owns), so no barrier hides in a branch that only some threads take. A record branches once, to the slow path at a
chunk's end: chunks end at ``max_events`` at the latest (``chunk_cursor``), so a full buffer shows there too, and the
record's store, the cursor's advance and a range end's store are masked, not branched on. The record's eight words
(``iris.tracing.events.FIELDS`` places the fields; 32-bit fields go two to a word) are chosen in registers; the clock
is read last and the record, start timestamp included, is one block store. The words every record of a program shares
(pid, cu_id, xcc_id) are built once, at ``initialize``; the counters and the chunk are read from the context where
the refill and the drop count use them (rarely), so a program holds only what every record needs (the records, the
cursor's cell, ``max_events``, ``base``, the shared words) through the caller's loops: registers a traced tile kernel
keeps are programs an SM does not fit.

The address and size reductions run before the run-time switch is tested, not inside its branch: Triton's compiler
moves the reductions of a pointer block that does not change in a loop (a tile stored to every peer) out of the
loop, which it does not do inside a branch; the all-scatter's traced kernel then needs 117 registers a thread, not
148 (``benchmarks/bench_tile_resources.py``, sm_90), and fits the untraced kernel's 4 programs an SM. The Gluon twin
keeps them inside the branch: its compiler moves nothing out of the loop, so there they would only cost.

With ``tracing`` compiled off every method is empty; compiled on but switched off at run time
(context tracing block all zeros) it records nothing and touches no global memory (a record still computes its
address and size, and a span its own, in registers and shared memory).
"""


import triton
import triton.language as tl

from iris import context_layout_constexpr as L
from iris._aggregate import aggregate
from iris.context_layout_constexpr import SOURCE_KEY
from iris.tracing import hw
from iris.tracing.record_constexpr import MAX_THREADS, NO_ADDRESS, bits_type, element_bytes
from iris.tracing.span import TraceSpan


@triton.jit
def _linear_pid():
    grid_m = tl.num_programs(0)
    grid_mn = grid_m * tl.num_programs(1)
    return tl.program_id(0) + tl.program_id(1) * grid_m + tl.program_id(2) * grid_mn


@triton.jit
def _block_min(x):
    if len(x.shape) > 0:
        x = tl.min(x, axis=None)
    return x


@triton.jit
def _block_sum(x):
    if len(x.shape) > 0:
        x = tl.sum(x, axis=None)
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
        one = (addr * 0 + 1).to(tl.int32)  # the block's shape: a scalar mask covers every element
        count = _block_sum(tl.where(mask, one, 0))
    return lowest, count * element_bytes(address.dtype)


@triton.jit
def _fields(address, mask):
    """A record's (address, payload_size) fields: reduced from a pointer block under ``mask``, or a span's."""
    if isinstance(address, TraceSpan):
        tl.static_assert(mask is None, "a record given a span takes no mask: pass it to ctx.tracing.span")
        lowest = address.lowest
        nbytes = address.nbytes
    else:
        lowest, nbytes = _address_and_size(address, mask)
    return lowest, nbytes


@triton.jit
def _value_bits(value):
    """An int64 scalar computed from every element of ``value`` (a scalar or a block of any dtype): the largest of
    their bits. What a range that ends on an op's value reads its end clock after."""
    x = value
    if x.dtype.is_ptr():
        x = x.to(tl.int64, bitcast=False)
    elif x.dtype.primitive_bitwidth == 1:
        x = x.to(tl.int8)
    else:
        x = x.to(bits_type(x.dtype), bitcast=True)
    if len(x.shape) > 0:
        x = tl.max(x, axis=None)
    return x.to(tl.int64)


@triton.jit
def _halves(low, high):
    """Two 32-bit fields as one int64 record word: ``low`` in bits 0-31, ``high`` in bits 32-63."""
    return (tl.cast(high, tl.int64) << 32) | (tl.cast(low, tl.int64) & L.LOW_BITS)


@triton.jit
def _chunk_cursor(base, chunk, max_events):
    """The cursor of the chunk claimed at ``base``: its slots below ``max_events`` (none: next slot = end)."""
    return _halves(tl.minimum(base, max_events), tl.minimum(base + chunk, max_events))


@triton.jit
def _used_up(cursor):
    """Whether the cursor's next slot is its chunk's end (compared as the word's two 32-bit halves)."""
    return cursor.to(tl.int32) == (cursor >> 32).to(tl.int32)


@triton.jit
def _refill(counters, chunk, max_events, cursor):
    """Thread 0 claims the next chunk and points the cursor at it, with no barrier: the claim is a block atomic of
    ``MAX_THREADS`` elements (one owner each, so no result is broadcast) masked to element 0, thread 0's."""
    i = tl.arange(0, MAX_THREADS)
    first = i == 0
    zero = (i * 0).to(tl.int64)
    base = tl.atomic_add(counters + L.COUNTER_CLAIMED + zero, chunk + zero, mask=first, sem="relaxed")
    tl.store(cursor + zero, _chunk_cursor(base, chunk + zero, max_events + zero), mask=first)


@triton.jit
def _payload(payload):
    """The payload word: the caller's value, or 0 without one."""
    word = 0
    if payload is not None:
        word = payload
    return tl.cast(word, tl.int64)


@triton.jit
def _write_record(records, slot, kept, event, pids, size, program, lowest, payload, duration):
    """Read the clock and write the record at ``slot``, the start timestamp included, with one block store (a word a
    lane: lanes 0 .. RECORD_WORDS - 1 of warp 0, which hold thread 0's slot)."""
    record = records + slot * L.RECORD_WORDS
    w = tl.arange(0, L.RECORD_WORDS)
    words = tl.where(w == L.WORD_EVENT, event, program)
    words = tl.where(w == L.WORD_PIDS, pids, words)
    words = tl.where(w == L.WORD_SIZE, size, words)
    words = tl.where(w == L.WORD_ADDRESS, lowest, words)
    words = tl.where(w == L.WORD_PAYLOAD, payload, words)
    words = tl.where(w == L.WORD_DURATION, duration, words)
    start = hw.timestamp()
    words = tl.where(w == L.WORD_TIMESTAMP, start, words)
    tl.store(record + w, words, mask=kept)
    return start


@aggregate
class DeviceTracing:
    """Per-program view of the rank's trace buffers (see the module docstring for semantics)."""

    compiled: tl.constexpr  # tracing code compiled in (initialize's switch); the run-time switch is active
    active: tl.tensor
    max_events: tl.tensor
    context: tl.tensor
    records: tl.tensor
    base: tl.tensor
    cursor: tl.tensor
    program: tl.tensor  # record word WORD_PROGRAM (pid | cu_id), the same for every record of the program
    xcc: tl.tensor  # xcc_id in the high half of record word WORD_SIZE

    @triton.constexpr_function
    def __init__(self, compiled, active, max_events, context, records, base, cursor, program, xcc):
        self.compiled = tl.constexpr(compiled)
        self.active = active
        self.max_events = max_events
        self.context = context
        self.records = records
        self.base = base
        self.cursor = cursor
        self.program = program
        self.xcc = xcc

    @staticmethod
    @triton.jit
    def initialize(context_tensor, compiled: tl.constexpr = False):
        tl.static_assert(SOURCE_KEY == SOURCE_KEY, "keys the compile cache on iris's builtin sources")
        if compiled:
            active = tl.load(context_tensor + L.TRACE_ENABLED)
            max_events = tl.load(context_tensor + L.TRACE_MAX_EVENTS)
            chunk = tl.load(context_tensor + L.TRACE_CHUNK)
            counters = tl.load(context_tensor + L.TRACE_COUNTERS_PTR).to(tl.pointer_type(tl.int64))
            records = tl.load(context_tensor + L.TRACE_RECORDS_PTR).to(tl.pointer_type(tl.int64))
            cursors = tl.load(context_tensor + L.TRACE_CURSORS_PTR).to(tl.pointer_type(tl.int64))
            program = _halves(_linear_pid(), hw.cu_id())
            xcc = hw.xcc_id().to(tl.int64) << 32
            base = max_events  # no room, unless the claim below finds some
            cursor = cursors
            if active != 0:
                base = tl.atomic_add(counters + L.COUNTER_CLAIMED, chunk, sem="relaxed")
                if base < max_events:  # then base < SLOT_LIMIT: 32-bit division
                    cursor = cursors + (base.to(tl.int32) // chunk.to(tl.int32)) * L.CURSOR_WORDS
                    tl.store(cursor, _chunk_cursor(base, chunk, max_events))
        else:
            active = tl.load(context_tensor + L.CUR_RANK) * 0
            max_events = active
            records = context_tensor
            base = active
            cursor = context_tensor
            program = active
            xcc = active
        return DeviceTracing(compiled, active, max_events, context_tensor, records, base, cursor, program, xcc)

    @triton.jit
    def span(self, address, mask=None):
        """The record fields of the pointer block ``address`` under ``mask``, computed here once: pass the span as
        a record's ``address`` (with no ``mask``) to record the block without reducing it again."""
        if self.compiled:
            lowest, nbytes = _address_and_size(address, mask)
        else:  # tracing compiled off: records write nothing
            lowest = tl.program_id(0).to(tl.int64) * 0
            nbytes = tl.program_id(0) * 0
        return TraceSpan(lowest, nbytes)

    @triton.jit
    def contiguous_span(self, base, first, count):
        """The record fields of ``count`` elements in a row from ``base + first``, from these scalars alone (no
        reduction): exact where the active lanes are those elements, as under a mask ``offs < n`` (``first`` the
        block's first offset, ``count`` ``min(max(n - first, 0), BLOCK)``); no element, no address. Pass the span
        as a record's ``address`` (with no ``mask``)."""
        if self.compiled:
            lowest = tl.where(count > 0, (base + first).to(tl.int64, bitcast=False), 0)
            nbytes = count * element_bytes(base.dtype)
        else:  # tracing compiled off: records write nothing
            lowest = tl.program_id(0).to(tl.int64) * 0
            nbytes = tl.program_id(0) * 0
        return TraceSpan(lowest, nbytes)

    @triton.jit
    def _counters(self):
        """The counters, read from the context where the rare refill and drop count need them (each call a load: a
        full buffer's record loads them twice, but bound once in ``_claim`` they cost the Triton all-scatter 11
        registers a thread, ``benchmarks/bench_tile_resources.py``)."""
        return tl.load(self.context + L.TRACE_COUNTERS_PTR).to(tl.pointer_type(tl.int64))

    @triton.jit
    def _claim(self):
        """The program's next slot from its cursor, claiming a new chunk when the current one is used up (each warp
        takes the value its lane 0 reads, warp 0 thread 0's; see the module docstring); ``max_events`` or more, and
        a drop counted, when the rank's buffer is full."""
        cursor = hw.load_lane0(self.cursor)
        if _used_up(cursor):  # the chunk is used up, or the buffer full
            if (cursor >> 32) < self.max_events:
                _refill(self._counters(), tl.load(self.context + L.TRACE_CHUNK), self.max_events, self.cursor)
                cursor = hw.load_lane0(self.cursor)
            if _used_up(cursor):
                tl.atomic_add(self._counters() + L.COUNTER_DROPPED, 1, sem="relaxed")
        slot = cursor & L.LOW_BITS
        tl.store(self.cursor, cursor + 1, mask=slot < self.max_events)
        return slot

    @triton.jit
    def _record(self, event_id, target_rank, address, pid_m, pid_n, mask, payload, duration):
        slot = self.max_events * 0 - 1
        start = self.max_events * 0
        if self.compiled:
            lowest, nbytes = _fields(address, mask)
            if self.active != 0:
                slot = self.max_events
                if self.base < self.max_events:
                    slot = self._claim()
                else:
                    tl.atomic_add(self._counters() + L.COUNTER_DROPPED, 1, sem="relaxed")
                start = _write_record(self.records, slot, slot < self.max_events, _halves(event_id, target_rank),
                                      _halves(pid_m, pid_n), _halves(nbytes, 0) | self.xcc, self.program, lowest,
                                      _payload(payload), duration)
        return slot, start

    @triton.jit
    def record_event_start(self, event_id, target_rank, address, pid_m, pid_n, mask=None, payload=None):
        """Open a range; returns the handle to pass to ``record_event_end``."""
        return self._record(event_id, target_rank, address, pid_m, pid_n, mask, payload, L.DURATION_OPEN)

    @triton.jit
    def record_event_end(self, handle):
        """Close the range ``handle``: its duration becomes now - start, in clock ticks."""
        if self.compiled:
            self._close(handle, hw.timestamp())

    @triton.jit
    def _end_on(self, handle, value):
        """Close the range ``handle`` at a clock read that takes ``value`` as an input (an auto-traced op's returned
        or loaded value): the range cannot end before the op's value exists."""
        if self.compiled:
            self._close(handle, hw.timestamp_after(_value_bits(value)))

    @triton.jit
    def _close(self, handle, now):
        """Write the duration of the range ``handle``, ending at ``now``, if it claimed a slot."""
        slot = handle[0]
        tl.store(self.records + slot * L.RECORD_WORDS + L.WORD_DURATION, now - handle[1],
                 mask=(slot >= 0) & (slot < self.max_events))

    @triton.jit
    def record_event(self, event_id, target_rank, address, pid_m, pid_n, mask=None, payload=None):
        """Record an instant (an event with no duration)."""
        self._record(event_id, target_rank, address, pid_m, pid_n, mask, payload, L.DURATION_INSTANT)
