"""``invoke pipeline.enqueue`` / ``pipeline.archive`` and ``python -m relq.pipeline``:
the data pipeline's commands, with progress on stderr and a summary table.

The connection comes from RELQ_MSSQL, ``--conn`` or invoke.yaml (``relq.mssql``);
paths and the Spark master from the arguments or invoke.yaml's ``relq.pipeline``
(``archive``, ``rejects``, ``master``, ``partitions``). Spark runs on ``local[*]``
unless ``--master`` names another (``spark://host:7077``, ``yarn``, ...).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from relq import db
from relq.errors import RelqError
from relq.pipeline import configured
from relq.pipeline.paths import check_folder, check_input
from relq.pipeline.queues import CUSTOM, JOB, spec

_PYTHON_ERROR = re.compile(r"^(?:[\w.]+\.)?(?:RelqError|SqlError|ItemRejected|\w+Error|\w+Exception): .+$",
                           re.MULTILINE)


def parser(config: Mapping[str, Any] | None = None) -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="relq pipeline", description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--master", default=configured(config, "master"),
                       help="Spark master (default local[*])")
        p.add_argument("--partitions", type=int, default=configured(config, "partitions") or 8,
                       help="Spark partitions, each with its own connection (default 8)")
        p.add_argument("--conn", default=None, help="ODBC connection string (RELQ_MSSQL wins)")

    e = commands.add_parser("enqueue", help="validate work items and enqueue the valid ones")
    e.add_argument("--input", required=True, help="the items: a file or folder Spark can read")
    e.add_argument("--format", default="parquet", choices=("parquet", "csv", "json"))
    e.add_argument("--rejects", default=configured(config, "rejects"),
                   help="where the rejected rows go, with their reason (Parquet; replaced)")
    e.add_argument("--queue", default="SyncQueue",
                   help=f"a job queue (default SyncQueue) or {', '.join(CUSTOM)}")
    e.add_argument("--archive", default=configured(config, "archive"),
                   help="the archive root: rows whose DedupKey it holds are not enqueued again")
    e.add_argument("--types", default=None,
                   help="a job queue's job types, comma-separated (default: read from the database)")
    common(e)

    a = commands.add_parser("archive", help="move finished items into the Parquet archive")
    a.add_argument("--archive", default=configured(config, "archive"), help="the archive root")
    a.add_argument("--queue", default="SyncQueue",
                   help=f"a job queue (default SyncQueue) or {', '.join(CUSTOM)}")
    a.add_argument("--older-than-minutes", type=int, required=True,
                   help="archive items that finished longer ago than this")
    common(a)
    return top


def spark_error(exc: BaseException) -> str:
    """One line for an error that came through Spark (a Python worker's traceback inside a
    Java one): the last Python exception line, which for relq's own errors is masked."""
    text = str(exc)
    found = _PYTHON_ERROR.findall(text)
    return found[-1].strip() if found else (text.strip().splitlines() or [type(exc).__name__])[0]


def _table(title: str, figures: dict[str, Any]) -> Table:
    table = Table(title=title)
    for name in figures:
        table.add_column(name, justify="right")
    table.add_row(*(f"{v:,}" if isinstance(v, int) else str(v) for v in figures.values()))
    return table


def main(argv: Sequence[str] | None = None, *, conn: str | None = None,
         config: Mapping[str, Any] | None = None) -> int:
    args = parser(config).parse_args(argv)
    console = Console(stderr=True)
    try:
        return _run(args, conn, config, console)
    except RelqError as exc:
        print(f"pipeline.{args.command}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # Spark's and py4j's errors: one line, not a Java stack
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            print(f"pipeline.{args.command}: {spark_error(exc)}", file=sys.stderr)
            return 1
        raise


def _run(args: argparse.Namespace, conn: str | None, config: Mapping[str, Any] | None,
         console: Console) -> int:
    """Everything that can be checked without Spark is checked first (the queue, the paths,
    the connection): a mistake is one line at once, not after Spark's start."""
    from relq.pipeline.spark import session
    from relq.pipeline.store import SqlStore

    queue = spec(args.queue).name  # an unknown name is refused before Spark starts
    target = db.resolve_target(args.conn or conn, config)
    store = SqlStore(target.conn_str)
    if args.command == "enqueue":
        from relq.pipeline.enqueue import enqueue, read_input

        if not args.rejects:
            raise RelqError("--rejects is required (or relq.pipeline.rejects in invoke.yaml)")
        check_input("--input", args.input, args.format)
        if args.archive:
            check_folder("--archive", args.archive)
        types: list[str] = []  # a notification has no job type to check
        with store.session() as s:  # the connection, before Spark
            if spec(queue).kind == JOB and args.types:
                types = [t.strip() for t in args.types.split(",") if t.strip()]
            elif spec(queue).kind == JOB:
                types = s.job_types(queue)
        console.print(f"pipeline.{args.command}: {target}")  # masked
        spark = session(args.master, app="relq pipeline.enqueue")
        frame = read_input(spark, args.input, args.format, queue)
        result = enqueue(spark, store, queue, frame, known_types=types, rejects=args.rejects,
                         archive=args.archive, partitions=args.partitions, console=console)
        console.print(_table(f"relq pipeline.enqueue: {queue}", {
            "rows": result.rows, "rejected": result.rejected, "already archived": result.skipped,
            "enqueued": result.enqueued, "duplicates": result.duplicates}))
        if result.rejected:
            console.print(f"{result.rejected:,} rejected rows, with their reason: {args.rejects}")
        return 0
    from relq.pipeline.archive import archive

    if not args.archive:
        raise RelqError("--archive is required (or relq.pipeline.archive in invoke.yaml)")
    check_folder("--archive", args.archive)
    with store.session():  # the connection, before Spark
        pass
    console.print(f"pipeline.{args.command}: {target}")  # masked
    spark = session(args.master, app="relq pipeline.archive")
    result = archive(spark, store, queue, args.archive, older_than_minutes=args.older_than_minutes,
                     partitions=args.partitions, console=console)
    console.print(_table(f"relq pipeline.archive: {queue}", {
        "finished before (UTC)": result.cutoff.isoformat(sep=" ", timespec="seconds"), "read": result.read,
        "written": result.written, "archived before": result.already, "purged": result.purged,
        "kept": result.kept}))
    if result.kept:
        console.print(f"{result.kept:,} items changed or were held since they were read: they stay in the "
                      f"queue (and are in the archive); a later run purges those still finished")
    return 0
