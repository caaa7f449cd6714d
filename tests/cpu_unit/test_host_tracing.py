"""Host ``Tracing`` with a fake owner: enable validation, the published tracing block, reads before enable,
reset, and decoding what a (simulated) kernel left in the buffers (record semantics v2: slots claimed a chunk at
a time, holes, a drop counter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from iris import context_layout as layout
from iris.tracing.core import DEFAULT_CHUNK, MAX_CHUNK, MAX_EVENTS, Tracing
from iris.tracing.events import (
    DURATION_INSTANT,
    EMPTY_EVENT,
    EVENT_IDS,
    FIELD_BY_NAME,
    FIELD_INDEX,
    FIELDS,
    TRACE_FIELDS,
)
from iris.tracing.guard import GUARD_RECORD, GUARD_WORD, GuardWord, guard_changes
from iris.tracing.records import encode_records, int32_column
from tests.cpu_unit.checks import check, check_raises, check_that
from tests.trace_readers import PerfettoTrace

pytestmark = pytest.mark.cpu_unit

REPO = Path(__file__).resolve().parents[2]


class FakeOwner:
    """What ``Tracing`` needs from ``Iris``: a rank, the world size, a device and a way to publish the tracing
    block."""

    def __init__(self, rank: int = 2) -> None:
        self.rank = rank
        self.num_ranks = 4
        self.device = torch.device("cpu")
        self.blocks: list[layout.TracingBlock | None] = []

    def _write_tracing_block(self, block: layout.TracingBlock | None) -> None:
        self.blocks.append(block)


@pytest.fixture
def owner() -> FakeOwner:
    return FakeOwner()


def _record(tracing: Tracing, n_written: int, dropped: int = 0, holes=(), claimed: int | None = None) -> list[int]:
    """Simulate kernels: ``n_written`` instants of the "user" event in the first slots that are not ``holes``,
    ``dropped`` records dropped, ``claimed`` slots claimed (default: up to the last one written). The slots."""
    slots = [s for s in range(tracing.max_events) if s not in holes][:n_written]
    for s in slots:
        fields = np.full((len(TRACE_FIELDS), 1), 100 + s, dtype=np.int64)
        fields[FIELD_INDEX["event_id"]] = EVENT_IDS["user"]
        fields[FIELD_INDEX["duration_cycles"]] = DURATION_INSTANT.value
        tracing._records[s] = torch.from_numpy(encode_records(fields)[0])
    tracing._counters[layout.COUNTER_CLAIMED] = (slots[-1] + 1 if slots else 0) if claimed is None else claimed
    tracing._counters[layout.COUNTER_DROPPED] = dropped
    return slots


def _all_holes(tracing: Tracing) -> bool:
    return bool((tracing._records.view(torch.int32)[:, int32_column("event_id")] == EMPTY_EVENT.value).all())


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True, None], ids=repr)
def test_enable_rejects_a_bad_max_events_and_changes_nothing(owner, bad):
    tracing = Tracing(owner)
    check_raises(ValueError, lambda: tracing.enable(bad), mentions=[f"max_events={bad!r}"], where=f"enable({bad!r})")
    check("enabled", tracing.enabled, False)
    check("_records", tracing._records, None)
    check("_counters", tracing._counters, None)
    check("_write_tracing_block calls", owner.blocks, [])


@pytest.mark.parametrize("bad", [0, -1, 2.0, "4", None, MAX_CHUNK + 1], ids=repr)
def test_enable_rejects_a_bad_chunk_and_changes_nothing(owner, bad):
    tracing = Tracing(owner)
    check_raises(ValueError, lambda: tracing.enable(8, chunk=bad), mentions=[f"chunk={bad!r}", str(MAX_CHUNK)])
    check("_records", tracing._records, None)
    check("_write_tracing_block calls", owner.blocks, [])


@pytest.mark.parametrize("bad", [0, "10"], ids=repr)
def test_enable_rejects_a_bad_max_events_when_enabled(owner, bad):
    tracing = Tracing(owner)
    tracing.enable(8)
    records, counters = tracing._records, tracing._counters
    _record(tracing, 3)
    check_raises(ValueError, lambda: tracing.enable(bad), mentions=[f"max_events={bad!r}"])
    check("_records is the same tensor", tracing._records is records, True)
    check("_counters is the same tensor", tracing._counters is counters, True)
    check("attempted", tracing.attempted, 3)
    check("number of _write_tracing_block calls", len(owner.blocks), 1)


def _buffer_bytes(max_events: int, chunk: int = DEFAULT_CHUNK) -> int:
    """Bytes of the trace buffers of ``enable(max_events, chunk)`` (records and a guard slot, counters, cursors),
    scaled from the buffers of a small tracing."""
    probe = Tracing(FakeOwner())
    probe.enable(chunk, chunk=chunk)  # one chunk: one cursor cell
    slot, cell = probe._guarded[0].nbytes, probe._cursors[0].nbytes
    return slot * (max_events + 1) + probe._counters.nbytes + cell * layout.cursor_cells(max_events, chunk)


# A real allocation failure: a fresh interpreter whose address space is capped 1 GiB above what it has mapped asks
# for 2**26 events (GiBs of buffers); it prints what each refused enable raised and the state it left, as JSON.
REFUSED_ENABLE = """
import json, resource, sys
from tests.cpu_unit.test_host_tracing import FakeOwner, Tracing, _record
vm_kib = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (vm_kib * 1024 + (1 << 30), resource.getrlimit(resource.RLIMIT_AS)[1]))
out = {}
def attempt(name, tracing, owner):
    try:
        tracing.enable(2**26)
        error = None
    except Exception as e:
        error = [type(e).__name__, str(e)]
    out[name] = {"error": error, "enabled": tracing.enabled, "max_events": tracing.max_events,
                 "blocks": len(owner.blocks), "records is None": tracing._records is None}
