"""The one place that builds a Spark session for the pipeline."""

from __future__ import annotations

import os
import sys
from typing import Any

DEFAULT_MASTER = "local[*]"


def session(master: str | None = None, app: str = "relq", **conf: str) -> Any:
    """A Spark session on ``master`` (default ``local[*]``). Time is UTC throughout, as in
    the database, so a timestamp never shifts between SQL Server, Spark and Parquet."""
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master or DEFAULT_MASTER).appName(app)
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false"))
    if (master or DEFAULT_MASTER).startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        # Local Python workers run this interpreter (the venv's, with relq's dependencies),
        # not whatever python3 comes first on PATH; PySpark reads the variable when the
        # context starts. On a cluster, set PYSPARK_PYTHON to the executors' Python.
        os.environ["PYSPARK_PYTHON"] = sys.executable
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
