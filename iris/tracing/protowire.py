"""Protobuf wire encoding, written by hand: scalars for the few header messages, numpy columns for events.

Only what a Perfetto trace needs: field keys, varints (uint64; int64 as its two's complement), fixed64
and length-delimited fields. ``Rows`` lays out one message per row as a byte matrix, column by column
(each column a byte block and a mask of the bytes in use), and compacts it once: encoding N messages
costs a few numpy operations per field, never a Python step per message.
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


def varint_sizes(values: np.ndarray) -> np.ndarray:
    """Encoded length (1..10) of every value of a uint64 column."""
    values = np.asarray(values, dtype=np.uint64)
    size = np.ones(values.shape, dtype=np.int64)
    for k in range(1, _MAX_VARINT):
        size += values >= np.uint64(1 << (7 * k))
    return size


class Rows:
    """N messages of one shape, built field by field as columns of a byte matrix.

    Every ``add_*`` takes an optional ``present`` mask: where it is False the field takes no bytes.
    ``size`` is each row's encoded length so far, which is what a parent needs to wrap it.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.size = np.zeros(n, dtype=np.int64)
        self._blocks: list[np.ndarray] = []
        self._masks: list[np.ndarray | None] = []

    def _append(self, block: np.ndarray, mask: np.ndarray | None, sizes) -> None:
        self._blocks.append(block)
        self._masks.append(mask)
        self.size += sizes

    def add_bytes(self, data: bytes, present: np.ndarray | None = None) -> None:
        """The same bytes in every row (a key, or a whole constant field)."""
        if not data:
            return
        block = np.broadcast_to(np.frombuffer(data, dtype=np.uint8), (self.n, len(data)))
        mask = None if present is None else np.broadcast_to(present[:, None], block.shape)
        self._append(block, mask, len(data) if present is None else present * len(data))

    def add_raw_varint(self, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """A varint per row (no key): a length prefix or a field's value."""
        v = np.asarray(values).astype(np.uint64, copy=False)
        sizes = varint_sizes(v)
        if present is not None:
            sizes = np.where(present, sizes, 0)
        width = int(sizes.max(initial=0))
        if width == 0:
            return
        shifts = np.arange(width, dtype=np.uint64) * np.uint64(7)
        block = ((v[:, None] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
        j = np.arange(width)
        block |= np.where(j < sizes[:, None] - 1, 0x80, 0).astype(np.uint8)
        mask = None if (width == 1 and present is None) else j < sizes[:, None]
        self._append(block, mask, sizes)

    def add_varint(self, field: int, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """Field ``field`` as a varint per row (uint64, or int64 as two's complement)."""
        self.add_bytes(key(field, VARINT), present)
        self.add_raw_varint(values, present)

    def add_tagged_varint(self, keys: np.ndarray, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """A varint field whose one-byte key differs per row (e.g. int_value or pointer_value)."""
        block = np.asarray(keys, dtype=np.uint8)[:, None]
        self._append(block, None if present is None else present[:, None], 1 if present is None else present * 1)
        self.add_raw_varint(values, present)

    def add_fixed64(self, field: int, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """Field ``field`` as 8 little-endian bytes per row."""
        self.add_bytes(key(field, FIXED64), present)
        block = np.ascontiguousarray(np.asarray(values, dtype="<u8")).view(np.uint8).reshape(self.n, 8)
        mask = None if present is None else np.broadcast_to(present[:, None], block.shape)
        self._append(block, mask, 8 if present is None else present * 8)

    def add_message(self, field: int, inner: Rows, present: np.ndarray | None = None) -> None:
        """Field ``field`` holding ``inner``'s row as a length-delimited message."""
        self.add_bytes(key(field, LEN), present)
        self.add_raw_varint(inner.size, present)
        for block, mask in zip(inner._blocks, inner._masks, strict=True):
            if present is not None:
                mask = np.broadcast_to(present[:, None], block.shape) if mask is None else mask & present[:, None]
            self._blocks.append(block)
            self._masks.append(mask)
        self.size += inner.size if present is None else np.where(present, inner.size, 0)

    def tobytes(self) -> bytes:
        """Every row's bytes, rows one after another."""
        if self.n == 0 or not self._blocks:
            return b""
        matrix = np.concatenate(self._blocks, axis=1)
        if all(m is None for m in self._masks):
            return matrix.tobytes()
        mask = np.concatenate([np.ones(b.shape, dtype=bool) if m is None else m
                               for b, m in zip(self._blocks, self._masks, strict=True)], axis=1)
        return matrix[mask].tobytes()