owner = FakeOwner()
fresh = Tracing(owner)
attempt("fresh", fresh, owner)
owner = FakeOwner()
kept = Tracing(owner)
kept.enable(8, chunk=2)
_record(kept, 3, dropped=2)
attempt("kept", kept, owner)
out["kept"]["counters"] = [kept.attempted, kept.dropped, kept.claimed, len(kept.events())]
json.dump(out, sys.stdout)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="caps the address space through /proc and rlimit")
def test_enable_refuses_buffers_the_host_cannot_allocate_and_changes_nothing():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", REFUSED_ENABLE], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    check("exit code", proc.returncode, 0, proc.stderr[-2000:])
    got = json.loads(proc.stdout)
    needs = f"tracing.enable: max_events={2**26} needs {_buffer_bytes(2**26)} bytes"
    for name, state in (("fresh", "tracing stays disabled"),
                        ("kept", "tracing stays enabled with the previous buffers (max_events=8)")):
        res = got[name]
        kind, text = res["error"] or (None, "")
        check("error type", kind, "RuntimeError", name)
        for part in (needs, "of trace buffers on device cpu, which could not be allocated (RuntimeError: ", state,
                     "Use a smaller max_events"):
            check_that("error message", text, part in text, f"a message mentioning {part!r}", name)
    check("fresh: (enabled, max_events, published blocks, records is None)",
          [got["fresh"][k] for k in ("enabled", "max_events", "blocks", "records is None")], [False, 0, 0, True])
    check("kept: (enabled, max_events, published blocks, records is None)",
          [got["kept"][k] for k in ("enabled", "max_events", "blocks", "records is None")], [True, 8, 1, False])
    check("kept: (attempted, dropped, claimed, len(events()))", got["kept"]["counters"], [5, 2, 3, 3])


def _allocator_fails(monkeypatch, error: BaseException) -> None:
    """Every ``torch.empty`` raises ``error`` (undo with ``monkeypatch.undo()``)."""

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(torch, "empty", fail)


