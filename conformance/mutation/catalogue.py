"""The mutant catalogue of ``python -m conformance mutate``: one small, exact source change per entry.

Each ``Mutant`` replaces ``old`` (which must occur exactly once in ``file``) by ``new``, in a temporary copy of
the package, and says what it breaks. ``killers`` names the scenarios most likely to kill it; they run first
(``"scenario"``: every world size it supports, 2 ranks first; ``"scenario@R"``: only R ranks), then every other
case if none of them killed it. A mutant whose ``old`` text no longer matches is reported as stale.

Adding a mutant is adding one entry below. The two tracing implementations get twin mutants: ``_twins`` writes
``triton-trace-<...>`` and ``gluon-trace-<...>`` from one template (``{m}`` is ``tl`` or ``gl``) with the same
killers, so a bug in either one alone must show; tests/conformance/test_mutate.py requires one per trace field
and one per word of the guard slot past max_events (``_guard_twins``) for each. A mutant whose bug the CPU
interpreter cannot show (it runs a launch's programs one after another) lists ``backends=("gpu",)``: ``mutate`` on
the CPU skips it and says why (``why_skipped``); ``mutate --backend gpu`` runs it. A bug in one vendor's code path
(``iris/tracing/hw.py`` branches on the target) lists ``gpu-cuda`` or ``gpu-hip``: a GPU of the other vendor skips it.
A concurrency mutant (``_concurrent_twins``) runs its cases at the GPU scale (``scale="gpu"``: the draws of
``--scale gpu``), and ``dimension`` says which drawn dimension kills it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from iris import context_layout_constexpr as L
from iris.parity import twin_file
from iris.tracing.guard import word_fields

# Each Triton device module and its Gluon twin share a file name (iris.parity.twin_file).
TRITON_TRACING = "iris/device/tracing.py"
GLUON_TRACING = twin_file(TRITON_TRACING)
TRITON_OPS = "iris/device/context.py"
GLUON_OPS = twin_file(TRITON_OPS)
DECODER = "iris/tracing/records.py"
HOST_TRACING = "iris/tracing/core.py"
LAYOUT = "iris/context_layout.py"
TIMELINE = "iris/tracing/timeline.py"
CHROME_JSON = "iris/tracing/chrome_json.py"
# Why the read-back path's mutants need a GPU: only there does Tracing.events split the records on the device.
_ON_GPU = "on the CPU events() splits records with numpy (decode_words); unpack_slots runs on a GPU"
# Why a concurrency mutant needs a GPU.
_LOCKSTEP = ("the interpreter runs a rank's programs one after another and a block's lanes in lockstep: no two "
             "programs or warps race, no lane diverges, and a load and store is as good as an atomic")

# Where a mutant's bug can show (``Mutant.backends``): the CPU interpreter, any GPU, or one vendor's code path only.
PLATFORMS = ("cpu", "gpu", "gpu-cuda", "gpu-hip")
# The scales a mutant's cases may run at besides the backend's own (``Mutant.scale``), by their names in
# conformance.kit.scale: the GPU scale (what run and gate draw with --scale gpu).
SCALES = ("gpu",)


@dataclass(frozen=True)
class Mutant:
    """One source change: ``old`` -> ``new`` in ``file`` (repository-relative), breaking what ``breaks`` says."""

    name: str
    file: str
    old: str
    new: str
    breaks: str
    killers: tuple[str, ...] = ()
    backends: tuple[str, ...] = ("cpu", "gpu")  # where the bug can show: PLATFORMS (see the module docstring)
    why_skipped: str = ""  # why a platform it does not list cannot show the bug (printed when it is skipped)
    scale: str | None = None  # the scale its cases run at: None, the backend's own; "gpu", the GPU scale (SCALES)
    dimension: str = ""  # the drawn dimension that kills it, where only a scaled draw does

    def shows_on(self, platform: str) -> bool:
        """Whether the bug can show on ``platform`` (``cpu``, ``gpu-cuda`` or ``gpu-hip``): listed by name, or a GPU
        platform by ``gpu``."""
        return platform in self.backends or (platform.startswith("gpu-") and "gpu" in self.backends)


def _m(name, file, old, new, breaks, *killers) -> Mutant:
    return Mutant(name, file, old, new, breaks, tuple(killers))


def _gpu_only(name, file, old, new, breaks, why_skipped, *killers) -> Mutant:
    """A mutant whose bug only a GPU run can show (``mutate`` on the CPU skips it, saying ``why_skipped``)."""
    return Mutant(name, file, old, new, breaks, tuple(killers), backends=("gpu",), why_skipped=why_skipped)


def _twins(name, old, new, breaks, *killers) -> tuple[Mutant, Mutant]:
    """The same bug in each tracing implementation alone: ``{m}`` in ``old``/``new`` is ``tl`` or ``gl``."""
    return tuple(Mutant(f"{api}-trace-{name}", file, old.format(m=m), new.format(m=m), breaks, tuple(killers))
                 for api, file, m in (("triton", TRITON_TRACING, "tl"), ("gluon", GLUON_TRACING, "gl")))


def _concurrent_twins(name, old, new, breaks, dimension, *killers) -> tuple[Mutant, Mutant]:
    """``_twins`` of a concurrency bug: GPU only (``_LOCKSTEP``), their cases at the GPU scale, ``dimension`` the
    drawn dimension that kills them."""
    return tuple(replace(m, backends=("gpu",), why_skipped=_LOCKSTEP, scale="gpu", dimension=dimension)
                 for m in _twins(name, old, new, breaks, *killers))


def _guard_twins(constant: str) -> tuple[Mutant, Mutant]:
    """Twins that write record word ``L.<constant>`` alone into the guard slot past max_events, from the store that
    writes it: a dropped range's end (the duration word), else a dropped record's store, with that word's element of
    its mask let through."""
    word = getattr(L, constant).value
    where = f"word {word} ({', '.join(word_fields(word))}) of the guard slot past max_events"
    if word == L.WORD_DURATION.value:
        return _twins(f"guard-word{word}", "mask=(slot >= 0) & (slot < self.max_events))", "mask=slot >= 0)",
                      f"a dropped range's end writes its duration into {where} (its store tests slot >= 0 but not "
                      "slot < max_events)", "overflow@1")
    return _twins(f"guard-word{word}", "{m}.store(record + w, words, mask=kept)",
                  f"{{m}}.store(record + w, words, mask=kept | (w == L.{constant}))",
                  f"a dropped record writes {where} (that word's element of the record store ignores the buffer-full "
                  "mask, as a word stored on its own without the mask would)", "overflow@1")


# The guard slot past max_events (iris/tracing/guard.py): one mutant per record word, in each tracing alone, each
# written there by the store a one-line bug lets through. Two stores reach the records: a range end's (word 1 only)
# and the record's, masked element by element, one element a word in both twins (Gluon's lanes store two words, but
# the mask is per element), so any one word can be hit alone; a wrong bound on the record's whole mask writes all
# eight (full-record-written). The claim and refill paths write the counters and the cursor cells only, and the
# slots they hand out stop at max_events, which the record's mask keeps: no bug there alone reaches the guard slot.
_GUARD_TWINS: tuple[Mutant, ...] = tuple(
    m for constant in ("WORD_TIMESTAMP", "WORD_DURATION", "WORD_ADDRESS", "WORD_PAYLOAD", "WORD_EVENT", "WORD_PIDS",
                       "WORD_SIZE", "WORD_PROGRAM")
    for m in _guard_twins(constant))

_TRACING_TWINS: tuple[Mutant, ...] = (
    # one per trace field the device writes (cur_rank and op_index it does not: decoder mutants below cover them)
    *_twins("event_id", "_halves(event_id, target_rank)", "_halves(event_id + 1, target_rank)",
            "event_id: records the next event's id", "store@1"),
    *_twins("pid-axis0", "program = _halves(_linear_pid(), hw.cu_id())",
            "program = _halves({m}.program_id(0), hw.cu_id())",
            "pid: records grid axis 0 only instead of the linear program id", "tile_2d", "all_scatter"),
    *_twins("pid", "grid_m = {m}.num_programs(0)", "grid_m = {m}.num_programs(1)",
            "pid: linear program id uses the wrong stride for grid axis 1 (shows on non-square grids)",
            "tile_2d", "all_scatter"),
    *_twins("pid-drops-axis2", "{m}.program_id(2) * grid_mn", "{m}.program_id(2) * 0",
            "pid: the linear program id drops grid axis 2 (shows on 3-axis grids only)", "call_shapes@1"),
    *_twins("pid_m", "_halves(pid_m, pid_n)", "_halves(pid_n, pid_n)",
            "pid_m: records the caller's pid_n", "tile_2d@1", "overflow@1"),
    *_twins("pid_n", "_halves(pid_m, pid_n)", "_halves(pid_m, pid_m)",
            "pid_n: records the caller's pid_m", "tile_2d@1", "overflow@1"),
    *_twins("target_rank", "_halves(event_id, target_rank)", "_halves(event_id, target_rank * 0)",
            "target_rank: records rank 0 whatever the caller's target", "store@2", "get@2"),
    *_twins("address-mask", "lowest = _block_min({m}.where(mask, addr, NO_ADDRESS))", "lowest = _block_min(addr)",
            "address: minimum over every lane, masked-off lanes included", "tracing_1d_address@1", "load@1"),
    *_twins("address-empty", "lowest = {m}.where(lowest == NO_ADDRESS, 0, lowest)",
            "lowest = {m}.where(lowest == NO_ADDRESS, lowest, lowest)",
            "address: a block with no active lane records the sentinel instead of 0", "instants@1", "store@1"),
    *_twins("payload_size-mask", "count = _block_sum({m}.where(mask, one, 0))", "count = _block_sum(one)",
            "payload_size: counts every lane, masked-off lanes included", "tracing_1d_address@1", "load@1"),
    *_twins("payload_size-bytes", "return lowest, count * element_bytes(address.dtype)", "return lowest, count * 4",
            "payload_size: assumes 4-byte elements whatever the dtype", "store@1", "load@1"),
    *_twins("span-mask", "            lowest, nbytes = _address_and_size(address, mask)\n        else:",
            "            lowest, nbytes = _address_and_size(address, None)\n        else:",
            "span: reduces the whole block, its mask ignored (a partial tile's span counts and places every lane)",
            "all_scatter@1", "call_shapes@2"),
    *_twins("span-fields", "        lowest = address.lowest\n", "        lowest = address.lowest + address.nbytes\n",
            "a record given a span writes an address past the span's lowest active one", "all_scatter@1",
            "call_shapes@2"),
    *_twins("contiguous-span-first", "{m}.where(count > 0, (base + first).to({m}.int64, bitcast=False), 0)",
            "{m}.where(count > 0, base.to({m}.int64, bitcast=False), 0)",
            "contiguous_span: every block's span starts at the buffer's base, its first offset ignored",
            "contiguous_spans@1"),
    *_twins("contiguous-span-empty", "{m}.where(count > 0, (base + first).to({m}.int64, bitcast=False), 0)",
            "{m}.where(count >= 0, (base + first).to({m}.int64, bitcast=False), 0)",
            "contiguous_span: a block with no element records its first address instead of none",
            "contiguous_spans@1"),
    *_twins("contiguous-span-bytes", "nbytes = count * element_bytes(base.dtype)", "nbytes = count",
            "contiguous_span: payload_size in elements, not bytes", "contiguous_spans@1"),
    *_twins("payload", "(w == L.WORD_PAYLOAD, payload, words)", "(w == L.WORD_PAYLOAD, payload & 0xFFFF, words)",
            "payload: truncated to its low 16 bits", "load@1", "tracing_1d_address@1"),
    *_twins("halves-low-unmasked", "({m}.cast(low, {m}.int64) & L.LOW_BITS)", "{m}.cast(low, {m}.int64)",
            "32-bit fields: a negative low field is not masked to 32 bits, so it overwrites the high field of its "
            "word with ones (pid_n, target_rank, ...)", "call_shapes@1"),
    # the record rules
    *_twins("record-slot", "record = records + slot * L.RECORD_WORDS", "record = records + (slot + 1) * L.RECORD_WORDS",
            "the record is written one slot past the slot the cursor handed out (op_index one more than claimed)",
            "store@1"),
    *_twins("capacity-past-end", "{m}.minimum(base + chunk, max_events))",
            "{m}.minimum(base + chunk, max_events + 1))",
            "a chunk ends one slot past max_events: the slot at max_events is handed out, and its record is neither "
            "written nor counted dropped", "overflow@1"),
    *_twins("capacity-one-short", "{m}.minimum(base + chunk, max_events))",
            "{m}.minimum(base + chunk, max_events - 1))",
            "a chunk ends one slot short of max_events: the last slot is never used (its record dropped)",
            "overflow@1"),
    *_twins("full-record-written", "slot < self.max_events, _halves(event_id",
            "slot <= self.max_events, _halves(event_id",
            "a record that finds the buffer full is written, into the slot past the end, as well as counted dropped",
            "overflow@1"),
    *_twins("full-buffer-claims", "if (cursor >> 32) < self.max_events:", "if True:",
            "a program whose buffer is full goes on claiming a chunk at each chunk's end (claimed grows past what "
            "the records need)", "overflow@1"),
    *_twins("runtime-off-records", "if self.active != 0:", "if True:",
            "runtime-disabled guard dropped: a tracing-off context still claims and writes slots", "runtime_off@1"),
    *_twins("end-runtime-off", "mask=(slot >= 0) & (slot < self.max_events))", "mask=slot < self.max_events)",
            "record_event_end writes a duration for a handle that claimed no slot (tracing off at run time)",
            "runtime_off@1"),
    *_twins("instant-kind", "mask, payload, L.DURATION_INSTANT)", "mask, payload, L.DURATION_OPEN)",
            "record_event marks an instant as an unfinished range", "instants@1", "store@1"),
    *_twins("unfinished-kind", "mask, payload, L.DURATION_OPEN)", "mask, payload, L.DURATION_INSTANT)",
            "record_event_start marks a range as an instant until it ends (never-ended ranges read as instants)",
            "unfinished_ranges@1"),
    *_twins("duration-sign", "L.WORD_DURATION, now - handle[1],", "L.WORD_DURATION, handle[1] - now,",
            "duration: start - end instead of end - start", "load@1"),
    # record semantics: chunks, cursors, drops
    *_twins("chunk-handed-twice",
            "base = {m}.atomic_add(counters + L.COUNTER_CLAIMED + zero, chunk + zero, mask=first, sem=\"relaxed\")",
            "base = {m}.atomic_add(counters + L.COUNTER_CLAIMED + zero, zero, mask=first, sem=\"relaxed\")",
            "a chunk claimed after the first does not advance the claim counter: the next program gets it too",
            "chunked_claims@1", "overflow@1"),
    *_twins("refill-chunk-too-long", "_chunk_cursor(base, chunk + zero, max_events + zero)",
            "_chunk_cursor(base, chunk + zero + 1, max_events + zero)",
            "a chunk claimed after the first ends one slot late: its program takes the first slot of the next chunk, "
            "another program's", "chunked_claims@1", "two_views@1"),
    *_twins("dropped-not-counted",
            "if _used_up(cursor):\n                {m}.atomic_add(self._counters() + L.COUNTER_DROPPED, 1,",
            "if _used_up(cursor):\n                {m}.atomic_add(self._counters() + L.COUNTER_DROPPED, 0,",
            "a record that finds the buffer full is dropped without being counted", "overflow@1"),
    *_twins("no-room-not-counted",
            "else:\n                    {m}.atomic_add(self._counters() + L.COUNTER_DROPPED, 1,",
            "else:\n                    {m}.atomic_add(self._counters() + L.COUNTER_DROPPED, 0,",
            "a record of a program that found no room at initialize is dropped without being counted",
            "overflow@1"),
    *_twins("cursor-not-advanced", "{m}.store(self.cursor, cursor + 1,", "{m}.store(self.cursor, cursor,",
            "the cursor does not advance: every record of a program takes the same slot", "store@1",
            "chunked_claims@1"),
    *_twins("first-chunk-unused", "{m}.store(cursor, _chunk_cursor(base, chunk, max_events))",
            "{m}.store(cursor, _chunk_cursor(base, 0, max_events))",
            "the cursor starts used up: the chunk claimed at initialize is never used (one chunk too many a program)",
            "chunked_claims@1"),
    *_twins("refill-stale-slot",
            "L.TRACE_CHUNK), self.max_events, self.cursor)\n                cursor = hw.load_lane0(",
            "L.TRACE_CHUNK), self.max_events, self.cursor)\n                cursor = (",
            "after claiming a new chunk the record takes the used-up cursor's slot (the first of the next chunk, "
            "another program's) instead of the new chunk's first", "two_views@1", "chunked_claims@1"),
    *_twins("refill-cursor-unmasked",
            "{m}.store(cursor + zero, _chunk_cursor(base, chunk + zero, max_events + zero), mask=first)",
            "{m}.store(cursor + zero, _chunk_cursor(base, chunk + zero, max_events + zero))",
            "every thread stores the refilled cursor, each made from its own element of the claim (masked to thread 0: "
            "the others claimed nothing): the cursor points where the last store leaves it, not at thread 0's chunk",
            "chunked_claims@1", "two_views@1"),
    *_twins("cursor-shared",
            "cursor = cursors + (base.to({m}.int32) // chunk.to({m}.int32)) * L.CURSOR_WORDS", "cursor = cursors",
            "every cursor is the same cell: views or programs that record at once take each other's slots",
            "two_views@1", "chunked_claims@1"),
    # call shapes (conformance/kit/call_shapes.py): how the trace call is made
    *_twins("payload_size-scalar-mask", "count = _block_sum({m}.where(mask, one, 0))",
            "count = _block_sum({m}.where(mask, 1, 0))",
            "payload_size: a scalar mask over a block counts one lane (and a broadcast mask one lane per row)",
            "call_shapes@1"),
    # the same bug in each twin's own reduction (Triton: one flattened min; Gluon: a min per axis)
    Mutant("triton-trace-address-one-axis", TRITON_TRACING, "x = tl.min(x, axis=None)",
           "x = tl.min(x, axis=0) if len(x.shape) == 1 else tl.max(tl.min(x, axis=0), axis=None)",
           "address: a min over axis 0 only, then the largest of those (wrong for 2-D and 3-D blocks)",
           ("call_shapes@1", "tile_2d@1")),
    Mutant("gluon-trace-address-one-axis", GLUON_TRACING,
           "for _ in gl.static_range(len(x.shape)):\n        x = gl.min(x, axis=0)",
           "for i in gl.static_range(len(x.shape)):\n        x = gl.min(x, axis=0) if i == 0 else gl.max(x, axis=0)",
           "address: a min over axis 0 only, then the largest of those (wrong for 2-D and 3-D blocks)",
           ("call_shapes@1", "tile_2d@1")),
    *_twins("payload_size-bytes-1-8", "return lowest, count * element_bytes(address.dtype)",
            "return lowest, count * (element_bytes(address.dtype) & 6)",
            "payload_size: 1- and 8-byte elements count 0 bytes (2- and 4-byte ones are right)", "call_shapes@1",
            "store@1"),
)

# Concurrency: bugs only programs and warps that run at once show, each in one place, each killed by a draw of the GPU
# scale (``dimension``). The twins are written the same way in both tracings; the cursor read is shared (hw.py), with
# one code path per vendor. Not here: the same cursor mask dropped from _refill's store (every thread then stores the
# cursor of its own element of the masked claim), which the interpreter shows too: refill-cursor-unmasked above.
_HW = "iris/tracing/hw.py"
_WARPS_AND_LOOPS = ("num_warps >= 4 and a counted loop (for i in range(n), n a run-time argument: its counter in "
                    "uniform registers) of >= 128 traced calls, so that chunks refill inside the loop (counted_loop "
                    "at the GPU scale): a launch hangs, a hang verdict")
_CONCURRENT: tuple[Mutant, ...] = (
    Mutant("hw-load_lane0-cuda-plain-load", _HW,
           'return _asm(name, "load_lane0", _semantic, _semantic.cast(pointer, tl.int64))',
           "return tl.load(pointer, _semantic=_semantic)",
           "every lane reads the trace cursor with a plain load (cuda): ptxas keeps it in a warp's uniform registers "
           "and a half-warp can take the other side of the refill branch (the hang of the last release)",
           ("counted_loop@1", "counted_loop@2"), backends=("gpu-cuda",), scale="gpu", dimension=_WARPS_AND_LOOPS,
           why_skipped="the interpreter and AMD GPUs do not take load_lane0's cuda path (and the interpreter runs a "
           "block's lanes in lockstep)"),
    Mutant("hw-load_lane0-hip-no-readlane", _HW,
           "return _semantic.or_(_semantic.shl(_semantic.cast(hi, tl.int64), _semantic.to_tensor(32)), low_bits)",
           "return x",
           "every lane takes its own load of the trace cursor (hip): the two v_readlane of lane 0's halves are left "
           "unused, so a wave's lanes may branch apart on the refill",
           ("counted_loop@1", "counted_loop@2"), backends=("gpu-hip",), scale="gpu", dimension=_WARPS_AND_LOOPS,
           why_skipped="the interpreter and NVIDIA GPUs do not take load_lane0's hip path (and the interpreter runs a "
           "block's lanes in lockstep)"),
    *_concurrent_twins(
        "claim-cursor-plain-load", "cursor = hw.load_lane0(self.cursor)\n        if _used_up(cursor):",
        "cursor = {m}.load(self.cursor)\n        if _used_up(cursor):",
        "_claim reads the trace cursor with a plain load by every lane instead of hw.load_lane0 (in this tracing "
        "alone): the lanes of a warp may take the two sides of the refill branch", _WARPS_AND_LOOPS,
        "counted_loop@1", "counted_loop@2"),
    *_concurrent_twins(
        "first-claim-not-atomic", 'base = {m}.atomic_add(counters + L.COUNTER_CLAIMED, chunk, sem="relaxed")',
        "base = {m}.load(counters + L.COUNTER_CLAIMED)\n                {m}.store(counters + L.COUNTER_CLAIMED, "
        "base + chunk)",
        "initialize claims its first chunk with a load and a store instead of an atomic: programs that initialize at "
        "once take the same chunk and its cursor",
        "many programs initializing at once: grids of several waves of SMs (chunked_claims at the GPU scale, two "
        "launches on two streams): claimed falls short of the model and one chunk holds two programs' records",
        "chunked_claims@1", "overflow@1"),
    *_concurrent_twins(
        "refill-not-atomic",
        'base = {m}.atomic_add(counters + L.COUNTER_CLAIMED + zero, chunk + zero, mask=first, sem="relaxed")',
        "base = {m}.load(counters + L.COUNTER_CLAIMED + zero, mask=first)\n    "
        "{m}.store(counters + L.COUNTER_CLAIMED + zero, base + chunk, mask=first)",
        "a refill claims its chunk with a load and a store instead of an atomic: programs that refill at once take "
        "the same chunk",
        "many programs refilling at once: a grid of many programs x run-time loops of hundreds of traced calls a "
        "program with a small chunk (1 or 3), so chunks refill many times (chunked_claims, overflow at the GPU "
        "scale)", "chunked_claims@1", "overflow@1"),
    Mutant("triton-trace-cursor-every-thread", TRITON_TRACING, "tl.store(self.cursor, cursor + 1,",
           "tl.store(self.cursor + tl.arange(0, MAX_THREADS) * 0, cursor + 1,",
           "every thread stores the cursor's advance (a block store of the one cell without _refill's mask to thread "
           "0), each warp its own view: a warp behind or ahead of warp 0 moves the cursor back or skips slots",
           ("chunked_claims@1", "two_views@1"), backends=("gpu",), why_skipped=_LOCKSTEP, scale="gpu",
           dimension="num_warps >= 2 and a run-time traced loop with no block reduction between records, so warps "
           "drift apart (chunked_claims's scalar-address instants at the GPU scale)"),
    Mutant("gluon-trace-cursor-every-thread", GLUON_TRACING, "gl.store(self.cursor, cursor + 1,",
           "gl.store(self.cursor + gl.arange(0, MAX_THREADS, layout=_thread_layout(warp_size(), gl.num_warps())) * 0, "
           "cursor + 1,",
           "every thread stores the cursor's advance (a block store of the one cell without _refill's mask to thread "
           "0), each warp its own view: a warp behind or ahead of warp 0 moves the cursor back or skips slots",
           ("chunked_claims@1", "two_views@1"), backends=("gpu",), why_skipped=_LOCKSTEP, scale="gpu",
           dimension="num_warps >= 2 and a run-time traced loop with no block reduction between records, so warps "
           "drift apart (chunked_claims's scalar-address instants at the GPU scale)"),
    *_concurrent_twins(
        "refill-slot-uncapped", "return _halves({m}.minimum(base, max_events),", "return _halves(base,",
        "a chunk claimed at or past max_events keeps its first slot uncapped (next slot > end): the record is neither "
        "written nor counted dropped, nor any later record of its program (on the CPU no refill comes after the "
        "last chunk: programs run one at a time)",
        "trace capacity near the attempts with many programs recording at once, so programs race for the last "
        "chunks and a refill comes after the buffer filled (overflow at the GPU scale): attempted falls short",
        "overflow@1"),
    *_concurrent_twins(
        "dropped-not-atomic",
        'if _used_up(cursor):\n                {m}.atomic_add(self._counters() + L.COUNTER_DROPPED, 1, sem="relaxed")',
        "if _used_up(cursor):\n                dropped = {m}.load(self._counters() + L.COUNTER_DROPPED)\n"
        "                {m}.store(self._counters() + L.COUNTER_DROPPED, dropped + 1)",
        "a record that finds the buffer full counts its drop with a load and a store instead of an atomic: drops "
        "of programs that drop at once are lost",
        "many programs recording past a full buffer at once: several waves of programs with long run-time loops "
        "and a capacity below the attempts (overflow at the GPU scale): dropped and attempted fall short",
        "overflow@1"),
)


def _op_twins(name, old, new, breaks, *killers) -> tuple[Mutant, Mutant]:
    """The same auto-tracing bug in each device context alone (``{m}``: ``tl`` or ``gl``), as ``_twins``."""
    return tuple(Mutant(f"{api}-auto-{name}", file, old.format(m=m), new.format(m=m), breaks, tuple(killers))
                 for api, file, m in (("triton", TRITON_OPS, "tl"), ("gluon", GLUON_OPS, "gl")))


# Auto-tracing (iris.op_trace): each bug in one device context's ops alone. Not here: a range that ends on its
# value read at a clock read that does not take the value (``_op_end_on`` -> ``_op_end``): no record field shows it
# (it only lets a compiler move the clock read), so it is an equivalent mutant for the records; the cpu-compile tier
# checks it instead (tests/cpu_compile/test_auto_tracing_compile.py).
_AUTO_TWINS: tuple[Mutant, ...] = (
    *_op_twins("get-peer", "h = self._op_start(TraceEvent().get, from_rank, from_ptr, mask)",
               "h = self._op_start(TraceEvent().get, from_rank * 0, from_ptr, mask)",
               "an auto-traced get records rank 0 as its peer instead of from_rank", "auto_ops@2"),
    *_op_twins("store-unmasked", "h = self._op_start(TraceEvent().store, to_rank, pointer, mask)",
               "h = self._op_start(TraceEvent().store, to_rank, pointer, None)",
               "an auto-traced store's address and size ignore its mask", "auto_ops@1"),
    *_op_twins("atomic_cas-unrecorded", "h = self._op_start(TraceEvent().atomic_cas, to_rank, pointer, None)",
               "h = (self.tracing.base * 0 - 1, self.tracing.base * 0)",
               "atomic_cas records nothing when auto-traced", "auto_ops@1"),
    *_op_twins("copy-ranks-swapped", "h = self._op_start(TraceEvent().copy, from_rank, src_ptr, mask)",
               "h = self._op_start(TraceEvent().copy, to_rank, src_ptr, mask)",
               "an auto-traced copy's read records to_rank as its peer instead of from_rank", "auto_ops@2"),
    *_op_twins("store-as-load", "h = self._op_start(TraceEvent().store,", "h = self._op_start(TraceEvent().load,",
               "an auto-traced store is recorded as a load", "auto_ops@1"),
    *_op_twins("put-address-source", "h = self._op_start(TraceEvent().put, to_rank, to_ptr, mask)",
               "h = self._op_start(TraceEvent().put, to_rank, from_ptr, mask)",
               "an auto-traced put records its local source block instead of the block it writes (to_ptr)",
               "auto_ops@1"),
    *_op_twins("pids-swapped", "address, {m}.program_id(0), {m}.program_id(1),",
               "address, {m}.program_id(1), {m}.program_id(0),",
               "an auto-traced op records grid axis 1 as pid_m and axis 0 as pid_n", "auto_ops@1"),
)

# The collective scenarios' own kernels: what a user's collective kernel gets wrong in one API alone, each in the
# Triton kernel alone and in the Gluon kernel alone (``{m}``: tl or gl, ``{rank}``/``{world}``: the context's rank and
# world size in that API). Not here: a release before the data store (or without the barrier before it), a race that
# only programs running at once can show, and even then only when a consumer polls in the window between the flag and
# the data; the interpreter runs each rank's programs in order, so the consumer never reads early there.
def _kernel_twins(scenario, name, old, new, breaks, *killers) -> tuple[Mutant, Mutant]:
    """The same bug in one scenario's Triton kernel alone and in its Gluon kernel alone."""
    return tuple(Mutant(f"{api}-{scenario}-{name}", f"conformance/scenarios/{scenario}.py",
                        old.format(m=m, rank=rank, world=world), new.format(m=m, rank=rank, world=world), breaks,
                        tuple(killers))
                 for api, m, rank, world in (("triton", "tl", "ctx.rank", "ctx.world_size"),
                                             ("gluon", "gl", "ctx.cur_rank", "ctx.num_ranks")))


