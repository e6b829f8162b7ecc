"""Server-rendered charts: pure functions that lay out points in SVG pixel space.

The templates draw the returned layouts (and escape every label); nothing here touches HTML,
the database or the network. Axes switch to a log scale when the data spans more than
:data:`LOG_RATIO` (costs and epoch times across GPUs often span three decades).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

#: max/min above which an axis is drawn on a log scale
LOG_RATIO = 30.0


@dataclass(frozen=True, slots=True)
class Datum:
    """A point to plot: data coordinates and what the point says and links to."""

    key: int
    x: float
    y: float
    label: str
    href: str
    classes: str = ""
    frontier: bool = False
    #: the low–high range of each coordinate (drawn as whiskers), when known
    x_range: tuple[float, float] | None = None
    y_range: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True)
class Placed:
    """A point in pixel space (SVG user units); ``whiskers`` are the segments of its ranges
    (x1, y1, x2, y2), clipped to the plot area."""

    key: int
    cx: float
    cy: float
    label: str
    href: str
    classes: str
    whiskers: tuple[tuple[float, float, float, float], ...] = ()


@dataclass(frozen=True, slots=True)
class Rule:
    """A reference line across the plot (a budget, a deadline) with its label."""

    x1: float
    y1: float
    x2: float
    y2: float
    label: str


@dataclass(frozen=True, slots=True)
class Tick:
    """An axis tick: pixel position along the axis, its label and the label's SVG
    ``text-anchor`` (``middle``; ``end`` where a centred label would run off the chart)."""

    pos: float
    label: str
    anchor: str = "middle"


#: Width of one tick-label character in SVG user units at the largest tick font the
#: stylesheet uses (22 units on a phone, where the 960-unit chart is drawn about 360 px wide);
#: a digit of a sans-serif font is about 0.55 em wide, so 22 × 0.6 leaves a little room.
TICK_CHAR_WIDTH = 13.2


def fit_x_ticks(ticks: Sequence[Tick], width: float) -> list[Tick]:
    """Ticks whose centred label would cross the chart's right edge (``width``) end at the
    tick instead (so the last label of the x axis is never clipped on a phone)."""
    out = []
    for t in ticks:
        half = len(t.label) * TICK_CHAR_WIDTH / 2
        out.append(Tick(t.pos, t.label, "end") if t.pos + half > width else t)
    return out


@dataclass(frozen=True, slots=True)
class Scale:
    """Data → pixel mapping of one axis (``lo``..``hi`` onto ``p0``..``p1``)."""

    lo: float
    hi: float
    p0: float
    p1: float
    log: bool

    def __call__(self, v: float) -> float:
        if self.log:
            a, b, t = math.log10(self.lo), math.log10(self.hi), math.log10(max(v, self.lo))
        else:
            a, b, t = self.lo, self.hi, v
        frac = 0.5 if b == a else (t - a) / (b - a)
        return round(self.p0 + frac * (self.p1 - self.p0), 1)


@dataclass(frozen=True, slots=True)
class ChartLayout:
    """Everything a template needs to draw a chart (``viewBox="0 0 width height"``)."""

    width: int
    height: int
    left: int
    top: int
    right: int
    bottom: int
    points: list[Placed]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    x_label: str
    y_label: str
    x_log: bool
    y_log: bool
    line: str = ""
    skipped: int = 0
    extra: dict[str, object] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)


def _frame(width: int, height: int, below: int) -> tuple[int, int, int, int, int, int]:
    """A chart's size and its plot area, the first six fields of :class:`ChartLayout`:
    (width, height, left, top, right, bottom) in px; 78 px left of the plot for the y axis'
    ticks and label, 16 px above and to its right, ``below`` px under it for the x axis'."""
    return width, height, 78, 16, width - 16, height - below


def _nice(value: float) -> float:
    """1, 2 or 5 × 10^k at or above ``value``."""
    if value <= 0:
        return 1.0
    exp = math.floor(math.log10(value))
    for m in (1, 2, 5, 10):
        if m * 10**exp >= value * (1 - 1e-9):
            return float(m * 10**exp)
    return float(10 ** (exp + 1))  # pragma: no cover


def _log_bounds(lo: float, hi: float) -> tuple[float, float]:
    steps = [
        m * 10**e
        for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 2)
        for m in (1, 2, 5)
    ]
    low = max(s for s in steps if s <= lo * (1 + 1e-9))
    high = min(s for s in steps if s >= hi * (1 - 1e-9))
    return low, high


