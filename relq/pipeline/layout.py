"""The archive's layout, the contract between pipeline.archive (which writes it) and
pipeline.report (which reads it): Parquet under one root, partitioned by queue,
job type and the UTC day the item finished:

    <root>/Queue=<queue>/Type=<type>/Day=<YYYY-MM-DD>/part-*.parquet

Every queue's files carry the COMMON columns (the lifecycle columns every relational
queue shares, as its Worker_<Queue>_V shows them) and may carry columns of their own
after them (a SyncQueue job's EntityKey and Payload, say). Times are UTC."""

from __future__ import annotations

from typing import Any

from relq.pipeline.spark import settings

PARTITIONS = ("Queue", "Type", "Day")
_INFERENCE = "spark.sql.sources.partitionColumnTypeInference.enabled"
_TIMESTAMPS = "spark.sql.parquet.outputTimestampType"

# Spark DDL: (name, type) in file order; Duration is milliseconds of the last attempt.
COMMON = (
    ("EnqueuedAt", "TIMESTAMP"),
    ("Status", "STRING"),
    ("Step", "STRING"),
    ("AttemptNum", "INT"),
    ("ScheduledFor", "TIMESTAMP"),
    ("StartedAt", "TIMESTAMP"),
    ("UpdatedAt", "TIMESTAMP"),
    ("Duration", "BIGINT"),
    ("Priority", "INT"),
    ("GroupKey", "STRING"),
    ("DedupKey", "STRING"),
    ("Error", "STRING"),
    ("ArchivedAt", "TIMESTAMP"),
)


def ddl(columns: tuple[tuple[str, str], ...] = COMMON) -> str:
    """``columns`` as a Spark DDL schema string (what DataFrameReader.schema takes)."""
    return ", ".join(f"{name} {kind}" for name, kind in columns)


def arrow_type(kind: str) -> Any:
    """The Arrow type Spark exchanges a column of the Spark type ``kind`` (a type of COMMON or of a
    queue's own columns) as with Python (mapInArrow), in a session whose time zone is UTC."""
    import pyarrow as pa

    types = {"STRING": pa.string(), "TIMESTAMP": pa.timestamp("us", tz="UTC"), "INT": pa.int32(),
             "BIGINT": pa.int64()}
    return types[kind]


def partition_ddl() -> str:
    """The partition columns' schema, as Spark reads them back from the paths."""
    return "Queue STRING, Type STRING, Day DATE"


def write(frame: Any, root: str, mode: str = "append") -> None:
    """Write ``frame`` (rows with the COMMON columns, a Queue and a Type column, and any
    columns of the queue's own) under ``root`` in this layout; Day comes from UpdatedAt.

    Timestamps are Parquet's INT64 microseconds (TIMESTAMP_MICROS), not Spark's default INT96,
    which Parquet deprecated: a fifth smaller, faster to read, and read as such by every
    engine. Archives written before hold INT96, and are read as well."""
    from pyspark.sql import functions as F

    # For this write only: the caller's value comes back.
    with settings(frame.sparkSession, {_TIMESTAMPS: "TIMESTAMP_MICROS"}):
        (frame.withColumn("Day", F.to_date(F.col("UpdatedAt")))
         .write.mode(mode).partitionBy(*PARTITIONS).parquet(root))


def read(spark: Any, root: str, common_only: bool = False) -> Any:
    """Every archived row under ``root``, with Queue and Type as strings and Day as a date
    (partition values are never guessed: a job type named "2024" stays a string).

    ``common_only``: only the COMMON columns and the partitions, read with that schema: no
    Spark job merges the files' own schemas first (what the report does)."""
    from pyspark.sql import functions as F

    if common_only:  # the partitions' types are the schema's
        frame = spark.read.schema(f"{ddl()}, Queue STRING, Type STRING, Day STRING").parquet(root)
    else:
        # Partition types are inferred when the reader resolves the files, so the setting is
        # switched off for that call only and the caller's session gets its own value back. Then
        # the files are read with the schema found: Spark Connect resolves a read again each time
        # it runs a plan (after the block), and a given schema keeps the partitions' types.
        with settings(spark, {_INFERENCE: "false"}):
            schema = spark.read.option("mergeSchema", "true").parquet(root).schema
        frame = spark.read.schema(schema).parquet(root)
    return frame.withColumn("Day", F.to_date(F.col("Day")))


def queue_path(root: str, queue: str) -> str:
    """Where ``queue``'s files live under ``root`` (a queue name needs no escaping: it
    is an identifier)."""
    return f"{root.rstrip('/')}/Queue={queue}"
