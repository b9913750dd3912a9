"""The report of a run: a table in the terminal, a JSON file, a PNG chart of throughput
against workers.

The JSON (FORMAT 1) holds, besides when, where and with what settings it ran:
- "scenarios": for each, its question, its arms (one measurement each: items/s, the
  claim and report latencies in ms as count/p50/p95/p99/max, the server-wide lock
  waits and deadlocks during the arm, and the checks) and its ratios (numerator and
  denominator named by their arms; value null when it could not be computed, with a
  note saying why);
- "plans": for each Next_ procedure, whether every read of its queue table was a seek
  or a bounded scan within the limit and its plans had no spool, each read with its
  kind, and each spool;
- "ok" and "failures": whatever makes the run fail (a scan, an unbounded seek or a spool, an
  item claimed and not completed, an arm that measured nothing, a scenario that could
  not run);
- "warnings": what may bound the figures without failing the run (a client with fewer
  CPUs than the workers and the feeder want);
- "costs", when claimcost, healthcost or idle ran (bench.cost, bench.idle): each one's
  measures (calls, logical reads and CPU ms from the server's counters), its bounds
  and whether each held;
- "loads", when producers or transportpurge ran (bench.load): each arm's clients, what
  moved, its PAGELATCH_% waits, lock promotions, 1205/1222 errors and checks, and the
  ratios.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from bench.cost import CostResult, costs_table
from bench.counters import SCOPE
from bench.load import LoadResult, loads_table
from bench.plans import Verdict
from bench.stats import Latency, Ratio
from bench.workers import ArmResult

FORMAT = 1
JSON_NAME = "bench.json"
CHART_NAME = "throughput.png"
SCALING = ("workers", "queues")  # the scenarios whose arms differ only in their workers


@dataclass
class ScenarioResult:
    name: str
    question: str
    arms: list[ArmResult]
    ratios: list[Ratio]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "question": self.question, "arms": [a.as_dict() for a in self.arms],
                "ratios": [r.as_dict() for r in self.ratios]}


@dataclass
class Report:
    started_at: str
    settings: dict[str, Any]
    client: dict[str, Any]
    server: dict[str, Any] = field(default_factory=dict)
    scenarios: list[ScenarioResult] = field(default_factory=list)
    plans: list[Verdict] = field(default_factory=list)
    costs: list[CostResult] = field(default_factory=list)  # claimcost, healthcost, idle: bounds on counters
    loads: list[LoadResult] = field(default_factory=list)  # producers, transportpurge (bench.load)
    problems: list[str] = field(default_factory=list)  # scenarios that could not run
    warnings: list[str] = field(default_factory=list)  # what may bound the figures; the run still passes
    finished_at: str | None = None
    seconds: float | None = None

    def failures(self) -> list[str]:
        found = list(self.problems)
        found += [f"{v.procedure}: {v.summary}" for v in self.plans if not v.ok]
        found += [f"{s.name}, {a.arm.label}: {p}" for s in self.scenarios for a in s.arms for p in a.problems]
        found += [f"{c.name}: {p}" for c in self.costs for p in c.failures()]
        found += [f"{r.name}: {p}" for r in self.loads for p in r.failures()]
        return found

    @property
    def ok(self) -> bool:
        return not self.failures()

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "started_at": self.started_at, "finished_at": self.finished_at,
            "seconds": self.seconds, "server": self.server, "client": self.client, "settings": self.settings,
            "counters": SCOPE, "scenarios": [s.as_dict() for s in self.scenarios],
            "plans": [v.as_dict() for v in self.plans], "ok": self.ok, "failures": self.failures(),
            "warnings": self.warnings,
            # Only when a cost scenario ran (claimcost, healthcost, idle): what each measured, its bounds.
            **({"costs": [c.as_dict() for c in self.costs]} if self.costs else {}),
            **({"loads": [r.as_dict() for r in self.loads]} if self.loads else {}),
        }


# -- the terminal ----------------------------------------------------------------------------------


def _ms(value: Latency | None, which: str) -> str:
    return "-" if value is None else f"{getattr(value, which):.2f}"


def _count(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _check(arm: ArmResult) -> Text:
    return Text("; ".join(arm.problems), style="red") if arm.problems else Text("ok", style="green")


def arms_table(report: Report) -> Table:
    grid = Table(title="relq bench: one row per arm (latencies in ms, timed in the client)", caption=SCOPE)
    for column in ("scenario", "arm", "queue", "workers", "batch", "backlog", "items/s", "claim p50",
                   "claim p95", "claim p99", "report p50", "report p95", "report p99", "lock waits",
                   "deadlocks", "check"):
        left = column in ("scenario", "arm", "queue", "check")
        grid.add_column(column, justify="left" if left else "right")
    for scenario in report.scenarios:
        for a in scenario.arms:
            grid.add_row(scenario.name, a.arm.label, a.arm.queue, str(a.arm.workers), str(a.arm.batch),
                         f"{a.arm.backlog:,}", f"{a.items_per_s:,.0f}", _ms(a.claim_ms, "p50"),
                         _ms(a.claim_ms, "p95"), _ms(a.claim_ms, "p99"), _ms(a.report_ms, "p50"),
                         _ms(a.report_ms, "p95"), _ms(a.report_ms, "p99"),
                         _count(a.counters.lock_waits), _count(a.counters.deadlocks),
                         _check(a))
    return grid


def ratios_table(report: Report) -> Table:
    grid = Table(title="ratios, each of two arms of the same run")
    for column in ("scenario", "ratio", "value"):
        grid.add_column(column, justify="right" if column == "value" else "left")
    for scenario in report.scenarios:
        for r in scenario.ratios:
            grid.add_row(scenario.name, r.name, r.shown())
    return grid


def plans_table(report: Report) -> Table:
    grid = Table(title="the plans behind the claims")
    for column in ("procedure", "verdict", "reads of the queue table"):
        grid.add_column(column)
    for v in report.plans:
        verdict = Text("ok" if v.ok else "FAIL", style="green" if v.ok else "red")
        grid.add_row(v.procedure, verdict, v.summary)
    return grid


def renderable(report: Report) -> Group:
    parts: list[Any] = []
    if report.scenarios:
        parts += [arms_table(report), ratios_table(report)]
    if report.plans:
        parts.append(plans_table(report))
    if report.costs:
        parts.append(costs_table(report.costs))
    if report.loads:
        parts.append(loads_table(report.loads))
    where = report.server.get("version") or "unknown"
    parts.append(Text(f"server {where} ({report.server.get('edition') or 'edition unknown'}, "
                      f"{_count(report.server.get('cpus'))} CPUs); client {report.client.get('host')} "
                      f"({report.client.get('cpus')} CPUs)"))
    parts += [Text(f"warning: {w}", style="yellow") for w in report.warnings]
    verdict = "ok" if report.ok else "FAILED: " + "; ".join(report.failures())
    parts.append(Text(f"bench {verdict}", style="green" if report.ok else "red"))
    return Group(*parts)


def render(report: Report, width: int = 200) -> str:
    """The terminal report as plain text (for tests and logs)."""
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable(report))
    return console.export_text()


# -- the files -------------------------------------------------------------------------------------


def scaling_series(report: Report) -> dict[str, list[tuple[int, float]]]:
    """(workers, items/s) per queue, from the arms that differ only in their workers."""
    series: dict[str, list[tuple[int, float]]] = {}
    for scenario in report.scenarios:
        if scenario.name not in SCALING:
            continue
        for a in scenario.arms:
            what = "claim + complete" if a.arm.relational else "receive"
            series.setdefault(f"{a.arm.queue} ({what})", []).append((a.arm.workers, a.items_per_s))
    return {name: sorted(points) for name, points in series.items()}


def chart(report: Report, path: Path) -> Path:
    """A PNG of throughput against workers, one line per queue."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 5), dpi=100)
    series = scaling_series(report)
    for name, points in series.items():
        axes.plot([w for w, _ in points], [r for _, r in points], marker="o", label=name)
    if series:
        axes.legend(loc="best", fontsize="small")
        axes.set_xticks(sorted({w for points in series.values() for w, _ in points}))
    else:
        axes.text(0.5, 0.5, "no scaling scenario (workers, queues) in this run", ha="center", va="center",
                  transform=axes.transAxes)
    axes.set_xlabel("workers (processes, one connection each)")
    axes.set_ylabel("items per second")
    axes.set_ylim(bottom=0)
    axes.set_title(f"relq: throughput against workers\nserver {report.server.get('version') or 'unknown'}, "
                   f"{report.started_at}", fontsize="medium")
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    pyplot.close(figure)
    return path


def write(report: Report, folder: Path) -> tuple[Path, Path]:
    """The JSON and the PNG, into ``folder`` (created if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    json_path = folder / JSON_NAME
    json_path.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
    return json_path, chart(report, folder / CHART_NAME)
