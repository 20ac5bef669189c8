"""Inline SVG plots built from plain numbers (pure functions; no plotting library, nothing fetched).

Each function returns one ``<svg>`` element as text, with a ``viewBox`` so that it scales to
the page width (1280 px screens and phones alike), a ``<title>`` per mark for hover text, and
every label escaped. The same input gives the same bytes (tests compare them).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

PALETTE = ("#1f6feb", "#8250df", "#bf8700", "#1a7f37", "#cf222e", "#57606a")
BAD = "#cf222e"


@dataclass(frozen=True)
class Line:
    name: str
    points: tuple[tuple[float, float], ...]  # (epoch seconds, value), time ascending
    color: str = PALETTE[0]
    step: bool = True  # figures hold until the next point: draw steps, not slopes
    dashed: bool = False


@dataclass(frozen=True)
class Marker:
    """A vertical tick at a moment (an urgent pick, a regression), optionally a link."""

    t: float
    label: str
    url: str | None = None
    color: str = PALETTE[2]


@dataclass(frozen=True)
class Stack:
    """One bar of a stacked bar chart: its label and (part name, value, color) from the bottom up."""

    label: str
    parts: tuple[tuple[str, float, str], ...]
    url: str | None = None


@dataclass(frozen=True)
class Frame:
    width: int = 640
    height: int = 200
    left: int = 44
    right: int = 12
    top: int = 12
    bottom: int = 28
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def inner_w(self) -> float:
        return float(self.width - self.left - self.right)

    @property
    def inner_h(self) -> float:
        return float(self.height - self.top - self.bottom)


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _num(value: float) -> str:
    """Short, stable number text for coordinates."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def nice_max(value: float) -> float:
    """A round axis top at or above ``value`` (1, 2, 2.5 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return float(step * power)
    return float(10 * power)  # pragma: no cover - the loop always returns


def _label(value: float) -> str:
    return f"{value:g}" if abs(value) < 10_000 else f"{value:.3g}"


def _day(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%m-%d")


def _open(frame: Frame, title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {frame.width} {frame.height}" '
        f'role="img" aria-label="{_e(title)}" class="plot" preserveAspectRatio="xMidYMid meet">'
        f"<title>{_e(title)}</title>"
    )


def _axes(frame: Frame, y_top: float, t0: float, t1: float, with_time: bool = True) -> list[str]:
    out = []
    for i in range(5):
        value = y_top * i / 4
        y = frame.top + frame.inner_h * (1 - i / 4)
        out.append(
            f'<line x1="{frame.left}" x2="{frame.width - frame.right}" y1="{_num(y)}" y2="{_num(y)}" class="grid"/>'
        )
        out.append(
            f'<text x="{frame.left - 4}" y="{_num(y + 4)}" text-anchor="end" class="tick">{_e(_label(value))}</text>'
        )
    if with_time and t1 > t0:
        for i in range(5):
            t = t0 + (t1 - t0) * i / 4
            x = frame.left + frame.inner_w * i / 4
            anchor = "start" if i == 0 else "end" if i == 4 else "middle"
            out.append(
                f'<text x="{_num(x)}" y="{frame.height - 8}" text-anchor="{anchor}" class="tick">{_day(t)}</text>'
            )
    return out


def time_chart(
    title: str,
    lines: Sequence[Line],
    *,
    threshold: float | None = None,
    markers: Sequence[Marker] = (),
    frame: Frame | None = None,
    now: float | None = None,
) -> str:
    """Values over time: step lines, a dashed bad-value threshold, and markers at moments."""
    frame = frame or Frame()
    times = [t for line in lines for t, _ in line.points] + [m.t for m in markers]
    values = [v for line in lines for _, v in line.points]
    if not times:
        return (
            _open(frame, title)
            + f'<text x="{frame.width // 2}" y="{frame.height // 2}" text-anchor="middle" class="empty">no data yet</text></svg>'
        )
    t0, t1 = min(times), max([*times, now or 0.0])
    if t1 <= t0:
        t1 = t0 + 86400.0
    y_top = nice_max(max([*values, threshold or 0.0, 0.0]) * 1.05)

    def x(t: float) -> float:
        return frame.left + frame.inner_w * (t - t0) / (t1 - t0)

    def y(v: float) -> float:
        return frame.top + frame.inner_h * (1 - v / y_top)

    out = [_open(frame, title), *_axes(frame, y_top, t0, t1)]
    if threshold is not None:
        ty = _num(y(threshold))
        out.append(
            f'<line x1="{frame.left}" x2="{frame.width - frame.right}" y1="{ty}" y2="{ty}" stroke="{BAD}" '
            f'stroke-dasharray="6 4" class="threshold"><title>bad at {_e(_label(threshold))}</title></line>'
        )
    for m in markers:
        mx = _num(x(m.t))
        tick = (
            f'<path d="M{mx} {frame.top} l-4 -8 h8 z" fill="{m.color}" class="marker"><title>{_e(m.label)}</title></path>'
            f'<line x1="{mx}" x2="{mx}" y1="{frame.top}" y2="{frame.top + frame.inner_h}" stroke="{m.color}" stroke-width="1" opacity="0.5"/>'
        )
        out.append(f'<a href="{_e(m.url)}">{tick}</a>' if m.url else tick)
    for line in lines:
        if not line.points:
            continue
        coords: list[str] = []
        prev_y: float | None = None
        for t, v in line.points:
            if line.step and prev_y is not None:
                coords.append(f"{_num(x(t))},{_num(prev_y)}")
            coords.append(f"{_num(x(t))},{_num(y(v))}")
            prev_y = y(v)
        if line.step and now is not None and prev_y is not None and now > line.points[-1][0]:
            coords.append(f"{_num(x(now))},{_num(prev_y)}")
        dash = ' stroke-dasharray="4 3"' if line.dashed else ""
        out.append(
            f'<polyline points="{" ".join(coords)}" fill="none" stroke="{line.color}" stroke-width="2"{dash} '
            f'class="series" data-name="{_e(line.name)}"><title>{_e(line.name)}</title></polyline>'
        )
    out.append(_legend(frame, [(line.name, line.color) for line in lines]))
    out.append("</svg>")
    return "".join(out)


def _legend(frame: Frame, items: Sequence[tuple[str, str]]) -> str:
    out = []
    x = frame.left + 6
    for name, color in items:
        out.append(f'<rect x="{x}" y="{frame.top + 2}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14}" y="{frame.top + 11}" class="legend">{_e(name)}</text>')
        x += 22 + 7 * len(name)
    return "".join(out)


def stacked_bars(title: str, bars: Sequence[Stack], *, frame: Frame | None = None) -> str:
    """Stacked bars (commits ingested per week, split by how they came in); each bar may link."""
    frame = frame or Frame()
    if not bars:
        return (
            _open(frame, title)
            + f'<text x="{frame.width // 2}" y="{frame.height // 2}" text-anchor="middle" class="empty">no data yet</text></svg>'
        )
    y_top = nice_max(max(sum(v for _, v, _ in b.parts) for b in bars) * 1.05)
    slot = frame.inner_w / len(bars)
    width = max(2.0, slot * 0.7)
    out = [_open(frame, title), *_axes(frame, y_top, 0, 0, with_time=False)]
    for i, bar in enumerate(bars):
        x = frame.left + slot * i + (slot - width) / 2
        base = 0.0
        rects = []
        for name, value, color in bar.parts:
            if value <= 0:
                continue
            h = frame.inner_h * value / y_top
            top = frame.top + frame.inner_h * (1 - (base + value) / y_top)
            rects.append(
                f'<rect x="{_num(x)}" y="{_num(top)}" width="{_num(width)}" height="{_num(h)}" fill="{color}">'
                f"<title>{_e(bar.label)}: {_e(_label(value))} {_e(name)}</title></rect>"
            )
            base += value
        group = "".join(rects)
        out.append(f'<a href="{_e(bar.url)}">{group}</a>' if bar.url else group)
        if len(bars) <= 12 or i % max(1, len(bars) // 8) == 0:
            out.append(
                f'<text x="{_num(x + width / 2)}" y="{frame.height - 8}" text-anchor="middle" class="tick">{_e(bar.label)}</text>'
            )
    names: dict[str, str] = {}
    for bar in bars:
        for name, _, color in bar.parts:
            names.setdefault(name, color)
    out.append(_legend(frame, list(names.items())))
    out.append("</svg>")
    return "".join(out)


def sparkline(
    title: str,
    values: Sequence[tuple[float, str | None]],
    *,
    baseline: float | None = None,
    bad: Sequence[int] = (),
    frame: Frame | None = None,
) -> str:
    """A small line of values in order (L2 metrics per trunk run), the baseline dashed, bad points red."""
    frame = frame or Frame(width=240, height=48, left=2, right=2, top=4, bottom=4)
    if not values:
        return _open(frame, title) + "</svg>"
    nums = [v for v, _ in values] + ([baseline] if baseline is not None else [])
    lo, hi = min(nums), max(nums)
    if hi - lo < 1e-12:
        lo, hi = lo - 1, hi + 1
    pad = (hi - lo) * 0.1
    lo, hi = lo - pad, hi + pad
    n = len(values)

    def x(i: int) -> float:
        return frame.left + (frame.inner_w * i / (n - 1) if n > 1 else frame.inner_w / 2)

    def y(v: float) -> float:
        return frame.top + frame.inner_h * (1 - (v - lo) / (hi - lo))

    out = [_open(frame, title)]
    if baseline is not None:
        by = _num(y(baseline))
        out.append(
            f'<line x1="{frame.left}" x2="{frame.width - frame.right}" y1="{by}" y2="{by}" stroke="#57606a" stroke-dasharray="3 3" class="baseline"/>'
        )
    coords = " ".join(f"{_num(x(i))},{_num(y(v))}" for i, (v, _) in enumerate(values))
    out.append(f'<polyline points="{coords}" fill="none" stroke="{PALETTE[0]}" stroke-width="1.5"/>')
    bad_set = set(bad)
    for i, (v, url) in enumerate(values):
        color = BAD if i in bad_set else PALETTE[0]
        radius = 3 if i in bad_set or i == n - 1 else 1.5
        dot = f'<circle cx="{_num(x(i))}" cy="{_num(y(v))}" r="{radius}" fill="{color}"><title>{_e(_label(v))}</title></circle>'
        out.append(f'<a href="{_e(url)}">{dot}</a>' if url else dot)
    out.append("</svg>")
    return "".join(out)
