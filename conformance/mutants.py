"""The mutant catalogue of ``python -m conformance mutate``: one small, exact source change per entry.

Each ``Mutant`` replaces ``old`` (which must occur exactly once in ``file``) by ``new``, in a temporary copy of
the package, and says what it breaks. ``killers`` names the scenarios most likely to kill it; they run first
(``"scenario"``: every world size it supports, 2 ranks first; ``"scenario@R"``: only R ranks), then every other
case if none of them killed it. A mutant whose ``old`` text no longer matches is reported as stale.

Adding a mutant is adding one entry below. The Gluon tracing (``GLUON_TRACING``) gets the twin of every Triton
tracing entry once it exists: ``gluon-trace-<...>`` for ``triton-trace-<...>`` (tests/conformance/test_mutate.py
then requires one per trace field).
"""

from __future__ import annotations

from dataclasses import dataclass

TRITON_TRACING = "iris/tracing/device.py"
GLUON_TRACING = "iris/experimental/tracing.py"
TRITON_OPS = "iris/device/context.py"
GLUON_OPS = "iris/experimental/iris_gluon.py"
DECODER = "iris/tracing/records.py"
LAYOUT = "iris/layout.py"


@dataclass(frozen=True)
class Mutant:
    """One source change: ``old`` -> ``new`` in ``file`` (repository-relative), breaking what ``breaks`` says."""

    name: str
    file: str
    old: str
    new: str
    breaks: str
    killers: tuple[str, ...] = ()


def _m(name, file, old, new, breaks, *killers) -> Mutant:
    return Mutant(name, file, old, new, breaks, tuple(killers))


