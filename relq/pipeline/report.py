"""`invoke pipeline.report`: what the queues did, from the archive (relq.pipeline.layout) and,
when a server is configured, the live health views.

``run(archive, out, master, conn)`` writes into ``out``:

- ``report.json``: the figures (relq.pipeline.figures says exactly how each is computed);
- ``report.html``: one self-contained page of tables, with the charts beside it;
- ``throughput.png``, ``hourly.png``, ``wait.png``, ``duration.png``, ``rates.png``
  (relq.pipeline.charts).

report.json, schema_version 1 (a field is only ever added within a version; a change of
meaning or a removal is a new version):

    {"schema": "relq.pipeline.report", "schema_version": 1,
     "generated_at": "2024-06-03T10:00:00.000000Z",          # UTC
     "input": {"archive": str, "master": str,                 # the master the figures ran on
               "remote": str | null},                           # the Spark Connect server, if any
     "definitions": {name: sentence, ...},                      # figures.DEFINITIONS
     "figures": {
       "summary": GROUP-FIGURES + {"first_enqueued", "first_finished", "last_finished",
                                   "partial_hour"},                 # the hour of the last finish
       "groups": [{"level": "queue" | "type" | "step", "queue": str, "type": str | null,
                   "step": str | null, **GROUP-FIGURES}, ...],    # queue, its types, their steps
       "throughput": [{"queue": str, "hour": "...T13:00:00.000000Z", "status": str,
                       "items": int}, ...],
       "hourly": [{"queue": str, "hour": str, "enqueued": int, "finished": int,
                   "wait_count": int, "wait_ms_p95": float | null, "partial": bool}, ...],
       "errors": [{"queue": str, "type": str, "kind": "failed" | "retried", "rank": int,
                   "error": str,                                # grouped: numbers and ids as #
                   "example": str, "items": int, "texts": int,  # texts: of the kind, all
                   "kind_items": int}, ...]},                   # items of the kind, all
     "health": {"state": "read" | "not configured" | "failed", "note": str,
                "source": "dbo.QueueHealth_V, dbo.QueueThroughput_V",
                "server": str | null,                           # never a password
                "read_at": str | null,
                "queues": [relq.status.QueueHealth as a dict, ...]},
     "charts": ["throughput.png", "hourly.png", "wait.png", "duration.png", "rates.png"]}

    GROUP-FIGURES: {"items": int, "statuses": {"Completed": int, "Failed": int,
        "Cancelled": int, "Terminated": int, "PartiallyCompleted": int, "other": int},
        "retried": int, "retry_rate": float, "failed": int, "failure_rate": float,
        "wait_ms": {"count": int, "p50": float | null, "p95": ..., "p99": ...},
        "duration_ms": {"count": int, "p50": ..., "p95": ..., "p99": ...}}

A group level "step" whose step is null holds the items that finished at their first step.
A percentile is null when the group has no value for it (count 0).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from relq.errors import RelqError
from relq.pipeline import configured
from relq.pipeline.layout import PARTITIONS
from relq.pipeline.paths import check_apart, check_output, for_spark, local
from relq.pipeline.spark import REPORT_MODULES, check_target, here, one_line, require, shown_remote

SCHEMA = "relq.pipeline.report"
SCHEMA_VERSION = 1
DEFAULT_OUT = "reports/pipeline"
HEALTH_SOURCE = "dbo.QueueHealth_V, dbo.QueueThroughput_V"
NO_SERVER = ("no SQL Server configured (pass --conn, set RELQ_MSSQL or relq.mssql in invoke.yaml): "
             "the live health views were not read; the figures are the archive's only")


@dataclass(frozen=True)
class Paths:
    """What a report wrote."""

    html: Path
    json: Path
    charts: tuple[Path, ...]
    health: str  # the health section's state: "read", "not configured" or "failed"
    health_note: str  # one line saying what was read, or why not


def settings(config: Mapping[str, Any] | None, archive: str | None = None, out: str | None = None,
             master: str | None = None, remote: str | None = None) -> tuple[str, str, str | None, str | None]:
    """(archive, out, master, remote) from the arguments, else invoke.yaml's ``relq: {pipeline:
    {archive, report, master, remote}}``; out defaults to reports/pipeline, and where the report
    runs to relq.pipeline.spark.target's choice (SPARK_REMOTE before invoke.yaml; none: local[*])."""
    from relq.pipeline.spark import target

    archive = archive or configured(config, "archive")
    if not archive:
        raise RelqError("no archive: pass --archive or set relq.pipeline.archive in invoke.yaml")
    master, remote = target(master, remote, config)
    return str(archive), str(out or configured(config, "report") or DEFAULT_OUT), master, remote