_COLLECTIVE_TWINS: tuple[Mutant, ...] = (
    *_kernel_twins("all_gather", "skips-a-peer", "while i < {world}:\n        t = {m}.load(order + i)",
                   "while i < {world} - 1:\n        t = {m}.load(order + i)",
                   "the peer loop stops one step early: the last peer of the order is never gathered", "all_gather@1",
                   "all_gather@2"),
    *_kernel_twins("all_gather", "order-reversed", "t = {m}.load(order + i)", "t = {m}.load(order + {world} - 1 - i)",
                   "the peer loop walks the drawn order backwards", "all_gather@2"),
    *_kernel_twins("reduce_scatter", "wrong-chunk", "share = src + {rank} * (",
                   "share = src + ({rank} + 1) % {world} * (",
                   "each rank reduces the next rank's chunk (r + 1) % R instead of its own share r",
                   "reduce_scatter@2"),
    *_kernel_twins("reduce_scatter", "skips-a-peer", "while i < {world}:\n        t = {m}.load(order + i)",
                   "while i < {world} - 1:\n        t = {m}.load(order + i)",
                   "the reduction leaves out the last peer of the order", "reduce_scatter@1", "reduce_scatter@2"),
    *_kernel_twins("all_to_all", "same-block",
                   "{m}.load(bits + t * length + offs) != 0)\n        h = ctx.tracing.record_event_start("
                   "TraceEvent().put, t, slot, pid, 0, mask=mask, payload=i)\n        ctx.put(src + t * length + offs,",
                   "{m}.load(bits + t * length + offs) != 0)\n        h = ctx.tracing.record_event_start("
                   "TraceEvent().put, t, slot, pid, 0, mask=mask, payload=i)\n"
                   "        ctx.put(src + {rank} * length + offs,",
                   "every peer gets the sender's block for itself instead of the block for that peer",
                   "all_to_all@2"),
    *_kernel_twins("fused_gather_compute", "wait-ends-early",
                   "        spins = limit * 0\n        while (seen != 1) & (spins < limit):\n"
                   "            seen = {m}.atomic_cas(flag, 1, 1, sem=\"relaxed\", scope=\"sys\")\n"
                   "            spins += 1\n"
                   "        seen = ctx.atomic_cas(flag, 1, 1, {rank}, sem=\"acquire\", scope=\"sys\")"
                   "  # the acquire: one op, traced\n        ctx.tracing.record_event_end(h)\n",
                   "        ctx.tracing.record_event_end(h)\n        spins = limit * 0\n"
                   "        while (seen != 1) & (spins < limit):\n"
                   "            seen = {m}.atomic_cas(flag, 1, 1, sem=\"relaxed\", scope=\"sys\")\n"
                   "            spins += 1\n"
                   "        seen = ctx.atomic_cas(flag, 1, 1, {rank}, sem=\"acquire\", scope=\"sys\")"
                   "  # the acquire: one op, traced\n",
                   "the wait range ends before its flag is seen (before the spin and the acquire inside it)",
                   "fused_gather_compute@1"),
    *_kernel_twins("fused_gather_compute", "waits-on-own-flag",
                   "s = {m}.load(order + i)\n        flag = ready + s * programs + pid",
                   "s = {m}.load(order + i)\n        flag = ready + {rank} * programs + pid",
                   "each wait polls the flag its own rank set instead of the peer's it fetches from next",
                   "fused_gather_compute@2"),
    *_kernel_twins("fused_gather_compute", "fetches-own-tile",
                   "payload={m}.where(seen == 1, i, -1))\n        acc += ctx.load(tile + offs, s,",
                   "payload={m}.where(seen == 1, i, -1))\n        acc += ctx.load(tile + offs, {rank},",
                   "the fetch reads the own tile instead of the peer's it waited for", "fused_gather_compute@2"),
    *_kernel_twins("auto_loops", "first-iteration-skipped",
                   "acc = {m}.load(out + pid) * 0\n    i = n * 0\n",
                   "acc = {m}.load(out + pid) * 0\n    i = n * 0 + 1\n",
                   "the auto-traced loop starts at its second iteration: one op, and its range, fewer a program",
                   "auto_loops@1"),
)

