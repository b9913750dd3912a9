"""One Spark session for every pipeline test: starting a JVM costs seconds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from relq.pipeline.spark import session

    spark = session("local[2]", app="relq-tests", **{"spark.sql.shuffle.partitions": "4",
                                                      "spark.default.parallelism": "4"})
    yield spark
    spark.stop()
