"""Draw a JSON trace that ``tracing.export`` wrote (merged or one rank's) as a PNG timeline.

    python -m examples.timeline_png TRACE.json [--out PICTURE.png] [--width PIXELS]

One row per track (a program, or a rank's "incoming" track), under a band per process ("triton rank 0"); ranges are
bars coloured by name, nested ranges drawn below the range that holds them (one level a depth, as Perfetto does);
instants are ticks; arrows (flows: a remote op to its target's incoming slice) are lines ending in a head; the time
axis is at the top and a legend of the names at the bottom. ``--out`` defaults to TRACE with the suffix ``.png``.
Bad input (a missing file, a file that is no JSON trace, a trace with nothing to draw, a picture taller than
``MAX_HEIGHT``) is refused in one line on stderr, exit code 2, before anything is written; the picture is written under
a temporary name and renamed.
"""

from __future__ import annotations

import argparse
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from examples.png_canvas import CHAR_H, CHAR_W, Canvas, Colour, text_width
from iris.cli_args import OneLineParser, int_in, out_file
from iris.tracing.export import write_atomically

BACKGROUND: Colour = (255, 255, 255)
INK: Colour = (32, 32, 32)  # text, the axis
PAPER: Colour = (255, 255, 255)  # text on a dark bar
GRID: Colour = (226, 226, 226)
BAND: Colour = (238, 238, 238)  # behind a process's name
ARROW: Colour = (24, 24, 24)
PALETTE: tuple[Colour, ...] = ((78, 121, 167), (242, 142, 43), (225, 87, 89), (118, 183, 178), (89, 161, 79),
                               (237, 201, 72), (176, 122, 161), (255, 157, 167), (156, 117, 95), (186, 176, 172))
# the events of iris/tracing/events.py that a timeline of the examples shows most, each its own colour
COLOURS: dict[str, Colour] = {"store": PALETTE[0], "atomic_xchg": PALETTE[1], "wait": PALETTE[2], "load": PALETTE[3],
                              "compute": PALETTE[4], "reduce": PALETTE[5], "fetch": PALETTE[6], "put": PALETTE[7],
                              "get": PALETTE[8], "barrier": PALETTE[9]}
LEVEL = 12  # pixels a nesting level takes: a bar of LEVEL - 2 and a gap
MARGIN = 8
AXIS = 2 * CHAR_H + 6  # the title and the time labels
WIDTH_LIMITS = (320, 8000)
MAX_HEIGHT = 16384  # pixels: about 600 tracks of one level
TRACK_INDENT = "  "  # before a track's name, under its process's band
INCOMING = " from rank "
UNFINISHED = " (unfinished)"


@dataclass
class Span:
    """A slice (``end`` > ``start``, or an instant: ``end`` None) of one track, in ns; ``depth`` its nesting level."""

    name: str
    start: int
    end: int | None
    depth: int = 0


@dataclass
class Track:
    name: str
    spans: list[Span] = field(default_factory=list)
    levels: int = 1


@dataclass
class Process:
    name: str
    tracks: dict[int, Track] = field(default_factory=dict)  # by tid, in sort order


@dataclass
class Trace:
    """What a picture shows of a JSON trace: processes by pid (sort order), flows as (start, end) of (pid, tid, ns)."""

    processes: dict[int, Process]
    flows: list[tuple[tuple[int, int, int], tuple[int, int, int]]]
    spans: int
    path: str = ""

    @property
    def window(self) -> tuple[int, int]:
        spans = [s for p in self.processes.values() for t in p.tracks.values() for s in t.spans]
        return min(s.start for s in spans), max(s.start if s.end is None else s.end for s in spans)


