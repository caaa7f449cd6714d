"""Protobuf wire encoding, written by hand: scalars for the few header messages, numpy columns for events.

Only what a Perfetto trace needs: field keys, varints (uint64; int64 as its two's complement), fixed64
and length-delimited fields. ``Rows`` lays out one message per row as a byte matrix, field by field
(each field a block of columns, and a mask of the bytes in use; kept transposed, so a column is one
contiguous numpy row), and compacts it once (one transpose, one masked copy): encoding N messages costs
a few numpy operations per field, never a Python step per message.
"""

from __future__ import annotations

import threading

import numpy as np

VARINT, FIXED64, LEN = 0, 1, 2
_MAX_VARINT = 10  # bytes of a 64-bit varint


def key(field: int, wire: int) -> bytes:
    """The encoded key of ``field`` with wire type ``wire``."""
    return varint(field << 3 | wire)


def varint(value: int) -> bytes:
    """One varint; a negative int is encoded as its 64-bit two's complement (protobuf ``int64``)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def field_varint(field: int, value: int) -> bytes:
    return key(field, VARINT) + varint(value)


def field_bytes(field: int, data: bytes) -> bytes:
    return key(field, LEN) + varint(len(data)) + data


def field_string(field: int, text: str) -> bytes:
    return field_bytes(field, text.encode())


def field_fixed64(field: int, value: int) -> bytes:
    return key(field, FIXED64) + (value & ((1 << 64) - 1)).to_bytes(8, "little")


_THRESHOLDS = [np.uint64(1 << (7 * k)) for k in range(1, _MAX_VARINT)]


def varint_sizes(values: np.ndarray) -> np.ndarray:
    """Encoded length (1..10) of every value of a uint64 column."""
    values = np.asarray(values).astype(np.uint64, copy=False)
    size = np.ones(values.shape, dtype=np.int64)
    top = values.max(initial=0)
    for t in _THRESHOLDS:
        if top < t:
            break
        size += values >= t
    return size


# A block: a field's bytes in every row, stored transposed as [width, n] (or one [width] column for all
# rows), which of them are in use (None: all; else a bool [width, n] matrix), and the rows that have the
# field at all (None: every row). Transposed, each byte position of a field is one contiguous numpy row.
_Block = tuple[np.ndarray, "np.ndarray | None", "np.ndarray | None"]


def _within(rows: np.ndarray | None, present: np.ndarray | None) -> np.ndarray | None:
    """The rows of ``rows`` that are also ``present``."""
    if present is None or rows is present:
        return rows
    if rows is None:
        return present
    return rows & present


def varint_block(values: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | int]:
    """Varints of a uint64 column as a block: ``(bytes [width, n], used [width, n] or None, size per row)``.

    Byte j holds bits 7j..7j+6 of the value and is in use when some bit at 7j or above is set (byte 0
    always); it carries the continuation bit when the next byte is in use.
    """
    v = np.asarray(values).astype(np.uint64, copy=False)
    width = max(1, -(-int(v.max(initial=0)).bit_length() // 7))
    if width == 1:
        return v.astype(np.uint8)[None, :], None, 1
    data = np.empty((width, len(v)), dtype=np.uint8)
    used = np.empty((width, len(v)), dtype=bool)
    return data, used, _varint_into(v, data, used)


def _varint_into(v: np.ndarray, data: np.ndarray, used: np.ndarray):
    """Varints of uint64 ``v`` written into ``data``/``used`` ([width, n], width enough for the largest value);
    returns the size per row (an int where every row takes the full width)."""
    width = data.shape[0]
    if width == 1:
        data[0] = v
        used[0] = True
        return 1
    used[0] = True
    rest = v.astype(np.uint32) if width <= 4 else v.copy()
    seven = rest.dtype.type(7)
    size = np.ones(len(v), dtype=np.int64)
    for j in range(width):
        data[j] = rest
        if j + 1 < width:
            rest >>= seven
            np.not_equal(rest, 0, out=used[j + 1])
            size += used[j + 1]
    data &= np.uint8(0x7F)
    data[:-1] |= used[1:].view(np.uint8) << 7
    return size


class Scratch:
    """Reusable buffers for ``Rows.encode``, one set per thread: chunk after chunk reuses the same memory
    instead of taking fresh matrices from the allocator, whose first touch faults in every page again."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, name: str, shape: tuple[int, int], dtype) -> np.ndarray:
        """This thread's buffer ``name`` as an uninitialized ``shape`` array of ``dtype``."""
        nbytes = shape[0] * shape[1] * np.dtype(dtype).itemsize
        buf = getattr(self._local, name, None)
        if buf is None or buf.size < nbytes:
            buf = np.empty(nbytes, dtype=np.uint8)
            setattr(self._local, name, buf)
        return buf[:nbytes].view(dtype).reshape(shape)


