"""The report as one HTML file: its figures as tables, its charts as <img> of the PNGs written
beside it. Every value that comes from the data (queue, type and step names, errors, paths)
goes through html.escape, so a job type named like a <script> stays text.

The page fits 1400 px without scrolling sideways: the per-group figures are two narrow tables
(outcomes, then times), long texts wrap, and a queue with one type (or a type with one step)
is one row, not the same figures repeated."""

from __future__ import annotations

import html
from collections import defaultdict
from typing import Any

from relq.pipeline import units
from relq.pipeline.charts import label
from relq.pipeline.figures import FINISHED
from relq.status import UNFINISHED

LAST_HOURS = 24  # hours of the hourly table, the archive's last
# The health section when no server was given. The same page comes from `invoke pipeline.report`
# and from `invoke pipeline.demo`, which takes no server: so it names the command that reads one.
NOT_READ = ('<p class="note">No SQL Server was read: the figures are the archive\'s only. '
            "<code>invoke pipeline.report --conn '&lt;ODBC connection string&gt;'</code> "
            "(or with <code>RELQ_MSSQL</code> set, or <code>relq.mssql</code> in invoke.yaml) adds each "
            "queue's live health from dbo.QueueHealth_V and dbo.QueueThroughput_V; "
            "<code>invoke pipeline.demo</code> reads no server.</p>")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; max-width: 1300px; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.85em; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; white-space: normal; }
