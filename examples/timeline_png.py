"""Draw a JSON trace that ``tracing.export`` wrote (merged or one rank's) as a PNG timeline, with matplotlib.

    python -m examples.timeline_png TRACE.json [--out PICTURE.png] [--width PIXELS] [--no-cuts]

A grey band per process ("triton rank 0") over a row per track (a program, or the rank's "incoming" track: what
other ranks' remote ops did to it). Ranges are bars coloured by event; a range inside another is drawn inside it, one
level lower and down to the row's bottom, so a row shows its phases nested as the kernel opened them. An op's copy on
its target's incoming track has the op's colour, lighter; instants are triangles; an arrow leads from each remote op
to its copy on its target. A stretch of time in which nothing starts or ends and that is more than four times longer
than all the rest together (a rank waiting for a peer whose kernel started later) is cut out of the time axis and
drawn as a narrow hatched break labelled with its length, so every rank's work keeps its width; ``--no-cuts`` draws
time linearly. The time axis counts from the trace's first event; a legend of the events is at the bottom.

:func:`layout` places everything in pixels (no matplotlib); :func:`render` draws that with matplotlib, the optional
``plot`` extra (``pip install -e '.[plot]'``). ``--out`` defaults to TRACE with the suffix ``.png``. Bad input (a
missing file, a file that is no JSON trace, a trace with nothing to draw, a picture taller than ``MAX_HEIGHT``, an
``--out`` that is empty, not a .png, a folder, the trace itself or in a folder that cannot be written, or no
matplotlib) is refused in one line on stderr, exit code 2, before anything is drawn or written; the picture is
written under a temporary name and renamed.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from iris.cli_args import OneLineParser, int_in, out_file
from iris.tracing.export import write_atomically

DPI = 100
LEVEL = 14  # pixels a nesting level takes in a track's row
BAND = 18  # pixels of a process's band (its name)
GAP = 3  # pixels between rows
TOP = 50  # the title and the upper time labels
AXIS = 26  # the lower time labels
LEGEND_ROW = 20  # pixels a row of the legend takes
LEGEND_ENTRY = 180  # pixels an entry of the legend takes across, about
LABEL_CHAR = 6.5  # pixels a character of a row's name takes (8 pt DejaVu Sans at DPI), about
BAR_CHAR = 5.6  # pixels a character of a bar's label takes (7 pt), about
BREAK = 40  # pixels a cut of the time axis takes
TICK_SPACING = 100  # pixels at least between two time labels
MAX_CUTS = 3
CUT_RATIO = 4  # a gap is cut where it is longer than this many times all the time left drawn beside it
WIDTH_LIMITS = (320, 8000)
MAX_HEIGHT = 16384  # pixels: about 950 tracks of one level
INCOMING = " from rank "
UNFINISHED = " (unfinished)"
PICTURE = "a PNG file"
PLOT_EXTRA = "pip install -e '.[plot]' (or pip install 'matplotlib>=3.7')"

INK = "#202020"  # text, arrows
PAPER = "#ffffff"  # text on a dark bar
BAND_COLOUR = "#e4e4e4"
STRIPE = "#f6f6f6"  # behind every other track
GRID = "#d0d0d0"
# tab10, the events of iris/tracing/events.py that a timeline of the examples shows most each its own colour
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
COLOURS = {"store": PALETTE[0], "atomic_xchg": PALETTE[1], "compute": PALETTE[2], "wait": PALETTE[3],
           "fetch": PALETTE[4], "get": PALETTE[5], "put": PALETTE[6], "barrier": PALETTE[7], "reduce": PALETTE[8],
           "load": PALETTE[9]}


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

    def all_spans(self) -> list[Span]:
        return [s for p in self.processes.values() for t in p.tracks.values() for s in t.spans]

    @property
    def window(self) -> tuple[int, int]:
        spans = self.all_spans()
        return min(s.start for s in spans), max(s.start if s.end is None else s.end for s in spans)


def event(name: str) -> str:
    """The event a slice's name shows: "store from rank 1" and "wait (unfinished)" are "store" and "wait"."""
    return name.removesuffix(UNFINISHED).split(INCOMING)[0]


