"""The report's charts: PNGs drawn with matplotlib's Agg backend (no display needed) from the
figures of relq.pipeline.figures. Each function writes one file and returns its name."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

CHARTS = ("throughput.png", "hourly.png", "wait.png", "duration.png", "rates.png")
TOP = 30  # groups per bar chart, the most items first; the table and the JSON keep every group
FIRST_STEP = "(first step)"
FINISHED_Z, ENQUEUED_Z = 2.0, 3.0  # hourly.png: the enqueued line is drawn over the finished one
_DPI = 100


def draw(figures: dict[str, Any], out: Path) -> list[str]:
    """Every chart of the report into ``out``; the file names, in CHARTS order."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    return [throughput(figures, out / CHARTS[0]),
            hourly(figures, out / CHARTS[1]),
            percentiles(figures, "wait_ms", "wait for a worker (last attempt)", out / CHARTS[2]),
            percentiles(figures, "duration_ms", "duration (last attempt)", out / CHARTS[3]),
            rates(figures, out / CHARTS[4])]


def label(group: dict[str, Any]) -> str:
    """How a group is named in charts and tables: queue / type [/ step]. Step NULL (a job's
    first step) is FIRST_STEP; dbo.QueueStep is any VARCHAR(50), so a step whose name starts
    with "(" or a double quote is shown quoted (JSON): no step's label is FIRST_STEP."""
    parts = [group["queue"], group["type"]]
    if group["level"] == "step":
        parts.append(_step(group["step"]))
    return " / ".join(p for p in parts if p is not None)


def _step(step: str | None) -> str:
    if step is None:
        return FIRST_STEP
    return json.dumps(step, ensure_ascii=False) if step.startswith(("(", '"')) else step


def top(groups: list[dict[str, Any]], count: int = TOP) -> list[dict[str, Any]]:
    """The ``count`` groups with the most items, in their order."""
    if len(groups) <= count:
        return groups
    keep = {id(g) for g in sorted(groups, key=lambda g: -g["items"])[:count]}
    return [g for g in groups if id(g) in keep]


def throughput(figures: dict[str, Any], path: Path) -> str:
    """Finished items per hour, a line per queue, and below it the failed ones; the last,
    partial hour shaded."""
    from matplotlib import pyplot as plt

    done: dict[str, dict[datetime, int]] = defaultdict(lambda: defaultdict(int))
    failed: dict[str, dict[datetime, int]] = defaultdict(lambda: defaultdict(int))
    for row in figures["throughput"]:
        hour = datetime.fromisoformat(row["hour"].rstrip("Z"))
        done[row["queue"]][hour] += row["items"]
        if row["status"] == "Failed":
            failed[row["queue"]][hour] += row["items"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1]})
    for queue in sorted(done):
        hours = _every_hour(done[queue])
        top.plot(hours, [done[queue].get(h, 0) for h in hours], label=_text(queue), linewidth=1)
        bottom.plot(hours, [failed[queue].get(h, 0) for h in hours], linewidth=1)
    top.set_title("finished items per hour (UTC)")
    top.set_ylabel("items")
    bottom.set_ylabel("failed")
    for ax in (top, bottom):
        _partial(ax, figures)
    if done:
        _legend(top, len(done))
    fig.autofmt_xdate()
    return _save(fig, path)


def hourly(figures: dict[str, Any], path: Path) -> str:
    """Per queue and hour: items finished (a wide pale line) and enqueued (a thin dashed line
    drawn over it, so that it shows where the two are equal), the backlog growing where the
    second is above; below, the wait p95 of the attempts started in the hour."""
    from matplotlib import pyplot as plt

    series: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in figures.get("hourly", []):
        series[row["queue"]].append(row)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, queue in enumerate(sorted(series)):
        rows = series[queue]
        hours = [datetime.fromisoformat(r["hour"].rstrip("Z")) for r in rows]
        color = colors[i % len(colors)]
        top.plot(hours, [r["finished"] for r in rows], color=color, linewidth=4, alpha=0.35,
                 solid_capstyle="butt", zorder=FINISHED_Z, label=f"{_text(queue)} finished")
        top.plot(hours, [r["enqueued"] for r in rows], color=color, linewidth=1, linestyle="--",
                 zorder=ENQUEUED_Z, label=f"{_text(queue)} enqueued")
        waits = [(h, r["wait_ms_p95"]) for h, r in zip(hours, rows, strict=True)
                 if r["wait_ms_p95"] is not None]
        bottom.plot([h for h, _ in waits], [_positive(w) for _, w in waits], color=color, linewidth=1)
    top.set_title("enqueued (dashed) and finished (wide, pale) items per hour (UTC)")
    top.set_ylabel("items")
    bottom.set_ylabel("wait p95")
    if series:
        bottom.set_yscale("log")
        _time_axis(bottom.yaxis)
        bottom.grid(axis="y", which="both", alpha=0.3)
        _legend(top, 2 * len(series))
    for ax in (top, bottom):
        _partial(ax, figures)
    fig.autofmt_xdate()
    return _save(fig, path)