CATALOGUE: tuple[Mutant, ...] = (
    *_TRACING_TWINS,
    *_GUARD_TWINS,
    *_AUTO_TWINS,
    *_CONCURRENT,
    *_COLLECTIVE_TWINS,
    # ---- one implementation's own text (the twins differ in how they are written)
    # Gluon only: Triton's source names no layout (its compiler picks one). Under the CPU interpreter layouts are
    # erased, so this bug keys on what the interpreter keeps of a layout: elements per thread of the CTA.
    _m("gluon-trace-address-per-thread", GLUON_TRACING,
       "        lowest = _block_min(addr)\n",
       "        lowest = _block_min(addr) + (address.numel > 32 * gl.num_warps())\n",
       "address: one byte off when an unmasked block has more elements than the CTA's threads (size_per_thread > 1 "
       "or a wrapped layout; one element per thread is right)", "call_shapes@1"),
    # ---- Triton ops
    _m("triton-get-wrong-rank", TRITON_OPS,
       "data = tl.load(self._translate(from_ptr, from_rank, hint),",
       "data = tl.load(self._translate(from_ptr, self.rank, hint),",
       "get reads the own rank instead of from_rank", "get@2", "nested_ranges@2"),
    _m("triton-put-wrong-rank", TRITON_OPS,
       "tl.store(self._translate(to_ptr, to_rank, hint), data,",
       "tl.store(self._translate(to_ptr, self.rank, hint), data,",
       "put writes the own rank instead of to_rank", "put@2"),
    _m("triton-copy-wrong-rank", TRITON_OPS,
       "tl.store(self._translate(dst_ptr, to_rank, hint), data,",
       "tl.store(self._translate(dst_ptr, from_rank, hint), data,",
       "copy writes to from_rank instead of to_rank", "copy@2"),
    _m("triton-translate-local", TRITON_OPS,
       "to_base = tl.load(self.heap_bases + to_rank)", "to_base = tl.load(self.heap_bases + self.rank)",
       "pointer translation ignores the target rank (every op stays local)", "store@2"),
    _m("triton-run-time-world-size-one", TRITON_OPS,
       "world_size = tl.load(context_tensor + L.NUM_RANKS)\n",
       "world_size = tl.load(context_tensor + L.NUM_RANKS) * 0 + 1\n",
       "a context initialized without world_size (read at run time) believes it is alone", "all_scatter@2",
       "atomic_xchg@2"),
    _m("triton-store-drops-mask", TRITON_OPS,
       "tl.store(self._translate(pointer, to_rank, hint), value, mask=mask,",
       "tl.store(self._translate(pointer, to_rank, hint), value,",
       "store ignores its mask (writes masked-off lanes)", "tracing_1d_address@1", "store@1"),
    _m("triton-load-ignores-other", TRITON_OPS,
       "value = tl.load(self._translate(pointer, from_rank, hint), mask=mask, other=other,",
       "value = tl.load(self._translate(pointer, from_rank, hint), mask=mask, other=None,",
       "load ignores other (masked-off lanes do not read it)", "load@1"),
    _m("triton-atomic_add-drops-mask", TRITON_OPS,
       "tl.atomic_add(self._translate(pointer, to_rank, hint), val, mask=mask,",
       "tl.atomic_add(self._translate(pointer, to_rank, hint), val,",
       "atomic_add ignores its mask (adds on masked-off lanes)", "atomic_add@1"),
    _m("triton-atomic_sub-adds", TRITON_OPS,
       "tl.atomic_add(self._translate(pointer, to_rank, hint), -val,",
       "tl.atomic_add(self._translate(pointer, to_rank, hint), val,",
       "atomic_sub adds instead of subtracting", "atomic_sub@1"),
    _m("triton-atomic_cas-swapped", TRITON_OPS,
       "tl.atomic_cas(self._translate(pointer, to_rank, hint), cmp, val,",
       "tl.atomic_cas(self._translate(pointer, to_rank, hint), val, cmp,",
       "atomic_cas with compare and value swapped", "atomic_cas@1"),
    _m("triton-atomic_min-is-max", TRITON_OPS,
       "value = tl.atomic_min(", "value = tl.atomic_max(",
       "atomic_min computes a maximum", "atomic_min@1"),
    # ---- Gluon ops
    _m("gluon-get-wrong-rank", GLUON_OPS,
       "data = gl.load(self._translate(from_ptr, from_rank, hint),",
       "data = gl.load(self._translate(from_ptr, self.cur_rank, hint),",
       "get reads the own rank instead of from_rank", "get@2", "nested_ranges@2"),
    _m("gluon-put-wrong-rank", GLUON_OPS,
       "gl.store(self._translate(to_ptr, to_rank, hint), data,",
       "gl.store(self._translate(to_ptr, self.cur_rank, hint), data,",
       "put writes the own rank instead of to_rank", "put@2"),
    _m("gluon-copy-wrong-rank", GLUON_OPS,
       "gl.store(self._translate(dst_ptr, to_rank, hint), data,",
       "gl.store(self._translate(dst_ptr, from_rank, hint), data,",
       "copy writes to from_rank instead of to_rank", "copy@2"),
    _m("gluon-translate-local", GLUON_OPS,
       "from_base = gl.load(self.heap_bases + self.cur_rank)", "from_base = gl.load(self.heap_bases + to_rank)",
       "pointer translation relative to the target's base (every op stays local)", "store@2"),
    _m("gluon-store-drops-mask", GLUON_OPS,
       "gl.store(self._translate(pointer, to_rank, hint), value, mask=mask,",
       "gl.store(self._translate(pointer, to_rank, hint), value,",
       "store ignores its mask (writes masked-off lanes)", "tracing_1d_address@1", "store@1"),
    _m("gluon-load-ignores-other", GLUON_OPS,
       "value = gl.load(self._translate(pointer, from_rank, hint), mask=mask, other=other,",
       "value = gl.load(self._translate(pointer, from_rank, hint), mask=mask, other=None,",
       "load ignores other (masked-off lanes do not read it)", "load@1"),
    _m("gluon-atomic_add-drops-mask", GLUON_OPS,
       "gl.atomic_add(self._translate(pointer, to_rank, hint), val, mask=mask,",
       "gl.atomic_add(self._translate(pointer, to_rank, hint), val,",
       "atomic_add ignores its mask (adds on masked-off lanes)", "atomic_add@1"),
    _m("gluon-atomic_sub-adds", GLUON_OPS,
       "gl.atomic_add(self._translate(pointer, to_rank, hint), -val,",
       "gl.atomic_add(self._translate(pointer, to_rank, hint), val,",
       "atomic_sub adds instead of subtracting", "atomic_sub@1"),
    _m("gluon-atomic_cas-swapped", GLUON_OPS,
       "gl.atomic_cas(self._translate(pointer, to_rank, hint), cmp, val,",
       "gl.atomic_cas(self._translate(pointer, to_rank, hint), val, cmp,",
       "atomic_cas with compare and value swapped", "atomic_cas@1"),
    _m("gluon-atomic_max-is-min", GLUON_OPS,
       "value = gl.atomic_max(", "value = gl.atomic_min(",
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
       "cols = {name: np.ascontiguousarray(rows[i]) for i, name in enumerate(TRACE_FIELDS)}",
       "cols = {name: np.ascontiguousarray(rows[{1: 2, 2: 1}.get(i, i)]) for i, name in enumerate(TRACE_FIELDS)}",
       "decodes word pid_m as pid and pid as pid_m", "tile_2d@1"),
    _m("decoder-hole-as-event", DECODER,
       "holes = event_ids(words) == EMPTY_EVENT.value", "holes = event_ids(words) == EMPTY_EVENT.value + 1",
       "decodes the holes of claimed chunks as events", "chunked_claims@1", "store@1"),
    # the fields no record stores, which the decoder supplies (one decoder serves both APIs: no twins)
    _m("decoder-cur_rank", DECODER,
       "            out[i] = rank\n", "            out[i] = 0\n",
       "cur_rank: every event decodes as recorded by rank 0 (the rank whose buffers hold it is known to the host)",
       "store@2", "get@2"),
    _m("decoder-op_index", DECODER,
       "            out[i] = slots\n", "            out[i] = slots + 1\n",
       "op_index: one more than the slot the record was found in", "store@1"),
    _m("decoder-halves-swapped", DECODER,
       "low = _LOW_HALF if f.shift == 0 else 1 - _LOW_HALF", "low = 1 - _LOW_HALF if f.shift == 0 else _LOW_HALF",
       "a 32-bit field decodes as the other half of its word (event_id as target_rank, pid_m as pid_n, ...)",
       "store@2"),
    # the GPU's read-back path (Tracing.events splits the records on the device; the CPU decodes with numpy)
    _gpu_only("decoder-gpu-halves-swapped", DECODER, "out[i].copy_(halves[:, int32_column(f.name)])",
              "out[i].copy_(halves[:, int32_column(f.name) ^ 1])",
              "a 32-bit field decodes as the other half of its word, where the GPU splits the records", _ON_GPU,
              "store@2"),
    _gpu_only("decoder-gpu-hole-as-event", DECODER, 'holes = rows[FIELD_INDEX["event_id"]] == EMPTY_EVENT.value',
              'holes = rows[FIELD_INDEX["event_id"]] == EMPTY_EVENT.value + 1',
              "decodes the holes of claimed chunks as events, where the GPU splits the records", _ON_GPU,
              "chunked_claims@1", "store@1"),
    _gpu_only("decoder-gpu-cur_rank", DECODER, "out[i].fill_(rank)", "out[i].fill_(0)",
              "cur_rank: every event decodes as recorded by rank 0, where the GPU splits the records", _ON_GPU,
              "store@2"),
    _gpu_only("decoder-gpu-op_index", DECODER, "torch.arange(n, out=out[i])", "torch.arange(1, n + 1, out=out[i])",
              "op_index: one more than the slot the record was found in, where the GPU splits the records", _ON_GPU,
              "store@1"),
    _m("layout-heap-bases-rotated", LAYOUT,
       "return [cur_rank, num_ranks, VERSION, *block, *heap_bases]",
       "return [cur_rank, num_ranks, VERSION, *block, *heap_bases[1:], *heap_bases[:1]]",
       "context encoder lists the heap bases rotated by one rank", "store@2"),
    _m("layout-capacity-one-less", LAYOUT,
       "block = [tracing.enabled, tracing.max_events,", "block = [tracing.enabled, tracing.max_events - 1,",
       "context encoder tells kernels one slot less than the buffers hold (field rows misaligned)", "overflow@1"),
    _m("host-dropped-off-by-one", HOST_TRACING,
       "        return claimed, dropped\n", "        return claimed, max(0, dropped - 1)\n",
       "dropped: the host reports one dropped record fewer than the device counted", "overflow@1"),
    # The host's own counter properties, each wrong alone (events() stays right). One host Tracing serves both APIs
    # (IrisGluon is Iris), so each is one mutant with no per-API twin; it shows in both "vs model" checks.
    _m("host-tracing-dropped-one-short", HOST_TRACING,
       "        return self._read_counters()[1]\n", "        return max(0, self._read_counters()[1] - 1)\n",
       "tracing.dropped reports one dropped record fewer than the device counted (one host object serves both "
       "APIs: no twin)", "overflow@1"),
    _m("host-tracing-attempted-one-more", HOST_TRACING,
       "return int((slots != EMPTY_EVENT.value).sum()) + dropped\n",
       "return int((slots != EMPTY_EVENT.value).sum()) + dropped + 1\n",
       "tracing.attempted reports one event more than kernels tried to record (one host object serves both APIs: "
       "no twin)", "store@1"),
    _m("host-tracing-claimed-capped", HOST_TRACING,
       "        return self._read_counters()[0]\n", "        return min(self._read_counters()[0], self.max_events)\n",
       "tracing.claimed is capped at max_events (the chunks past the end that dropped records claimed go uncounted; "
       "one host object serves both APIs: no twin)", "overflow@1", "chunked_claims@1"),
    _m("host-trace_counter-reads-dropped", HOST_TRACING,
       "return self._counters[context_layout.COUNTER_CLAIMED: context_layout.COUNTER_CLAIMED + 1]",
       "return self._counters[context_layout.COUNTER_DROPPED: context_layout.COUNTER_DROPPED + 1]",
       "tracing.trace_counter views the drop counter instead of the claimed slots (one host object serves both "
       "APIs: no twin)", "store@1"),
    # ---- host export (what tracing.export writes, read back by the checks)
    _m("export-payload-is-size", TIMELINE,
       "ev_args = [cols[a] for a in EVENT_ARGS]",
       'ev_args = [cols["payload_size" if a == "payload" else a] for a in EVENT_ARGS]',
       "the exported payload argument holds payload_size", "store@1"),
    _m("export-unfinished-unmarked", CHROME_JSON,
       "row.text(f', \"{UNFINISHED_ARG}\": true}}}}' if kind == KIND_UNFINISHED else \"}}\")",
       'row.text("}}")',
       "JSON export: an unfinished range loses its unfinished argument (reads as a finished range)",
       "unfinished_ranges@1"),
    _m("export-few-rows-off-by-one", CHROME_JSON,
       'text = [b"%d" % x for x in v.tolist()]', 'text = [b"%d" % (x + (x > 1 << 20)) for x in v.tolist()]',
       "JSON export: a column of few rows (Python's formatting, what a small trace takes) writes every number past "
       "2**20 (addresses) one too high", "store@1"),
)