#: Round durations in hours, for log-scale time axes (1 s … 10 years).
DURATION_MARKS_H: tuple[float, ...] = (
    *(x / 3600 for x in (1, 2, 5, 10, 15, 30)),
    *(x / 60 for x in (1, 2, 5, 10, 15, 30)),
    1,
    2,
    3,
    6,
    12,
    *(24 * d for d in (1, 2, 3, 7, 14, 30, 60, 90, 180, 365, 730, 1825, 3650)),
)


def _thin(marks: list[float], most: int = 8) -> list[float]:
    if len(marks) <= most:
        return marks
    step = math.ceil(len(marks) / most)
    return marks[::step]


def axis(
    values: Sequence[float],
    p0: float,
    p1: float,
    fmt: Callable[[float], str],
    *,
    zero: bool = True,
    log_marks: Sequence[float] | None = None,
) -> tuple[Scale, list[Tick]]:
    """A scale over ``values`` (positive) and about five ticks, log when they span widely.

    ``log_marks`` are the round values a log axis may start, end and tick at (default:
    1, 2, 5 × 10^k); linear axes start at zero unless ``zero`` is false.
    """
    lo, hi = min(values), max(values)
    if lo > 0 and hi / lo > LOG_RATIO:
        if log_marks is not None and log_marks[0] <= lo and hi <= log_marks[-1]:
            lo = max(v for v in log_marks if v <= lo * (1 + 1e-9))
            hi = min(v for v in log_marks if v >= hi * (1 - 1e-9))
            marks = [v for v in log_marks if lo <= v <= hi]
        else:
            lo, hi = _log_bounds(lo, hi)
            decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            marks = [m * 10**e for e in decades for m in (1, 2, 5)]
            marks = [v for v in marks if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]
            if len(marks) > 8:
                marks = [v for v in marks if round(v / 10 ** math.floor(math.log10(v))) == 1]
        scale = Scale(lo, hi, p0, p1, log=True)
        return scale, [Tick(scale(v), fmt(v)) for v in _thin(marks)]
    start = 0.0 if zero else lo
    if hi <= start:
        hi = start + (abs(hi) or 1.0)
    step = _nice((hi - start) / 5)
    top = math.ceil(hi / step - 1e-9) * step
    base = math.floor(start / step + 1e-9) * step
    scale = Scale(base, top, p0, p1, log=False)
    n = round((top - base) / step)
    return scale, [Tick(scale(base + i * step), fmt(base + i * step)) for i in range(n + 1)]


def scatter(
    data: Sequence[Datum],
    *,
    x_format: Callable[[float], str],
    y_format: Callable[[float], str],
    x_label: str,
    y_label: str,
    x_marks: Sequence[float] | None = None,
    width: int = 960,
    height: int = 380,
    x_rule: tuple[float, str] | None = None,
    y_rule: tuple[float, str] | None = None,
) -> ChartLayout:
    """Lay out a scatter plot; points with ``frontier`` are joined by a line, left to right.

    Points with a non-finite or non-positive coordinate cannot be placed and are counted in
    ``skipped``. A point's ``x_range``/``y_range`` become whiskers (clipped to the plot).
    ``x_rule``/``y_rule`` (value, label) draw a vertical / horizontal reference line; the
    axes reach them.
    """
    frame = _frame(width, height, 50)
    _, _, left, top, right, bottom = frame
    usable = [d for d in data if math.isfinite(d.x) and math.isfinite(d.y) and d.x > 0 and d.y > 0]
    if not usable:
        return ChartLayout(*frame, [], [], [], x_label, y_label, False, False, skipped=len(data))
    xs = [d.x for d in usable] + ([x_rule[0]] if x_rule and x_rule[0] > 0 else [])
    ys = [d.y for d in usable] + ([y_rule[0]] if y_rule and y_rule[0] > 0 else [])
    sx, x_ticks = axis(xs, left, right, x_format, log_marks=x_marks)
    x_ticks = fit_x_ticks(x_ticks, width)
    sy, y_ticks = axis(ys, bottom, top, y_format)
    spots: dict[tuple[int, int], int] = {}
    for d in usable:
        spot = (round(sx(d.x)), round(sy(d.y)))
        spots[spot] = spots.get(spot, 0) + 1

    def label(d: Datum) -> str:
        others = spots[(round(sx(d.x)), round(sy(d.y)))] - 1
        if not others:
            return d.label
        return f"{d.label} (and {others} other offer{'s' if others > 1 else ''} at this point)"

    def clip(v: float, a: float, b: float) -> float:
        return min(max(v, min(a, b)), max(a, b))

    def whiskers(d: Datum) -> tuple[tuple[float, float, float, float], ...]:
        out = []
        cx, cy = sx(d.x), sy(d.y)
        if d.x_range is not None:
            lo, hi = (clip(sx(v), left, right) for v in d.x_range)
            out.append((lo, cy, hi, cy))
        if d.y_range is not None:
            lo, hi = (clip(sy(v), bottom, top) for v in d.y_range)
            out.append((cx, lo, cx, hi))
        return tuple(out)

    placed = [
        Placed(d.key, sx(d.x), sy(d.y), label(d), d.href, d.classes, whiskers(d)) for d in usable
    ]
    rules = []
    if x_rule and x_rule[0] > 0:
        rules.append(Rule(sx(x_rule[0]), top, sx(x_rule[0]), bottom, x_rule[1]))
    if y_rule and y_rule[0] > 0:
        rules.append(Rule(left, sy(y_rule[0]), right, sy(y_rule[0]), y_rule[1]))
    front = sorted((d for d in usable if d.frontier), key=lambda d: (d.x, d.y))
    line = " ".join(f"{sx(d.x)},{sy(d.y)}" for d in front) if len(front) > 1 else ""
    # frontier points on top of the others, so hovering them always works
    placed.sort(key=lambda p: "frontier" in p.classes)
    return ChartLayout(
        *frame,
        placed,
        x_ticks,
        y_ticks,
        x_label,
        y_label,
        sx.log,
        sy.log,
        line=line,
        skipped=len(data) - len(usable),
        rules=rules,
    )