def _partial(ax: Any, figures: dict[str, Any]) -> None:
    """Shade the archive's last hour: it ends at the last finish, so its counts are not an hour's."""
    from datetime import timedelta

    hour = figures.get("summary", {}).get("partial_hour")
    if hour:
        start = datetime.fromisoformat(hour.rstrip("Z"))
        ax.axvspan(start, start + timedelta(hours=1), color="#f5d58a", alpha=0.5, linewidth=0,
                   label="_partial hour")
        ax.text(start, 1.0, " partial", transform=ax.get_xaxis_transform(), va="top", ha="left",
                fontsize=7, color="#8a5a00")


def _legend(ax: Any, entries: int) -> None:
    """The legend above the axes, outside them: it never covers a line or a bar."""
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.08), ncol=min(max(entries, 1), 4), fontsize=8,
              frameon=False)


_MS, _S, _MIN, _H, _D = 1.0, 1000.0, 60_000.0, 3_600_000.0, 86_400_000.0
_UNITS = ((_D, "d"), (_H, "h"), (_MIN, "min"), (_S, "s"), (_MS, "ms"))
_MAX_TICKS = 8
# Durations a time axis may put a labelled tick at, in ms, from the roundest (level 0: powers of
# ten of a millisecond, 1 s, 10 s, 1 min, 10 min, 1 h, 1 d ...) to the finest (level 2: one
# significant digit in its unit). A unit's values stop where the next unit's 1 begins: 60 s is 1 min.
_LEVELS: tuple[tuple[float, ...], ...] = (
    (*(10.0 ** k for k in range(-3, 3)), _S, 10 * _S, _MIN, 10 * _MIN, _H, _D, 10 * _D, 100 * _D),
    (*(m * 10.0 ** k for k in range(-3, 3) for m in (2, 5)), 2 * _S, 5 * _S, 20 * _S, 30 * _S,
     2 * _MIN, 5 * _MIN, 20 * _MIN, 30 * _MIN, 2 * _H, 3 * _H, 6 * _H, 12 * _H, 2 * _D, 5 * _D,
     20 * _D, 50 * _D),
    (*(m * 10.0 ** k for k in range(-3, 3) for m in range(1, 10)),
     *(m * _S for m in range(1, 10)), *(m * 10 * _S for m in range(1, 6)),
     *(m * _MIN for m in range(1, 10)), *(m * 10 * _MIN for m in range(1, 6)),
     *(m * _H for m in range(1, 10)), 10 * _H, 20 * _H,
     *(m * 10.0 ** k * _D for k in range(3) for m in range(1, 10))),
)


