"""bench/pipeline_passes.py: every part of a report's time runs on an archive, the cache it
builds is released, and its table shows each part's median."""

from __future__ import annotations

import statistics

from bench.pipeline_passes import measure, table
from relq.pipeline import history, layout


def test_every_part_runs_on_an_archive_and_the_table_shows_its_median(spark, tmp_path) -> None:
    archive = tmp_path / "archive"
    layout.write(history.generate(spark, 1_000, seed=5, days=1), str(archive))
    storage = spark.sparkContext._jsc.sc()  # the test's own session is classic: its cached blocks

    found = measure(spark, str(archive), runs=1, warmup=0)

    names = [name for name, _ in found]
    assert len(names) == len(set(names)) == 8
    assert names[-2:] == ["shared read: building the cache", "shared read: passes 1 and 2 from it"]
    assert all(len(times) == 1 and times[0] > 0 for _, times in found)
    assert len(storage.getRDDStorageInfo()) == 0  # the cache it built is released
    lines = table(found).splitlines()
    assert len(lines) == 1 + len(found)
    for (name, times), line in zip(found, lines[1:], strict=True):
        assert line.startswith(name) and f"{statistics.median(times):.2f}" in line
