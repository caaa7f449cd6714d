"""Rank processes under compute-sanitizer (CUDA): the four tools, how each runs, and what each reported.

A pool started with ``sanitizer=<tool>`` spawns every rank through a wrapper that runs it under that tool, logging to
one file per rank and tool. After each job the rank reads what the tool appended to its log: a finding of ours fails
the job, quoting the tool's own lines, so the case that did it is the case that fails; a finding that is not ours
(below) is written beside the log, and the run lists it with the tool's own words. Each tool's options, environment
and report markers are one table, ``TOOLS``; :func:`parse` reads a log by it.

What each tool checks (NVIDIA's Compute Sanitizer documentation; the tools are run one at a time, each by its own
``--tool``):

* ``memcheck``: out-of-bounds and misaligned accesses to global, local and shared memory, hardware exceptions,
  device-side malloc/free errors, failing CUDA API calls ("Program hit ..."); leaks only with ``--leak-check full``.
  A report starts "Invalid __global__ write of size 4 bytes", then indented "at <kernel>+0x.. in <file>:<line>",
  "by thread (x,y,z) in block (x,y,z)", "Address 0x... is out of bounds"; the process ends with
  "ERROR SUMMARY: N errors".
* ``racecheck``: data-access hazards on *shared* memory only (RAW, WAR, WAW between threads of a block; global
  memory races are not its business). Its analysis reports read "Error: Race reported between Write access at
  ... / and Read access at ... [N hazards]" (the first word is the severity, ERROR or WARNING); hazard reports
  "Error: Potential WAW hazard detected at __shared__ 0x0 in block (0,0,0) :"; its summary is
  "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)". Warnings count here: the documentation says
  warp-synchronous hazards must be fixed on GPUs since Volta, where a warp's threads are not in lock-step.
* ``synccheck``: illegal use of ``__syncthreads``/``__syncwarp``-class barriers (and warpgroup MMA sequences on
  Hopper): "Barrier error detected. Divergent thread(s) in block" (or "in warp", "Invalid arguments"); it destroys
  the context; summary "ERROR SUMMARY: N errors".
* ``initcheck``: reads of device *global* memory that was never written in this process, by a kernel
  ("Uninitialized __global__ memory read of size 4 bytes", then "at ...", "by thread ...", "Address 0x...") or by a
  memcpy/memset API call (``--check-api-memory-access``, on by default); summary "ERROR SUMMARY: N errors".

How the project stays clean under them, and what is not ours:

* torch's caching allocator packs many tensors into one ``cudaMalloc`` segment, so memcheck cannot see a tensor's
  end and initcheck sees a reused block as written by its previous tensor: memcheck and initcheck ranks run with
  ``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` (every tensor its own ``cudaMalloc``, torch's switch for debugging memory
  errors; it also keeps expandable segments, which memcheck misreads, out of the way).
* Buffers that kernels or copies read are initialized: the symmetric heap starts zeroed, and the trace records are
  allocated zeroed (the read-back copies every claimed slot whole, holes included).
* initcheck does not support IPC allocations: it reports reads of memory mapped from another process as
  uninitialized (the release notes' known limitations). A rank of a world of 2 or more reads its peers' heaps
  through IPC mappings, which their owners zeroed; such a report, one whose address lies in peer memory this rank
  mapped (:func:`iris.ipc.peer_ranges`), is not ours: it is listed, counted, with the tool's words and the reason,
  and fails nothing. For it to be seen at all, initcheck prints every report (``--print-limit 0``); the other tools
  stop after ``PRINT_LIMIT``, and a finding of theirs replaces the rank (a new process, a new count).
* Under initcheck, the kernels of two ranks that read and write each other's memory at the same time hung: on one
  H100 GPU shared by both ranks, a kernel with no loop (eight iris ops on a peer, traced or not) never finished,
  every time; the same kernels launched one rank after the other passed, as they pass at once under no tool. So
  under initcheck the ranks' kernels run in turn (``Tool.ranks_in_turn``, :func:`ranks_in_turn`: rank 0's, then
  rank 1's, ..., a barrier between), and a scenario whose kernels wait for a peer's (``Scenario.waits_on_peers``),
  which cannot run in turn, is skipped there at 2 ranks or more, saying why.
* memcheck does not report failing CUDA API calls (``--report-api-errors no``): every CUDA call of a rank is checked
  by its caller (torch and Triton raise, :mod:`iris.ipc` raises ``IpcError``), so one that fails already fails its
  job with its own message; what the tool would add is the calls a library makes expecting them to fail and handles
  (probing driver entry points: ``cuGetProcAddress`` under CUDA 13). A "Program hit ..." line still counts.
* Leak checking stays off (memcheck's default): leaks are reported when the context is destroyed, at process exit,
  after the last job, where no case could own them, and a rank replaced for a failure never destroys its context.
* Only the rank process is checked (``--target-processes application-only``): what it starts (the compiler and
  assembler behind Triton's JIT) runs no kernel. Backtraces are the device's only (``--show-backtrace device``):
  the kernel, offset and source line of each report; host frames of a Python process add length, not location.
* The tool writes its log itself; a report written after the rank read its log for a job is quoted by that rank's
  next job (the rank synchronizes its device before reading, so the job's kernels are done).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

TOOL = "compute-sanitizer"
CUDA_DEFAULT = "/usr/local/cuda"  # where CUDA installs itself when CUDA_HOME is not set
LOG_ENV = "IRIS_SANITIZER_LOG"  # set in a sanitized rank (by the wrapper, before the tool starts): its log file
TOOL_ENV = "IRIS_SANITIZER_TOOL"  # likewise: the tool it runs under
PREFIX = "========="  # the tool's default --prefix: it starts every line it writes
PRINT_LIMIT = 20  # reports a tool prints per process, but initcheck (module docstring)
QUOTED_LINES = 40  # of a job's reports, the lines a failure quotes
NOT_OURS_SUFFIX = ".not-ours.jsonl"  # beside a rank's log: the reports that are not ours, one JSON object a line
_COUNT = r"(?P<count>\d[\d,]*)"


@dataclass(frozen=True)
class Tool:
    """One compute-sanitizer tool (the module docstring says what each checks): the options and environment it runs
    with, and the first lines of its reports (``reports``: kind -> regular expression, from its documentation)."""

    name: str
    options: tuple[str, ...]
    reports: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)
    peer_memory_unsupported: str = ""  # why a report on memory mapped from a peer is the tool's false positive
    ranks_in_turn: str = ""  # why the ranks' kernels run one rank at a time under it ("": all ranks at once)


_NO_CACHING = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
_COMMON_OPTIONS = ("--target-processes", "application-only", "--show-backtrace", "device")
# Every tool: its own errors, and what an API call that failed looks like.
_COMMON_REPORTS = {"tool error": r"(Internal Sanitizer Error|Error: )",
                   "CUDA API error": r"Program hit "}
_BARRIER_OVERFLOW = r"Warning: Detected overflow of tracked cuda::barrier"  # "Results might be incorrect"
_INFORMATIONAL = (r"COMPUTE-SANITIZER$",)  # the banner; a summary counting nothing is informational too
_SUMMARY = re.compile(rf"(ERROR|RACECHECK|LEAK) SUMMARY: {_COUNT}\b")
# the address a report names: "Address 0x.." (the documentation's examples), "Access at 0x.." / "Access to 0x.." (newer
# releases), "Uninitialized access at 0x.." (an API call's)
_ADDRESS = re.compile(r"\b(?:Address|[Aa]ccess (?:at|to)) (0x[0-9a-fA-F]+)")

TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("memcheck",
         ("--print-limit", str(PRINT_LIMIT), "--report-api-errors", "no"),
         {"invalid memory access": r"Invalid __\w+__ ",
          "invalid shared or local address": r"(Misaligned|Out-of-range) Shared or Local Address",
          "hardware exception": r"(Warp|Lane|Device|Hardware) \w",
          "malloc/free error": r"Malloc/Free error",
          "leak": r"Leaked \d",
          "tensor memory error": r"Tensor Memory "},
         env=_NO_CACHING),
    Tool("racecheck",
         ("--print-limit", str(PRINT_LIMIT), "--racecheck-report", "analysis"),
         {"shared-memory race": r"(Error|Warning): Race reported between",
          "shared-memory hazard": r"(Error|Warning): (\(.*\) )?Potential (RAW|WAR|WAW) hazard detected",
          "cluster shared-memory access": r"Potential invalid __shared__ ",
          "barrier tracking overflow": _BARRIER_OVERFLOW}),
    Tool("synccheck",
         ("--print-limit", str(PRINT_LIMIT)),
         {"barrier error": r"Barrier error detected",
          "warpgroup MMA sequence error": r"Warpgroup MMA sequence error detected",
          "barrier tracking overflow": _BARRIER_OVERFLOW}),
    Tool("initcheck",
         ("--print-limit", "0"),
         {"uninitialized read": r"Uninitialized __\w+__ memory read",
          "uninitialized access": r".*\buninitialized\b",
          "unused memory": r"Unused __\w+__ memory"},
         env=_NO_CACHING,
         peer_memory_unsupported="initcheck does not support IPC allocations (its documented limitation): it reports "
                                 "reads of peer memory mapped into this rank as uninitialized; their owner zeroed "
                                 "them",
         ranks_in_turn="kernels of two ranks that accessed each other's memory at the same time hung under it (ranks "
                       "sharing one GPU; kernels without a loop never finished), and the same kernels run one rank "
                       "after the other passed; peer memory is IPC memory, which initcheck does not support"),
)}
DEFAULT_TOOL = "memcheck"  # what ``--sanitize`` alone and ``sanitizer=True`` run


class SanitizerUnavailable(RuntimeError):
    """A sanitizer was asked for where it cannot run (no tool, or not a CUDA build)."""


def tool_name(sanitizer: bool | str) -> str:
    """The tool a ``sanitizer`` argument asks for: "" for none (False, ""), ``DEFAULT_TOOL`` for True, or a name of
    ``TOOLS``; ValueError naming the choices otherwise."""
    if sanitizer is False or sanitizer == "":
        return ""
    if sanitizer is True:
        return DEFAULT_TOOL
    if isinstance(sanitizer, str) and sanitizer in TOOLS:
        return sanitizer
    raise ValueError(f"sanitizer={sanitizer!r}; expected False, True ({DEFAULT_TOOL}) or one of {', '.join(TOOLS)}")


def find_tool() -> str:
    """Path of ``compute-sanitizer``: on PATH, in ``$CUDA_HOME/bin`` or in ``/usr/local/cuda/bin``."""
    import torch

    if torch.version.hip:
        raise SanitizerUnavailable("--sanitize is not available on ROCm: compute-sanitizer checks CUDA programs only")
    candidates = [shutil.which(TOOL)]
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), CUDA_DEFAULT):
        if root:
            candidates.append(os.path.join(root, "bin", TOOL))
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise SanitizerUnavailable(
        f"{TOOL} not found on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin: install the CUDA toolkit, put its "
        "bin folder on PATH or set CUDA_HOME"
    )


def options(tool: str) -> list[str]:
    """The tool's options before ``--log-file``: ``--tool <tool>``, the options of every tool, then its own."""
    return ["--tool", tool, *_COMMON_OPTIONS, *TOOLS[tool].options]


