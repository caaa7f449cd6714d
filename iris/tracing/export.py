"""Chrome/Perfetto JSON export of trace records.

``ts`` and ``dur`` are microseconds. Ranges are ``X`` events, instants ``i`` events, ranges that
never ended are instants flagged ``unfinished``. One process per rank (``pid`` = rank, named
"rank N"), one thread per program (``tid`` = linear program id). A merged file aligns ranks on a
clock reference each rank reads right after a common barrier.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import triton
import triton.language as tl

from iris.tracing import hw
from iris.tracing.records import KIND_INSTANT, KIND_RANGE, TraceRecords
from iris.world import gather_or_raise

_ARGS = ("target_rank", "address", "payload_size", "payload", "op_index", "pid_m", "pid_n", "cu_id", "xcc_id")


@triton.jit
def _read_clock(out):
    tl.store(out, hw.timestamp())


def device_clock(device: torch.device) -> int:
    """The device's trace clock now, in raw ticks (the same clock kernels record)."""
    out = torch.zeros(1, dtype=torch.int64, device=device)
    _read_clock[(1,)](out)
    return int(out.cpu()[0])


def clock_reference(owner) -> int:
    """Collective: barrier, then this rank's device clock (ranks read it at about the same instant)."""
    owner.barrier()
    return device_clock(owner.device)


def _check_writable(path: Path) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise IsADirectoryError(f"trace export path {str(path)!r} is a directory; give a file name such as trace.json")
    if not parent.is_dir():
        raise FileNotFoundError(f"cannot write trace to {str(path)!r}: folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise PermissionError(f"cannot write trace to {str(path)!r}: folder {str(parent)!r} is not writable")


def chrome_events(records: TraceRecords, origin_ticks: int, label: str | None = None) -> list[str]:
    """JSON strings of ``records``' events, times relative to ``origin_ticks``; ``label`` names the process."""
    c = records.columns
    us_per_tick = 1e6 / records.ticks_per_second
    ts = ((c["timestamp"] - origin_ticks) * us_per_tick).tolist()
    dur = np.maximum(c["duration_cycles"], 0) * us_per_tick
    names = records.names()
    kind = c["kind"].tolist()
    pid = c["pid"].tolist()
    args = [c[a].tolist() for a in _ARGS]
    rank = records.rank
    out = [
        json.dumps({"name": "process_name", "ph": "M", "pid": rank, "args": {"name": label or f"rank {rank}"}}),
        json.dumps({"name": "process_sort_index", "ph": "M", "pid": rank, "args": {"sort_index": rank}}),
    ]
    # One %-template per kind, filled from zipped columns: no per-field work per event.
    head = '{"name": "%s", "cat": "iris", "pid": ' + str(rank) + ', "tid": %d, "ts": %.3f, '
    fields = ", ".join(f'"{k}": %d' for k in _ARGS)
    templates = {
        KIND_RANGE: head + '"ph": "X", "dur": %.3f, "args": {' + fields + "}}",
        KIND_INSTANT: head + '"ph": "i", "s": "t", "args": {' + fields + "}}",
    }
    unfinished = head + '"ph": "i", "s": "t", "args": {' + fields + ', "unfinished": true}}'
    for row in zip(kind, names, pid, ts, dur.tolist(), *args, strict=True):
        k = row[0]
        if k == KIND_RANGE:
            out.append(templates[KIND_RANGE] % row[1:])
        else:
            out.append((templates[KIND_INSTANT] if k == KIND_INSTANT else unfinished) % (row[1:4] + row[5:]))
    return out


def write_chrome_trace(path, per_rank: list[tuple]) -> str:
    """Write ``(records, origin_ticks[, label])`` of one or more ranks to ``path`` atomically; returns the path."""
    path = Path(path)
    _check_writable(path)
    lines: list[str] = []
    for records, origin, *label in per_rank:
        lines.extend(chrome_events(records, origin, *label))
    first = per_rank[0][0]
    metadata = {
        "backend": first.backend,
        "ticks_per_second": first.ticks_per_second,
        "ranks": [r[0].rank for r in per_rank],
        "events": {str(r[0].rank): len(r[0]) for r in per_rank},
        "dropped": {str(r[0].rank): r[0].dropped for r in per_rank},
        "clock_origin_ticks": {str(r[0].rank): int(r[1]) for r in per_rank},
    }
    fd, tmp = tempfile.mkstemp(prefix=".trace-", suffix=".json", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the trace ordinary file permissions
    try:
        with os.fdopen(fd, "w") as f:
            f.write('{"displayTimeUnit": "ns", "metadata": ')
            f.write(json.dumps(metadata))
            f.write(', "traceEvents": [\n')
            f.write(",\n".join(lines))
            f.write("\n]}\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return str(path)


def export_ranks(owner, records: TraceRecords, path, merge: bool) -> str:
    """Export this rank's records, or (merge, collective) every rank's from rank 0."""
    if not merge:
        origin = int(records["timestamp"].min()) if len(records) else 0
        return write_chrome_trace(path, [(records, origin)])
    gather_or_raise(owner.group, owner.num_ranks, "trace export: checking the path",
                    lambda: _check_writable(Path(path)) if owner.rank == 0 else None)
    reference = clock_reference(owner)
    gathered: list = [None] * owner.num_ranks
    dist.all_gather_object(gathered, (records, reference), group=owner.group)
    # Each rank's times are measured from its own barrier reference; then one common shift makes them >= 0.
    starts = [int(r["timestamp"].min()) - ref for r, ref in gathered if len(r)]
    shift = min(starts, default=0)
    gather_or_raise(owner.group, owner.num_ranks, "trace export: writing the merged file",
                    lambda: write_chrome_trace(path, [(r, ref + shift) for r, ref in gathered]) if owner.rank == 0
                    else None)
    return str(path)
