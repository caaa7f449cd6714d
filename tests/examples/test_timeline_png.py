"""examples/timeline_png.py: the PNG is a valid file whose pixels are where the layout puts the trace's bars, arrows
and labels; bad input is one line and exit code 2 with nothing written."""

from __future__ import annotations

import json
import os
import stat
import struct
import zlib

import pytest

from examples import timeline_png as tp
from examples.png_canvas import PNG_SIGNATURE, Canvas

pytestmark = pytest.mark.cpu_unit

WHITE, FETCH, STORE = (255, 255, 255), (176, 122, 161), (78, 121, 167)
FETCH_ARGS = {"name": "fetch", "ph": "X", "pid": 1, "tid": 10, "ts": 0, "dur": 100}


def _trace(*extra: dict) -> dict:
    """Rank 0's program 0 holds a fetch range (0-100 us) with a store (20-50 us) nested in it, whose arrow leads to
    rank 1's incoming track."""
    return {"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "rank 0"}},
        {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "rank 1"}},
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 10, "args": {"name": "program 0"}},
        {"name": "thread_name", "ph": "M", "pid": 2, "tid": 20, "args": {"name": "incoming"}},
        FETCH_ARGS,
        {"name": "store", "ph": "X", "pid": 1, "tid": 10, "ts": 20, "dur": 30},
        {"name": "store from rank 0", "ph": "X", "pid": 2, "tid": 20, "ts": 20, "dur": 30},
        {"name": "remote op", "ph": "s", "id": 1, "pid": 1, "tid": 10, "ts": 20},
        {"name": "remote op", "ph": "f", "bp": "e", "id": 1, "pid": 2, "tid": 20, "ts": 20},
        *extra,
    ]}


def _chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """(type, data) of every chunk, each chunk's CRC checked."""
    assert png[:8] == PNG_SIGNATURE, png[:8]
    found, at = [], 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at:at + 4])
        kind, data = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", png[at + 8 + length:at + 12 + length])
        assert crc == zlib.crc32(kind + data), f"{kind} CRC {crc:#x}, but should be {zlib.crc32(kind + data):#x}"
        found.append((kind, data))
        at += 12 + length
    assert at == len(png), f"{len(png) - at} bytes past the last chunk"
    return found


def _decode(png: bytes) -> tuple[int, int, bytes]:
    """Width, height and the RGB bytes of a PNG this canvas writes (every row filter 0)."""
    chunks = _chunks(png)
    assert [k for k, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"], [k for k, _ in chunks]
    width, height, depth, colour_type, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour_type, compression, filtering, interlace) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(chunks[1][1])
    assert len(raw) == height * (1 + 3 * width), (len(raw), width, height)
    rows = [raw[y * (1 + 3 * width):(y + 1) * (1 + 3 * width)] for y in range(height)]
    assert {r[0] for r in rows} == {0}, "a row with a filter other than none"
    assert chunks[2][1] == b""
    return width, height, b"".join(r[1:] for r in rows)


def test_a_canvas_is_a_valid_png_with_its_pixels():
    c = Canvas(5, 3, (1, 2, 3))
    c.rect(1, 1, 3, 2, (200, 100, 50))
    c.set(4, 2, (9, 8, 7))
    width, height, pixels = _decode(c.png())
    assert (width, height) == (5, 3)
    expected = bytearray(bytes((1, 2, 3)) * 15)
    expected[3 * 6:3 * 8] = bytes((200, 100, 50)) * 2
    expected[3 * 14:3 * 15] = bytes((9, 8, 7))
    assert pixels == bytes(expected)


def test_text_sets_the_glyphs_pixels():
    c = Canvas(12, 8, WHITE)
    c.text(0, 0, "1l", (0, 0, 0))  # "1": columns 00 42 7f 40 00; "l": 00 41 7f 40 00
    ink = {(x, y) for y in range(8) for x in range(12) if c.pixel(x, y) == (0, 0, 0)}
    one = {(1, 1), (1, 6), *((2, y) for y in range(7)), (3, 6)}
    ell = {(7, 0), (7, 6), *((8, y) for y in range(7)), (9, 6)}
    assert ink == one | ell, sorted(ink)


