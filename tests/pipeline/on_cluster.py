"""``python -m tests.pipeline.on_cluster '<json>'``: the pipeline on a standalone cluster, from a
classic driver of its own (a process holds one SparkContext, and the tests' is local[2]).

It runs the report of an archive and the archive step on a fake store (tests.pipeline.fake_store)
with the Spark master given (spark://...), then prints one JSON line: where the report went, the
archive step's result, and whether every read of the store ran in a Python worker of an
executor process (CoarseGrainedExecutorBackend), not in the driver's JVM or process."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from datetime import datetime
from pathlib import Path

EXECUTOR = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def main(argv: list[str]) -> int:
    from relq.pipeline import report
    from relq.pipeline.archive import archive
    from relq.pipeline.spark import session
    from tests.pipeline.fake_store import FakeStore

    given = json.loads(argv[1])
    spark = session(given["master"], app="relq-tests-cluster", **given["conf"])
    try:
        paths = report.run(given["archive"], given["out"], spark=spark)
        store = FakeStore(given["store"])
        result = archive(spark, store, "SyncQueue", given["root"], older_than_minutes=60, partitions=3,
                         now=datetime.fromisoformat(given["now"]))
        readers = store.pids("read")
        on_executors = bool(readers) and all(_under_executor(pid) for pid in readers)
    finally:
        spark.stop()
    found = {**dataclasses.asdict(result), "cutoff": result.cutoff.isoformat()}
    print(json.dumps({"report": str(paths.json), "archive": found, "readers_on_executors": on_executors,
                      "driver": os.getpid()}), flush=True)
    return 0


def _under_executor(pid: int) -> bool:
    """Whether the process ``pid`` (a Python worker, still running: Spark keeps its workers) has an
    executor's JVM among its ancestors."""
    for _ in range(6):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        if EXECUTOR in command:
            return True
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid <= 1:
            return False
    return False


if __name__ == "__main__":
    sys.exit(main(sys.argv))