def wrapper_text(tool: str, executable: str, python: str, log_dir: str) -> str:
    """The shell script that runs ``python`` under ``tool`` (see :func:`wrapper`)."""
    exports = {LOG_ENV: f"{shlex.quote(log_dir)}/{tool}-rank-$$.log", TOOL_ENV: tool,
               **{k: shlex.quote(v) for k, v in TOOLS[tool].env.items()}}
    lines = ["#!/bin/sh", *(f"{name}={value}\nexport {name}" for name, value in exports.items())]
    argv = " ".join(shlex.quote(a) for a in [executable, *options(tool)])
    lines.append(f'exec {argv} --log-file "${LOG_ENV}" {shlex.quote(python)} "$@"')
    return "\n".join(lines) + "\n"


def wrapper(python: str, log_dir: str, tool: str = DEFAULT_TOOL) -> str:
    """An executable that runs ``python`` under ``tool`` with one log per process; ranks are spawned through it.

    The wrapper names the log itself (``<tool>-rank-<wrapper pid>.log``) and exports it as ``LOG_ENV`` (and the tool
    as ``TOOL_ENV``): the rank reads it there. It then becomes the tool (``exec``), so the pool's process handle is
    the tool's, and the rank is the tool's child.
    """
    text = wrapper_text(tool, find_tool(), python, log_dir)
    fd, path = tempfile.mkstemp(prefix=f"iris-sanitize-{tool}-", suffix=".sh", dir=log_dir)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