@require(*REPORT_MODULES)
def run(archive: str, out: str | os.PathLike[str], master: str | None = None, conn: str | None = None, *,
        remote: str | None = None, spark: Any = None, console: Any = None) -> Paths:
    """Write the report of the archive under ``archive`` into the folder ``out``.

    ``master``: the Spark master (default local[*]); ``remote``: a Spark Connect server's URL
    (sc://host:port) to run on instead; ``spark``: a session to use instead of starting one (it
    is left running). ``conn``: an ODBC connection string whose database's health views to
    include; None: the report says that none was read. A problem with the archive, ``out``, the
    master or the server's URL is a RelqError (one line) before Spark starts; a server that cannot
    be read is not: the report is written without it and says why.

    The archive is read by Spark (on Spark Connect, by the server: a local path is the server's),
    the files are written here. A local archive is checked first where its path is this machine's
    (a classic session, or a Spark Connect server on this machine)."""
    from relq.pipeline import charts, figures, html, layout
    from relq.pipeline.spark import DEFAULT_MASTER, require_utc, session

    out = Path(out)
    if spark is None:
        check_target(master, remote)
    local_paths = here(remote)
    check_out(out, archive, apart=local_paths)
    if local_paths:
        _check_local(archive)
    started_here = spark is None
    with _steps(console) as step:
        try:
            with step("starting Spark" if not remote else f"connecting to {shown_remote(remote)}"), \
                    one_line("Spark"):
                spark = spark or session(master, app="relq-pipeline-report", remote=remote)
                require_utc(spark, "report")  # hours are bucketed in the session's time zone
            try:
                out.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # checked before Spark; changed since
                raise RelqError(f"--out {out}: cannot create the folder ({exc.strerror})") from None
            drawn: list[str] = []
            with step(f"reading the archive, computing the figures and drawing the charts ({archive})"):
                numbers = _figures(spark, layout, figures, archive, for_spark(archive, remote),
                                   lambda found: drawn.extend(charts.draw(found, out)))
            with step("reading the live health views" if conn else "no server: skipping the health views"):
                health = _health(conn)
            with step(f"writing {out / 'report.json'} and report.html"):
                report = {
                    "schema": SCHEMA,
                    "schema_version": SCHEMA_VERSION,
                    "generated_at": _now(),
                    "input": {"archive": str(archive),
                              "master": spark.conf.get("spark.master", None) or master or DEFAULT_MASTER,
                              "remote": shown_remote(remote) if remote else None},
                    "definitions": figures.DEFINITIONS,
                    "figures": numbers,
                    "health": health,
                    "charts": drawn,
                }
                json_path, html_path = out / "report.json", out / "report.html"
                json_path.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n", encoding="utf-8")
                html_path.write_text(html.render(report), encoding="utf-8")
        finally:
            if started_here and spark is not None:
                spark.stop()
    return Paths(html_path, json_path, tuple(out / name for name in drawn), health["state"], health["note"])


