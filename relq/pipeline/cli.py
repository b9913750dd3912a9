"""``invoke pipeline.enqueue`` / ``pipeline.archive`` and ``python -m relq.pipeline``:
the data pipeline's commands, with progress on stderr and a summary table.

The connection comes from RELQ_MSSQL, ``--conn`` or invoke.yaml (``relq.mssql``);
paths and the Spark master from the arguments or invoke.yaml's ``relq.pipeline``
(``archive``, ``rejects``, ``master``, ``remote``, ``partitions``). Spark runs on
``local[*]`` unless ``--master`` names another (``spark://host:7077``, ``yarn``, ...),
or on a Spark Connect server with ``--remote sc://host:15002`` (or SPARK_REMOTE).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from relq import db
from relq.errors import RelqError
from relq.pipeline import configured
from relq.pipeline.paths import (
    check_apart,
    check_folder,
    check_input,
    check_output,
    check_replaced,
    for_spark,
)
from relq.pipeline.queues import CUSTOM, JOB, spec
from relq.pipeline.spark import check_target, error_line, here, is_spark_error, require, target

INVOKE = "invoke"  # main's default ``entry``: tasks.py's pipeline tasks call it


class Usage(Exception):
    """A command line the parser refuses: one line, exit code 2."""

    def __init__(self, command: str | None, message: str) -> None:
        super().__init__(message)
        self.command = command


class _Parser(argparse.ArgumentParser):
    """argparse, but a refused command line is a Usage exception (main prints it in one line),
    not argparse's usage block and its own exit."""

    command: str | None = None

    def error(self, message: str) -> Any:  # argparse's hook; it must not return
        raise Usage(self.command, message.removeprefix("argument "))