@pytest.mark.parametrize("enabled", [True, False])
def test_enable_refusing_buffers_keeps_the_previous_ones(owner, monkeypatch, enabled):
    tracing = Tracing(owner)
    tracing.enable(8, chunk=2)
    if not enabled:
        tracing.disable()
    slots = _record(tracing, 3, dropped=2)
    before = (tracing._records, tracing._guarded, tracing._counters, tracing._cursors)
    blocks = list(owner.blocks)
    state = "enabled" if enabled else "disabled"
    needs = f"max_events=4096 needs {_buffer_bytes(4096)} bytes"
    _allocator_fails(monkeypatch, RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't "
                                               "allocate memory: you tried to allocate 524416 bytes."))
    check_raises(RuntimeError, lambda: tracing.enable(4096),
                 mentions=[needs, "(RuntimeError: [enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator",
                           f"tracing stays {state} with the previous buffers (max_events=8)"])
    monkeypatch.undo()
    after = (tracing._records, tracing._guarded, tracing._counters, tracing._cursors)
    check("the same four tensors", [a is b for a, b in zip(after, before, strict=True)], [True] * 4)
    check("(enabled, max_events, chunk)", (tracing.enabled, tracing.max_events, tracing.chunk), (enabled, 8, 2))
    check("published blocks", owner.blocks, blocks)
    check("(attempted, dropped, claimed)", (tracing.attempted, tracing.dropped, tracing.claimed), (5, 2, 3))
    check("op_index of events()", tracing.events()["op_index"].tolist(), slots)


@pytest.mark.parametrize("max_events", [MAX_EVENTS + 1, 10**13, 10**18], ids=["MAX_EVENTS+1", "10**13", "10**18"])
def test_enable_refuses_a_max_events_past_the_slot_limit(owner, max_events):
    """Slots are 32-bit (a cursor packs a slot and a chunk end in one word): past MAX_EVENTS nothing is allocated."""
    tracing = Tracing(owner)
    check_raises(ValueError, lambda: tracing.enable(max_events),
                 mentions=[f"max_events={max_events}", f"at most {MAX_EVENTS} (slots are 32-bit)"])
    check("(enabled, _records, published blocks)", (tracing.enabled, tracing._records, owner.blocks),
          (False, None, []))
    check("MAX_EVENTS + MAX_CHUNK (the last chunk end)", MAX_EVENTS + MAX_CHUNK, 2**31)


def test_enable_refusing_buffers_passes_torchs_out_of_memory_on(owner, monkeypatch):
    """The last buffer (the cursors) fails as a GPU allocation would: the error keeps torch's type and reason, and
    the two buffers already allocated are not kept."""
    tracing = Tracing(owner)
    tracing.enable(8)
    before = (tracing._records, tracing._counters, tracing._cursors)
    needs = f"max_events=64 needs {_buffer_bytes(64, 4)} bytes"

    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore details")

    monkeypatch.setattr(torch, "zeros", out_of_memory)
    e = check_raises(torch.OutOfMemoryError, lambda: tracing.enable(64, chunk=4),
                     mentions=[needs, "on device cpu",
                               "(OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB)",
                               "tracing stays enabled with the previous buffers (max_events=8)"])
    monkeypatch.undo()
    check("error type", type(e), torch.OutOfMemoryError)
    check("cause", type(e.__cause__), torch.OutOfMemoryError)
    after = (tracing._records, tracing._counters, tracing._cursors)
    check("the same tensors", [a is b for a, b in zip(after, before, strict=True)], [True] * 3)
    check("(max_events, chunk)", (tracing.max_events, tracing.chunk), (8, DEFAULT_CHUNK))
    check("number of _write_tracing_block calls", len(owner.blocks), 1)


@pytest.mark.parametrize("what", ["events", "export", "reset", "attempted", "dropped", "written_past_end",
                                  "guard_changes"])
def test_reads_before_enable_say_to_enable_first(owner, what, tmp_path):
    tracing = Tracing(owner)
    calls = {
        "events": tracing.events,
        "export": lambda: tracing.export(str(tmp_path / "t.json")),
        "reset": tracing.reset,
        "attempted": lambda: tracing.attempted,
        "dropped": lambda: tracing.dropped,
        "written_past_end": lambda: tracing.written_past_end,
        "guard_changes": tracing.guard_changes,
    }
    check_raises(RuntimeError, calls[what], mentions=["enable"], where=what)
    check("files written", list(tmp_path.iterdir()), [])


