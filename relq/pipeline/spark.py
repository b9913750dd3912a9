"""The one place that knows Spark sessions for the pipeline: building one, the time zone
every command requires of it, and its file system."""

from __future__ import annotations

import os
import sys
from typing import Any

from relq.errors import RelqError
from relq.pipeline import quiet

DEFAULT_MASTER = "local[*]"
TIME_ZONE = "spark.sql.session.timeZone"
UTC_NAMES = frozenset({"UTC", "ETC/UTC", "GMT", "ETC/GMT", "Z", "+00:00", "UCT", "ETC/UCT", "ZULU",
                       "UNIVERSAL"})
ISO_MICROS = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"  # a timestamp as text, in the session's time zone: UTC


def session(master: str | None = None, app: str = "relq", **conf: str) -> Any:
    """A Spark session on ``master`` (default ``local[*]``). Time is UTC throughout, as in
    the database, so a timestamp never shifts between SQL Server, Spark and Parquet."""
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master or DEFAULT_MASTER).appName(app)
               .config(TIME_ZONE, "UTC")
               .config("spark.ui.showConsoleProgress", "false"))
    if (master or DEFAULT_MASTER).startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        # Local Python workers run this interpreter (the venv's, with relq's dependencies),
        # not whatever python3 comes first on PATH; PySpark reads the variable when the
        # context starts. On a cluster, set PYSPARK_PYTHON to the executors' Python.
        os.environ["PYSPARK_PYTHON"] = sys.executable
    for key, value in {**quiet.conf(), **conf}.items():  # Spark's start-up noise off; conf wins
        builder = builder.config(key, value)
    return builder.getOrCreate()


def require_utc(spark: Any, command: str) -> None:
    """Refuse a Spark session whose time zone is not UTC: keys are formatted, days taken and
    times without an offset read in the session's time zone, and the database's are UTC.
    relq.pipeline.spark.session makes UTC sessions; the caller's is left as it is."""
    zone = spark.conf.get(TIME_ZONE)
    if str(zone).strip().upper() not in UTC_NAMES:
        raise RelqError(f"pipeline {command} needs a Spark session in UTC ({TIME_ZONE} is {zone}): "
                        f"set it to UTC, as relq.pipeline.spark.session does")


def exists(spark: Any, path: str) -> bool:
    """Whether ``path`` exists, on any file system Spark's Hadoop configuration reaches."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return bool(hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(hadoop_path))