def test_ranges_nest_by_depth_and_arrows_join_their_slices():
    trace = tp.parse(_trace())
    rank0, rank1 = trace.processes[1], trace.processes[2]
    assert [(p.name, list(p.tracks)) for p in trace.processes.values()] == [("rank 0", [10]), ("rank 1", [20])]
    assert [(s.name, s.start, s.end, s.depth) for s in rank0.tracks[10].spans] == [
        ("fetch", 0, 100_000, 0), ("store", 20_000, 50_000, 1)]
    assert (rank0.tracks[10].levels, rank1.tracks[20].levels) == (2, 1)
    assert trace.flows == [((1, 10, 20_000), (2, 20, 20_000))]
    assert trace.window == (0, 100_000)


def test_the_pictures_pixels_are_the_layouts():
    """At 400 pixels: labels 74 wide ("  program 0"), so the plot runs from x 82 to 392, 3.1 pixels a us; rank 0's
    band at y 30, its program's levels at 42 and 54 (10 pixels a bar), rank 1's band at 68 and incoming at 80."""
    png = tp.draw(tp.parse(_trace()), 400).png()
    width, height, pixels = _decode(png)
    assert (width, height) == (400, 80 + 12 + 2 + 8 + 12 + 8)

    def at(x: int, y: int) -> tuple:
        return tuple(pixels[3 * (y * width + x):3 * (y * width + x) + 3])

    assert at(300, 51) == FETCH  # fetch: x 82-392, y 42-51 (its label only near its start)
    assert at(230, 62) == STORE and at(236, 54) == STORE  # store: x 144-237 (20-50 us), y 54-63
    assert at(237, 62) == tp.GRID  # a tick each 10 us, x 82 + 31 k: past the store's end
    assert at(300, 60) == WHITE and at(2, 60) == WHITE  # beside the store, the margin
    assert at(300, 35) == tp.BAND  # rank 0's band
    assert at(200, 88) == tuple((c + 255) // 2 for c in STORE)  # the incoming copy: the store's colour, lighter
    assert [at(144, y) for y in (60, 66, 70, 78)] == [tp.ARROW] * 4  # the arrow: store's middle (59) to incoming (85)
    assert at(145, 66) == WHITE and at(143, 66) == WHITE  # one pixel wide
    assert at(143, 84) == tp.ARROW and at(145, 84) == tp.ARROW  # its head, one row above its end
    assert at(10, 34) == tp.INK and at(10, 33) == tp.BAND  # the "r" of "rank 0": rows 2-6 of its first column


def test_a_range_that_starts_where_another_ends_is_beside_it_not_in_it():
    spans = [tp.Span("b", 10, 20), tp.Span("a", 0, 10), tp.Span("i", 15, None), tp.Span("c", 12, 20)]
    assert tp._nest(spans) == 3
    assert [(s.name, s.depth) for s in spans] == [("a", 0), ("b", 0), ("c", 1), ("i", 2)]


def test_labels_longer_than_a_third_of_the_picture_are_cut():
    long = "x" * 200
    doc = {"traceEvents": [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": long}}, FETCH_ARGS]}
    lay = tp.Layout(tp.parse(doc), 400)
    assert (lay.label_w, lay.left, lay.right) == (133, 141, 392)
    c = tp.draw(tp.parse(doc), 400)
    ink = [x for x in range(400) if c.pixel(x, 32 + 2) == tp.INK]  # the band's text (from y 32), its row 2
    assert (min(ink), max(ink)) == (10, 10 + 20 * 6 + 4)  # 21 "x" of 6 pixels fit in 131; "x" inks columns 0, 4 there


def test_dark_bars_get_light_text():
    assert tp.ink_on(STORE) == tp.PAPER and tp.ink_on(FETCH) == tp.INK and tp.ink_on(WHITE) == tp.INK


@pytest.mark.parametrize(("span_ns", "step"), [(5, 1), (100, 10), (101, 20), (250_000, 50_000), (2_000_001, 500_000)])
def test_the_time_axis_steps_are_1_2_5_times_ten_to_the_n(span_ns, step):
    assert tp._tick(span_ns) == step


def test_main_writes_the_png_beside_the_trace(tmp_path, capsys):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(_trace()))
    assert tp.main([str(trace), "--width", "400"]) == tmp_path / "t.png"
    assert capsys.readouterr().out == f"wrote {tmp_path / 't.png'} ({(tmp_path / 't.png').stat().st_size} bytes)\n"
    assert _decode((tmp_path / "t.png").read_bytes())[:2] == (400, 122)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "t.png").stat().st_mode) == 0o666 & ~umask  # an ordinary file, not mkstemp's 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json", "t.png"]