CATALOGUE: tuple[Mutant, ...] = (
    # ---- Triton tracing: one per logical trace field and op_index, then the record rules
    _m("triton-trace-event_id", TRITON_TRACING,
       "L.FIELD_EVENT_ID, event_id, ok)", "L.FIELD_EVENT_ID, event_id + 1, ok)",
       "event_id: records the next event's id", "store@1"),
    _m("triton-trace-pid", TRITON_TRACING,
       "+ tl.program_id(1) * tl.num_programs(0)", "+ tl.program_id(1) * tl.num_programs(1)",
       "pid: linear program id uses the wrong stride for grid axis 1 (shows on non-square grids)",
       "tile_2d", "all_scatter"),
    _m("triton-trace-pid-axis0", TRITON_TRACING,
       "L.FIELD_PID, _linear_pid(), ok)", "L.FIELD_PID, tl.program_id(0), ok)",
       "pid: records grid axis 0 only instead of the linear program id", "tile_2d", "all_scatter"),
    _m("triton-trace-pid_m", TRITON_TRACING,
       "L.FIELD_PID_M, pid_m, ok)", "L.FIELD_PID_M, pid_n, ok)",
       "pid_m: records the caller's pid_n", "tile_2d@1", "overflow@1"),
    _m("triton-trace-pid_n", TRITON_TRACING,
       "L.FIELD_PID_N, pid_n, ok)", "L.FIELD_PID_N, pid_m, ok)",
       "pid_n: records the caller's pid_m", "tile_2d@1", "overflow@1"),
    _m("triton-trace-cur_rank", TRITON_TRACING,
       "L.FIELD_CUR_RANK, self.cur_rank, ok)", "L.FIELD_CUR_RANK, target_rank, ok)",
       "cur_rank: records the target rank instead of the context's rank", "store@2", "get@2"),
    _m("triton-trace-target_rank", TRITON_TRACING,
       "L.FIELD_TARGET_RANK, target_rank, ok)", "L.FIELD_TARGET_RANK, self.cur_rank, ok)",
       "target_rank: records the own rank instead of the caller's target", "store@2", "get@2"),
    _m("triton-trace-address-mask", TRITON_TRACING,
       "lowest = _block_min(tl.where(mask, addr, _NO_ADDRESS))", "lowest = _block_min(addr)",
       "address: minimum over every lane, masked-off lanes included", "tracing_1d_address@1", "load@1"),
    _m("triton-trace-address-empty", TRITON_TRACING,
       "lowest = tl.where(lowest == _NO_ADDRESS, 0, lowest)",
       "lowest = tl.where(lowest == _NO_ADDRESS, lowest, lowest)",
       "address: a block with no active lane records the sentinel instead of 0", "instants@1", "store@1"),
    _m("triton-trace-payload_size-mask", TRITON_TRACING,
       "count = _block_sum(tl.where(mask, addr * 0 + 1, addr * 0))", "count = address.numel",
       "payload_size: counts every lane, masked-off lanes included", "tracing_1d_address@1", "load@1"),
    _m("triton-trace-payload_size-bytes", TRITON_TRACING,
       "return dtype.element_ty.primitive_bitwidth // 8", "return 4",
       "payload_size: assumes 4-byte elements whatever the dtype", "store@1", "load@1"),
    _m("triton-trace-payload", TRITON_TRACING,
       "L.FIELD_PAYLOAD, payload, ok)", "L.FIELD_PAYLOAD, payload & 0xFFFF, ok)",
       "payload: truncated to its low 16 bits", "load@1", "tracing_1d_address@1"),
    _m("triton-trace-op_index", TRITON_TRACING,
       "L.FIELD_OP_INDEX, slot, ok)", "L.FIELD_OP_INDEX, slot + 1, ok)",
       "op_index: numbered from 1 instead of the claimed slot", "store@1"),
    _m("triton-trace-capacity-past-end", TRITON_TRACING,
       "ok = slot < self.max_events", "ok = slot <= self.max_events",
       "capacity check off by one: the slot at max_events is written (into the next field's row)", "overflow@1"),
    _m("triton-trace-capacity-one-short", TRITON_TRACING,
       "ok = slot < self.max_events", "ok = slot < self.max_events - 1",
       "capacity check off by one: the last slot is never written", "overflow@1"),
    _m("triton-trace-runtime-off-records", TRITON_TRACING,
       "if self.active != 0:", "if True:",
       "runtime-disabled guard dropped: a tracing-off context still claims and writes slots", "runtime_off@1"),
    _m("triton-trace-end-runtime-off", TRITON_TRACING,
       "ok = (slot >= 0) & (slot < self.max_events)", "ok = slot < self.max_events",
       "record_event_end writes a duration for a handle that claimed no slot (tracing off at run time)",
       "runtime_off@1"),
    _m("triton-trace-instant-kind", TRITON_TRACING,
       "mask, payload, L.DURATION_INSTANT)", "mask, payload, L.DURATION_OPEN)",
       "record_event marks an instant as an unfinished range", "instants@1", "store@1"),
    _m("triton-trace-unfinished-kind", TRITON_TRACING,
       "mask, payload, L.DURATION_OPEN)", "mask, payload, L.DURATION_INSTANT)",
       "record_event_start marks a range as an instant until it ends (never-ended ranges read as instants)",
       "unfinished_ranges@1"),
    _m("triton-trace-duration-sign", TRITON_TRACING,
       "L.FIELD_DURATION_CYCLES, now - handle[1], ok)", "L.FIELD_DURATION_CYCLES, handle[1] - now, ok)",
       "duration: start - end instead of end - start", "load@1"),
    # ---- Triton ops
    _m("triton-get-wrong-rank", TRITON_OPS,
       "tl.store(to_ptr, tl.load(self._translate(from_ptr, from_rank), mask=mask), mask=mask)",
       "tl.store(to_ptr, tl.load(self._translate(from_ptr, self.rank), mask=mask), mask=mask)",
       "get reads the own rank instead of from_rank", "get@2", "nested_ranges@2"),
    _m("triton-put-wrong-rank", TRITON_OPS,
       "tl.store(self._translate(to_ptr, to_rank), tl.load(from_ptr, mask=mask), mask=mask)",
       "tl.store(self._translate(to_ptr, self.rank), tl.load(from_ptr, mask=mask), mask=mask)",
       "put writes the own rank instead of to_rank", "put@2"),
    _m("triton-copy-wrong-rank", TRITON_OPS,
       "tl.store(self._translate(dst_ptr, to_rank), data, mask=mask)",
       "tl.store(self._translate(dst_ptr, from_rank), data, mask=mask)",
       "copy writes to from_rank instead of to_rank", "copy@2"),
    _m("triton-translate-local", TRITON_OPS,
       "to_base = tl.load(self.heap_bases + to_rank)", "to_base = tl.load(self.heap_bases + self.rank)",
       "pointer translation ignores the target rank (every op stays local)", "store@2"),
    _m("triton-store-drops-mask", TRITON_OPS,
       "tl.store(self._translate(pointer, to_rank), value, mask=mask, cache_modifier=cache_modifier)",
       "tl.store(self._translate(pointer, to_rank), value, cache_modifier=cache_modifier)",
       "store ignores its mask (writes masked-off lanes)", "tracing_1d_address@1", "store@1"),
    _m("triton-load-ignores-other", TRITON_OPS,
       "return tl.load(self._translate(pointer, from_rank), mask=mask, other=other,",
       "return tl.load(self._translate(pointer, from_rank), mask=mask, other=None,",
       "load ignores other (masked-off lanes do not read it)", "load@1"),
    _m("triton-atomic_add-drops-mask", TRITON_OPS,
       "tl.atomic_add(self._translate(pointer, to_rank), val, mask=mask,",
       "tl.atomic_add(self._translate(pointer, to_rank), val,",
       "atomic_add ignores its mask (adds on masked-off lanes)", "atomic_add@1"),
    _m("triton-atomic_sub-adds", TRITON_OPS,
       "tl.atomic_add(self._translate(pointer, to_rank), -val,",
       "tl.atomic_add(self._translate(pointer, to_rank), val,",
       "atomic_sub adds instead of subtracting", "atomic_sub@1"),
    _m("triton-atomic_cas-swapped", TRITON_OPS,
       "tl.atomic_cas(self._translate(pointer, to_rank), cmp, val,",
       "tl.atomic_cas(self._translate(pointer, to_rank), val, cmp,",
       "atomic_cas with compare and value swapped", "atomic_cas@1"),
    _m("triton-atomic_min-is-max", TRITON_OPS,
       "return tl.atomic_min(", "return tl.atomic_max(",
       "atomic_min computes a maximum", "atomic_min@1"),
    # ---- Gluon ops
    _m("gluon-get-wrong-rank", GLUON_OPS,
       "gl.store(to_ptr, gl.load(self._translate(from_ptr, from_rank), mask=mask), mask=mask)",
       "gl.store(to_ptr, gl.load(self._translate(from_ptr, self.cur_rank), mask=mask), mask=mask)",
       "get reads the own rank instead of from_rank", "get@2", "nested_ranges@2"),
    _m("gluon-put-wrong-rank", GLUON_OPS,
       "gl.store(self._translate(to_ptr, to_rank), gl.load(from_ptr, mask=mask), mask=mask)",
       "gl.store(self._translate(to_ptr, self.cur_rank), gl.load(from_ptr, mask=mask), mask=mask)",
       "put writes the own rank instead of to_rank", "put@2"),
    _m("gluon-copy-wrong-rank", GLUON_OPS,
       "gl.store(self._translate(dst_ptr, to_rank), data, mask=mask)",
       "gl.store(self._translate(dst_ptr, from_rank), data, mask=mask)",
       "copy writes to from_rank instead of to_rank", "copy@2"),
    _m("gluon-translate-local", GLUON_OPS,
       "from_base = gl.load(self.heap_bases + self.cur_rank)", "from_base = gl.load(self.heap_bases + to_rank)",
       "pointer translation relative to the target's base (every op stays local)", "store@2"),
    _m("gluon-store-drops-mask", GLUON_OPS,
       "gl.store(self._translate(pointer, to_rank), value, mask=mask, cache_modifier=cache_modifier)",
       "gl.store(self._translate(pointer, to_rank), value, cache_modifier=cache_modifier)",
       "store ignores its mask (writes masked-off lanes)", "tracing_1d_address@1", "store@1"),
    _m("gluon-load-ignores-other", GLUON_OPS,
       "return gl.load(self._translate(pointer, from_rank), mask=mask, other=other,",
       "return gl.load(self._translate(pointer, from_rank), mask=mask, other=None,",
       "load ignores other (masked-off lanes do not read it)", "load@1"),
    _m("gluon-atomic_add-drops-mask", GLUON_OPS,
       "gl.atomic_add(self._translate(pointer, to_rank), val, mask=mask,",
       "gl.atomic_add(self._translate(pointer, to_rank), val,",
       "atomic_add ignores its mask (adds on masked-off lanes)", "atomic_add@1"),
    _m("gluon-atomic_sub-adds", GLUON_OPS,
       "gl.atomic_add(self._translate(pointer, to_rank), -val,",
       "gl.atomic_add(self._translate(pointer, to_rank), val,",
       "atomic_sub adds instead of subtracting", "atomic_sub@1"),
    _m("gluon-atomic_cas-swapped", GLUON_OPS,
       "gl.atomic_cas(self._translate(pointer, to_rank), cmp, val,",
       "gl.atomic_cas(self._translate(pointer, to_rank), val, cmp,",
       "atomic_cas with compare and value swapped", "atomic_cas@1"),
    _m("gluon-atomic_max-is-min", GLUON_OPS,
       "return gl.atomic_max(", "return gl.atomic_min(",
       "atomic_max computes a minimum", "atomic_max@1"),
    # ---- host decoder and context layout
    _m("decoder-instant-as-unfinished", DECODER,
       "kind[dur == DURATION_INSTANT.value] = KIND_INSTANT", "kind[dur == DURATION_INSTANT.value] = KIND_UNFINISHED",
       "decodes instants as unfinished ranges", "instants@1"),
    _m("decoder-unfinished-as-range", DECODER,
       "kind[dur == DURATION_OPEN.value] = KIND_UNFINISHED", "kind[dur == DURATION_OPEN.value] = KIND_RANGE",
       "decodes never-ended ranges as finished ranges", "unfinished_ranges@1"),
    _m("decoder-name-shift", DECODER,
       'row["name"] = names[i]', 'row["name"] = names[i - 1]',
       "row i gets the event name of row i - 1", "nested_ranges@1"),
    _m("decoder-field-rows-swapped", DECODER,
       "cols = {name: rows[i, :n].copy() for i, name in enumerate(TRACE_FIELDS)}",
       "cols = {name: rows[{1: 2, 2: 1}.get(i, i), :n].copy() for i, name in enumerate(TRACE_FIELDS)}",
       "decodes row pid_m as pid and pid as pid_m", "tile_2d@1"),
    _m("layout-heap-bases-rotated", LAYOUT,
       "return [cur_rank, num_ranks, VERSION, *block, *heap_bases]",
       "return [cur_rank, num_ranks, VERSION, *block, *heap_bases[1:], *heap_bases[:1]]",
       "context encoder lists the heap bases rotated by one rank", "store@2"),
    _m("layout-capacity-one-less", LAYOUT,
       "block = [tracing.enabled, tracing.max_events,", "block = [tracing.enabled, tracing.max_events - 1,",
       "context encoder tells kernels one slot less than the buffers hold (field rows misaligned)", "overflow@1"),
)
