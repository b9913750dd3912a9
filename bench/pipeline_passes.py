"""Where a warm report's time goes: each part of relq.pipeline.figures.compute timed apart in
one JVM, beside the floors under it and beside one read shared by the passes.

    .venv/bin/python bench/pipeline_passes.py /tmp/pb/archive-5000000 --master 'local[2]' --runs 5

(an archive bench/pipeline_bench.py wrote with --keep --workdir /tmp/pb). One classic session
on --master; every part runs --warmup times untimed first (a warm JVM: nothing left to compile
that a report needs), then --runs times; it prints each part's median and its runs:

- read: the columns the report reads, decoded and counted, nothing computed on them;
- rows: prepare() and measured(), every row's times, codes, hours and buckets, counted;
- pass 1, pass 2, pass 3: figures.compute's three passes (the tally and histograms; the values
  at the percentiles' ranks; the error texts);
- figures: figures.compute whole (the report less its charts and files);
- shared read: the alternative of reading once, measured() rows (the columns passes 1 and 2
  use) cached in the JVM's memory, then passes 1 and 2 from the cache; its build is timed
  apart from the passes.

Speed is measured here, never asserted in the tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # runnable as `python bench/pipeline_passes.py` from a checkout
    sys.path.insert(0, str(REPO))

READ = ("Queue", "Type", "Step", "Status", "AttemptNum", "Error", "EnqueuedAt", "ScheduledFor", "StartedAt",
        "UpdatedAt", "Duration")  # what prepare() reads of the archive
SHARED = ("sr", "qts", "qt", "q", "enqueued_hour", "updated_hour", "started_hour", "b_wait", "b_duration",
          "b_hourly", "enqueued_us", "updated_us", "wait_ms", "duration_ms", "Queue", "Type", "Step")


def parts(spark: Any, archive: str) -> dict[str, Callable[[], Any]]:
    """Each part as a function that runs it once (with the report's settings in force)."""
    from pyspark.sql import functions as F

    from relq.pipeline import figures, layout
    from relq.pipeline import percentiles as exact

    def frame() -> Any:
        return layout.read(spark, archive, common_only=True)

    def rows() -> Any:
        return figures.measured(figures.prepare(frame()))

    def counted(df: Any) -> Any:
        return df.agg(*(F.count(c) for c in df.columns)).collect()

    def plan(source: Any) -> Any:
        tally, found = figures._aggregate(source)
        return exact.Plan(found, *figures._wanted(figures._counts(tally), tally))

    planned = plan(rows())

    def pass2(source: Any) -> Any:
        return planned.pick(spark, figures._facts(source, planned), names=figures.NAMES)

    cache: list[Any] = []

    def build() -> None:
        cache.append(rows().select(*SHARED).cache())
        cache[-1].count()

    def passes_from_cache() -> None:
        figures._aggregate(cache[-1])
        pass2(cache[-1])
        cache.pop().unpersist(blocking=True)

    return {
        "read (the report's columns, decoded)": lambda: counted(frame().select(*READ)),
        "rows (prepare and measured, counted)": lambda: counted(rows()),
        "pass 1 (tally and histograms)": lambda: figures._aggregate(rows()),
        "pass 2 (values at the ranks)": lambda: pass2(rows()),
        "pass 3 (error texts)": lambda: figures.errors(frame()),
        "figures (the three passes)": lambda: figures.compute(frame()),
        "shared read: building the cache": build,
        "shared read: passes 1 and 2 from it": passes_from_cache,
    }


def measure(spark: Any, archive: str, runs: int, warmup: int) -> list[tuple[str, list[float]]]:
    """[(part, its times in seconds)], each part run ``warmup`` times untimed, then ``runs`` times.
    The cache's two parts alternate: each pass from the cache follows its build."""
    from relq.pipeline import figures
    from relq.pipeline.spark import cores, settings

    found: list[tuple[str, list[float]]] = []
    with settings(spark, figures.sized(cores(spark))):
        todo = parts(spark, archive)
        names = list(todo)
        alone, paired = names[:-2], names[-2:]
        for name in alone:
            found.append((name, _timed(todo[name], runs, warmup)))
        times: dict[str, list[float]] = {name: [] for name in paired}
        for run in range(warmup + runs):
            for name in paired:
                seconds = _timed(todo[name], 1, 0)[0]
                if run >= warmup:
                    times[name].append(seconds)
        found += list(times.items())
    return found


def _timed(run: Callable[[], Any], runs: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        run()
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return times


def table(found: list[tuple[str, list[float]]]) -> str:
    """The parts' medians and runs, one line each."""
    width = max(len(name) for name, _ in found)
    lines = [f"{'part':<{width}}  median  runs (s)"]
    for name, times in found:
        lines.append(f"{name:<{width}}  {statistics.median(times):6.2f}  "
                     + ", ".join(f"{t:.2f}" for t in times))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", help="an archive in relq.pipeline.layout (bench/pipeline_bench.py --keep)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)

    from relq.pipeline.spark import session

    spark = session(args.master, app="relq-pipeline-passes")
    try:
        print(table(measure(spark, args.archive, args.runs, args.warmup)), flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