def _empty(scratch: Scratch | None, name: str, shape: tuple[int, int], dtype) -> np.ndarray:
    return np.empty(shape, dtype=dtype) if scratch is None else scratch.get(name, shape, dtype)


class Rows:
    """N messages of one shape, built field by field as blocks of a (transposed) byte matrix.

    Every ``add_*`` takes an optional ``present`` mask: where it is False the field takes no bytes.
    ``size`` is each row's encoded length so far, which is what a parent needs to wrap it.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self._blocks: list[_Block] = []
        self._sizes: list = []  # per field: (bytes per row: an int or an array, present)

    @property
    def width(self) -> int:
        return sum(data.shape[0] for data, _, _ in self._blocks)

    @property
    def size(self) -> np.ndarray:
        total = np.zeros(self.n, dtype=np.int64)
        constant: dict[int, list] = {}  # fixed-width fields that share a presence mask: their widths summed
        for size, present in self._sizes:
            if present is None:
                total += size
            elif isinstance(size, int):
                constant.setdefault(id(present), [present, 0])[1] += size
            else:
                total += np.where(present, size, 0)
        for present, size in constant.values():
            total += present * size
        return total

    def _add(self, data: np.ndarray, used: np.ndarray | None, size, present: np.ndarray | None) -> None:
        self._blocks.append((data, used, present))
        self._sizes.append((size, present))

    def add_bytes(self, data: bytes, present: np.ndarray | None = None) -> None:
        """The same bytes in every row (a key, or a whole constant field)."""
        if data:
            self._add(np.frombuffer(data, dtype=np.uint8), None, len(data), present)

    def add_raw_varint(self, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """A varint per row (no key): a length prefix or a field's value."""
        v = np.asarray(values).astype(np.uint64, copy=False)
        if present is not None:
            v = np.where(present, v, np.uint64(0))  # absent rows must not widen the block
        self._add(*varint_block(v), present)

    def add_varint(self, field: int, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """Field ``field`` as a varint per row (uint64, or int64 as two's complement)."""
        self.add_bytes(key(field, VARINT), present)
        self.add_raw_varint(values, present)

    def add_tagged_varint(self, keys: np.ndarray, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """A varint field whose one-byte key differs per row (e.g. int_value or pointer_value)."""
        self._add(np.asarray(keys, dtype=np.uint8)[None, :], None, 1, present)
        self.add_raw_varint(values, present)

    def add_short_messages(self, field: int, heads: list, values: list, present: list) -> None:
        """Several short-message fields ``field`` (as ``add_short_message``) as one block: per message a
        ``head`` (uint8 [h] or [n, h]), a column of ``values`` and a ``present`` mask (or None: every row).
        One block instead of two per message; consecutive messages with the same mask are masked at once.
        """
        field_key = key(field, LEN)
        if len(field_key) != 1:
            raise ValueError(f"short message field {field}: needs a one-byte key")
        parts = []  # (head, values, present, width); absent rows may only widen the block, never a row
        for head, v, p in zip(heads, values, present, strict=True):
            head = np.asarray(head, dtype=np.uint8)
            v = np.asarray(v).astype(np.uint64, copy=False)
            width = max(1, -(-int(v.max(initial=0)).bit_length() // 7))
            if head.shape[-1] + width > 127:
                raise ValueError(f"short message field {field} with a {head.shape[-1]}-byte head: needs a "
                                 "message under 128 bytes")
            parts.append((head, v, p, width))
        total = sum(2 + head.shape[-1] + width for head, _, _, width in parts)
        data = np.empty((total, self.n), dtype=np.uint8)
        used = np.empty((total, self.n), dtype=bool)
        size = np.zeros(self.n, dtype=np.int64)
        run_size, run_start, c = 0, 0, 0  # a run: consecutive messages with one mask

        def end_run(p) -> None:
            nonlocal size
            if p is not None:
                used[run_start:c] &= p
                size += np.where(p, run_size, 0)
            else:
                size += run_size

        for i, (head, v, p, width) in enumerate(parts):
            h = head.shape[-1]
            vsize = _varint_into(v, data[c + 2 + h:c + 2 + h + width], used[c + 2 + h:c + 2 + h + width])
            data[c] = field_key[0]
            data[c + 1] = vsize + h
            data[c + 2:c + 2 + h] = head.T if head.ndim == 2 else head[:, None]
            used[c:c + 2 + h] = True
            run_size = run_size + vsize + 2 + h
            c += 2 + h + width
            if i + 1 == len(parts) or parts[i + 1][2] is not p:
                end_run(p)
                run_size, run_start = 0, c
        self._add(data, used, size, None)

    def add_fixed64(self, field: int, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """Field ``field`` as 8 little-endian bytes per row."""
        if present is not None and not present.any():
            return
        self.add_bytes(key(field, FIXED64), present)
        block = np.ascontiguousarray(values, dtype="<u8").view(np.uint8).reshape(self.n, 8).T
        self._add(block, None, 8, present)

    def add_message(self, field: int, inner: Rows, present: np.ndarray | None = None) -> None:
        """Field ``field`` holding ``inner``'s row as a length-delimited message."""
        size = inner.size
        self.add_bytes(key(field, LEN), present)
        self.add_raw_varint(size, present)
        self._blocks.extend((data, used, _within(rows, present)) for data, used, rows in inner._blocks)
        self._sizes.append((size, present))

    def encode(self, scratch: Scratch | None = None) -> np.ndarray:
        """Every row's bytes, rows one after another, as a (new) uint8 array; ``scratch`` lends the working
        matrices."""
        width = self.width
        if self.n == 0 or width == 0:
            return np.zeros(0, dtype=np.uint8)
        # Rows of the matrix an odd number of cache lines apart: a power-of-two stride (a chunk of 2**k rows)
        # maps every byte of one message to the same cache set, which made the transposes 5x slower.
        stride = -(-self.n // 128) * 128 + 64
        matrix = _empty(scratch, "matrix", (width, stride), np.uint8)[:, :self.n]
        used = _empty(scratch, "used", (width, stride), bool)[:, :self.n]
        c = 0
        for data, in_use, rows in self._blocks:
            w = data.shape[0]
            matrix[c:c + w] = data if data.ndim == 2 else data[:, None]
            if in_use is None:
                used[c:c + w] = True if rows is None else rows
            elif rows is None:
                used[c:c + w] = in_use
            else:
                np.logical_and(in_use, rows, out=used[c:c + w])
            c += w
        # One transpose each, then the bytes in use, row after row.
        by_row = _empty(scratch, "by_row", (self.n, width), np.uint8)
        used_by_row = _empty(scratch, "used_by_row", (self.n, width), bool)
        np.copyto(by_row, matrix.T)
        np.copyto(used_by_row.view(np.uint8), used.view(np.uint8).T)  # as bytes: a bool transpose is 2x slower
        # A boolean subscript copies run by run and makes no index array (np.compress takes one of 8 bytes per
        # byte kept, whose fresh pages every thread faults in): 2x faster on one thread, and threads scale.
        return by_row.ravel()[used_by_row.ravel()]

    def tobytes(self) -> bytes:
        """Every row's bytes, rows one after another."""
        return self.encode().tobytes()
