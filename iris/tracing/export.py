"""Trace export: choose the format, align the ranks' clocks, write the file atomically.

Formats (``WRITERS``, by name and suffix; one module each): Chrome/Perfetto JSON (``*.json``, ``chrome_json``)
for chrome://tracing and older tools, and binary Perfetto (``*.pftrace``, ``pftrace``); both write the same
``timeline``. A merged export
(collective) aligns the ranks on a clock reference: after a barrier every rank reads its device clock,
and each rank's times are measured from its own read. How far apart the reads can be is bounded by the
host's monotonic clock around them (``alignment``), and the method and the bound go into the file's
metadata (``clock_alignment``).
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import torch
import torch.distributed as dist
import triton
import triton.language as tl

from iris.checks import is_int
from iris.tracing import chrome_json, hw, pftrace, timeline
from iris.tracing.records import TraceRecords
from iris.tracing.timeline import RankTrace
from iris.world import gather_or_raise


@triton.jit
def _read_clock(out):
    tl.store(out, hw.timestamp())


def device_clock(device: torch.device) -> int:
    """The device's trace clock now, in raw ticks (the same clock kernels record).

    On the CPU that clock is the host's monotonic clock (``hw.timestamp`` under the interpreter), read directly:
    running an interpreted kernel to read it costs milliseconds.
    """
    if device.type == "cpu":
        return time.monotonic_ns()
    out = torch.zeros(1, dtype=torch.int64, device=device)
    _read_clock[(1,)](out)
    return int(out.cpu()[0])


def compile_device_clock() -> None:
    """Compile ``device_clock``'s kernel into Triton's cache without running it (a GPU process that reads the
    clock later then only loads it)."""
    _read_clock.warmup(torch.zeros(1, dtype=torch.int64), grid=(1,))


@dataclass(frozen=True)
class ClockReference:
    """A rank's device clock read after a barrier, and the host monotonic clock (ns) just before and after."""

    ticks: int
    host_before_ns: int
    host_after_ns: int


def clock_reference(owner) -> ClockReference:
    """Collective: barrier, then this rank's device clock (ranks read it at about the same instant)."""
    owner.barrier()
    before = time.monotonic_ns()
    ticks = device_clock(owner.device)
    return ClockReference(ticks, before, time.monotonic_ns())


ALIGNMENT_METHOD = ("barrier, then each rank reads its device clock; each rank's times are measured from its "
                    "own read, so the ranks line up at that read")
BOUND_METHOD = ("latest end minus earliest start of the reads, on the host monotonic clock (valid for ranks "
                "on one host): two ranks' reads, and so their aligned times, differ by at most this")


def alignment(refs: list[ClockReference], traces: list[RankTrace]) -> dict:
    """The ``clock_alignment`` metadata of a merged export: method, error bound (ns) and each rank's read."""
    first = min(r.host_before_ns for r in refs)
    return {
        "method": ALIGNMENT_METHOD,
        "error_bound_ns": max(r.host_after_ns for r in refs) - first,
        "error_bound": BOUND_METHOD,
        "reads_host_ns": {t.name: [r.host_before_ns - first, r.host_after_ns - first]
                          for r, t in zip(refs, traces, strict=True)},
    }


def trace_path(path) -> Path:
    """``path`` as a ``Path`` if it names a file (a non-empty str or ``os.PathLike``); an error naming it otherwise."""
    name = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(name, str):
        raise TypeError(f"trace export: path={path!r} ({type(path).__name__}); expected a file name, a str or "
                        "os.PathLike, such as 'trace.json'")
    if not name:
        raise ValueError("trace export: path=''; expected a file name such as 'trace.json'")
    return Path(name)


def rank_path(path, rank: int) -> Path:
    """The file of rank ``rank``'s own export to ``path``: ``_rank<rank>`` before the suffix (``trace.json`` ->
    ``trace_rank0.json``, upstream iris's name), so ranks that export to one path never replace each other's file."""
    path = trace_path(path)
    return path.with_name(f"{path.stem}_rank{rank}{path.suffix}")


_NOT_REGULAR = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                (stat.S_ISSOCK, "a socket"))


def _refuse_if_not_a_file(path: Path, name: str) -> None:
    """Refuse a ``path`` that exists and is not a regular file: a folder, or a device or FIFO that the atomic
    rename would replace."""
    if path.is_dir():
        raise IsADirectoryError(f"trace export path {name} is a directory; give a file name such as trace.json")
    try:
        mode = path.stat().st_mode
    except OSError:  # nothing there (or no folder): the folder checks say why
        return
    if not stat.S_ISREG(mode):
        kind = next((k for test, k in _NOT_REGULAR if test(mode)), "not a regular file")
        raise FileExistsError(f"trace export path {name} is {kind}, which the export would replace; give the name "
                              "of a regular file such as trace.json")