def colour(name: str) -> str:
    """A slice's colour ("#rrggbb"): its event's (``COLOURS``, else a palette entry chosen by the name); "<op> from
    rank R" (the target's copy of a remote op) is its op's colour, lightened halfway to white."""
    base = COLOURS.get(event(name)) or PALETTE[zlib.crc32(event(name).encode()) % len(PALETTE)]
    if INCOMING not in name:
        return base
    return "#" + "".join(f"{(int(base[i:i + 2], 16) + 255) // 2:02x}" for i in (1, 3, 5))


def ink_on(background: str) -> str:
    """Text colour on ``background``: ``INK`` on a light colour, ``PAPER`` on a dark one (luma below 140 of 255)."""
    red, green, blue = (int(background[i:i + 2], 16) for i in (1, 3, 5))
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


def find_cuts(trace: Trace) -> list[tuple[int, int]]:
    """The stretches (start, end in ns) cut out of the time axis, in time order: the longest gaps between one start or
    end (of a slice, an instant or an arrow) and the next, each longer than ``CUT_RATIO`` times all the time left
    drawn beside it, at most ``MAX_CUTS``."""
    times = {t for s in trace.all_spans() for t in (s.start, s.end) if t is not None}
    times |= {ns for flow in trace.flows for _, _, ns in flow}
    t0, t1 = trace.window
    times = sorted(t for t in times if t0 <= t <= t1)
    gaps = sorted(((b - a, a, b) for a, b in pairwise(times)), reverse=True)
    cuts, kept = [], t1 - t0
    for length, a, b in gaps[:MAX_CUTS]:
        if length <= CUT_RATIO * (kept - length):
            break
        cuts.append((a, b))
        kept -= length
    return sorted(cuts)


@dataclass(frozen=True)
class TimeAxis:
    """Time (ns) to x (pixels from the plot's left) across ``width`` pixels: linear but for each cut, which takes
    ``BREAK`` pixels whatever its length."""

    t0: int
    t1: int
    width: float
    cuts: tuple[tuple[int, int], ...] = ()

    @property
    def scale(self) -> float:
        """Pixels a ns, outside the cuts."""
        kept = self.t1 - self.t0 - sum(b - a for a, b in self.cuts)
        return (self.width - BREAK * len(self.cuts)) / max(kept, 1)

    def x(self, ns: int) -> float:
        x, at = 0.0, self.t0
        for a, b in self.cuts:
            if ns <= a:
                break
            if ns < b:
                return x + (a - at) * self.scale + BREAK * (ns - a) / (b - a)
            x, at = x + (a - at) * self.scale + BREAK, b
        return x + (ns - at) * self.scale

    def segments(self) -> list[tuple[int, int]]:
        """The stretches of time drawn: between the cuts."""
        edges = [self.t0, *(t for cut in self.cuts for t in cut), self.t1]
        return list(zip(edges[::2], edges[1::2], strict=True))


def tick_step(ns_per_pixel: float) -> int:
    """The time axis's step in ns: 1, 2 or 5 times a power of ten, the smallest at least ``TICK_SPACING`` pixels."""
    step = 1
    while step < TICK_SPACING * ns_per_pixel:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return step


def time_label(ns: int, step: int) -> str:
    """``ns`` on an axis of ``step``: in the largest unit at most 10 steps ("0.5 us", "20 us", "36940 us", "5 ms"),
    with the decimals the step needs and no more."""
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3), ("ns", 1)):
        if scale <= 10 * step or unit == "ns":
            decimals = max(0, len(str(scale)) - len(str(step)))
            return f"{ns / scale:.{decimals}f} {unit}"
    raise AssertionError("unreachable")


