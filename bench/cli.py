"""`python -m bench`: run the scenarios against the SQL Server RELQ_MSSQL or --conn
names, print the table, write bench.json and throughput.png.

Exit codes: 0 the run passed; 1 it ran and failed (a claim scans its queue table, an
item claimed was not completed, an arm measured nothing, a scenario could not run), or
it broke on something unexpected (one line: the error); 2 it could not start (no
server configured, bad arguments, no server), with one line saying why; 130 interrupted
(Ctrl-C), after the throwaway database of the scenario running was dropped.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from bench import report as reports
from bench.producers import counts
from bench.scenarios import SCENARIOS, Settings, check_scenarios, run
from relq import db
from relq.errors import RelqError

NO_SERVER = ("bench: no SQL Server configured: set RELQ_MSSQL or pass --conn (an ODBC connection string "
             "to a SQL Server 2017 or later; see bench/README.md)")
DEFAULTS = Settings()


class _Parser(argparse.ArgumentParser):
    """argparse, whose refusal of an option is one line naming it (not the usage too)."""

    def error(self, message: str) -> NoReturn:
        print(f"bench: {message}", file=sys.stderr)
        sys.exit(2)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help=f"comma-separated, of {', '.join(SCENARIOS)} (default: all)")
    p.add_argument("--seconds", type=float, default=DEFAULTS.seconds,
                   help="length of each arm (default %(default)s)")
    p.add_argument("--workers", type=int, default=DEFAULTS.workers,
                   help="the many workers and consumers; the few are 1, and the workers scenario "
                        "measures 2, 4, ... in between (default %(default)s)")
    p.add_argument("--batch", type=int, default=DEFAULTS.batch,
                   help="items per batch claim (default %(default)s)")
    p.add_argument("--backlog", type=int, default=DEFAULTS.backlog,
                   help="due items during the workers, batch, purge and queues arms (default %(default)s)")
    p.add_argument("--small-backlog", type=int, default=DEFAULTS.small_backlog, help="(default %(default)s)")
    p.add_argument("--large-backlog", type=int, default=DEFAULTS.large_backlog, help="(default %(default)s)")
    p.add_argument("--purge-items", type=int, default=DEFAULTS.purge_items,
                   help="finished items for the purge to remove (default %(default)s)")
    p.add_argument("--plan-backlog", type=int, default=DEFAULTS.plan_backlog,
                   help="items in each queue while the claim plans are captured (default %(default)s)")
    p.add_argument("--warmup", type=float, default=DEFAULTS.warmup,
                   help="untimed seconds each worker cycles before an arm (default %(default)s)")
    p.add_argument("--idle-seconds", type=float, default=DEFAULTS.idle_seconds,
                   help="the idle scenario's measured window (default %(default)s)")
    p.add_argument("--producers", type=int, default=DEFAULTS.producers,
                   help="producers in each arm of the producers scenario (default %(default)s)")
    p.add_argument("--consumers", type=counts, default=DEFAULTS.consumers,
                   help="the producers scenario's arms: consumers in each, comma-separated (default "
                        f"{','.join(map(str, DEFAULTS.consumers))})")
    p.add_argument("--out", default="reports/bench", help="folder for bench.json and throughput.png "
                                                          "(default %(default)s)")
    p.add_argument("--conn", default=None, help="ODBC connection string (default: RELQ_MSSQL)")
    return p


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] = os.environ,
         console: Console | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        target = db.resolve_target(args.conn, None, environ)
    except RelqError:
        print(NO_SERVER, file=sys.stderr)
        return 2
    console = console or Console()
    try:
        settings = Settings(seconds=args.seconds, workers=args.workers, batch=args.batch,
                            backlog=args.backlog, small_backlog=args.small_backlog,
                            large_backlog=args.large_backlog, purge_items=args.purge_items,
                            plan_backlog=args.plan_backlog, warmup=args.warmup,
                            idle_seconds=args.idle_seconds, producers=args.producers,
                            consumers=args.consumers)
        names = [n.strip() for n in args.scenarios.split(",") if n.strip()]
        settings.check()  # before the line naming the server: a refusal is the only line
        check_scenarios(names)
        err = Console(stderr=True)
        err.print(f"bench against {db.describe(target.conn_str)}", markup=False)
        result = run(target, settings, names, console=err)
        console.print(reports.renderable(result))
        json_path, png_path = reports.write(result, Path(args.out))
    except RelqError as exc:
        print(str(exc) if str(exc).startswith("bench") else f"bench: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line, not a traceback: the run is over either way
        print(f"bench: {type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    console.print(f"wrote {json_path} and {png_path}", markup=False)
    return 0 if result.ok else 1