def _temp_file(path: Path, name: str) -> tuple[int, str]:
    """A new temporary file next to ``path`` (fd, path); an error naming ``name`` and the folder if it takes none."""
    try:
        return tempfile.mkstemp(prefix=".trace-", suffix=path.suffix, dir=path.parent)
    except OSError as e:
        raise type(e)(f"cannot write trace to {name}: folder {str(path.parent)!r} does not accept new files "
                      f"({e.strerror or e})") from e


def check_writable(path, rank: int | None = None) -> Path:
    """The file an export to ``path`` writes: ``path`` itself, or rank ``rank``'s file (:func:`rank_path`).

    Refuses, before anything is built or written, a target that cannot be written: an error naming the path
    given (and the rank's file) and why. A new file is created in the folder and removed, so a folder that
    takes no new file (``/proc``, a read-only mount) is refused here too, not after the trace is built.
    """
    given = trace_path(path)
    _refuse_if_not_a_file(given, repr(str(given)))
    if rank is None:
        target, name = given, repr(str(given))
    else:
        target = rank_path(given, rank)
        name = f"{str(target)!r} (rank {rank}'s file for {str(given)!r})"
        _refuse_if_not_a_file(target, name)
    folder = target.parent
    if not folder.is_dir():
        if folder.exists():
            raise NotADirectoryError(f"cannot write trace to {name}: {str(folder)!r} is not a folder")
        raise FileNotFoundError(f"cannot write trace to {name}: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"cannot write trace to {name}: folder {str(folder)!r} is not writable")
    fd, probe = _temp_file(target, name)
    os.close(fd)
    os.unlink(probe)
    return target


@dataclass(frozen=True)
class Writer:
    """A trace format: the file suffixes that choose it, ``write(f, timeline, metadata, compress)``, and what its
    metadata says of its times (``time_unit``) and, where it writes upstream's keys, of its events' keys
    (``event_keys``, upstream's ``fields``)."""

    suffixes: tuple[str, ...]
    write: Callable[[IO[bytes], timeline.Timeline, dict, bool], None]
    time_unit: str
    event_keys: dict | None = None


# Every format, by name; one module each. A name whose suffix no writer claims is written as DEFAULT_FORMAT.
WRITERS: dict[str, Writer] = {
    "json": Writer((".json",), lambda f, line, metadata, compress: chrome_json.write(f, line, metadata),
                   chrome_json.TIME_UNIT, chrome_json.EVENT_KEYS),
    "pftrace": Writer((".pftrace", ".perfetto-trace"), pftrace.write, pftrace.TIME_UNIT),
}
# Upstream iris's trace schema: its event ids (iris.tracing.events) and the metadata keys of ``upstream_metadata``.
SCHEMA_VERSION = "1.2"
DEFAULT_FORMAT = "json"  # as before binary export existed
BINARY_SUFFIXES = WRITERS["pftrace"].suffixes


def trace_format(path, format: str | None = None) -> str:
    """``format`` if given (a name of ``WRITERS``); else the format whose suffix ``path`` has, ``DEFAULT_FORMAT``
    for any other name."""
    if format is not None:
        if not isinstance(format, str) or format not in WRITERS:
            raise ValueError(f"trace export: format={format!r}; expected {' or '.join(map(repr, WRITERS))}, or None "
                             "(the path's suffix decides)")
        return format
    suffix = Path(path).suffix.lower()
    return next((name for name, w in WRITERS.items() if suffix in w.suffixes), DEFAULT_FORMAT)


def upstream_metadata(traces: list[RankTrace], writer: Writer, world_size: int | None) -> dict:
    """The metadata keys upstream iris's export writes, where this export can fill them with what they mean there.

    Both files: ``schema_version``, ``world_size`` (``world_size``, by default the ranks in the file),
    ``time_unit`` and ``fields`` (what each key of an event means; JSON only). A file of one process, as upstream's
    per-rank file: ``num_events`` and ``rank``. A file of several, as upstream's merged file: ``total_events`` and,
    where every process has the same, ``max_events``. Not written: ``timestamp_offset`` and ``aligned`` (one
    offset for every rank; here each process has its own origin: ``clock_origin_ticks``, and ``clock_alignment``
    says how they line up), and upstream's description of the host and GPU (``hostname``, ``command_line``,
    ``gpu_*``, ...): it describes the machine, not the trace, and two exports of the same records would differ.
    """
    meta: dict = {"schema_version": SCHEMA_VERSION}
    if len(traces) == 1:
        meta.update(num_events=len(traces[0].records), rank=traces[0].records.rank)
    else:
        meta["total_events"] = sum(len(t.records) for t in traces)
        if len({t.records.max_events for t in traces}) == 1:
            meta["max_events"] = traces[0].records.max_events
    meta["world_size"] = len({t.records.rank for t in traces}) if world_size is None else world_size
    meta["time_unit"] = writer.time_unit
    if writer.event_keys is not None:
        meta["fields"] = writer.event_keys
    return meta


def trace_metadata(traces: list[RankTrace], line: timeline.Timeline, clock: dict | None, writer: Writer,
                   world_size: int | None = None) -> dict:
    """What a reader needs besides the events: upstream's keys (``upstream_metadata``), then this project's: clock,
    origins, counts, drops, the clock alignment."""
    first = traces[0].records
    meta = upstream_metadata(traces, writer, world_size)
    meta.update({
        "backend": first.backend,
        "ticks_per_second": first.ticks_per_second,
        "processes": [t.name for t in traces],
        "events": {t.name: len(t.records) for t in traces},
        "dropped": {t.name: t.records.dropped for t in traces},
        "clock_origin_ticks": {t.name: int(t.origin_ticks) for t in traces},
        "flows": line.flows,
        "clock_alignment": clock or {"method": "none: times of each rank from its own origin", "error_bound_ns": None},
    })
    meta.update(line.metadata)
    return meta


def write_trace(path, traces: list[RankTrace], *, format: str | None = None, flows: bool = True,
                clock: dict | None = None, compress: bool = True, world_size: int | None = None) -> str:
    """Write ``traces`` (one per rank and API) to ``path`` atomically as JSON or binary Perfetto; returns the path.

    ``format``: "json" or "pftrace" (default: from the suffix). ``flows``: arrows from remote ops to their
    target's incoming track. ``clock``: how the ranks' clocks were aligned (goes into the metadata).
    ``compress``: deflate the binary trace's packets. ``world_size``: the ranks of the world the traces come from
    (the metadata's ``world_size``; default: the ranks in ``traces``).
    """
    if world_size is not None and not (is_int(world_size) and world_size >= 1):
        raise ValueError(f"write_trace: world_size={world_size!r}; expected an int >= 1 (or None)")
    fmt = trace_format(trace_path(path), format)
    return _write(check_writable(path), traces, fmt, flows, clock, compress, world_size)


def _write(path: Path, traces: list[RankTrace], fmt: str, flows: bool, clock: dict | None,
           compress: bool = True, world_size: int | None = None) -> str:
    """``write_trace`` to a ``path`` already checked: through a temporary file renamed over ``path`` at the end, so
    a failed write leaves no file behind and an older trace at ``path`` whole."""
    line = timeline.build(traces, flows=flows)
    metadata = trace_metadata(traces, line, clock, WRITERS[fmt], world_size)
    write_atomically(path, lambda f: WRITERS[fmt].write(f, line, metadata, compress))
    return str(path)


def write_atomically(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write`` on a new temporary file next to ``path`` (ordinary file permissions), then rename it over
    ``path``: a failed write leaves no file behind and an older file at ``path`` whole."""
    fd, tmp = _temp_file(path, repr(str(path)))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def export_ranks(owner, events: Callable[[], TraceRecords], path, merge: bool, *, api: str = "triton",
                 format: str | None = None, flows: bool = True) -> str:
    """Export this rank's events (``events()``) to its own file (:func:`rank_path`), or (merge, collective) every
    rank's to ``path`` from rank 0; returns the path written. The path is checked before the events are read."""
    fmt = trace_format(trace_path(path), format)  # a bad name or format fails on every rank, before any collective
    if not merge:
        target = check_writable(path, owner.rank)
        records = events()
        origin = int(records["timestamp"].min()) if len(records) else 0
        clock = {"method": "one rank: times from its first event", "error_bound_ns": 0}
        return _write(target, [RankTrace(records, origin, api)], fmt, flows, clock, world_size=owner.num_ranks)
    gather_or_raise(owner.group, owner.num_ranks, "trace export: checking the path",
                    lambda: check_writable(path) if owner.rank == 0 else None)
    records = events()
    reference = clock_reference(owner)
    gathered: list = [None] * owner.num_ranks
    dist.all_gather_object(gathered, (records, reference), group=owner.group)
    # Each rank's times are measured from its own barrier reference; then one common shift makes them >= 0.
    starts = [int(r["timestamp"].min()) - ref.ticks for r, ref in gathered if len(r)]
    shift = min(starts, default=0)

    def write_merged() -> None:
        traces = [RankTrace(r, ref.ticks + shift, api) for r, ref in gathered]
        _write(trace_path(path), traces, fmt, flows, alignment([ref for _, ref in gathered], traces),
               world_size=owner.num_ranks)

    gather_or_raise(owner.group, owner.num_ranks, "trace export: writing the merged file",
                    lambda: write_merged() if owner.rank == 0 else None)
    return str(trace_path(path))
