"""`python -m bench`: run the scenarios against RELQ_MSSQL, print the table, write
bench.json and throughput.png.

Exit codes: 0 the run passed; 1 it ran and failed (a claim scans its queue table, an
item claimed was not completed, a scenario could not run); 2 it could not start (no
RELQ_MSSQL, bad arguments), with one line saying why.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.console import Console

from bench import report as reports
from bench.scenarios import SCENARIOS, Settings, run
from relq import db
from relq.errors import RelqError
from relq.live import live_target

NO_SERVER = ("bench: RELQ_MSSQL is not set: the benchmarks need a SQL Server 2017 or later (an ODBC "
             "connection string; see bench/README.md)")
DEFAULTS = Settings()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help=f"comma-separated, of {', '.join(SCENARIOS)} (default: all)")
    p.add_argument("--seconds", type=float, default=DEFAULTS.seconds,
                   help="length of each arm (default %(default)s)")
    p.add_argument("--workers", type=int, default=DEFAULTS.workers,
                   help="the many workers and consumers; the few are 1 (default %(default)s)")
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
    p.add_argument("--out", default="reports/bench", help="folder for bench.json and throughput.png "
                                                          "(default %(default)s)")
    return p


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] = os.environ,
         console: Console | None = None) -> int:
    args = parser().parse_args(argv)
    target = live_target(environ)
    if target is None:
        print(NO_SERVER, file=sys.stderr)
        return 2
    console = console or Console()
    try:
        settings = Settings(seconds=args.seconds, workers=args.workers, batch=args.batch,
                            backlog=args.backlog, small_backlog=args.small_backlog,
                            large_backlog=args.large_backlog, purge_items=args.purge_items,
                            plan_backlog=args.plan_backlog)
        names = [n.strip() for n in args.scenarios.split(",") if n.strip()]
        err = Console(stderr=True)
        err.print(f"bench against {db.describe(target.conn_str)}", markup=False)
        result = run(target, settings, names, console=err)
    except RelqError as exc:
        print(str(exc) if str(exc).startswith("bench") else f"bench: {exc}", file=sys.stderr)
        return 2
    console.print(reports.renderable(result))
    json_path, png_path = reports.write(result, Path(args.out))
    console.print(f"wrote {json_path} and {png_path}", markup=False)
    return 0 if result.ok else 1