def time_ticks(low: float, high: float) -> tuple[list[float], list[float]]:
    """The labelled (major) and gridline (minor) ticks of a log-scale time axis from ``low`` to
    ``high`` ms: round durations only (1 s, 10 s, 1 min, 2 min; never 100 s as "1.7 min"), the
    roundest level that gives at least two ticks, thinned to at most eight; the minor ticks are
    the next level's values in between."""
    low, high = min(low, high), max(low, high)
    levels = [sorted({v for v in level if low <= v <= high}) for level in _LEVELS]
    major: list[float] = []
    for depth in range(len(levels)):
        major = sorted(set().union(*levels[:depth + 1]))
        if len(major) >= 2:
            break
    if not major:  # a range narrower than any round value's neighbourhood: its middle, rounded
        major = [float(f"{math.sqrt(low * high):.2g}")]
    step = max(1, -(-len(major) // _MAX_TICKS))  # ceiling division
    major = major[::step]
    depth = min(depth + 1, len(levels) - 1)
    minor = sorted(set().union(*levels[:depth + 1]) - set(major))
    return major, minor


def tick_label(ms: float) -> str:
    """A duration in the largest unit it is 1 or more of, to three significant digits: time_ticks'
    values are whole numbers of it (500 ms, 1 s, 30 s, 2 min, 6 h, 1 d); 0.05 ms below 1 ms."""
    for size, name in _UNITS:
        if ms >= size * (1 - 1e-9):
            return f"{ms / size:.3g} {name}"
    return f"{ms:.3g} ms"


def _time_axis(axis: Any) -> None:
    """Round durations on a log-scale axis of milliseconds (set after set_xscale/set_yscale,
    which replace the locators): labels at time_ticks' major ticks, gridlines at its minor ones."""
    from matplotlib.ticker import FuncFormatter, Locator, NullFormatter

    class _Ticks(Locator):
        def __init__(self, minor: bool) -> None:
            self.minor = minor

        def __call__(self) -> list[float]:
            return self.tick_values(*self.axis.get_view_interval())

        def tick_values(self, vmin: float, vmax: float) -> list[float]:
            return time_ticks(vmin, vmax)[1 if self.minor else 0]

    axis.set_major_locator(_Ticks(minor=False))
    axis.set_minor_locator(_Ticks(minor=True))
    axis.set_major_formatter(FuncFormatter(lambda value, _: tick_label(value)))
    axis.set_minor_formatter(NullFormatter())


def percentiles(figures: dict[str, Any], key: str, title: str, path: Path) -> str:
    """p50, p95 and p99 of ``key`` per queue and type (the TOP with most items): a marker each
    on a line from p50 to p99, on a log scale (bars would start at the axis' arbitrary left end)."""
    from matplotlib import pyplot as plt

    every = [g for g in figures["groups"] if g["level"] == "type" and g[key]["count"]]
    groups = top(every)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.5 * max(len(groups), 1)))
    rows = range(len(groups))
    ax.hlines(list(rows), [_positive(g[key]["p50"]) for g in groups],
              [_positive(g[key]["p99"]) for g in groups], color="#bbb", linewidth=2)
    for name, marker in (("p50", "o"), ("p95", "s"), ("p99", "D")):
        ax.plot([_positive(g[key][name]) for g in groups], list(rows), marker, label=name, markersize=7)
    ax.set_yticks(list(rows), [_text(label(g)) for g in groups])
    ax.set_ylim(len(groups) - 0.5, -0.5)
    if groups:
        ax.set_xscale("log")
        _time_axis(ax.xaxis)
        _legend(ax, 3)
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.set_xlabel("log scale")
    ax.set_title(title + _of(every))
    return _save(fig, path)


def _positive(value: float) -> float:
    """A log scale cannot show 0 ms: it is drawn at 0.001 ms."""
    return max(value, 1e-3)


def rates(figures: dict[str, Any], path: Path) -> str:
    """Retry and failure rates per queue, type and step (the TOP with most items)."""
    from matplotlib import pyplot as plt

    every = [g for g in figures["groups"] if g["level"] == "step"]
    groups = top(every)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.5 * max(len(groups), 1)))
    height = 0.38
    positions = range(len(groups))
    ax.barh([i - height / 2 for i in positions], [100 * g["retry_rate"] for g in groups],
            height=height, label="retried (AttemptNum > 1)")
    ax.barh([i + height / 2 for i in positions], [100 * g["failure_rate"] for g in groups],
            height=height, label="failed")
    ax.set_yticks(list(positions), [_text(label(g)) for g in groups])
    ax.invert_yaxis()
    ax.set_xlabel("% of items")
    ax.set_title("retry and failure rates per queue, type and step" + _of(every))
    if groups:
        _legend(ax, 2)
    return _save(fig, path)


def _of(every: list[dict[str, Any]]) -> str:
    return f" (the {TOP} of {len(every)} with most items)" if len(every) > TOP else ""


def _text(name: str) -> str:
    """A name from the data as literal text: matplotlib reads $...$ as mathematics."""
    return name.replace("$", r"\$")


def _every_hour(counts: dict[datetime, int]) -> list[datetime]:
    """Every hour from the first to the last, so that an hour without items shows as 0."""
    from datetime import timedelta

    first, last = min(counts), max(counts)
    hours = int((last - first).total_seconds() // 3600) + 1
    return [first + timedelta(hours=i) for i in range(hours)]


def _save(fig: Any, path: Path) -> str:
    from matplotlib import pyplot as plt

    fig.savefig(path, dpi=_DPI, bbox_inches="tight")  # the legends outside the axes included
    plt.close(fig)
    return path.name