# -------------------------------------------------------------------------------------------- reading a log


@dataclass
class Report:
    """One report of the tool: its lines as the tool wrote them, the kind its first line is of (``TOOLS``; "" when
    no kind of the table matches: it still counts), and why it is not ours ("" when it is)."""

    lines: list[str]
    kind: str = ""
    not_ours: str = ""

    @property
    def head(self) -> str:
        """The report's first two lines (what and where: the same for the same access by many threads)."""
        return "\n".join(self.lines[:2])


def _text(line: str) -> str:
    """A tool line without its prefix and the one space after it."""
    return line[len(PREFIX):].removeprefix(" ")


def _kind(tool: str, text: str) -> str:
    for kind, pattern in (TOOLS[tool].reports | _COMMON_REPORTS).items():
        if re.match(pattern, text, re.IGNORECASE):
            return kind
    return ""


def _informational(text: str) -> bool:
    summary = _SUMMARY.match(text)
    if summary:
        return int(summary["count"].replace(",", "")) == 0
    return any(re.match(p, text) for p in _INFORMATIONAL)


def parse(text: str, tool: str, peer_memory: Sequence[tuple[int, int]] = ()) -> list[Report]:
    """The reports in ``text`` (lines the tool wrote, each starting with ``PREFIX``), in order.

    A report starts at an unindented line that is not informational (the banner, a summary that counts nothing) and
    runs over the indented lines after it, to a bare ``PREFIX`` line or the next report. An unindented line that no
    kind of the tool's table knows is a report too: output the table cannot read is never taken for a clean run. A
    summary counting a finding is a report. A report of a tool that cannot check peer memory
    (``Tool.peer_memory_unsupported``) whose address lies in ``peer_memory`` ((start, bytes) ranges) is not ours.
    """
    reports: list[Report] = []
    current: Report | None = None
    for line in text.splitlines():
        if not line.startswith(PREFIX):
            continue
        body = _text(line)
        if not body.strip():
            current = None
        elif body[0].isspace():
            if current is not None:
                current.lines.append(line)
        elif _informational(body):
            current = None
        else:
            current = Report([line], _kind(tool, body) or ("summary" if _SUMMARY.match(body) else ""))
            reports.append(current)
    why = TOOLS[tool].peer_memory_unsupported
    if why and peer_memory:
        for report in reports:
            if report.kind != "summary" and _in_peer_memory(report.lines, peer_memory):
                report.not_ours = why
    return reports


