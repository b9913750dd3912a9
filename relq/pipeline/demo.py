"""`invoke pipeline.demo`: the report on a synthetic archive, to see it before any server.

relq.pipeline.history generates ``rows`` finished items of a week (seeded: the same rows on
every run), relq.pipeline.layout writes them under ``<out>/archive`` (replacing a previous
demo's), and relq.pipeline.report reports on them into ``out``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from relq.errors import RelqError
from relq.pipeline.paths import check_output, for_spark
from relq.pipeline.spark import REPORT_MODULES, check_target, here, one_line, require

DEFAULT_ROWS = 100_000
DEFAULT_OUT = "reports/pipeline-demo"


@require(*REPORT_MODULES)
def run(rows: int = DEFAULT_ROWS, out: str | os.PathLike[str] = DEFAULT_OUT, master: str | None = None, *,
        remote: str | None = None, spark: Any = None, console: Any = None) -> Any:
    """Generate the archive and write its report; relq.pipeline.report.Paths of what was written.
    ``remote``: a Spark Connect server's URL to run on instead of ``master``; ``spark``: a session
    to use instead of starting one (it is left running). Spark writes the archive (on Spark
    Connect, the server: into its own file system where it runs elsewhere), the report's files
    are written here.

    Everything that can be checked before Spark starts is (the rows, the master, the folders);
    a problem is a RelqError, one line."""
    from relq.pipeline import history, layout, report

    if rows < 1:
        raise RelqError(f"--rows must be 1 or more, not {rows}")
    out = Path(out)
    archive = out / "archive"
    if spark is None:
        check_target(master, remote)
    check_output("--out", out)
    if here(remote):
        _check_replaceable(out, archive)
    report.check_out(out, str(archive), apart=here(remote))
    started_here = spark is None
    if started_here:
        from relq.pipeline.spark import session

        spark = session(master, app="relq-pipeline-demo", remote=remote)
    try:
        with one_line(f"cannot write the demo archive {archive}"):
            layout.write(history.generate(spark, rows), for_spark(str(archive), remote), mode="overwrite")
        return report.run(str(archive), out, remote=remote, spark=spark, console=console)
    finally:
        if started_here:
            spark.stop()


def _check_replaceable(out: Path, archive: Path) -> None:
    """``<out>/archive``, which the demo replaces (Spark's overwrite deletes it first), is absent
    or in the archive's layout (a previous demo's): a file or a folder of anything else is
    refused, not deleted."""
    if not archive.exists():
        return
    if not archive.is_dir():
        raise RelqError(f"--out {out}: {archive} is a file, and the demo writes its archive there: "
                        f"pass another --out")
    for entry in sorted(archive.iterdir()):
        if entry.name.startswith(("_", ".")) or (entry.is_dir() and entry.name.startswith("Queue=")):
            continue
        raise RelqError(f"--out {out}: {archive} holds {entry.name}, which no archive does, and the demo "
                        f"replaces that folder: pass another --out")
