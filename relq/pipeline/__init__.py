"""relq's data pipeline on Spark (PySpark): bulk enqueue, archiving finished work to
Parquet, and queue analytics. It talks to SQL Server only through relq.db and the
queues' procedures; locally it runs on ``local[*]``, on a cluster with the same code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def configured(config: Mapping[str, Any] | None, key: str) -> Any:
    """``relq.pipeline.<key>`` of invoke's configuration (invoke.yaml), or None when any
    level is missing: every pipeline command's defaults come from there."""
    try:
        return config["relq"]["pipeline"][key]  # type: ignore[index]
    except (KeyError, TypeError, IndexError, AttributeError):
        return None