def length_label(ns: int) -> str:
    """A cut's length, three digits: "36.9 ms", "750 ns"."""
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns} ns"


@dataclass(frozen=True)
class Row:
    """A process's band (``band``: its name) or a track's row, ``top`` to ``top + height`` pixels in the plot."""

    label: str
    top: int
    height: int
    band: bool


@dataclass(frozen=True)
class Bar:
    """A range (``x0`` < ``x1``) or an instant (``x0`` == ``x1``), in plot pixels; ``label`` the text on it."""

    name: str
    label: str
    x0: float
    x1: float
    top: int
    bottom: int
    colour: str

    @property
    def instant(self) -> bool:
        return self.x0 == self.x1


@dataclass
class Drawing:
    """Everything :func:`render` draws, in pixels: the picture ``width`` x ``height``, the plot ``plot_width`` x
    ``plot_height`` at (``left``, ``TOP``) from the picture's top left, and in it rows (y down), bars, arrows (x0, y0,
    x1, y1, the head at the end), time labels (x, text), breaks (x0, x1, text) and the legend's events."""

    title: str
    width: int
    height: int
    left: int
    plot_width: int
    plot_height: int
    rows: list[Row]
    bars: list[Bar]
    arrows: list[tuple[float, float, float, float]]
    ticks: list[tuple[float, str]]
    breaks: list[tuple[float, float, str]]
    events: list[str]
    legend_columns: int
    legend_rows: int

    def legend(self) -> list[str]:
        """The legend's entries: the events, then what the picture holds of the marks that are no event."""
        extra = [("lighter: on its target", any(INCOMING in b.name for b in self.bars)),
                 ("instant", any(b.instant for b in self.bars)),
                 ("remote op to its target", bool(self.arrows)), ("time cut out", bool(self.breaks))]
        return [*self.events, *(name for name, shown in extra if shown)]


