"""`invoke pipeline.demo`: the report on a synthetic archive, to see it before any server.

relq.pipeline.history generates ``rows`` finished items of a week (seeded: the same rows on
every run), relq.pipeline.layout writes them under ``<out>/archive`` (replacing a previous
demo's), and relq.pipeline.report reports on them into ``out``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from relq.errors import RelqError

DEFAULT_ROWS = 100_000
DEFAULT_OUT = "reports/pipeline-demo"


def run(rows: int = DEFAULT_ROWS, out: str | os.PathLike[str] = DEFAULT_OUT, master: str | None = None, *,
        spark: Any = None, console: Any = None) -> Any:
    """Generate the archive and write its report; relq.pipeline.report.Paths of what was written.
    ``spark``: a session to use instead of starting one (it is left running)."""
    from relq.pipeline import history, layout, report
    from relq.pipeline.spark import session

    if rows < 1:
        raise RelqError(f"--rows must be 1 or more, not {rows}")
    out = Path(out)
    archive = out / "archive"
    started_here = spark is None
    spark = spark or session(master, app="relq-pipeline-demo")
    try:
        layout.write(history.generate(spark, rows), str(archive), mode="overwrite")
        return report.run(str(archive), out, spark=spark, console=console)
    finally:
        if started_here:
            spark.stop()