def colour(name: str) -> Colour:
    """A slice's colour: its event's (``COLOURS``, else a palette entry chosen by the name); "<op> from rank R" (the
    target's copy of a remote op) is its op's colour, lightened halfway to white."""
    event = name.removesuffix(UNFINISHED).split(INCOMING)[0]
    base = COLOURS.get(event) or PALETTE[zlib.crc32(event.encode()) % len(PALETTE)]
    return tuple((c + 255) // 2 for c in base) if INCOMING in name else base


def ink_on(background: Colour) -> Colour:
    """Text colour on ``background``: ``INK`` on a light colour, ``PAPER`` on a dark one (luma below 140 of 255)."""
    red, green, blue = background
    return PAPER if 299 * red + 587 * green + 114 * blue < 140_000 else INK


def _ns(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) > 1e15:
        raise ValueError(f"{what} is {value!r}, not a number of microseconds")
    return round(value * 1000)


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} is {value!r}, not an integer")
    return value


def parse(doc) -> Trace:
    """The picture's model of a Chrome/Perfetto JSON trace; ValueError naming the first thing that is not one."""
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise ValueError("has no traceEvents list")
    names: dict[tuple[int, int | None], str] = {}
    order: dict[tuple[int, int | None], int] = {}
    spans: list[tuple[int, int, Span]] = []
    ends: dict[object, dict[str, tuple[int, int, int]]] = {}
    for i, e in enumerate(events):
        if not isinstance(e, dict) or not isinstance(e.get("ph"), str):
            raise ValueError(f"event {i} is {str(e)[:60]}, not an object with a 'ph'")
        ph, where = e["ph"], f"event {i} ({e['ph']!r})"
        if ph == "M":
            key = (_int(e.get("pid"), f"{where} pid"), e.get("tid"))
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            if e.get("name") in ("process_name", "thread_name"):
                names[key] = str(args.get("name"))
            elif e.get("name") in ("process_sort_index", "thread_sort_index"):
                order[key] = _int(args.get("sort_index"), f"{where} sort_index")
        elif ph in ("X", "i", "s", "f"):
            pid, tid = _int(e.get("pid"), f"{where} pid"), _int(e.get("tid"), f"{where} tid")
            start = _ns(e.get("ts"), f"{where} ts")
            if ph == "X":
                dur = _ns(e.get("dur"), f"{where} dur")
                if dur < 0:
                    raise ValueError(f"{where} dur is {e['dur']!r}, below 0")
                spans.append((pid, tid, Span(str(e.get("name")), start, start + dur)))
            elif ph == "i":
                spans.append((pid, tid, Span(str(e.get("name")), start, None)))
            else:
                ends.setdefault(e.get("id"), {})[ph] = (pid, tid, start)
    if not spans:
        raise ValueError("holds no slices or instants, nothing to draw")
    processes = {}
    for pid in sorted({p for p, _, _ in spans}, key=lambda p: (order.get((p, None), p), p)):
        tids = sorted({t for p, t, _ in spans if p == pid}, key=lambda t: (order.get((pid, t), t), t))
        processes[pid] = Process(names.get((pid, None), f"process {pid}"),
                                 {t: Track(names.get((pid, t), f"track {t}")) for t in tids})
    for pid, tid, span in spans:
        processes[pid].tracks[tid].spans.append(span)
    for process in processes.values():
        for track in process.tracks.values():
            track.levels = _nest(track.spans)
    flows = [(pair["s"], pair["f"]) for pair in ends.values() if len(pair) == 2]
    return Trace(processes, flows, len(spans))


def _nest(spans: list[Span]) -> int:
    """Give each span its depth: the ranges that hold it (a range holds what starts within it and ends by its end);
    the levels the track needs."""
    spans.sort(key=lambda s: (s.start, -(s.start if s.end is None else s.end)))
    open_ends: list[int] = []
    levels = 1
    for s in spans:
        while open_ends and (open_ends[-1] <= s.start if s.end is not None else open_ends[-1] < s.start):
            open_ends.pop()
        s.depth = len(open_ends)
        levels = max(levels, s.depth + 1)
        if s.end is not None:
            open_ends.append(s.end)
    return levels