def _in_peer_memory(lines: Iterable[str], ranges: Sequence[tuple[int, int]]) -> bool:
    addresses = [int(m.group(1), 16) for line in lines for m in _ADDRESS.finditer(line)]
    return bool(addresses) and all(any(start <= a < start + size for start, size in ranges) for a in addresses)


def _new_lines(path: str, offset: int) -> tuple[str, int]:
    """The whole lines written to ``path`` after byte ``offset`` ("" when none, or no file yet) and the offset past
    them: a line still being written is read next time."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return "", offset
    end = data.rfind(b"\n") + 1
    return data[:end].decode(errors="replace"), offset + end


def new_reports(log: str, offset: int, tool: str,
                peer_memory: Sequence[tuple[int, int]] = ()) -> tuple[list[Report], int]:
    """The reports the tool appended to ``log`` after byte ``offset`` (:func:`parse`), and the new offset."""
    text, offset = _new_lines(log, offset)
    return parse(text, tool, peer_memory), offset


def quote(reports: Sequence[Report], tool: str, log: str) -> str:
    """What a job's failure says of ``reports`` (ours): how many of which kind, then their first lines."""
    kinds = Counter(r.kind or "line the marker table does not know" for r in reports)
    said = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    lines = [line for r in reports for line in r.lines]
    more = f"\n... and {len(lines) - QUOTED_LINES} more lines in the log" if len(lines) > QUOTED_LINES else ""
    return f"compute-sanitizer {tool} reported {said} (rank log {log}):\n" + "\n".join(lines[:QUOTED_LINES]) + more


def note_not_ours(log: str, tool: str, reports: Sequence[Report]) -> None:
    """Append ``reports`` (not ours) beside ``log``, one JSON object per distinct head: tool, why, report, count."""
    if not reports:
        return
    counts = Counter((r.not_ours, r.head) for r in reports)
    with open(log + NOT_OURS_SUFFIX, "a") as f:
        for (why, head), n in counts.items():
            f.write(json.dumps({"tool": tool, "why": why, "report": head, "count": n}) + "\n")


def new_not_ours(path: str, offset: int) -> tuple[list[dict], int]:
    """The entries :func:`note_not_ours` appended to ``path`` (a log's ``NOT_OURS_SUFFIX`` file) after byte
    ``offset``, and the new offset."""
    text, offset = _new_lines(path, offset)
    return [json.loads(line) for line in text.splitlines()], offset


def merge_not_ours(entries: Iterable[dict]) -> list[dict]:
    """Entries of :func:`note_not_ours` with the same tool, why and report added up, in first-seen order."""
    merged: dict[tuple[str, str, str], dict] = {}
    for e in entries:
        key = (e["tool"], e["why"], e["report"])
        if key in merged:
            merged[key]["count"] += e["count"]
        else:
            merged[key] = dict(e)
    return list(merged.values())


def own_log() -> str | None:
    """This rank's log file when it runs under a tool (the wrapper names it in ``LOG_ENV``)."""
    return os.environ.get(LOG_ENV) or None


def own_tool() -> str:
    """The tool this rank runs under (the wrapper names it in ``TOOL_ENV``; memcheck when it does not say)."""
    return os.environ.get(TOOL_ENV) or DEFAULT_TOOL


def ranks_in_turn() -> str:
    """Why this rank's kernels run in turn with its peers' (``Tool.ranks_in_turn`` of the tool it runs under); ""
    when it runs under none, or under one that lets ranks run at once."""
    tool = os.environ.get(TOOL_ENV, "")
    return TOOLS[tool].ranks_in_turn if tool in TOOLS else ""


def peer_memory() -> tuple[tuple[int, int], ...]:
    """Peer memory this process mapped (``iris.ipc.peer_ranges``), or none when it never used IPC."""
    ipc = sys.modules.get("iris.ipc")
    return ipc.peer_ranges() if ipc is not None else ()