def _fit(text: str, pixels: float, char: float) -> str:
    """``text`` cut to the characters that fit in ``pixels``."""
    return text[:max(int(pixels // char), 0)]


def layout(trace: Trace, width: int, cuts: bool = True, title: str = "") -> Drawing:
    """Where each part of the picture of ``trace``, ``width`` pixels wide, goes; ``cuts``: cut long idle stretches
    out of the time axis (:func:`find_cuts`)."""
    labels = [p.name for p in trace.processes.values()]
    labels += [t.name for p in trace.processes.values() for t in p.tracks.values()]
    left = min(math.ceil(max(map(len, labels)) * LABEL_CHAR) + 16, width // 3)
    plot_width = width - left - 16
    t0, t1 = trace.window
    axis = TimeAxis(t0, t1, plot_width, tuple(find_cuts(trace)) if cuts else ())
    rows: list[Row] = []
    bars: list[Bar] = []
    strips: dict[tuple[int, int, int], float] = {}  # (pid, tid, ns) -> y of the deepest slice starting there
    y = GAP
    for pid, process in trace.processes.items():
        rows.append(Row(_fit(process.name, left - 8, LABEL_CHAR), y, BAND, True))
        y += BAND + GAP
        for tid, track in process.tracks.items():
            height = LEVEL * track.levels
            rows.append(Row(_fit(track.name, left - 8, LABEL_CHAR), y, height, False))
            for s in track.spans:
                top = y + LEVEL * s.depth
                x0 = axis.x(s.start)
                x1 = x0 if s.end is None else max(axis.x(s.end), x0 + 1)
                bottom = top + LEVEL if s.end is None else y + height
                label = _fit(s.name, x1 - x0 - 4, BAR_CHAR)
                bars.append(Bar(s.name, label if len(label) >= 3 else "", x0, x1, top, bottom, colour(s.name)))
                key = (pid, tid, s.start)
                strips[key] = max(strips.get(key, 0), top + LEVEL / 2)
            y += height + GAP
    arrows = [(axis.x(s[2]), strips[s], axis.x(f[2]), strips[f]) for s, f in trace.flows
              if s in strips and f in strips]
    step = tick_step(1 / axis.scale)
    ticks: list[tuple[float, str]] = []
    for a, b in axis.segments():
        for k in range(-((t0 - a) // step), (b - t0) // step + 1):
            x = axis.x(t0 + k * step)
            if not ticks or x - ticks[-1][0] >= TICK_SPACING * 0.6:
                ticks.append((x, time_label(k * step, step)))
    breaks = [(axis.x(a), axis.x(b), length_label(b - a)) for a, b in axis.cuts]
    events = sorted({event(b.name) for b in bars})
    drawing = Drawing(title, width, 0, left, plot_width, y, rows, bars, arrows, ticks, breaks, events, 1, 1)
    drawing.legend_columns = max(1, (width - 16) // LEGEND_ENTRY)
    drawing.legend_rows = -(-len(drawing.legend()) // drawing.legend_columns)
    drawing.height = TOP + y + AXIS + LEGEND_ROW * drawing.legend_rows + 8
    return drawing


def matplotlib_missing() -> bool:
    """Whether matplotlib cannot be imported (the ``plot`` extra is not installed)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return True
    return False


def render(d: Drawing) -> bytes:
    """The PNG of ``d``, drawn with matplotlib (no window, no global state: a Figure on the Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig = Figure(figsize=(d.width / DPI, d.height / DPI), dpi=DPI)
    FigureCanvasAgg(fig)
    bottom = d.height - TOP - d.plot_height
    ax = fig.add_axes((d.left / d.width, bottom / d.height, d.plot_width / d.width, d.plot_height / d.height))
    ax.set_xlim(0, d.plot_width)
    ax.set_ylim(d.plot_height, 0)
    for side in ("left", "right"):
        ax.spines[side].set_visible(False)
    tracks = 0
    for row in d.rows:
        if row.band or tracks % 2:
            ax.axhspan(row.top, row.top + row.height, color=BAND_COLOUR if row.band else STRIPE, lw=0, zorder=0)
        tracks = 0 if row.band else tracks + 1
    ax.set_yticks([r.top + r.height / 2 for r in d.rows], [r.label for r in d.rows], fontsize=8)
    for row, label in zip(d.rows, ax.get_yticklabels(), strict=True):
        label.set_fontweight("bold" if row.band else "normal")
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([x for x, _ in d.ticks], [text for _, text in d.ticks], fontsize=8)
    ax.tick_params(axis="x", top=True, labeltop=True, length=3)
    ax.vlines([x for x, _ in d.ticks], 0, d.plot_height, colors=GRID, lw=0.6, zorder=0.5)
    ranges = [b for b in d.bars if not b.instant]
    ax.bar([b.x0 for b in ranges], [b.bottom - b.top for b in ranges], [b.x1 - b.x0 for b in ranges],
           [b.top for b in ranges], align="edge", color=[b.colour for b in ranges], lw=0.5, zorder=1,
           edgecolor=[PAPER if b.x1 - b.x0 >= 4 else b.colour for b in ranges])  # no white seam on a sliver
    instants = [b for b in d.bars if b.instant]
    if instants:
        ax.scatter([b.x0 for b in instants], [(b.top + b.bottom) / 2 for b in instants], s=28, marker="v",
                   c=[b.colour for b in instants], edgecolors=INK, linewidths=0.4, zorder=3)
    for b in ranges:
        if b.label:
            ax.text(b.x0 + 2, b.top + LEVEL / 2, b.label, fontsize=7, va="center", ha="left", color=ink_on(b.colour),
                    zorder=2, clip_on=True)
    for x0, y0, x1, y1 in d.arrows:
        ax.annotate("", (x1, y1), (x0, y0), zorder=4, arrowprops={
            "arrowstyle": "-|>", "color": INK, "lw": 0.6, "alpha": 0.7, "shrinkA": 0, "shrinkB": 0,
            "mutation_scale": 7})
    for x0, x1, text in d.breaks:
        ax.axvspan(x0, x1, facecolor=PAPER, edgecolor="#909090", hatch="////", lw=0.6, alpha=0.9, zorder=3.5)
        ax.text((x0 + x1) / 2, d.plot_height / 2, f"{text} cut", rotation=90, fontsize=8, ha="center", va="center",
                zorder=3.6, bbox={"facecolor": PAPER, "edgecolor": "none", "pad": 1.5})
    fig.text(8 / d.width, 1 - 8 / d.height, d.title, fontsize=10, va="top", ha="left")
    handles = [Patch(facecolor=colour(name), label=name) for name in d.events]
    marks = {"lighter: on its target": Patch(facecolor="#d8d8d8", label="lighter: on its target"),
             "instant": Line2D([], [], ls="none", marker="v", color=INK, label="instant"),
             "remote op to its target": Line2D([], [], color=INK, marker=">", markevery=[1], lw=0.8,
                                               label="remote op to its target"),
             "time cut out": Patch(facecolor=PAPER, edgecolor="#909090", hatch="////", label="time cut out")}
    handles += [marks[name] for name in d.legend()[len(d.events):]]
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(8 / d.width, 4 / d.height), ncols=d.legend_columns,
               fontsize=8, frameon=False, handlelength=1.6, columnspacing=1.2)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def png_out(text: str) -> Path:
    """An argparse type: the picture's path, a .png file in a folder that can be made and written."""
    if not text:
        raise argparse.ArgumentTypeError(f"--out {text!r}: is empty; expected {PICTURE} in a folder that can be made "
                                         "and written")
    if Path(text).suffix.lower() != ".png" and not Path(text).is_dir():  # a folder: said so by out_file
        raise argparse.ArgumentTypeError(f"--out {text!r}: does not end in .png; expected {PICTURE} in a folder that "
                                         "can be made and written")
    return out_file("--out", PICTURE)(text)


def parser() -> OneLineParser:
    p = OneLineParser(prog="python -m examples.timeline_png", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="TRACE", type=load, help="a JSON trace that tracing.export wrote")
    p.add_argument("--out", type=png_out, default=None, help="the picture (default: TRACE with the suffix .png)")
    p.add_argument("--width", type=int_in("--width", *WIDTH_LIMITS, why="pixels"), default=1200,
                   help="the picture's width in pixels (default 1200)")
    p.add_argument("--no-cuts", action="store_true", help="draw time linearly: cut no idle stretch out of the axis")
    return p


def main(argv: Sequence[str] | None = None) -> Path:
    """Parse ``argv`` (default ``sys.argv[1:]``), lay out and draw the trace and write the PNG; return its path."""
    p = parser()
    args = p.parse_args(argv)
    trace: Trace = args.trace
    default = str(Path(trace.path).with_suffix(".png"))
    try:
        out = args.out or png_out(default)
    except argparse.ArgumentTypeError as e:
        p.error(f"{e} (the default --out)")
    if out.resolve() == Path(trace.path).resolve():
        p.error(f"--out {str(out)!r}: is the trace itself; expected {PICTURE} other than TRACE")
    if matplotlib_missing():
        p.error(f"matplotlib is not installed; expected it to draw the picture: {PLOT_EXTRA}")
    title = f"{Path(trace.path).name}: {trace.spans} slices and instants, {len(trace.flows)} arrows"
    drawing = layout(trace, args.width, not args.no_cuts, title)
    if drawing.height > MAX_HEIGHT:
        tracks = sum(len(p.tracks) for p in trace.processes.values())
        p.error(f"TRACE {trace.path!r}: its {tracks} tracks need a picture {drawing.height} pixels high; expected at "
                f"most {MAX_HEIGHT} (a trace of fewer programs or ranks)")
    picture = render(drawing)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, lambda f: f.write(picture))
    print(f"wrote {out} ({len(picture)} bytes)")
    return out


if __name__ == "__main__":
    main()
