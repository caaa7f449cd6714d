"""examples/timeline_png.py: the layout puts every row, bar, arrow, time label and cut where the trace says; the PNG
is a valid picture of the layout's size with the bars' colours where the layout puts them; bad input is one line and
exit code 2 with nothing written."""

from __future__ import annotations

import json
import os
import stat
import struct
import sys
import zlib
from pathlib import Path

import pytest

from examples import timeline_png as tp

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

pytestmark = pytest.mark.cpu_unit

ROOT = Path(__file__).resolve().parents[2]
FETCH_ARGS = {"name": "fetch", "ph": "X", "pid": 1, "tid": 10, "ts": 0, "dur": 100}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


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


def _late_peer() -> dict:
    """Rank 0 works 0-1 us and waits; rank 1's work (a fetch with a release instant in it) starts at 1000 us."""
    return {"traceEvents": [
        {"name": "fetch", "ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
        {"name": "wait", "ph": "X", "pid": 1, "tid": 1, "ts": 1, "dur": 1000},
        {"name": "fetch", "ph": "X", "pid": 2, "tid": 1, "ts": 1000, "dur": 2},
        {"name": "release", "ph": "i", "s": "t", "pid": 2, "tid": 1, "ts": 1001.5},
    ]}


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height of a PNG whose chunks are all whole (each CRC checked) and that ends in IEND."""
    assert png[:8] == PNG_SIGNATURE, png[:8]
    kinds, at = [], 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at:at + 4])
        kind, data = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", png[at + 8 + length:at + 12 + length])
        assert crc == zlib.crc32(kind + data), f"{kind} CRC {crc:#x}, but should be {zlib.crc32(kind + data):#x}"
        kinds.append(kind)
        at += 12 + length
    assert (kinds[0], kinds[-1], at) == (b"IHDR", b"IEND", len(png)), (kinds, at, len(png))
    return struct.unpack(">II", png[16:24])


def test_ranges_nest_by_depth_and_arrows_join_their_slices():
    trace = tp.parse(_trace())
    rank0, rank1 = trace.processes[1], trace.processes[2]
    assert [(p.name, list(p.tracks)) for p in trace.processes.values()] == [("rank 0", [10]), ("rank 1", [20])]
    assert [(s.name, s.start, s.end, s.depth) for s in rank0.tracks[10].spans] == [
        ("fetch", 0, 100_000, 0), ("store", 20_000, 50_000, 1)]
    assert (rank0.tracks[10].levels, rank1.tracks[20].levels) == (2, 1)
    assert trace.flows == [((1, 10, 20_000), (2, 20, 20_000))]
    assert trace.window == (0, 100_000)


def test_a_range_that_starts_where_another_ends_is_beside_it_not_in_it():
    spans = [tp.Span("b", 10, 20), tp.Span("a", 0, 10), tp.Span("i", 15, None), tp.Span("c", 12, 20)]
    assert tp._nest(spans) == 3
    assert [(s.name, s.depth) for s in spans] == [("a", 0), ("b", 0), ("c", 1), ("i", 2)]


def test_the_layout_places_rows_bars_arrows_and_time_labels():
    """At 400 pixels: names of at most 9 characters take 75 (9 x 6.5 + 16), so the plot is 309 wide, 3.09 pixels a
    us; rank 0's band from y 3, its program (2 levels of 14) from 24, rank 1's band from 55, its incoming from 76."""
    d = tp.layout(tp.parse(_trace()), 400, title="t")
    assert (d.left, d.plot_width, d.plot_height) == (75, 309, 93)
    assert d.rows == [tp.Row("rank 0", 3, 18, True), tp.Row("program 0", 24, 28, False),
                      tp.Row("rank 1", 55, 18, True), tp.Row("incoming", 76, 14, False)]
    assert [(b.name, b.label, b.top, b.bottom, b.colour) for b in d.bars] == [
        ("fetch", "fetch", 24, 52, "#9467bd"),
        ("store", "store", 38, 52, "#1f77b4"),  # inside the fetch: one level down, to the row's bottom
        ("store from rank 0", "store from rank", 76, 90, "#8fbbd9"),  # lighter; its name cut to the 92.7 pixels
    ]
    assert [x for b in d.bars for x in (b.x0, b.x1)] == pytest.approx([0, 309, 61.8, 154.5, 61.8, 154.5])
    assert d.arrows == [pytest.approx((61.8, 45, 61.8, 83))]  # the store's level (38 + 7) to the incoming copy's
    assert d.ticks == [(0, "0 us"), (154.5, "50 us"), (309, "100 us")]  # 50 us: the first step of 100 pixels
    assert (d.breaks, d.events) == ([], ["fetch", "store"])
    assert d.legend() == ["fetch", "store", "lighter: on its target", "remote op to its target"]
    assert (d.legend_columns, d.legend_rows) == (2, 2)  # 384 pixels take 2 entries of 180 a row
    assert (d.width, d.height) == (400, tp.TOP + 93 + tp.AXIS + 2 * tp.LEGEND_ROW + 8)


def test_a_long_idle_stretch_is_cut_out_of_the_time_axis():
    """Nothing starts or ends from 1 us to 1000 us, 999 us against 3 us drawn: cut; 40 pixels of 400 - 75 - 16 = 309
    for the cut leave 269 pixels for 3 us."""
    trace = tp.parse(_late_peer())
    assert tp.find_cuts(trace) == [(1000, 1_000_000)]
    d = tp.layout(trace, 400)
    assert d.rows == [tp.Row("process 1", 3, 18, True), tp.Row("track 1", 24, 14, False),
                      tp.Row("process 2", 41, 18, True), tp.Row("track 1", 62, 28, False)]  # the instant inside
    scale = 269 / 3000
    assert [(b.name, b.x0, b.x1, b.top, b.bottom) for b in d.bars] == [
        ("fetch", 0, pytest.approx(1000 * scale), 24, 38),
        ("wait", pytest.approx(1000 * scale), pytest.approx(2000 * scale + 40), 24, 38),  # across the cut
        ("fetch", pytest.approx(1000 * scale + 40), 309, 62, 90),
        ("release", pytest.approx(2500 * scale + 40), pytest.approx(2500 * scale + 40), 76, 90)]  # an instant
    assert d.breaks == [(pytest.approx(1000 * scale), pytest.approx(1000 * scale + 40), "999 us")]
    assert d.ticks == [(0, "0 us"), (pytest.approx(1000 * scale + 40), "1000 us"), (309, "1002 us")]  # 2 us a step
    assert d.legend() == ["fetch", "release", "wait", "instant", "time cut out"]
    linear = tp.layout(trace, 400, cuts=False)  # the fetch at least a pixel wide, the wait 1001 us of 1002
    assert (linear.breaks, [b.x1 for b in linear.bars][:2]) == ([], [1, pytest.approx(1001 / 1002 * 309)])


def test_a_gap_at_most_four_times_the_rest_is_not_cut():
    doc = _late_peer()
    doc["traceEvents"][1]["dur"] = 4 * 3 + 1  # rank 1 from 13 us: the gap 1 - 13 us is 4 times the 3 us beside it
    doc["traceEvents"][2:] = [{**doc["traceEvents"][2], "ts": 13}]
    assert tp.find_cuts(tp.parse(doc)) == []


def test_the_time_axis_maps_across_a_cut():
    axis = tp.TimeAxis(0, 1_002_000, 200, ((1000, 1_000_000),))
    assert axis.scale == pytest.approx(160 / 3000)
    assert [axis.x(t) for t in (0, 1000, 500_500, 1_000_000, 1_002_000)] == pytest.approx(
        [0, 160 / 3, 160 / 3 + 20, 160 / 3 + 40, 200])
    assert axis.segments() == [(0, 1000), (1_000_000, 1_002_000)]


@pytest.mark.parametrize(("ns_per_pixel", "step"), [(0.01, 1), (1, 100), (1.01, 200), (2500, 500_000),
                                                     (20_000.01, 5_000_000)])
def test_the_time_axis_steps_are_1_2_5_times_ten_to_the_n(ns_per_pixel, step):
    assert tp.tick_step(ns_per_pixel) == step


@pytest.mark.parametrize(("ns", "step", "label"), [
    (0, 50_000, "0 us"), (36_940_000, 20_000, "36940 us"), (1_500, 500, "1.5 us"), (3_000_000, 100_000, "3.0 ms"),
    (20, 10, "20 ns"), (7_000_000_000, 1_000_000_000, "7 s")])
def test_time_labels_carry_the_decimals_their_step_needs(ns, step, label):
    assert tp.time_label(ns, step) == label


def test_colours_and_text_on_them():
    assert tp.colour("store") == "#1f77b4" and tp.colour("store (unfinished)") == "#1f77b4"
    assert tp.colour("store from rank 3") == "#8fbbd9"  # (0x1f + 255) // 2 = 0x8f, ...
    assert tp.ink_on("#1f77b4") == tp.PAPER and tp.ink_on("#bcbd22") == tp.INK and tp.ink_on("#ffffff") == tp.INK


def test_names_longer_than_a_third_of_the_picture_are_cut():
    doc = {"traceEvents": [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "x" * 200}}, FETCH_ARGS]}
    d = tp.layout(tp.parse(doc), 400)
    assert (d.left, d.plot_width, d.rows[0].label) == (133, 251, "x" * 19)  # (133 - 8) / 6.5


def test_the_picture_is_a_png_of_the_layouts_size_with_the_bars_where_the_layout_puts_them():
    image = pytest.importorskip("matplotlib.image")
    d = tp.layout(tp.parse(_trace()), 400)
    png = tp.render(d)
    assert _png_size(png) == (400, d.height)
    pixels = image.imread(__import__("io").BytesIO(png), format="png")

    def at(bar: tp.Bar) -> str:  # the colour in the middle of the bar's lowest level, inside nothing deeper
        x, y = d.left + (bar.x0 + bar.x1) / 2, tp.TOP + bar.bottom - tp.LEVEL / 2
        return "#" + "".join(f"{round(255 * c):02x}" for c in pixels[int(y), int(x), :3])

    fetch, store, incoming = d.bars
    assert [at(store), at(incoming)] == [store.colour, incoming.colour]
    assert at(tp.Bar("fetch", "", 200, 300, fetch.top, fetch.bottom, "")) == fetch.colour  # past the store


def test_main_writes_the_png_beside_the_trace(tmp_path, capsys):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(_trace()))
    assert tp.main([str(trace), "--width", "400"]) == tmp_path / "t.png"
    assert capsys.readouterr().out == f"wrote {tmp_path / 't.png'} ({(tmp_path / 't.png').stat().st_size} bytes)\n"
    assert _png_size((tmp_path / "t.png").read_bytes()) == (400, 217)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "t.png").stat().st_mode) == 0o666 & ~umask  # an ordinary file, not mkstemp's 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json", "t.png"]


def test_main_makes_the_outs_folder(tmp_path, capsys):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(_late_peer()))
    out = tmp_path / "new" / "late.png"
    assert tp.main([str(trace), "--out", str(out), "--width", "320", "--no-cuts"]) == out
    assert _png_size(out.read_bytes())[0] == 320 and capsys.readouterr().out.startswith(f"wrote {out} (")


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


def _refused(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as refused:
        tp.main(argv)
    out, err = capsys.readouterr()
    assert (refused.value.code, out, err.count("\n")) == (2, "", 1), (refused.value.code, out, err)
    return err.removeprefix("python -m examples.timeline_png: ")


def test_a_picture_taller_than_the_limit_is_refused(tmp_path, capsys):
    """1000 tracks of one level: 50 (title, time labels) + 3 + 21 (the band) + 1000 x 17 + 26 (time labels) + 20 (the
    legend) + 8 = 17128 pixels."""
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [{**FETCH_ARGS, "tid": t} for t in range(1000)]}))
    assert _refused([str(trace)], capsys) == (f"TRACE '{trace}': its 1000 tracks need a picture 17128 pixels high; "
                                              "expected at most 16384 (a trace of fewer programs or ranks)\n")
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


@pytest.mark.parametrize(("out", "why"), [
    ("", "is empty"), ("t.svg", "does not end in .png"), ("t.json", "does not end in .png"),
    ("sub", "does not end in .png"), ("sub.png", "is a folder"), ("t.json/x.png", "t.json is not a folder")])
def test_an_out_that_cannot_take_the_picture_is_refused(tmp_path, capsys, monkeypatch, out, why):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.json").write_text(json.dumps(_trace()))
    (tmp_path / "sub.png").mkdir()
    assert _refused(["t.json", "--out", out], capsys) == (
        f"argument --out: --out '{out}': {why}; expected a PNG file in a folder that can be made and written\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub.png", "t.json"]


def test_an_out_in_a_folder_that_takes_no_file_is_refused(tmp_path, capsys):
    (tmp_path / "t.json").write_text(json.dumps(_trace()))
    err = _refused([str(tmp_path / "t.json"), "--out", "/proc/t.png"], capsys)
    assert err.startswith("argument --out: --out '/proc/t.png': nothing can be made or written in /proc ("), err
    assert err.endswith("); expected a PNG file in a folder that can be made and written\n"), err


def test_a_trace_named_png_is_not_overwritten_by_its_picture(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.png").write_text(json.dumps(_trace()))
    assert _refused(["t.png"], capsys) == "--out 't.png': is the trace itself; expected a PNG file other than TRACE\n"
    assert json.loads((tmp_path / "t.png").read_text()) == _trace()


def test_a_default_out_that_cannot_be_written_is_refused(tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "t.json").write_text(json.dumps(_trace()))
    (folder / "t.png").mkdir()  # the default --out is a folder
    assert _refused([str(folder / "t.json")], capsys) == (
        f"--out '{folder / 't.png'}': is a folder; expected a PNG file in a folder that can be made and written "
        "(the default --out)\n")
    assert sorted(p.name for p in folder.iterdir()) == ["t.json", "t.png"] and not any((folder / "t.png").iterdir())


def test_without_matplotlib_the_plot_extra_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    (tmp_path / "t.json").write_text(json.dumps(_trace()))
    assert _refused([str(tmp_path / "t.json")], capsys) == (
        "matplotlib is not installed; expected it to draw the picture: pip install -e '.[plot]' (or pip install "
        "'matplotlib>=3.7')\n")
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_the_test_extra_holds_the_plot_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["plot"] == ["matplotlib>=3.7"] and set(extras["plot"]) <= set(extras["test"])