@pytest.mark.parametrize("chunk", [1, 3, DEFAULT_CHUNK, 64])
def test_enable_publishes_the_buffers(owner, chunk):
    tracing = Tracing(owner)
    if chunk == DEFAULT_CHUNK:
        tracing.enable(max_events=64)
    else:
        tracing.enable(max_events=64, chunk=chunk)
    check("enabled", tracing.enabled, True)
    check("max_events", tracing.max_events, 64)
    check("chunk", tracing.chunk, chunk)
    check("_records.shape", tuple(tracing._records.shape), (64, layout.RECORD_WORDS))
    check("_records.dtype", tracing._records.dtype, torch.int64)
    check("_counters.tolist()", tracing._counters.tolist(), [0, 0])
    check("every slot a hole", _all_holes(tracing), True)
    check("_cursors.shape", tuple(tracing._cursors.shape), (layout.cursor_cells(64, chunk), layout.CURSOR_WORDS))
    expected = layout.TracingBlock(enabled=1, max_events=64, chunk=chunk, counters_ptr=tracing._counters.data_ptr(),
                                   records_ptr=tracing._records.data_ptr(), cursors_ptr=tracing._cursors.data_ptr())
    check("published blocks", owner.blocks, [expected])


@pytest.mark.parametrize(("size", "chunk"), [(16, DEFAULT_CHUNK), (4, 1)])
def test_enable_again_with_another_size_or_chunk_reallocates(owner, size, chunk):
    tracing = Tracing(owner)
    tracing.enable(4, chunk=2)
    _record(tracing, 4, dropped=5)
    tracing.enable(size, chunk=chunk)
    check("max_events", tracing.max_events, size)
    check("attempted", tracing.attempted, 0)
    check("last published (max_events, chunk)", (owner.blocks[-1].max_events, owner.blocks[-1].chunk), (size, chunk))
    check("last published records_ptr", owner.blocks[-1].records_ptr, tracing._records.data_ptr())
    check("last published cursors_ptr", owner.blocks[-1].cursors_ptr, tracing._cursors.data_ptr())
    check("cursor cells", tracing._cursors.shape[0], layout.cursor_cells(size, chunk))


def test_enable_again_with_the_same_size_clears(owner):
    tracing = Tracing(owner)
    tracing.enable(4)
    _record(tracing, 4, dropped=1)
    tracing.enable(4)
    check("attempted", tracing.attempted, 0)
    check("every slot a hole", _all_holes(tracing), True)
    check("_counters.tolist()", tracing._counters.tolist(), [0, 0])
    check("published blocks", len(owner.blocks), 2)


def test_disable_publishes_none_and_keeps_events(owner):
    tracing = Tracing(owner)
    tracing.enable(8)
    _record(tracing, 2)
    tracing.disable()
    check("enabled", tracing.enabled, False)
    check("last published block", owner.blocks[-1], None)
    check("len(events()) after disable", len(tracing.events()), 2)


def test_reset_makes_every_slot_a_hole_and_zeroes_the_counters(owner):
    tracing = Tracing(owner)
    tracing.enable(8)
    _record(tracing, 8, dropped=4)
    tracing.reset()
    check("attempted", tracing.attempted, 0)
    check("every slot a hole", _all_holes(tracing), True)
    check("_counters.tolist()", tracing._counters.tolist(), [0, 0])
    check("enabled", tracing.enabled, True)
    check("len(events())", len(tracing.events()), 0)


def test_written_past_end_reads_the_guard_slot_until_reset(owner):
    """A full buffer with nothing past it reads False; a record's event id in the guard slot past max_events reads
    True (the conformance suite reports it), and reset makes the guard a hole again."""
    tracing = Tracing(owner)
    tracing.enable(4, chunk=2)
    _record(tracing, 4, dropped=3)
    check("written_past_end, a full buffer", tracing.written_past_end, False)
    tracing._event_ids(tracing._guarded)[-1] = EVENT_IDS["user"]
    check("written_past_end, a record in the guard slot", tracing.written_past_end, True)
    check("len(events()): the guard is not an event", len(tracing.events()), 4)
    tracing.reset()
    check("written_past_end after reset", tracing.written_past_end, False)


