"""The throughput chart of each queue: QueueThroughput_V's completions and failures per
minute, as the dashboard read them over the last hour (or since it started), drawn as
inline SVG on the server (no script, no build step; it shows with JavaScript off).

The views keep no history, so the dashboard records one reading per queue at most every
``every_s`` seconds, whenever a page, its live refresh or a scrape reads the views; a
straight stretch of the line is a time nobody looked."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from markupsafe import Markup, escape

from relq.status import QueueHealth

WIDTH, HEIGHT, PAD, TOP = 240, 56, 2, 15  # TOP: the labels' band above the lines


@dataclass(frozen=True)
class Point:
    at: float  # seconds (time.time())
    completed: float  # per minute
    failed: float


class History:
    def __init__(self, every_s: float = 10.0, keep_s: float = 3600.0) -> None:
        self.every_s = every_s
        self.keep_s = keep_s
        self.points: dict[str, deque[Point]] = {}

    def add(self, now: float, queues: list[QueueHealth]) -> None:
        for q in queues:
            line = self.points.setdefault(q.queue, deque())
            if line and now - line[-1].at < self.every_s:
                continue
            line.append(Point(now, q.completed_per_min, q.failed_per_min))
            while line and now - line[0].at > self.keep_s:
                line.popleft()

    def svg(self, queue: str, now: float) -> Markup:
        """The chart: completed per minute in one colour, failed in another, over the hour
        before ``now`` or since the first reading (at least a minute)."""
        points = list(self.points.get(queue, ()))
        span = min(self.keep_s, max(60.0, now - points[0].at)) if points else self.keep_s
        top = max([1.0, *(max(p.completed, p.failed) for p in points)])
        label = (f"{queue}: completed and failed per minute over the last {round(span / 60)} min, "
                 f"{len(points)} readings, peak {top:.1f} per minute")
        lines = "".join(
            f'<polyline class="{kind}" points="{_polyline(points, kind, now, span, top)}"/>'
            for kind in ("completed", "failed") if len(points) > 1)
        return Markup(
            f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
            f'role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>'
            f'<rect class="frame" x="0.5" y="0.5" width="{WIDTH - 1}" height="{HEIGHT - 1}"/>'
            f'{lines}<text x="{WIDTH - 4}" y="12" text-anchor="end">{top:.1f}/min</text>'
            f'<text x="4" y="12">{round(span / 60)} min</text></svg>')


def _polyline(points: list[Point], kind: str, now: float, span: float, top: float) -> str:
    def xy(p: Point) -> str:
        x = PAD + (WIDTH - 2 * PAD) * max(0.0, 1 - (now - p.at) / span)
        y = HEIGHT - PAD - (HEIGHT - PAD - TOP) * getattr(p, kind) / top
        return f"{x:.1f},{y:.1f}"

    return " ".join(xy(p) for p in points)
