"""GPU memory per process (NVML): what the gpu tier's fault tests check, and what a world that ran out of GPU memory
reports about who held it."""

from __future__ import annotations

from collections.abc import Callable, Mapping

MIB = 1 << 20


def bytes_by_pid() -> dict[int, int]:
    """GPU memory held by each process using the GPUs (NVML: ``pynvml``, ImportError without it)."""
    import pynvml

    pynvml.nvmlInit()
    try:
        held: dict[int, int] = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                held[proc.pid] = held.get(proc.pid, 0) + (proc.usedGpuMemory or 0)
        return held
    finally:
        pynvml.nvmlShutdown()


def command_line(pid: int) -> str:
    """The command line of ``pid`` (``?`` once it has ended)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip() or "?"
    except OSError:
        return "?"


def holders(held: Mapping[int, int], command: Callable[[int], str] = command_line, limit: int = 12) -> str:
    """Who holds GPU memory, largest first: a line per process (pid, MiB, command line, cut at 100 characters), at
    most ``limit``, then the number and total of all."""
    rows = sorted(held.items(), key=lambda kv: (-kv[1], kv[0]))
    lines = [f"  pid {pid}: {b // MIB} MiB: {command(pid)[:100]}" for pid, b in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"  ... {len(rows) - limit} more")
    lines.append(f"  {len(rows)} processes, {sum(held.values()) // MIB} MiB in all")
    return "\n".join(lines)


def out_of_memory_note() -> str:
    """What an out-of-memory failure adds: who held GPU memory just after it (or why that is unknown)."""
    try:
        return "GPU memory just after, by process:\n" + holders(bytes_by_pid(), command_line)
    except Exception as e:  # no NVML, or the driver did not answer: say so, the failure itself stands
        return f"GPU memory by process unknown: {type(e).__name__}: {e}"