def test_enable_and_reset_write_the_whole_guard_record(owner):
    """The guard slot holds GUARD_RECORD after enable, after reset, and after an enable that keeps the buffers,
    whatever was in it: every word, not only the event id (which is EMPTY_EVENT, as every hole's)."""
    tracing = Tracing(owner)
    tracing.enable(4, chunk=2)
    check("guard slot after enable", tracing._guarded[-1].tolist(), list(GUARD_RECORD))
    check("guard event_id", int(tracing._event_ids(tracing._guarded)[-1]), EMPTY_EVENT.value)
    for again, call in (("reset", tracing.reset), ("enable", lambda: tracing.enable(4, chunk=2))):
        tracing._guarded[-1] = torch.arange(layout.RECORD_WORDS)
        call()
        check(f"guard slot after {again}", tracing._guarded[-1].tolist(), list(GUARD_RECORD))
        check(f"guard_changes() after {again}", tracing.guard_changes(), ())


@pytest.mark.parametrize("word", range(layout.RECORD_WORDS))
def test_guard_changes_sees_each_word_of_the_guard_slot_until_reset(owner, word):
    """A kernel that writes any one word of the guard slot (a dropped range's end: word 1) is seen: that word, what
    it holds and what the host wrote; written_past_end reads True; reset restores the word."""
    tracing = Tracing(owner)
    tracing.enable(4, chunk=2)
    _record(tracing, 4, dropped=3)
    check("guard_changes(), a full buffer", tracing.guard_changes(), ())
    tracing._guarded[-1, word] = 1234
    check("guard_changes()", tracing.guard_changes(), (GuardWord(word, 1234, GUARD_RECORD[word]),))
    check("written_past_end", tracing.written_past_end, True)
    check("len(events()): the guard is not an event", len(tracing.events()), 4)
    tracing.reset()
    check("guard_changes() after reset", tracing.guard_changes(), ())
    check("written_past_end after reset", tracing.written_past_end, False)


def test_the_guard_record_is_a_hole_of_guard_words():
    """Every word of GUARD_RECORD is GUARD_WORD but the event_id half, EMPTY_EVENT; a guard read back whole is no
    change, and one of another length is an error naming its length."""
    event = FIELD_BY_NAME["event_id"]
    check("GUARD_RECORD but the event word", [w for k, w in enumerate(GUARD_RECORD) if k != event.word],
          [GUARD_WORD] * (layout.RECORD_WORDS - 1))
    check("GUARD_RECORD event word", GUARD_RECORD[event.word], (GUARD_WORD | 0xFFFFFFFF))
    check("guard_changes(GUARD_RECORD)", guard_changes(GUARD_RECORD), ())
    check_raises(ValueError, lambda: guard_changes(GUARD_RECORD[:-1]),
                 mentions=[f"guard record of {layout.RECORD_WORDS - 1} words; expected {layout.RECORD_WORDS}"])


def test_guard_changes_sees_a_32_bit_half(owner):
    """A 32-bit field written alone into the guard slot (target_rank: the high half of the event word) is seen as a
    change of its word, and reported with every other changed word, in word order."""
    tracing = Tracing(owner)
    tracing.enable(4, chunk=2)
    tracing._guarded.view(torch.int32)[-1, int32_column("target_rank")] = 3
    tracing._guarded[-1, 0] = 7
    word = FIELD_BY_NAME["target_rank"].word
    high = (3 << 32) | (GUARD_RECORD[word] & 0xFFFFFFFF)
    check("guard_changes()", tracing.guard_changes(),
          (GuardWord(0, 7, GUARD_RECORD[0]), GuardWord(word, high, GUARD_RECORD[word])))


