"""The report's charts: PNGs drawn with matplotlib's Agg backend (no display needed) from the
figures of relq.pipeline.figures. Each function writes one file and returns its name."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

CHARTS = ("throughput.png", "hourly.png", "wait.png", "duration.png", "rates.png")
TOP = 30  # groups per bar chart, the most items first; the table and the JSON keep every group
FIRST_STEP = "(first step)"
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
    """Per queue and hour: items enqueued (dashed) and finished (solid), the backlog growing
    where the first is above; below, the wait p95 of the attempts started in the hour."""
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
        top.plot(hours, [r["finished"] for r in rows], color=color, linewidth=1,
                 label=f"{_text(queue)} finished")
        top.plot(hours, [r["enqueued"] for r in rows], color=color, linewidth=1, linestyle="--",
                 label=f"{_text(queue)} enqueued")
        waits = [(h, r["wait_ms_p95"]) for h, r in zip(hours, rows, strict=True)
                 if r["wait_ms_p95"] is not None]
        bottom.plot([h for h, _ in waits], [_positive(w) for _, w in waits], color=color, linewidth=1)
    top.set_title("enqueued (dashed) and finished (solid) items per hour (UTC)")
    top.set_ylabel("items")
    bottom.set_ylabel("wait p95")
    if series:
        bottom.set_yscale("log")
        bottom.yaxis.set_major_formatter(_human())
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


def _human() -> Any:
    from matplotlib.ticker import FuncFormatter

    from relq.pipeline.units import duration

    return FuncFormatter(lambda value, _: duration(value))


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
        ax.xaxis.set_major_formatter(_human())
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
