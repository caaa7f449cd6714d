"""Protobuf wire encoding, written by hand: scalars for the few header messages, numpy columns for events.

Only what a Perfetto trace needs: field keys, varints (uint64; int64 as its two's complement), fixed64
and length-delimited fields. ``Rows`` lays out one message per row as a byte matrix, field by field
(each field a range of columns, and a mask of the bytes in use), and compacts it once: encoding N
messages costs a few numpy operations per field and byte, never a Python step per message.
"""

from __future__ import annotations

from collections.abc import Callable

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


# A field writes its bytes into matrix columns [c, c + width) and clears the mask where it has none.
_Writer = Callable[[np.ndarray, np.ndarray, int], None]


class Rows:
    """N messages of one shape, built field by field as columns of a byte matrix.

    Every ``add_*`` takes an optional ``present`` mask: where it is False the field takes no bytes.
    ``size`` is each row's encoded length so far, which is what a parent needs to wrap it.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.size = np.zeros(n, dtype=np.int64)
        self._fields: list[tuple[int, _Writer]] = []  # (width, writer)

    @property
    def width(self) -> int:
        return sum(w for w, _ in self._fields)

    def add_bytes(self, data: bytes, present: np.ndarray | None = None) -> None:
        """The same bytes in every row (a key, or a whole constant field)."""
        if not data:
            return
        row = np.frombuffer(data, dtype=np.uint8)

        def write(matrix, mask, c):
            matrix[:, c:c + len(row)] = row
            if present is not None:
                mask[:, c:c + len(row)] &= present[:, None]

        self._fields.append((len(row), write))
        self.size += len(row) if present is None else present * len(row)

    def add_raw_varint(self, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """A varint per row (no key): a length prefix or a field's value."""
        v = np.asarray(values).astype(np.uint64, copy=False)
        sizes = varint_sizes(v)
        if present is not None:
            sizes = np.where(present, sizes, 0)
        width = int(sizes.max(initial=0))
        if width == 0:
            return

        def write(matrix, mask, c):
            rest = v if width > 4 else v.astype(np.uint32)  # narrower words where the values allow
            seven, low7 = rest.dtype.type(7), rest.dtype.type(0x7F)
            for j in range(width):
                if j == width - 1:
                    matrix[:, c + j] = rest
                else:
                    low = (rest & low7).astype(np.uint8)
                    rest = rest >> seven
                    matrix[:, c + j] = low | ((rest != 0).view(np.uint8) << 7)
                if j:
                    mask[:, c + j] &= sizes > j
                elif present is not None:
                    mask[:, c] &= present

        self._fields.append((width, write))
        self.size += sizes

    def add_varint(self, field: int, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """Field ``field`` as a varint per row (uint64, or int64 as two's complement)."""
        self.add_bytes(key(field, VARINT), present)
        self.add_raw_varint(values, present)

    def add_tagged_varint(self, keys: np.ndarray, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """A varint field whose one-byte key differs per row (e.g. int_value or pointer_value)."""
        keys = np.asarray(keys, dtype=np.uint8)

        def write(matrix, mask, c):
            matrix[:, c] = keys
            if present is not None:
                mask[:, c] &= present

        self._fields.append((1, write))
        self.size += 1 if present is None else present * 1
        self.add_raw_varint(values, present)

    def add_fixed64(self, field: int, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """Field ``field`` as 8 little-endian bytes per row."""
        if present is not None and not present.any():
            return
        self.add_bytes(key(field, FIXED64), present)
        block = np.ascontiguousarray(np.asarray(values, dtype="<u8")).view(np.uint8).reshape(self.n, 8)

        def write(matrix, mask, c):
            matrix[:, c:c + 8] = block
            if present is not None:
                mask[:, c:c + 8] &= present[:, None]

        self._fields.append((8, write))
        self.size += 8 if present is None else present * 8

    def add_message(self, field: int, inner: Rows, present: np.ndarray | None = None) -> None:
        """Field ``field`` holding ``inner``'s row as a length-delimited message."""
        self.add_bytes(key(field, LEN), present)
        self.add_raw_varint(inner.size, present)
        width = inner.width

        def write(matrix, mask, c):
            inner._fill(matrix[:, c:c + width], mask[:, c:c + width])
            if present is not None:
                mask[:, c:c + width] &= present[:, None]

        self._fields.append((width, write))
        self.size += inner.size if present is None else np.where(present, inner.size, 0)

    def _fill(self, matrix: np.ndarray, mask: np.ndarray) -> None:
        c = 0
        for width, write in self._fields:
            write(matrix, mask, c)
            c += width

    def tobytes(self) -> bytes:
        """Every row's bytes, rows one after another."""
        width = self.width
        if self.n == 0 or width == 0:
            return b""
        # Filled column-major (each field's columns contiguous), compacted row-major.
        matrix = np.empty((self.n, width), dtype=np.uint8, order="F")
        mask = np.ones((self.n, width), dtype=bool, order="F")
        self._fill(matrix, mask)
        return np.compress(np.ascontiguousarray(mask).ravel(), np.ascontiguousarray(matrix).ravel()).tobytes()