def load(text: str) -> Trace:
    """An argparse type: the JSON trace at ``text``, read and checked at once (refused in one line)."""
    expected = "expected a trace that tracing.export wrote as JSON (a .json name, or format='json')"
    try:
        with open(text, "rb") as f:
            doc = json.loads(f.read())
    except FileNotFoundError:
        raise argparse.ArgumentTypeError(f"TRACE {text!r}: no such file; {expected}") from None
    except IsADirectoryError:
        raise argparse.ArgumentTypeError(f"TRACE {text!r}: is a folder; {expected}") from None
    except OSError as e:
        raise argparse.ArgumentTypeError(f"TRACE {text!r}: cannot be read ({e.strerror}); {expected}") from None
    except ValueError:  # UnicodeDecodeError included: a binary .pftrace
        raise argparse.ArgumentTypeError(f"TRACE {text!r}: is not JSON; {expected}") from None
    try:
        trace = parse(doc)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"TRACE {text!r}: {e}; {expected}") from None
    trace.path = text
    return trace


class Layout:
    """Where things go: the label column, each process's band and each track's first level (y of its top row), the
    legend, the picture's height, and the x of a time (the trace's window across the plot)."""

    def __init__(self, trace: Trace, width: int) -> None:
        self.trace, self.width = trace, width
        labels = [p.name for p in trace.processes.values()]
        labels += [TRACK_INDENT + t.name for p in trace.processes.values() for t in p.tracks.values()]
        self.label_w = min(max(map(text_width, labels)) + MARGIN, width // 3)  # longer labels are cut
        self.bands: list[tuple[int, str]] = []  # (y, process name)
        self.tops: dict[tuple[int, int], int] = {}  # (pid, tid) -> y
        y = MARGIN + AXIS
        for pid, process in trace.processes.items():
            self.bands.append((y, process.name))
            y += LEVEL
            for tid, track in process.tracks.items():
                self.tops[(pid, tid)] = y
                y += LEVEL * track.levels + 2
        self.legend_y = y + MARGIN
        self.height = self.legend_y + LEVEL + MARGIN
        self.t0, self.t1 = trace.window
        self.left, self.right = MARGIN + self.label_w, width - MARGIN  # the plot

    def x(self, ns: int) -> int:
        return self.left + (ns - self.t0) * (self.right - self.left) // max(self.t1 - self.t0, 1)

    def y(self, pid: int, tid: int, depth: int) -> int:
        """The top row of a bar at ``depth`` on track (pid, tid)."""
        return self.tops[(pid, tid)] + LEVEL * depth


def _tick(span_ns: int) -> int:
    """The time axis's step: 1, 2 or 5 times a power of ten ns, the smallest that cuts ``span_ns`` into at most 10."""
    step = 1
    while span_ns > 10 * step:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return step


def time_label(ns: int) -> str:
    """``ns`` in the largest unit that keeps it at least 1: "750 ns", "1.5 us", "20 ms", "2 s"."""
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if abs(ns) >= scale:
            return f"{ns / scale:g} {unit}"
    return f"{ns} ns"


def draw(trace: Trace, width: int, title: str = "") -> Canvas:
    """The picture of ``trace``, ``width`` pixels wide."""
    lay = Layout(trace, width)
    c = Canvas(width, lay.height, BACKGROUND)
    c.text(MARGIN, MARGIN, _fit(title, width - 2 * MARGIN), INK)
    step = _tick(lay.t1 - lay.t0)
    for t in range(0, lay.t1 - lay.t0 + 1, step):
        x = lay.x(lay.t0 + t)
        c.rect(x, MARGIN + AXIS - 3, x + 1, lay.legend_y - MARGIN, GRID)
        label = time_label(t)
        c.text(min(x, lay.right - text_width(label)), MARGIN + CHAR_H + 2, label, INK)
    for y, name in lay.bands:
        c.rect(MARGIN, y, lay.right, y + LEVEL - 1, BAND)
        c.text(MARGIN + 2, y + 2, _fit(name, lay.label_w - 2), INK)
    depth_at: dict[tuple[int, int, int], int] = {}  # where an arrow ends: the deepest slice starting there
    for pid, process in trace.processes.items():
        for tid, track in process.tracks.items():
            c.text(MARGIN + 2, lay.y(pid, tid, 0) + 2, _fit(TRACK_INDENT + track.name, lay.label_w - 2), INK)
            for s in track.spans:
                _span(c, lay, lay.y(pid, tid, s.depth), s)
                depth_at[(pid, tid, s.start)] = max(s.depth, depth_at.get((pid, tid, s.start), 0))
    middle = (LEVEL - 2) // 2
    for (sp, st, sx), (fp, ft, fx) in trace.flows:
        if (sp, st) in lay.tops and (fp, ft) in lay.tops:
            _arrow(c, lay.x(sx), lay.y(sp, st, depth_at.get((sp, st, sx), 0)) + middle,
                   lay.x(fx), lay.y(fp, ft, depth_at.get((fp, ft, fx), 0)) + middle)
    _legend(c, lay)
    return c


def _fit(text: str, pixels: int) -> str:
    """``text`` cut to the characters that fit in ``pixels``."""
    return text[:max(pixels // CHAR_W, 0)]


def _span(c: Canvas, lay: Layout, y: int, s: Span) -> None:
    x0 = lay.x(s.start)
    if s.end is None:  # an instant: a tick
        c.rect(x0 - 1, y, x0 + 2, y + LEVEL - 2, colour(s.name))
        return
    x1 = max(lay.x(s.end), x0 + 1)
    c.rect(x0, y, x1, y + LEVEL - 2, colour(s.name))
    label = _fit(s.name, x1 - x0 - 4)
    if len(label) >= 3:
        c.text(x0 + 2, y + 1, label, ink_on(colour(s.name)))


def _arrow(c: Canvas, x0: int, y0: int, x1: int, y1: int) -> None:
    """A line from (x0, y0) to (x1, y1) with a head at (x1, y1)."""
    c.line(x0, y0, x1, y1, ARROW)
    up = -1 if y1 > y0 else 1  # the head opens back towards the line
    for k in range(1, 4):
        c.rect(x1 - k, y1 + up * k, x1 + k + 1, y1 + up * k + 1, ARROW)


def _legend(c: Canvas, lay: Layout) -> None:
    names = sorted({s.name.removesuffix(UNFINISHED).split(INCOMING)[0] for p in lay.trace.processes.values()
                    for t in p.tracks.values() for s in t.spans})
    x = MARGIN
    for name in names:
        c.rect(x, lay.legend_y, x + LEVEL - 2, lay.legend_y + LEVEL - 2, colour(name))
        c.text(x + LEVEL + 1, lay.legend_y + 1, name, INK)
        x += LEVEL + text_width(name) + 3 * CHAR_W


def parser() -> OneLineParser:
    p = OneLineParser(prog="python -m examples.timeline_png", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="TRACE", type=load, help="a JSON trace that tracing.export wrote")
    p.add_argument("--out", type=out_file("--out", "a PNG file"), default=None,
                   help="the picture (default: TRACE with the suffix .png)")
    p.add_argument("--width", type=int_in("--width", *WIDTH_LIMITS, why="pixels"), default=1200,
                   help="the picture's width in pixels (default 1200)")
    return p


def main(argv: Sequence[str] | None = None) -> Path:
    """Parse ``argv`` (default ``sys.argv[1:]``), draw the trace and write the PNG; return its path."""
    p = parser()
    args = p.parse_args(argv)
    trace: Trace = args.trace
    try:
        out = args.out or out_file("--out", "a PNG file")(str(Path(trace.path).with_suffix(".png")))
    except argparse.ArgumentTypeError as e:
        p.error(f"{e} (the default --out)")
    height = Layout(trace, args.width).height
    if height > MAX_HEIGHT:
        tracks = sum(len(p.tracks) for p in trace.processes.values())
        p.error(f"TRACE {trace.path!r}: its {tracks} tracks need a picture {height} pixels high; expected at most "
                f"{MAX_HEIGHT} (a trace of fewer programs or ranks)")
    title = f"{Path(trace.path).name}: {trace.spans} slices and instants, {len(trace.flows)} arrows"
    picture = draw(trace, args.width, title).png()
    write_atomically(out, lambda f: f.write(picture))
    print(f"wrote {out} ({len(picture)} bytes)")
    return out


if __name__ == "__main__":
    main()