@pytest.mark.parametrize("written,dropped,holes,claimed", [
    (0, 0, (), 0), (0, 0, (), 16), (3, 0, (), None), (8, 0, (), None), (8, 12, (), 24), (3, 0, (0, 2, 4), None),
    (5, 2, (1, 5, 6), 32),
])  # fmt: skip
def test_events_attempted_and_dropped(owner, written, dropped, holes, claimed):
    tracing = Tracing(owner)
    tracing.enable(8)
    slots = _record(tracing, written, dropped, holes, claimed)
    ev = tracing.events()
    where = f"{written} written, {dropped} dropped, holes {holes}, claimed {claimed}"
    check("len(events())", len(ev), written, where)
    check("events().attempted", ev.attempted, written + dropped, where)
    check("events().dropped", ev.dropped, dropped, where)
    check("tracing.attempted", tracing.attempted, written + dropped, where)
    check("tracing.dropped", tracing.dropped, dropped, where)
    check("tracing.claimed", tracing.claimed, slots[-1] + 1 if claimed is None and slots else claimed or 0, where)
    check("events().rank", ev.rank, owner.rank, where)
    check("events().backend", ev.backend, "interpreter", where)
    check("names()", ev.names(), ["user"] * written, where)
    check("op_index", ev["op_index"].tolist(), slots, where)
    check("slot", ev["slot"].tolist(), slots, where)
    check("cur_rank column (the owner's rank)", ev["cur_rank"].tolist(), [owner.rank] * written, where)
    for f in TRACE_FIELDS:
        if f not in ("event_id", "op_index", "duration_cycles", "cur_rank"):
            check(f"{f} column", ev[f].tolist(), [100 + s for s in slots], where)


def test_events_survive_a_later_reset(owner):
    tracing = Tracing(owner)
    tracing.enable(8)
    _record(tracing, 3)
    ev = tracing.events()
    tracing.reset()
    check("payload column after reset", ev["payload"].tolist(), [100, 101, 102])


def test_export_writes_this_ranks_events(owner, tmp_path):
    tracing = Tracing(owner)
    tracing.enable(8)
    _record(tracing, 3, holes=(1,))
    path = tmp_path / f"rank_rank{owner.rank}.json"
    check("export() returned", tracing.export(str(tmp_path / "rank.json")), str(path))
    check("files", sorted(p.name for p in tmp_path.iterdir()), [path.name])
    trace = json.loads(path.read_text())
    instants = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    check("number of instants", len(instants), 3)
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    check("processes", sorted({names[e["pid"]] for e in instants}), [f"triton rank {owner.rank}"])
    check("metadata.dropped", trace["metadata"]["dropped"], {f"triton rank {owner.rank}": 0})
    upstream = {k: trace["metadata"][k] for k in ("num_events", "rank", "world_size")}
    check("upstream's per-rank keys", upstream, {"num_events": 3, "rank": owner.rank, "world_size": owner.num_ranks})


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"merge": "yes"}, "merge='yes'"), ({"merge": 1}, "merge=1"), ({"merge": None}, "merge=None"),
    ({"flows": "no"}, "flows='no'"), ({"flows": 0}, "flows=0"),
])  # fmt: skip
def test_export_rejects_a_merge_or_flows_that_is_not_a_bool(owner, tmp_path, kwargs, named):
    tracing = Tracing(owner)
    tracing.enable(8)
    _record(tracing, 2)
    path = tmp_path / "t.json"
    check_raises(ValueError, lambda: tracing.export(str(path), **kwargs), mentions=[named, "expected a bool"],
                 where=f"export(path, {named})")
    check("files written", list(tmp_path.iterdir()), [])