def _at_least_one(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {number}")
    return number


def parser(config: Mapping[str, Any] | None = None, prog: str = "relq pipeline") -> argparse.ArgumentParser:
    top = _Parser(prog=prog, description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--master", default=None,
                       help="Spark master (default: relq.pipeline.master in invoke.yaml, else local[*])")
        p.add_argument("--remote", default=None,
                       help="a Spark Connect server, sc://host:15002, to run on instead of a master "
                            "(default: SPARK_REMOTE, then relq.pipeline.remote in invoke.yaml)")
        p.add_argument("--partitions", type=_at_least_one, default=configured(config, "partitions") or 8,
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
    a.add_argument("--older-than-minutes", type=_at_least_one, required=True,
                   help="archive items that finished longer ago than this")
    common(a)
    e.command, a.command = "enqueue", "archive"  # type: ignore[attr-defined]
    return top


def spark_error(exc: BaseException) -> str:
    """One line for an error that came through Spark (relq.pipeline.spark.error_line)."""
    return error_line(exc)


def _table(title: str, figures: dict[str, Any]) -> Table:
    table = Table(title=title)
    for name in figures:
        table.add_column(name, justify="right")
    table.add_row(*(f"{v:,}" if isinstance(v, int) else str(v) for v in figures.values()))
    return table


def main(argv: Sequence[str] | None = None, *, conn: str | None = None,
         config: Mapping[str, Any] | None = None, entry: str = INVOKE) -> int:
    """Run a command; its exit code. A refused command line is one line and 2, a problem the
    user can fix (a path, the server, Spark's failure) one line and 1.

    ``entry``: how the user runs the commands, for the usage hint: ``invoke`` (the tasks,
    ``invoke pipeline.enqueue --help``) or a program (``python -m relq.pipeline enqueue --help``)."""
    try:
        args = parser(config, prog="relq pipeline" if entry == INVOKE else entry).parse_args(argv)
    except Usage as exc:
        name = f"pipeline.{exc.command}" if exc.command else "pipeline"
        if entry == INVOKE:
            hint = f"invoke {name} --help" if exc.command else "invoke --list pipeline"
        else:
            hint = f"{entry} {exc.command} --help" if exc.command else f"{entry} --help"
        print(f"{name}: {exc} ({hint})", file=sys.stderr)
        return 2
    console = Console(stderr=True)
    try:
        return _run(args, conn, config, console)
    except RelqError as exc:
        print(f"pipeline.{args.command}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # Spark's and py4j's errors: one line, not a Java stack
        if is_spark_error(exc):
            print(f"pipeline.{args.command}: {spark_error(exc)}", file=sys.stderr)
            return 1
        raise


@require()
def _run(args: argparse.Namespace, conn: str | None, config: Mapping[str, Any] | None,
         console: Console) -> int:
    """Everything that can be checked without Spark is checked first (the queue, the master, the
    paths, the connection): a mistake is one line at once, not after Spark's start."""
    from relq.pipeline.spark import session
    from relq.pipeline.store import SqlStore

    queue = spec(args.queue).name  # an unknown name is refused before Spark starts
    master, remote = target(args.master, args.remote, config)
    check_target(master, remote)
    local_paths = here(remote)  # on a Spark Connect server elsewhere, the paths are its own

    def path(given: str) -> str:
        return for_spark(given, remote)

    target_db = db.resolve_target(args.conn or conn, config)
    store = SqlStore(target_db.conn_str)
    if args.command == "enqueue":
        from relq.pipeline.enqueue import enqueue, read_input

        if not args.rejects:
            raise RelqError("--rejects is required (or relq.pipeline.rejects in invoke.yaml)")
        if local_paths:
            check_input("--input", args.input, args.format)
            check_replaced("--rejects", args.rejects)  # Spark's overwrite deletes what is there
            check_apart("--rejects", args.rejects, "--input", args.input)
            if args.archive:
                check_folder("--archive", args.archive)
                check_apart("--rejects", args.rejects, "--archive", args.archive)
        types: list[str] = []  # a notification has no job type to check
        with store.session() as s:  # the connection, before Spark
            if spec(queue).kind == JOB and args.types:
                types = [t.strip() for t in args.types.split(",") if t.strip()]
            elif spec(queue).kind == JOB:
                types = s.job_types(queue)
        console.print(f"pipeline.{args.command}: {target_db}")  # masked
        spark = session(master, app="relq pipeline.enqueue", remote=remote)
        try:
            frame = read_input(spark, path(args.input), args.format, queue)
            result = enqueue(spark, store, queue, frame, known_types=types, rejects=path(args.rejects),
                             archive=path(args.archive) if args.archive else None,
                             partitions=args.partitions, console=console)
        finally:
            spark.stop()  # on Spark Connect, the server's session goes too
        console.print(_table(f"relq pipeline.enqueue: {queue}", {
            "rows": result.rows, "rejected": result.rejected, "already archived": result.skipped,
            "enqueued": result.enqueued, "duplicates": result.duplicates}))
        if result.rejected:
            console.print(f"{result.rejected:,} rejected rows, with their reason: {args.rejects}")
        return 0
    from relq.pipeline.archive import archive

    if not args.archive:
        raise RelqError("--archive is required (or relq.pipeline.archive in invoke.yaml)")
    if local_paths:
        check_folder("--archive", args.archive)
        check_output("--archive", args.archive)  # written into
    with store.session():  # the connection, before Spark
        pass
    console.print(f"pipeline.{args.command}: {target_db}")  # masked
    spark = session(master, app="relq pipeline.archive", remote=remote)
    try:
        result = archive(spark, store, queue, path(args.archive), older_than_minutes=args.older_than_minutes,
                         partitions=args.partitions, console=console)
    finally:
        spark.stop()
    console.print(_table(f"relq pipeline.archive: {queue}", {
        "finished before (UTC)": result.cutoff.isoformat(sep=" ", timespec="seconds"), "read": result.read,
        "written": result.written, "archived before": result.already, "purged": result.purged,
        "kept": result.kept}))
    if result.kept:
        console.print(f"{result.kept:,} items changed or were held since they were read: they stay in the "
                      f"queue (and are in the archive); a later run purges those still finished")
    return 0
