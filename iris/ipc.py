"""GPU inter-process memory handles: the one place where CUDA and HIP IPC differ.

A rank exports its heap as ``(handle, offset)``: the 64-byte IPC handle of the device allocation that holds
the heap and the heap's byte offset inside that allocation (torch's caching allocator may place the heap
anywhere in a larger segment). A peer opens the handle **with its own device current** and adds the offset.
Opening in the local device's context is what makes a peer heap on another GPU addressable from the local
GPU's kernels (lazy peer access); torch's own rebuild of a shared tensor opens it in the *exporting* device's
context, and a kernel on another GPU then faults on that address.

The runtime library is the one torch already loaded (libcudart for CUDA, libamdhip64 for ROCm), found in
this process's memory map, so handles and contexts are those of the torch build.

    handle, offset = runtime.export(ptr)                # owner
    base = runtime.open(handle, device_index)           # every peer, its own device current
    peer_heap = base + offset ... runtime.close(base)   # peer, before the owner frees the heap
"""

from __future__ import annotations

import ctypes
import glob
import os
from dataclasses import dataclass
from functools import cache

__all__ = ["HANDLE_BYTES", "IpcError", "IpcRuntime", "note_peer_range", "peer_ranges", "runtime_for"]

HANDLE_BYTES = 64  # sizeof(cudaIpcMemHandle_t) == sizeof(hipIpcMemHandle_t)
_LAZY_ENABLE_PEER_ACCESS = 1  # cudaIpcMemLazyEnablePeerAccess == hipIpcMemLazyEnablePeerAccess
_PEER_RANGES: dict[int, int] = {}  # start -> bytes: peer memory this process used through opened handles


class IpcError(RuntimeError):
    """A GPU IPC call failed (the message names the call, its error code and name)."""


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


@dataclass(frozen=True)
class _Api:
    """Names of one backend's runtime library and entry points."""

    backend: str
    library: str  # file-name prefix of the runtime library
    get_handle: str
    open_handle: str
    close_handle: str
    set_device: str
    address_range: str  # base and size of the allocation holding a pointer
    error_name: str


_APIS = {
    "cuda": _Api("cuda", "libcudart", "cudaIpcGetMemHandle", "cudaIpcOpenMemHandle", "cudaIpcCloseMemHandle",
                 "cudaSetDevice", "cuMemGetAddressRange_v2", "cudaGetErrorName"),
    "hip": _Api("hip", "libamdhip64", "hipIpcGetMemHandle", "hipIpcOpenMemHandle", "hipIpcCloseMemHandle",
                "hipSetDevice", "hipMemGetAddressRange", "hipGetErrorName"),
}