@pytest.mark.parametrize("api", ["triton", "gluon"])
def test_export_binary_names_the_owners_api(owner, tmp_path, api):
    owner.api = api
    tracing = Tracing(owner)
    tracing.enable(8)
    _record(tracing, 3)
    path = tmp_path / f"rank_rank{owner.rank}.trace"
    check("export() returned", tracing.export(tmp_path / "rank.trace", format="pftrace"), str(path))
    trace = PerfettoTrace(path.read_bytes())
    check("processes", sorted({s.process for s in trace.slices}), [f"{api} rank {owner.rank}"])
    check("number of instants", len(trace.slices), 3)


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_ranks_exporting_to_one_path_each_keep_their_own_file(tmp_path, suffix):
    """Two ranks call ``export(path)`` with the same path (the README's usage): each writes its own file, as
    upstream names it (``trace_rank<r>``), and each file holds that rank's events, not the other's."""
    recorded = {0: 2, 1: 3}  # events per rank: the files must differ
    written = {}
    for rank, n in recorded.items():
        tracing = Tracing(FakeOwner(rank))
        tracing.enable(8)
        _record(tracing, n)
        written[rank] = tracing.export(str(tmp_path / f"trace{suffix}"))
    check("paths returned", written, {r: str(tmp_path / f"trace_rank{r}{suffix}") for r in recorded})
    check("files", sorted(p.name for p in tmp_path.iterdir()), [f"trace_rank{r}{suffix}" for r in recorded])
    for rank, n in recorded.items():
        if suffix == ".json":
            trace = json.loads(Path(written[rank]).read_text())
            names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
            got = [(names[e["pid"]], e["args"]["payload"], e["args"]["op_index"])
                   for e in trace["traceEvents"] if e["ph"] == "i"]
            check("metadata.events", trace["metadata"]["events"], {f"triton rank {rank}": n}, written[rank])
        else:
            got = [(sl.process, sl.args["payload"], sl.args["op_index"])
                   for sl in PerfettoTrace(Path(written[rank]).read_bytes()).slices]
        check("(process, payload, op_index) of the instants", sorted(got),
              [(f"triton rank {rank}", 100 + slot, slot) for slot in range(n)], written[rank])


def _fifo(tmp_path) -> str:
    os.mkfifo(tmp_path / "fifo.json")
    return str(tmp_path / "fifo.json")


@pytest.mark.parametrize(("path", "error", "message"), [
    (123, TypeError, "trace export: path=123 (int); expected a file name, a str or os.PathLike, such as 'trace.json'"),
    (None, TypeError, "trace export: path=None (NoneType); expected a file name, a str or os.PathLike, such as "
                      "'trace.json'"),
    (b"t.json", TypeError, "trace export: path=b't.json' (bytes); expected a file name, a str or os.PathLike, such "
                           "as 'trace.json'"),
    ("", ValueError, "trace export: path=''; expected a file name such as 'trace.json'"),
    ("/proc/iris-trace.json", OSError, "cannot write trace to '/proc/iris-trace_rank2.json' (rank 2's file for "
                                       "'/proc/iris-trace.json'): folder '/proc' "),
    (_fifo, FileExistsError, "trace export path '{tmp}/fifo.json' is a FIFO, which the export would replace; give "
                             "the name of a regular file such as trace.json"),
])  # fmt: skip
def test_export_names_a_path_it_cannot_write_and_writes_nothing(owner, tmp_path, path, error, message):
    """A path of the wrong type, or one that cannot be written (``/proc`` takes no new file, even for root; a FIFO
    would be replaced): an error naming the path given, and why, before anything is written."""
    tracing = Tracing(owner)
    tracing.enable(8)
    _record(tracing, 2)
    path = path(tmp_path) if callable(path) else path
    before = sorted(tmp_path.iterdir())
    e = check_raises(error, lambda: tracing.export(path), where=f"export({path!r})")
    check_that("error message", str(e), str(e).startswith(message.format(tmp=tmp_path)), f"starting {message!r}")
    check("files after the refusal", sorted(tmp_path.iterdir()), before)
    if str(path).startswith("/proc/"):  # root passes the access check: then creating a file there fails
        why = ("does not accept new files (No such file or directory)", "is not writable")
        check_that("error message", str(e), str(e).endswith(why), f"ending with one of {why}")


@pytest.mark.parametrize("fmt", ["xml", "JSON", 3, []], ids=repr)
def test_export_names_a_bad_format(owner, tmp_path, fmt):
    tracing = Tracing(owner)
    tracing.enable(8)
    check_raises(ValueError, lambda: tracing.export(tmp_path / "t.json", format=fmt),
                 mentions=[f"trace export: format={fmt!r}; expected 'json' or 'pftrace', or None (the path's suffix "
                           "decides)"])
    check("files written", list(tmp_path.iterdir()), [])