th:first-child, td:first-child { text-align: left; }
td.text { text-align: left; white-space: normal; overflow-wrap: anywhere; max-width: 42em; }
th.text, td.word { text-align: left; }
tr.queue td { font-weight: bold; background: #f3f3f3; }
tr.type td { background: #fafafa; }
tr.partial td { color: #8a5a00; font-style: italic; }
img { max-width: 100%; height: auto; display: block; margin: 1em 0; }
.note { color: #555; max-width: 60em; }
dl { max-width: 70em; } dd { margin: 0 0 0.6em 1.5em; }
"""


def render(report: dict[str, Any]) -> str:
    """The whole page for ``report`` (the dict the JSON file holds)."""
    e = _escape
    figures = report["figures"]
    summary = figures["summary"]
    source = report["input"]
    groups = shown(figures["groups"])
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>relq pipeline report: {e(source['archive'])}</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>relq pipeline report</h1>",
        "<table>",
        _row("generated (UTC)", report["generated_at"]),
        _row("archive", source["archive"]),
        _row("Spark master", source["master"]),
        _row("archived items", units.count(summary["items"])),
        _row("enqueued from", summary["first_enqueued"]),
        _row("finished from", summary["first_finished"]),
        _row("finished until", summary["last_finished"]),
        _row("last hour (partial)", f"{summary['partial_hour']}: ends at the last finish, not an hour"),
        _row("retry rate", units.percent(summary["retry_rate"])),
        _row("failure rate", units.percent(summary["failure_rate"])),
        _row("wait p50 / p95 / p99", _triple(summary["wait_ms"])),
        _row("duration p50 / p95 / p99", _triple(summary["duration_ms"])),
        "</table>",
        _health(report["health"]),
        "<h2>Charts</h2>",
        *(f'<img src="{e(name)}" alt="{e(name)}">' for name in report["charts"]),
        "<h2>Outcomes per queue, type and step</h2>",
        '<p class="note">Rows in bold are a queue, then each of its types, then the step each item '
        "finished at; a queue with one type, or a type with one step, is one row.</p>",
        _outcomes(groups),
        "<h2>Wait and duration per queue, type and step</h2>",
        '<p class="note">Of the last attempt (see the definitions); n: how many items have a value.</p>',
        _times(groups),
        "<h2>Why items failed or were retried</h2>",
        _errors(figures.get("errors", [])),
        f"<h2>Hour by hour (the last {LAST_HOURS} hours of the archive)</h2>",
        '<p class="note">Enqueued and finished counts are of the archived items only; every hour, per '
        "queue, is in the JSON file.</p>",
        _hourly(figures.get("hourly", [])),
        "<h2>Busiest hour per queue</h2>",
        _busiest(figures["throughput"]),
        "<h2>Definitions</h2>",
        "<dl>",
        *(f"<dt>{e(name)}</dt><dd>{e(text)}</dd>" for name, text in report["definitions"].items()),
        "</dl>",
        "</body></html>",
        "",
    ]
    return "\n".join(parts)


def shown(groups: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """The groups the tables show, each with its label: a type row is left out when its queue
    has only that type, step rows when their type has only one step (the row above holds the
    same figures; a named step is then said in that row's label)."""
    types: dict[str, int] = defaultdict(int)
    steps: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for g in groups:
        if g["level"] == "type":
            types[g["queue"]] += 1
        elif g["level"] == "step":
            steps[(g["queue"], g["type"])].append(g)
    out = []
    for g in groups:
        only_steps = steps[(g["queue"], g["type"])] if g["level"] != "queue" else []
        if g["level"] == "type" and types[g["queue"]] == 1:
            continue
        if g["level"] == "step" and len(only_steps) == 1:
            continue
        name = label(g)
        if g["level"] == "queue" and types[g["queue"]] == 1:
            typed = next(t for t in groups if t["level"] == "type" and t["queue"] == g["queue"])
            name = label(typed)
            only_steps = steps[(g["queue"], typed["type"])]
        if g["level"] != "step" and len(only_steps) == 1 and only_steps[0]["step"] is not None:
            name += f" (all at step {label(only_steps[0]).rsplit(' / ', 1)[-1]})"
        out.append((g, name))
    return out


def _escape(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _row(name: str, value: Any) -> str:
    return f"<tr><th>{_escape(name)}</th><td>{_escape(value)}</td></tr>"


def _cells(values: list[Any], tag: str = "td") -> str:
    return "".join(f"<{tag}>{_escape(v)}</{tag}>" for v in values)


def _triple(p: dict[str, Any]) -> str:
    return " / ".join(units.duration(p[k]) for k in ("p50", "p95", "p99"))


def _outcomes(groups: list[tuple[dict[str, Any], str]]) -> str:
    head = ["queue / type / step", "items", *FINISHED, "other", "retry rate", "failure rate"]
    rows = ["<table>", f"<tr>{_cells(head, 'th')}</tr>"]
    for g, name in groups:
        statuses = (units.count(g["statuses"][s]) for s in (*FINISHED, "other"))
        values = [name, units.count(g["items"]), *statuses,
                  units.percent(g["retry_rate"]), units.percent(g["failure_rate"])]
        rows.append(f'<tr class="{_escape(g["level"])}">{_cells(values)}</tr>')
    rows.append("</table>")
    return "\n".join(rows)


def _times(groups: list[tuple[dict[str, Any], str]]) -> str:
    head = ["queue / type / step", "wait n", "wait p50", "wait p95", "wait p99",
            "duration n", "duration p50", "duration p95", "duration p99"]
    rows = ["<table>", f"<tr>{_cells(head, 'th')}</tr>"]
    for g, name in groups:
        values = [name]
        for m in ("wait_ms", "duration_ms"):
            values += [units.count(g[m]["count"]), *(units.duration(g[m][k]) for k in ("p50", "p95", "p99"))]
        rows.append(f'<tr class="{_escape(g["level"])}">{_cells(values)}</tr>')
    rows.append("</table>")
    return "\n".join(rows)


def _errors(errors: list[dict[str, Any]]) -> str:
    if not errors:
        return '<p class="note">No Failed item, and no retried item with an error text.</p>'
    rows = ['<p class="note">Failed: the Error of Failed items. Retried: the Error kept from the attempt '
            "before a retry, of items that then finished otherwise. The most frequent texts of each, "
            "grouped; the rest are summed up in the last row of each kind.</p>",
            "<table>", '<tr><th>queue / type</th><th class="text">kind</th>'
            '<th class="text">error text (numbers and ids as #)</th><th>items</th><th>of the kind</th>'
            '<th class="text">example</th></tr>']
    by_kind: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in errors:
        by_kind[(r["queue"], r["type"], r["kind"])].append(r)
    for (queue, type_, kind), texts in by_kind.items():
        for r in texts:
            rows.append(_error_row([f"{queue} / {type_}", kind], r["error"], r["items"], r["kind_items"],
                                   r["example"]))
        rest = texts[0]["kind_items"] - sum(r["items"] for r in texts)
        if rest:
            others = texts[0]["texts"] - len(texts)
            rows.append(_error_row([f"{queue} / {type_}", kind], f"{others:,} other texts", rest,
                                   texts[0]["kind_items"], ""))
    rows.append("</table>")
    return "\n".join(rows)


def _error_row(names: list[str], text: str, items: int, total: int, example: str) -> str:
    e = _escape
    return (f"<tr><td>{e(names[0])}</td><td class=\"word\">{e(names[1])}</td>"
            f"<td class=\"text\">{e(text)}</td><td>{e(units.count(items))}</td>"
            f"<td>{e(units.percent(items / total))}</td><td class=\"text\">{e(example)}</td></tr>")


def _hourly(hourly: list[dict[str, Any]]) -> str:
    if not hourly:
        return '<p class="note">No hour.</p>'
    hours = sorted({r["hour"] for r in hourly})[-LAST_HOURS:]
    head = ["hour (UTC)", "queue", "enqueued", "finished", "backlog change", "wait p95"]
    rows = ["<table>", f"<tr>{_cells(head, 'th')}</tr>"]
    for r in hourly:
        if r["hour"] not in hours:
            continue
        change = r["enqueued"] - r["finished"]
        hour = r["hour"][:16].replace("T", " ") + (" (partial)" if r["partial"] else "")
        values = [hour, r["queue"], units.count(r["enqueued"]), units.count(r["finished"]),
                  f"{change:+,}", units.duration(r["wait_ms_p95"])]
        rows.append(f'<tr class="{"partial" if r["partial"] else "hour"}">{_cells(values)}</tr>')
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
    rows += [f"<tr>{_cells([queue, hour, units.count(items)])}</tr>"
             for queue, (hour, items) in sorted(best.items())]
    rows.append("</table>")
    return "\n".join(rows)


def _health(health: dict[str, Any]) -> str:
    parts = ["<h2>Live health</h2>"]
    if health["state"] == "not configured":
        parts.append(NOT_READ)
        return "\n".join(parts)
    if health["state"] != "read":
        parts.append(f'<p class="note">{_escape(health["note"])}</p>')
        return "\n".join(parts)
    parts.append(f'<p class="note">From {_escape(health["source"])} on {_escape(health["server"])}, '
                 f"read {_escape(health['read_at'])}: the unfinished items now; per minute and durations "
                 "over the last 15 minutes.</p>")
    head = ["queue", *UNFINISHED, "oldest due", "past lease", "done/min", "failed/min", "retried/min",
            "p50", "p95"]
    rows = ["<table>", f"<tr>{_cells(head, 'th')}</tr>"]
    for q in health["queues"]:
        oldest = None if q["oldest_due_s"] is None else q["oldest_due_s"] * 1000.0
        values = [q["queue"], *(q["items"].get(s, 0) for s in UNFINISHED), units.duration(oldest),
                  q["past_lease"], f"{q['completed_per_min']:.1f}", f"{q['failed_per_min']:.1f}",
                  f"{q['retried_per_min']:.1f}", units.duration(q["p50_ms"]), units.duration(q["p95_ms"])]
        rows.append(f"<tr>{_cells(values)}</tr>")
    rows.append("</table>")
    return "\n".join(parts + rows)