def _figures(spark: Any, layout: Any, figures: Any, archive: str, path: str,
             meanwhile: Any = None) -> dict[str, Any]:
    """The figures of ``archive`` (given to Spark as ``path``), or the one line of what failed;
    ``meanwhile`` as figures.compute takes it."""
    from relq.pipeline.spark import error_line, is_spark_error

    try:
        numbers = figures.compute(layout.read(spark, path, common_only=True), meanwhile)
    except figures.Empty:
        raise RelqError(f"the archive {archive} holds no rows: nothing to report") from None
    except figures.exact.Changed:
        raise RelqError(f"the archive {archive} changed while the report read it (a file was rewritten): "
                        f"run the report again") from None
    except figures.Collision as exc:
        raise RelqError(f"the archive {archive} holds two groups (queue, type, step) whose 64-bit codes are "
                        f"the same, which the report cannot tell apart: {exc}") from None
    except figures.NotAnArchive:
        raise RelqError(f"cannot read the archive {archive}: it holds rows without a Queue, Type or "
                        f"EnqueuedAt (not files in the layout <root>/Queue=/Type=/Day=)") from None
    except Exception as exc:  # a file Spark fails on (a corrupt Parquet file), a path it cannot read
        if not is_spark_error(exc):
            raise
        raise RelqError(f"cannot read the archive {archive}: {error_line(exc)}") from None
    return numbers


def check_out(out: Path, archive: str, *, apart: bool = True) -> None:
    """``out`` can be written before Spark starts: a folder (or one that can be created), not
    inside the archive (the archive would hold the report; checked where ``apart``: the archive's
    path is this machine's), where the report's files are no folders."""
    from relq.pipeline.charts import CHARTS

    check_output("--out", out)
    if apart:
        check_apart("--out", str(out), "--archive", archive, may_hold=True)
    for name in ("report.json", "report.html", *CHARTS):
        if (out / name).is_dir():
            raise RelqError(f"--out {out}: {out / name} is a folder; the report writes a file there")


def _check_local(archive: str) -> None:
    """A local archive that is missing, holds no Parquet file or files outside the layout
    <root>/Queue=/Type=/Day=/ is named as such, before Spark would say "Unable to infer schema" or
    "Conflicting directory structures"; other file systems (hdfs://, s3a://) are Spark's to read."""
    root = local(archive)
    if root is None:
        return
    if not root.is_dir():
        raise RelqError(f"no archive at {archive}: pass the folder pipeline.archive writes to")
    parquet = False
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))  # Spark skips them
        names = sorted(f for f in files if not f.startswith(("_", ".")))
        parquet = parquet or any(name.endswith(".parquet") for name in names)
        parts = Path(folder).relative_to(root).parts
        where = [name + equals for name, equals, _ in (part.partition("=") for part in parts)]
        if names and where != [f"{column}=" for column in PARTITIONS]:
            raise RelqError(f"cannot read the archive {archive}: {Path(folder, names[0])} is outside its "
                            f"layout <root>/Queue=/Type=/Day=/ (pass the folder pipeline.archive writes to)")
    if not parquet:
        raise RelqError(f"the archive {archive} holds no rows (no Parquet file under it): nothing to report")


def _health(conn: str | None) -> dict[str, Any]:
    """The health views' rows through relq.status (the same SQL as `invoke status`)."""
    from relq import db, status

    empty = {"source": HEALTH_SOURCE, "server": None, "read_at": None, "queues": []}
    if not conn:
        return {**empty, "state": "not configured", "note": NO_SERVER}
    server = db.describe(conn)
    try:
        connection = db.connect(conn)
        try:
            queues = status.read(connection)
        finally:
            connection.close()
    except RelqError as exc:
        return {**empty, "server": server, "state": "failed",
                "note": f"the live health views could not be read from {server}: {exc}"}
    return {**empty, "server": server, "read_at": _now(), "state": "read",
            "note": f"read from {server}", "queues": [asdict(q) for q in queues]}


@contextmanager
def _steps(console: Any) -> Iterator[Any]:
    """Progress on stderr: a spinner per step while it runs, its time once it is done."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                        console=console or Console(stderr=True))

    @contextmanager
    def step(description: str) -> Iterator[None]:
        task = progress.add_task(description, total=1)
        try:
            yield
        finally:
            progress.update(task, completed=1)
            progress.stop_task(task)

    with progress:
        yield step


def _now() -> str:
    return datetime.now(timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


