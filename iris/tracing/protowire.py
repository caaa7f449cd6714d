"""Protobuf wire encoding, written by hand: scalars for the few header messages, numpy columns for events.

Only what a Perfetto trace needs: field keys, varints (uint64; int64 as its two's complement), fixed64
and length-delimited fields. ``Rows`` lays out one message per row as a byte matrix, field by field
(each field a block of columns, and a mask of the bytes in use; kept transposed, so a column is one
contiguous numpy row), and compacts it once (one transpose, one masked copy): encoding N messages costs
a few numpy operations per field, never a Python step per message.
"""

from __future__ import annotations

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
    width = int(varint_sizes(v.max(initial=0)[None])[0]) if len(v) else 1
    if width == 1:
        return v.astype(np.uint8)[None, :], None, 1
    data = np.empty((width, len(v)), dtype=np.uint8)
    used = np.empty((width, len(v)), dtype=bool)
    used[0] = True
    rest = v.astype(np.uint32) if width <= 4 else v.copy()  # narrower words where the values allow
    seven = rest.dtype.type(7)
    size = np.ones(len(v), dtype=np.int64)
    for j in range(width):
        data[j] = rest  # the low byte; its top bit is replaced below
        if j + 1 < width:
            rest >>= seven
            np.not_equal(rest, 0, out=used[j + 1])
            size += used[j + 1]
    data &= np.uint8(0x7F)
    data[:-1] |= used[1:].view(np.uint8) << 7
    return data, used, size


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

    def add_short_message(self, field: int, head: np.ndarray, values: np.ndarray,
                          present: np.ndarray | None = None) -> None:
        """Field ``field`` holding a short message: ``head`` (uint8 [n, h], or [h] for every row: a few fields'
        bytes, up to the last field's key), then one varint per row; e.g. a name id and a value's key, then
        the value. Two blocks in all; the key must be one byte and the message under 128 bytes.
        """
        head = np.asarray(head, dtype=np.uint8)
        h = head.shape[-1]
        v = np.asarray(values).astype(np.uint64, copy=False)
        if present is not None:
            v = np.where(present, v, np.uint64(0))
        data, used, size = varint_block(v)
        field_key = key(field, LEN)
        if len(field_key) != 1 or h + data.shape[0] > 127:
            raise ValueError(f"short message field {field} with a {h}-byte head: needs a one-byte key "
                             "and a message under 128 bytes")
        prefix = np.empty((2 + h, self.n), dtype=np.uint8)
        prefix[0] = field_key[0]
        prefix[1] = h + size
        prefix[2:] = head.T if head.ndim == 2 else head[:, None]
        self._add(prefix, None, len(prefix), present)
        self._add(data, used, size, present)

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

    def encode(self) -> np.ndarray:
        """Every row's bytes, rows one after another, as a uint8 array."""
        width = self.width
        if self.n == 0 or width == 0:
            return np.zeros(0, dtype=np.uint8)
        # Rows of the matrix an odd number of cache lines apart: a power-of-two stride (a chunk of 2**k rows)
        # maps every byte of one message to the same cache set, which made the transposes 5x slower.
        stride = -(-self.n // 128) * 128 + 64
        matrix = np.empty((width, stride), dtype=np.uint8)[:, :self.n]
        used = np.empty((width, stride), dtype=bool)[:, :self.n]
        c = 0
        for data, in_use, rows in self._blocks:
            w = data.shape[0]
            matrix[c:c + w] = data if data.ndim == 2 else data[:, None]
            if in_use is None:
                used[c:c + w] = True if rows is None else rows
            else:
                np.logical_and(in_use, True if rows is None else rows, out=used[c:c + w])
            c += w
        # One transpose each, then the bytes in use, row after row.
        return np.compress(np.ascontiguousarray(used.T).ravel(), np.ascontiguousarray(matrix.T).ravel())

    def tobytes(self) -> bytes:
        """Every row's bytes, rows one after another."""
        return self.encode().tobytes()