EXPECTED = "expected a trace that tracing.export wrote as JSON (a .json name, or format='json')"


@pytest.mark.parametrize(("content", "why"), [
    (b"\x0a\x05hello", "is not JSON"),  # a binary .pftrace
    (b"[1, 2]", "has no traceEvents list"),
    (json.dumps({"traceEvents": []}).encode(), "holds no slices or instants, nothing to draw"),
    (json.dumps({"traceEvents": _trace()["traceEvents"][:4]}).encode(),  # names only
     "holds no slices or instants, nothing to draw"),
    (json.dumps({"traceEvents": [{**FETCH_ARGS, "ts": "0"}]}).encode(),
     "event 0 ('X') ts is '0', not a number of microseconds"),
    (json.dumps({"traceEvents": [{**FETCH_ARGS, "dur": -1}]}).encode(), "event 0 ('X') dur is -1, below 0"),
    (json.dumps({"traceEvents": [{**FETCH_ARGS, "tid": None}]}).encode(), "event 0 ('X') tid is None, not an integer"),
    (json.dumps({"traceEvents": [7]}).encode(), "event 0 is 7, not an object with a 'ph'"),
])
def test_a_file_that_is_no_trace_is_refused_in_one_line(tmp_path, capsys, content, why):
    trace = tmp_path / "t.json"
    trace.write_bytes(content)
    with pytest.raises(SystemExit) as refused:
        tp.main([str(trace)])
    out, err = capsys.readouterr()
    assert (refused.value.code, out) == (2, "")
    assert err == f"python -m examples.timeline_png: argument TRACE: TRACE '{trace}': {why}; {EXPECTED}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_a_picture_taller_than_the_limit_is_refused(tmp_path, capsys):
    """1200 tracks of one level: 30 (title, axis) + 12 (the band) + 1200 x 14 + 28 (the legend) = 16870 pixels."""
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [{**FETCH_ARGS, "tid": t} for t in range(1200)]}))
    with pytest.raises(SystemExit) as refused:
        tp.main([str(trace)])
    out, err = capsys.readouterr()
    assert (refused.value.code, out) == (2, "")
    assert err == (f"python -m examples.timeline_png: TRACE '{trace}': its 1200 tracks need a picture 16870 pixels "
                   f"high; expected at most 16384 (a trace of fewer programs or ranks)\n")
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_a_default_out_that_cannot_be_written_is_refused(tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "t.json").write_text(json.dumps(_trace()))
    (folder / "t.png").mkdir()  # the default --out is a folder
    with pytest.raises(SystemExit) as refused:
        tp.main([str(folder / "t.json")])
    out, err = capsys.readouterr()
    assert (refused.value.code, out) == (2, "")
    assert err == (f"python -m examples.timeline_png: --out '{folder / 't.png'}': is a folder; expected a PNG file in "
                   "a folder that can be made and written (the default --out)\n")
    assert sorted(p.name for p in folder.iterdir()) == ["t.json", "t.png"] and not any((folder / "t.png").iterdir())