# ---- upstream-compatible views: trace_counter, trace_buffers -----------------------------------------------


def test_views_before_enable_are_empty_as_upstream(owner):
    tracing = Tracing(owner)
    check("trace_counter", tracing.trace_counter, None)
    check("dict(trace_buffers)", dict(tracing.trace_buffers), {})


def test_trace_counter_is_the_live_count_of_claimed_slots(owner):
    tracing = Tracing(owner)
    tracing.enable(4)
    _record(tracing, 3, dropped=2, claimed=12)  # chunks past the end were claimed too
    counter = tracing.trace_counter
    check("trace_counter.shape", tuple(counter.shape), (1,))
    check("trace_counter.dtype", counter.dtype, torch.int64)
    check("trace_counter.device", counter.device, owner.device)
    check("trace_counter.item()", counter.item(), 12)
    check("trace_counter.item() == claimed", counter.item(), tracing.claimed)
    tracing._counters[layout.COUNTER_CLAIMED] = 16  # a later kernel: the view follows
    check("trace_counter.item() after more claims", counter.item(), 16)
    tracing.reset()
    check("trace_counter.item() after reset", tracing.trace_counter.item(), 0)


def test_trace_buffers_hold_every_field_slot_by_slot(owner):
    tracing = Tracing(owner)
    tracing.enable(5)
    _record(tracing, 3, holes=(1,))  # slots 0, 2, 3
    duration = FIELD_BY_NAME["duration_cycles"].word
    tracing._records[2, duration] = 42  # slot 2: a finished range of 42 ticks
    tracing._records[3, duration] = -1  # slot 3: a range never ended
    buffers = tracing.trace_buffers
    check("trace_buffers keys", list(buffers), list(TRACE_FIELDS))
    decoded = tracing.events()
    for f in FIELDS:
        column = buffers[f.name]
        check(f"trace_buffers[{f.name!r}].shape", tuple(column.shape), (5,))
        check(f"trace_buffers[{f.name!r}].dtype", column.dtype, torch.int64 if f.word is not None and f.bits == 64
              else torch.int32)
        check(f"trace_buffers[{f.name!r}][[0, 2, 3]]", column[[0, 2, 3]].tolist(), decoded[f.name].tolist())
        shared = column.untyped_storage().data_ptr() == tracing._records.untyped_storage().data_ptr()
        check(f"trace_buffers[{f.name!r}] is a view of the records", shared, f.word is not None)
    check("trace_buffers['event_id'] holes", buffers["event_id"][[1, 4]].tolist(), [EMPTY_EVENT.value] * 2)
    check("trace_buffers['duration_cycles'][[0, 2, 3]] (instant, duration, open)",
          buffers["duration_cycles"][[0, 2, 3]].tolist(), [DURATION_INSTANT.value, 42, -1])
    check("trace_buffers['op_index'][[0, 2, 3]]", buffers["op_index"][[0, 2, 3]].tolist(), [0, 2, 3])
    check("trace_buffers['event_id'][0]", int(buffers["event_id"][0]), EVENT_IDS["user"])
    tracing._records[0, FIELD_BY_NAME["payload"].word] = 7  # a later kernel: the views follow
    check("trace_buffers['payload'][0] after a later write", int(buffers["payload"][0]), 7)


def test_views_cannot_be_replaced_or_edited_as_attributes(owner):
    tracing = Tracing(owner)
    tracing.enable(2)
    check_raises(AttributeError, lambda: setattr(tracing, "trace_counter", torch.zeros(1)))
    check_raises(AttributeError, lambda: setattr(tracing, "trace_buffers", {}))
    buffers = tracing.trace_buffers

    def assign():
        buffers["pid"] = torch.zeros(2)

    def delete():
        del buffers["pid"]

    check_raises(TypeError, assign, mentions=["does not support item assignment"])
    check_raises(TypeError, delete, mentions=["does not support item deletion"])
    check("trace_buffers keys after the attempts", list(tracing.trace_buffers), list(TRACE_FIELDS))
