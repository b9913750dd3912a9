"""Progress for long Spark work: a rich progress bar per running Spark stage
(tasks done of tasks), read from Spark's status tracker while the job runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

POLL_S = 0.5


@contextmanager
def tracked(spark: Any, what: str, console: Console | None) -> Iterator[None]:
    """Show the stages Spark runs inside the block as ``what``: one bar each. Without a
    console (tests, scripts), nothing is shown."""
    if console is None:
        yield
        return
    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        bars: dict[int, Any] = {}

        def poll() -> None:
            while True:
                for stage_id in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(stage_id)
                    if info is None:
                        continue
                    if stage_id not in bars:
                        bars[stage_id] = progress.add_task(f"{what}: stage {stage_id}", total=info.numTasks)
                    progress.update(bars[stage_id], completed=info.numCompletedTasks)
                for stage_id, bar in bars.items():  # finished stages show as complete
                    if stage_id not in tracker.getActiveStageIds():
                        info = tracker.getStageInfo(stage_id)
                        if info is not None:
                            progress.update(bar, completed=info.numCompletedTasks)
                if stop.wait(POLL_S):
                    return

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