def _day_ticks(start: float, end: float, most: int = 6) -> list[tuple[float, dt.date]]:
    """Midnight-UTC ticks between two timestamps, every 1, 2, 7, 14, 30 … days."""
    first = dt.datetime.fromtimestamp(start, dt.UTC).date() + dt.timedelta(days=1)
    last = dt.datetime.fromtimestamp(end, dt.UTC).date()
    span = (last - first).days
    step = next((d for d in (1, 2, 7, 14, 30, 61, 91, 182, 365) if span / d < most), 730)
    ticks, day = [], first
    while day <= last:
        ticks.append((dt.datetime.combine(day, dt.time(), dt.UTC).timestamp(), day))
        day += dt.timedelta(days=step)
    return ticks


def timeline(
    observations: Sequence[tuple[dt.datetime, float]],
    *,
    y_format: Callable[[float], str],
    y_label: str,
    now: dt.datetime,
    width: int = 960,
    height: int = 240,
) -> ChartLayout:
    """A price-over-time step chart: each price holds until the next observation (or ``now``).

    ``observations`` must be in time order; the y axis starts at zero.
    """
    frame = _frame(width, height, 44)
    _, _, left, top, right, bottom = frame
    if not observations:
        return ChartLayout(*frame, [], [], [], "", y_label, False, False)
    times = [t.timestamp() for t, _ in observations]
    start, end = times[0], max(times[-1], now.timestamp())
    if end - start < 86400:
        start, end = start - 43200, end + 43200
    sx = Scale(start, end, left, right, log=False)
    sy, y_ticks = axis([p for _, p in observations], bottom, top, y_format)
    placed = [
        Placed(i, sx(ts), sy(p), f"{t.date().isoformat()}: {y_format(p)}", "", "pt")
        for i, ((t, p), ts) in enumerate(zip(observations, times, strict=True))
    ]
    path = []
    for i, p in enumerate(placed):
        if i:
            path.append(f"{p.cx},{placed[i - 1].cy}")
        path.append(f"{p.cx},{p.cy}")
    path.append(f"{sx(end)},{placed[-1].cy}")
    x_ticks = fit_x_ticks([Tick(sx(t), d.isoformat()) for t, d in _day_ticks(start, end)], width)
    return ChartLayout(
        *frame, placed, x_ticks, y_ticks, "", y_label, False, sy.log, line=" ".join(path)
    )


@dataclass(frozen=True, slots=True)
class Segment:
    """One memory component as a share of the bar (percent of the bar's full width)."""

    name: str
    css: str
    gib: float
    x: float
    w: float
    of_usable: float


def memory_bar(
    components: Sequence[tuple[str, str, float]], usable_gib: float
) -> tuple[list[Segment], float, float]:
    """Stack (name, css class, GiB) components; returns (segments, usable VRAM position in
    percent, the bar's full scale in GiB). The scale fits both the total and usable VRAM.
    """
    total = sum(g for _, _, g in components)
    full = max(total, usable_gib, 1e-9) * 1.08
    segments, x = [], 0.0
    for name, css, gib in components:
        w = 100 * gib / full
        segments.append(
            Segment(
                name,
                css,
                gib,
                round(x, 2),
                round(w, 2),
                gib / usable_gib if usable_gib else math.inf,
            )
        )
        x += w
    return segments, round(100 * usable_gib / full, 2), full
