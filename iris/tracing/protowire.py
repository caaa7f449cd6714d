"""Protobuf wire encoding, written by hand: scalars for the few header messages, numpy columns for events.

Only what a Perfetto trace needs: field keys, varints (uint64; int64 as its two's complement), fixed64
and length-delimited fields. ``Rows`` describes one message per row as a list of segments (constant bytes,
per-row bytes, varints, lengths of nested messages) and encodes them all at once into a byte matrix, a row
of the matrix per byte position (and a mask of the bytes in use), which it compacts once (one transpose,
one masked copy). The varints of every field are computed together, byte position by byte position, so
encoding N messages costs a few dozen numpy calls whatever the number of fields, never a Python step per
message; few calls matter when several threads encode at once, since each call holds the GIL a while.
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


_CONST, _BYTES, _VARINT, _LENGTH = range(4)


class _Segment:
    """Bytes of every row at one place of the message: ``kind`` (``_CONST``: ``data`` uint8 [w], the same in
    every row; ``_BYTES``: ``data`` uint8 [w, n]; ``_VARINT``: ``data`` the values, [n]; ``_LENGTH``: the varint
    length of the nested message made of the ``data`` segments that follow), and the rows that have them
    (``present``: a bool [n] mask, or None for every row). ``width`` and ``row`` are set by the layout."""

    __slots__ = ("kind", "data", "present", "width", "row")

    def __init__(self, kind: int, data, present: np.ndarray | None, width: int = 0) -> None:
        self.kind, self.data, self.present, self.width, self.row = kind, data, present, width, 0


def _bytes_for(bits: int) -> int:
    """Varint bytes of a value of ``bits`` significant bits."""
    return max(1, -(-bits // 7))


class Rows:
    """N messages of one shape, described field by field, encoded at once (``encode``).

    Every ``add_*`` takes an optional ``present`` mask: where it is False the field takes no bytes. Values
    of rows where a field is absent are ignored.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self._segments: list[_Segment] = []

    def add_bytes(self, data: bytes, present: np.ndarray | None = None) -> None:
        """The same bytes in every row (a key, or a whole constant field)."""
        if data:
            self._segments.append(_Segment(_CONST, np.frombuffer(data, dtype=np.uint8), present, len(data)))

    def add_raw_varint(self, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """A varint per row (no key): a field's value (uint64, or int64 as two's complement)."""
        self._segments.append(_Segment(_VARINT, np.asarray(values), present))

    def add_varint(self, field: int, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """Field ``field`` as a varint per row (uint64, or int64 as two's complement)."""
        self.add_bytes(key(field, VARINT), present)
        self.add_raw_varint(values, present)

    def add_tagged_varint(self, keys: np.ndarray, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """A varint field whose one-byte key differs per row (e.g. int_value or pointer_value)."""
        self._segments.append(_Segment(_BYTES, np.asarray(keys, dtype=np.uint8)[None, :], present, 1))
        self.add_raw_varint(values, present)

    def add_short_messages(self, field: int, heads: list, values: list, present: list) -> None:
        """Several messages in fields ``field``, each a ``head`` (uint8 [h], or [n, h] per row) then a varint of
        its column of ``values``, in the rows of its ``present`` mask (or None: every row)."""
        field_key = key(field, LEN)
        for head, v, p in zip(heads, values, present, strict=True):
            head = np.asarray(head, dtype=np.uint8)
            self.add_bytes(field_key, p)
            self._segments.append(_Segment(_LENGTH, 2, p))
            if head.ndim == 2:
                self._segments.append(_Segment(_BYTES, np.ascontiguousarray(head.T), p, head.shape[1]))
            else:
                self._segments.append(_Segment(_CONST, head, p, head.shape[0]))
            self.add_raw_varint(v, p)

    def add_fixed64(self, field: int, values: np.ndarray, present: np.ndarray | None = None) -> None:
        """Field ``field`` as 8 little-endian bytes per row."""
        if present is not None and not present.any():
            return
        self.add_bytes(key(field, FIXED64), present)
        block = np.ascontiguousarray(values, dtype="<u8").view(np.uint8).reshape(self.n, 8).T
        self._segments.append(_Segment(_BYTES, block, present, 8))

    def add_message(self, field: int, inner: Rows, present: np.ndarray | None = None) -> None:
        """Field ``field`` holding ``inner``'s row as a length-delimited message."""
        self.add_bytes(key(field, LEN), present)
        self._segments.append(_Segment(_LENGTH, len(inner._segments), present))
        both: dict = {}  # id of an inner mask -> that mask & present, made once
        for seg in inner._segments:
            mask = seg.present
            if mask is None or present is None or mask is present:
                mask = present if mask is None else mask
            elif id(mask) in both:
                mask = both[id(mask)]
            else:
                mask = both[id(mask)] = mask & present
            self._segments.append(_Segment(seg.kind, seg.data, mask, seg.width))

    @property
    def size(self) -> np.ndarray:
        """Each row's encoded length (int64)."""
        if self.n == 0 or not self._segments:
            return np.zeros(self.n, dtype=np.int64)
        _, used = self._fill(None)
        return used.sum(axis=0, dtype=np.int64)

    def encode(self, scratch: Scratch | None = None) -> np.ndarray:
        """Every row's bytes, rows one after another, as a (new) uint8 array; ``scratch`` lends the working
        matrices."""
        if self.n == 0 or not self._segments:
            return np.zeros(0, dtype=np.uint8)
        matrix, used = self._fill(scratch)
        width = matrix.shape[0]
        # One transpose each, then the bytes in use, row after row. A boolean subscript copies run by run and
        # makes no index array (np.compress takes one of 8 bytes per byte kept, freshly faulted in every chunk).
        by_row = _empty(scratch, "by_row", (self.n, width), np.uint8)
        used_by_row = _empty(scratch, "used_by_row", (self.n, width), bool)
        np.copyto(by_row, matrix.T)
        np.copyto(used_by_row.view(np.uint8), used.view(np.uint8).T)  # as bytes: a bool transpose is 2x slower
        return by_row.ravel()[used_by_row.ravel()]

    def tobytes(self) -> bytes:
        """Every row's bytes, rows one after another."""
        return self.encode().tobytes()

    def _fill(self, scratch: Scratch | None) -> tuple[np.ndarray, np.ndarray]:
        """The byte matrix and its mask of bytes in use, both [width, n]: a row per byte position."""
        n, segs = self.n, self._segments
        varints = [s for s in segs if s.kind == _VARINT]
        values = _empty(scratch, "values", (len(varints), n), np.uint64)
        for s, row in zip(varints, values, strict=True):  # absent rows are 0, so they widen nothing
            if s.present is None:
                np.copyto(row, s.data, casting="unsafe")
            else:
                np.multiply(s.data, s.present, out=row, casting="unsafe")
        if varints:
            for s, top in zip(varints, values.max(axis=1).tolist(), strict=True):
                s.width = _bytes_for(int(top).bit_length())
        # Lengths: wide enough for the largest message their segments can make; the segments follow them.
        lengths = [i for i, s in enumerate(segs) if s.kind == _LENGTH]
        depth = [0] * len(segs)
        for i in reversed(lengths):
            covered = range(i + 1, i + 1 + segs[i].data)
            segs[i].width = _bytes_for(sum(segs[j].width for j in covered).bit_length())
            for j in covered:
                depth[j] += 1
        row = 0
        for s in segs:
            s.row = row
            row += s.width
        width = row
        stride = -(-n // 128) * 128 + 64  # rows an odd number of cache lines apart (see Scratch)
        matrix = _empty(scratch, "matrix", (width, stride), np.uint8)[:, :n]
        used = _empty(scratch, "used", (width + 1, stride), bool)[:, :n]  # row ``width``: never in use
        used[width] = False
        consts = [s for s in segs if s.kind == _CONST]
        if consts:
            matrix[np.concatenate([np.arange(s.row, s.row + s.width) for s in consts])] = np.concatenate(
                [s.data for s in consts])[:, None]
        for s in segs:
            if s.kind == _BYTES:
                matrix[s.row:s.row + s.width] = s.data
        _mark_present(used, [s for s in segs if s.kind in (_CONST, _BYTES)], all_bytes=True)
        _varint_planes(matrix, used, varints, values)
        for d in sorted({depth[i] for i in lengths}, reverse=True):  # innermost messages first
            level = [i for i in lengths if depth[i] == d]
            sums = np.empty((len(level), n), dtype=np.uint16 if width < 1 << 16 else np.uint64)
            for i, out in zip(level, sums, strict=True):  # a message's length: its bytes in use
                last = segs[i + segs[i].data]  # the segment itself where it covers none
                used[segs[i].row + segs[i].width:last.row + last.width].view(np.uint8).sum(axis=0, out=out)
            _varint_planes(matrix, used, [segs[i] for i in level], sums)
        # Bit 7 of a varint byte: set when the next byte is in use (bytes in use are a prefix; after the last byte
        # of a varint comes row ``width``, never in use).
        var = [s for s in segs if s.kind in (_VARINT, _LENGTH)]
        if var:
            rows = np.concatenate([np.arange(s.row, s.row + s.width) for s in var])
            after = rows + 1
            after[np.cumsum([s.width for s in var]) - 1] = width
            matrix[rows] = (matrix[rows] & np.uint8(0x7F)) | (used[after].view(np.uint8) << np.uint8(7))
        return matrix, used[:width]


def _mark_present(used: np.ndarray, segs: list, all_bytes: bool) -> None:
    """``used`` of the segments' bytes (all of them, or the first) where each is present, a call per mask."""
    by_mask: dict = {}
    for s in segs:
        rows = range(s.row, s.row + (s.width if all_bytes else 1))
        by_mask.setdefault(id(s.present), (s.present, []))[1].extend(rows)
    for mask, rows in by_mask.values():
        used[rows] = True if mask is None else mask


def _varint_planes(matrix: np.ndarray, used: np.ndarray, segs: list, values: np.ndarray) -> None:
    """Varint bytes of ``values`` (unsigned ints [len(segs), n], 0 where absent) into the segments' rows, byte
    position by byte position: byte j holds bits 7j..7j+6 (and bit 7j+7, which the caller replaces by the
    continuation bit) and is in use when some bit at 7j or above is set (byte 0: where present)."""
    if not segs:
        return
    _mark_present(used, segs, all_bytes=False)
    rest = values  # shifted in place: the caller's values are spent
    keep = list(range(len(segs)))
    for j in range(max(s.width for s in segs)):
        if j:
            now = [k for k, i in enumerate(keep) if segs[i].width > j]
            if len(now) < len(keep):
                rest = rest[now]
                keep = [keep[k] for k in now]
            np.right_shift(rest, rest.dtype.type(7), out=rest)
            rows = [segs[i].row + j for i in keep]
            used[rows] = rest != 0
        else:
            rows = [s.row for s in segs]
        matrix[rows] = rest  # the low 8 bits; bit 7 is the continuation bit, set by the caller
