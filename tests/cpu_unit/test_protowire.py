"""Hand-written protobuf wire encoding: scalar varints against known bytes, numpy rows against the scalars."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iris.tracing import protowire as pw
from tests.cpu_unit.checks import check

pytestmark = pytest.mark.cpu_unit

KNOWN = [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16383, "ff7f"), (16384, "808001"),
         (2**63 - 1, "ffffffffffffffff7f"), (-1, "ffffffffffffffffff01"), (-(2**63), "80808080808080808001")]


@pytest.mark.parametrize("value,hexed", KNOWN)
def test_varint_known_bytes(value, hexed):
    check("varint", pw.varint(value).hex(), hexed, str(value))


def test_keys_and_fields():
    check("key(1, LEN)", pw.key(1, pw.LEN).hex(), "0a")
    check("key(60, LEN)", pw.key(60, pw.LEN).hex(), "e203")
    check("key(47, FIXED64)", pw.key(47, pw.FIXED64).hex(), "f902")
    check("field_string", pw.field_string(2, "ab").hex(), "12026162")
    check("field_fixed64", pw.field_fixed64(1, 258).hex(), "090201000000000000")


@given(st.lists(st.integers(-(2**63), 2**64 - 1), max_size=50))
def test_varint_sizes_match_the_scalar_encoding(values):
    got = pw.varint_sizes(np.array([v & (2**64 - 1) for v in values], dtype=np.uint64))
    check("sizes", got.tolist(), [len(pw.varint(v)) for v in values])


_ROW = st.tuples(st.integers(-(2**63), 2**63 - 1), st.booleans(), st.integers(0, 2**64 - 1), st.booleans(),
                 st.sampled_from([0x20, 0x38]))


@settings(max_examples=60)
@given(st.lists(_ROW, min_size=1, max_size=40))
def test_rows_equal_the_scalar_encoding_of_each_row(rows):
    """A message with a varint, an optional fixed64 and an optional nested message, row by row."""
    ints = np.array([r[0] for r in rows], dtype=np.int64)
    fixed = np.array([r[2] for r in rows], dtype=np.uint64)
    has_fixed = np.array([r[1] for r in rows])
    has_inner = np.array([r[3] for r in rows])
    keys = np.array([r[4] for r in rows], dtype=np.uint8)
    inner = pw.Rows(len(rows))
    inner.add_varint(1, ints)
    inner.add_tagged_varint(keys, fixed)
    outer = pw.Rows(len(rows))
    outer.add_varint(3, ints)
    outer.add_fixed64(5, fixed, has_fixed)
    outer.add_message(4, inner, has_inner)
    outer.add_bytes(b"\x50\x01")
    wrapped = pw.Rows(len(rows))
    wrapped.add_message(1, outer)
    expected = b""
    for v, hf, f, hi, k in rows:
        body = pw.field_varint(3, v) + (pw.field_fixed64(5, f) if hf else b"")
        body += pw.field_bytes(4, pw.field_varint(1, v) + bytes([k]) + pw.varint(f)) if hi else b""
        expected += pw.field_bytes(1, body + b"\x50\x01")
    check("bytes", wrapped.tobytes().hex(), expected.hex())


_MESSAGE_ROW = st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 300), st.booleans(), st.booleans(),
                         st.integers(0, 255))


@settings(max_examples=60)
@given(st.lists(_MESSAGE_ROW, min_size=1, max_size=40))
def test_short_messages_equal_the_scalar_encoding_of_each_row(rows):
    """Three short messages in one block: a shared head and a shared mask, then a per-row head and its own mask
    (runs of one mask are masked together); values of absent rows must not change present rows' bytes."""
    n = len(rows)
    big = np.array([r[0] for r in rows], dtype=np.uint64)
    small = np.array([r[1] for r in rows], dtype=np.int64)
    shared, own = np.array([r[2] for r in rows]), np.array([r[3] for r in rows])
    per_row_head = np.array([[0x08, r[4]] for r in rows], dtype=np.uint8)
    head = np.array([0x08, 7, 0x20], dtype=np.uint8)
    msg = pw.Rows(n)
    msg.add_short_messages(4, [head, head, per_row_head], [big, small, small], [shared, shared, own])
    msg.add_varint(9, small)
    wrapped = pw.Rows(n)
    wrapped.add_message(1, msg)
    expected = b""
    for v, s, has_shared, has_own, h in rows:
        body = b""
        if has_shared:
            body += pw.field_bytes(4, bytes(head) + pw.varint(v)) + pw.field_bytes(4, bytes(head) + pw.varint(s))
        if has_own:
            body += pw.field_bytes(4, bytes([0x08, h]) + pw.varint(s))
        expected += pw.field_bytes(1, body + pw.field_varint(9, s))
    check("bytes", wrapped.tobytes().hex(), expected.hex())
    check("size per row", msg.size.tolist(), [len(body) for body in _bodies(expected)])


def _bodies(data: bytes) -> list[bytes]:
    """The bodies of consecutive length-delimited fields of ``data`` (a one-byte key, a varint length)."""
    out, i = [], 0
    while i < len(data):
        length, start, shift = 0, i + 1, 0
        while True:
            b = data[start]
            length |= (b & 0x7F) << shift
            start += 1
            shift += 7
            if b < 0x80:
                break
        out.append(data[start:start + length])
        i = start + length
    return out


@settings(max_examples=30)
@given(st.lists(st.lists(st.tuples(st.integers(0, 2**64 - 1), st.booleans()), min_size=1, max_size=40),
                min_size=2, max_size=5))
def test_a_scratch_lent_to_encodes_of_other_sizes_keeps_each_result(chunks):
    """One ``Scratch`` reused by encodes of different row counts and widths (its buffers grown and sliced):
    each result equals the scalar encoding, and stays so after the later encodes reuse the buffers."""
    scratch = pw.Scratch()
    results, expected = [], []
    for rows in chunks:
        values = np.array([r[0] for r in rows], dtype=np.uint64)
        present = np.array([r[1] for r in rows])
        msg = pw.Rows(len(rows))
        msg.add_varint(2, values, present)
        msg.add_bytes(b"\x50\x01")
        results.append(msg.encode(scratch))
        expected.append(b"".join((pw.field_varint(2, v) if p else b"") + b"\x50\x01" for v, p in rows))
    for k, (got, want) in enumerate(zip(results, expected, strict=True)):
        check(f"chunk {k} bytes", got.tobytes().hex(), want.hex())
