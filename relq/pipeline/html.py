"""The report as one HTML file: its figures as tables, its charts as <img> of the PNGs written
beside it. Every value that comes from the data (queue, type and step names, errors, paths)
goes through html.escape, so a job type named like a <script> stays text."""

from __future__ import annotations

import html
from collections import defaultdict
from typing import Any

from relq.pipeline.charts import label
from relq.pipeline.figures import FINISHED

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tr.queue td { font-weight: bold; background: #f3f3f3; }
tr.type td { background: #fafafa; }
img { max-width: 100%; display: block; margin: 1em 0; }
.note { color: #555; }
"""


def render(report: dict[str, Any]) -> str:
    """The whole page for ``report`` (the dict the JSON file holds)."""
    e = _escape
    summary = report["figures"]["summary"]
    source = report["input"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>relq pipeline report: {e(source['archive'])}</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>relq pipeline report</h1>",
        "<table>",
        _row("generated (UTC)", report["generated_at"]),
        _row("archive", source["archive"]),
        _row("Spark master", source["master"]),
        _row("archived items", f"{summary['items']:,}"),
        _row("enqueued from", summary["first_enqueued"]),
        _row("finished from", summary["first_finished"]),
        _row("finished until", summary["last_finished"]),
        _row("retry rate", _pct(summary["retry_rate"])),
        _row("failure rate", _pct(summary["failure_rate"])),
        _row("wait p50 / p95 / p99", _triple(summary["wait_ms"])),
        _row("duration p50 / p95 / p99", _triple(summary["duration_ms"])),
        "</table>",
        _health(report["health"]),
        "<h2>Charts</h2>",
        *(f'<img src="{e(name)}" alt="{e(name)}">' for name in report["charts"]),
        "<h2>Per queue, type and step</h2>",
        '<p class="note">Times in milliseconds. Rows in bold are a queue, then each of its types, '
        "then the step each item finished at.</p>",
        _groups(report["figures"]["groups"]),
        "<h2>Busiest hour per queue</h2>",
        _busiest(report["figures"]["throughput"]),
        '<p class="note">Every hour, per queue and status, is in the JSON file.</p>',
        "<h2>Definitions</h2>",
        "<dl>",
        *(f"<dt>{e(name)}</dt><dd>{e(text)}</dd>" for name, text in report["definitions"].items()),
        "</dl>",
        "</body></html>",
        "",
    ]
    return "\n".join(parts)


def _escape(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _row(name: str, value: Any) -> str:
    return f"<tr><th>{_escape(name)}</th><td>{_escape(value)}</td></tr>"


def _cells(values: list[Any], tag: str = "td") -> str:
    return "".join(f"<{tag}>{_escape(v)}</{tag}>" for v in values)


def _pct(rate: float) -> str:
    return f"{100 * rate:.2f} %"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def _triple(p: dict[str, Any]) -> str:
    return " / ".join(_ms(p[k]) for k in ("p50", "p95", "p99")) + " ms"


def _groups(groups: list[dict[str, Any]]) -> str:
    head = ["queue / type / step", "items", *FINISHED, "other", "retry rate", "failure rate",
            "wait p50", "wait p95", "wait p99", "duration p50", "duration p95", "duration p99"]
    rows = ["<table>", f"<tr>{_cells(head, 'th')}</tr>"]
    for g in groups:
        values = [label(g), f"{g['items']:,}", *(f"{g['statuses'][s]:,}" for s in (*FINISHED, "other")),
                  _pct(g["retry_rate"]), _pct(g["failure_rate"]),
                  *(_ms(g["wait_ms"][k]) for k in ("p50", "p95", "p99")),
                  *(_ms(g["duration_ms"][k]) for k in ("p50", "p95", "p99"))]
        rows.append(f'<tr class="{_escape(g["level"])}">{_cells(values)}</tr>')
    rows.append("</table>")
    return "\n".join(rows)


def _busiest(throughput: list[dict[str, Any]]) -> str:
    per_hour: dict[tuple[str, str], int] = defaultdict(int)
    for row in throughput:
        per_hour[(row["queue"], row["hour"])] += row["items"]
    best: dict[str, tuple[str, int]] = {}
    for (queue, hour), items in sorted(per_hour.items()):
        if queue not in best or items > best[queue][1]:
            best[queue] = (hour, items)
    rows = ["<table>", f"<tr>{_cells(['queue', 'hour (UTC)', 'finished items'], 'th')}</tr>"]
    rows += [f"<tr>{_cells([queue, hour, f'{items:,}'])}</tr>"
             for queue, (hour, items) in sorted(best.items())]
    rows.append("</table>")
    return "\n".join(rows)


def _health(health: dict[str, Any]) -> str:
    parts = ["<h2>Live health</h2>"]
    if health["state"] != "read":
        parts.append(f'<p class="note">{_escape(health["note"])}</p>')
        return "\n".join(parts)
    parts.append(f'<p class="note">From {_escape(health["source"])} on {_escape(health["server"])}, '
                 f"read {_escape(health['read_at'])}: per minute and durations over the last 15 minutes.</p>")
    states = ("Pending", "Processing", "Error", "Paused", "Failed", "Completed")
    head = ["queue", *states, "oldest due (s)", "past lease", "done/min", "failed/min", "retried/min",
            "p50 ms", "p95 ms"]
    rows = ["<table>", f"<tr>{_cells(head, 'th')}</tr>"]
    for q in health["queues"]:
        values = [q["queue"], *(q["items"].get(s, 0) for s in states), _dash(q["oldest_due_s"]),
                  q["past_lease"], f"{q['completed_per_min']:.1f}", f"{q['failed_per_min']:.1f}",
                  f"{q['retried_per_min']:.1f}", _dash(q["p50_ms"]), _dash(q["p95_ms"])]
        rows.append(f"<tr>{_cells(values)}</tr>")
    rows.append("</table>")
    return "\n".join(parts + rows)


def _dash(value: Any) -> Any:
    return "-" if value is None else value
