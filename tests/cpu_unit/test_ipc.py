"""GPU IPC handles (iris.ipc) on the CPU: library lookup, errors, and the calls made, against a fake runtime.

The fake runtime is a small C library with the HIP entry points (the CUDA table differs only in names and in
taking allocation ranges from the driver library): it records what it receives, so the tests see the handle
bytes passed by value, the device made current before opening, the lazy-peer-access flag and the offset of a
pointer inside its allocation.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

from iris import ipc

pytestmark = pytest.mark.cpu_unit

FAKE_RUNTIME = r"""
#include <string.h>
#include <stdint.h>
typedef struct { char reserved[64]; } handle_t;
int current = -1, opened_on = -1, last_flags = -1, closed = 0;
char last_handle[64];
uintptr_t alloc_base = 0x10000, alloc_size = 0x5000;
int hipSetDevice(int d) { current = d; return d < 0 ? 101 : 0; }
int hipMemGetAddressRange(void **base, size_t *size, void *p) {
  uintptr_t q = (uintptr_t)p;
  if (q < alloc_base || q >= alloc_base + alloc_size) return 1;
  *base = (void *)alloc_base; *size = alloc_size; return 0;
}
int hipIpcGetMemHandle(handle_t *h, void *base) {
  for (int i = 0; i < 64; i++) h->reserved[i] = (char)(i % 4 ? i + (int)((uintptr_t)base >> 12) : 0);
  return 0;
}
int hipIpcOpenMemHandle(void **p, handle_t h, unsigned flags) {
  memcpy(last_handle, h.reserved, 64); opened_on = current; last_flags = (int)flags;
  *p = (void *)0x7000000; return h.reserved[0] == 'X' ? 217 : 0;
}
int hipIpcCloseMemHandle(void *p) { closed++; return 0; }
const char *hipGetErrorName(int code) { return code == 217 ? "hipErrorInvalidHandle" : "hipErrorOther"; }
"""


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler on PATH (cc or gcc) to build the fake GPU runtime")
    folder = tmp_path_factory.mktemp("fake_runtime")
    (folder / "fake.c").write_text(FAKE_RUNTIME)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(folder / "libfake.so"), str(folder / "fake.c")], check=True)
    path = str(folder / "libfake.so")
    return ipc.IpcRuntime(ipc._APIS["hip"], path=path), ctypes.CDLL(path)


def test_export_gives_the_allocation_handle_and_the_offset_inside_it(fake):
    runtime, _ = fake
    handle, offset = runtime.export(0x10000 + 0x1234)
    assert offset == 0x1234, f"offset={offset:#x}, but should be 0x1234"
    expected = bytes(0 if i % 4 == 0 else i + 0x10 for i in range(64))  # NUL bytes inside must survive
    assert handle == expected, f"handle={handle.hex()}, but should be {expected.hex()} (the base's handle)"


def test_open_makes_the_local_device_current_and_passes_the_handle_by_value(fake):
    runtime, lib = fake
    handle = bytes(range(100, 164))[:-8] + bytes(8)  # trailing NULs are part of a handle
    before = runtime.open_count
    base = runtime.open(handle, 3)
    assert base == 0x7000000, f"base={base:#x}, but should be 0x7000000"
    assert ctypes.c_int.in_dll(lib, "opened_on").value == 3, "the handle was not opened with device 3 current"
    assert ctypes.c_int.in_dll(lib, "last_flags").value == 1, "open must ask for lazy peer access (flag 1)"
    received = bytes((ctypes.c_char * 64).in_dll(lib, "last_handle"))
    assert received == handle, f"handle received={received.hex()}, but should be {handle.hex()}"
    assert runtime.open_count == before + 1, f"open_count={runtime.open_count}, but should be {before + 1}"
    runtime.close(base)
    assert runtime.open_count == before, f"open_count={runtime.open_count}, but should be {before} after close"


def test_a_failing_call_names_the_call_and_the_error(fake):
    runtime, _ = fake
    with pytest.raises(ipc.IpcError, match=r"hipIpcOpenMemHandle failed with error 217 \(hipErrorInvalidHandle\)"):
        runtime.open(b"X" * 64, 0)
    with pytest.raises(ipc.IpcError, match=r"hipMemGetAddressRange failed with error 1"):
        runtime.export(0x42)
    with pytest.raises(ValueError, match="a handle is 64 bytes, got 3"):
        runtime.open(b"abc", 0)


def test_unknown_backend_and_missing_library_are_clear_errors():
    with pytest.raises(ValueError, match=r"backend='metal', expected one of \['cuda', 'hip'\]"):
        ipc.runtime_for("metal")
    with pytest.raises(ipc.IpcError, match=r"cannot find the GPU runtime library libiris_no_such_runtime\.so"):
        ipc._library_path("libiris_no_such_runtime")


def test_the_loaded_library_is_found_in_this_process_map():
    path = ipc._loaded_library("libc")
    assert path is not None and "libc" in path, f"libc path={path!r}, but libc is mapped into every process"
    assert ipc._loaded_library("libiris_no_such_runtime") is None


def test_both_backends_name_every_entry_point():
    assert ctypes.sizeof(ipc._Handle) == ipc.HANDLE_BYTES == 64
    for backend, api in ipc._APIS.items():
        prefix = "cuda" if backend == "cuda" else "hip"
        for call in (api.get_handle, api.open_handle, api.close_handle, api.set_device, api.error_name):
            assert call.startswith(prefix), f"{backend}: {call} does not belong to the {prefix} runtime"


def test_peer_memory_in_use_is_remembered_after_it_is_unmapped(monkeypatch):
    """What ``SymmetricHeap`` views of each opened handle: a sanitizer report read after a job may name it."""
    from iris.ranks import sanitizer

    monkeypatch.setattr(ipc, "_PEER_RANGES", {})
    ipc.note_peer_range(0x9000, 0x100)
    ipc.note_peer_range(0x7000, 0x200)
    ipc.note_peer_range(0x9000, 0x80)  # the same start again: the larger extent stays
    assert ipc.peer_ranges() == ((0x7000, 0x200), (0x9000, 0x100))
    assert sanitizer.peer_memory() == ((0x7000, 0x200), (0x9000, 0x100)), "the sanitizer reads the same ranges"