def _loaded_library(prefix: str) -> str | None:
    """Path of the library named ``prefix*.so*`` mapped into this process (the one torch loaded), if any."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if os.path.basename(path).startswith(prefix + ".so") or os.path.basename(path).startswith(prefix + "-"):
                    return path
    except OSError:
        pass
    return None


def _library_path(prefix: str) -> str:
    """The runtime library of the torch build: mapped already, else next to torch or in its nvidia packages."""
    found = _loaded_library(prefix)
    if found:
        return found
    import torch

    roots = [os.path.join(os.path.dirname(torch.__file__), "lib"), os.path.dirname(os.path.dirname(torch.__file__))]
    for root in roots:
        hits = sorted(glob.glob(os.path.join(root, "**", f"{prefix}.so*"), recursive=True))
        if hits:
            return hits[0]
    raise IpcError(
        f"iris IPC: cannot find the GPU runtime library {prefix}.so: it is not loaded in this process and not under "
        f"{' or '.join(roots)}. Initialise the device with torch first (torch.cuda.init()), or put the library of "
        "the torch build on LD_LIBRARY_PATH."
    )


class IpcRuntime:
    """IPC handles through one backend's runtime library (see the module docstring)."""

    def __init__(self, api: _Api, path: str | None = None) -> None:
        self.api = api
        self.path = path or _library_path(api.library)
        lib = ctypes.CDLL(self.path)
        self._get = getattr(lib, api.get_handle)
        self._get.argtypes = [ctypes.POINTER(_Handle), ctypes.c_void_p]
        self._open = getattr(lib, api.open_handle)
        self._open.argtypes = [ctypes.POINTER(ctypes.c_void_p), _Handle, ctypes.c_uint]
        self._close = getattr(lib, api.close_handle)
        self._close.argtypes = [ctypes.c_void_p]
        self._set_device = getattr(lib, api.set_device)
        self._set_device.argtypes = [ctypes.c_int]
        self._error_name = getattr(lib, api.error_name)
        self._error_name.restype = ctypes.c_char_p
        # CUDA keeps allocation ranges in the driver API; HIP has them in its runtime.
        range_lib = ctypes.CDLL("libcuda.so.1") if api.backend == "cuda" else lib
        self._range = getattr(range_lib, api.address_range)
        self._range.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p]
        self.open_count = 0  # handles opened and not yet closed by this process

    def _check(self, code: int, call: str) -> None:
        if code == 0:
            return
        driver_call = self.api.backend == "cuda" and not call.startswith("cuda")
        name = "a CUresult" if driver_call else (self._error_name(code) or b"?").decode()
        raise IpcError(f"iris IPC: {call} failed with error {code} ({name})")

    def export(self, ptr: int) -> tuple[bytes, int]:
        """``(handle, offset)`` of device pointer ``ptr``: the allocation's IPC handle and ``ptr``'s offset in it."""
        base, size = ctypes.c_void_p(), ctypes.c_size_t()
        self._check(self._range(ctypes.byref(base), ctypes.byref(size), ctypes.c_void_p(ptr)), self.api.address_range)
        handle = _Handle()
        self._check(self._get(ctypes.byref(handle), base), self.api.get_handle)
        return bytes(handle), ptr - (base.value or 0)  # all 64 bytes; .reserved would stop at a NUL

    def open(self, handle: bytes, device_index: int) -> int:
        """Map a peer's allocation into this process with GPU ``device_index`` current; returns its base address."""
        if len(handle) != HANDLE_BYTES:
            raise ValueError(f"iris IPC: a handle is {HANDLE_BYTES} bytes, got {len(handle)}")
        self._check(self._set_device(device_index), self.api.set_device)
        ptr = ctypes.c_void_p()
        self._check(self._open(ctypes.byref(ptr), _Handle.from_buffer_copy(handle), _LAZY_ENABLE_PEER_ACCESS),
                    self.api.open_handle)
        self.open_count += 1
        return ptr.value or 0

    def close(self, base: int) -> None:
        """Unmap an allocation opened by :meth:`open`."""
        self._check(self._close(ctypes.c_void_p(base)), self.api.close_handle)
        self.open_count -= 1


@cache
def runtime_for(backend: str) -> IpcRuntime:
    """The IPC runtime of ``backend`` ("cuda" or "hip"), loaded once per process."""
    if backend not in _APIS:
        raise ValueError(f"iris IPC: backend={backend!r}, expected one of {sorted(_APIS)}")
    return IpcRuntime(_APIS[backend])


def note_peer_range(start: int, nbytes: int) -> None:
    """Record that this process uses ``nbytes`` of peer memory at ``start`` (an opened handle's address plus an
    offset), for :func:`peer_ranges`."""
    _PEER_RANGES[start] = max(nbytes, _PEER_RANGES.get(start, 0))


def peer_ranges() -> tuple[tuple[int, int], ...]:
    """``(start, bytes)`` of the peer memory this process has used (:func:`note_peer_range`), closed mappings included:
    what a sanitizer reports after a job may name memory unmapped since (``iris.ranks.sanitizer``)."""
    return tuple(sorted(_PEER_RANGES.items()))
