"""Progress for long Spark work, on stderr. On Spark Connect, a rich progress bar per Spark
stage (tasks done of tasks), from the progress the server sends with each query's results
(SparkSession.registerProgressHandler). A classic session has no such report without its
SparkContext's status tracker, which Spark Connect refuses and the pipeline does not use: there
each step shows a spinner and its elapsed time."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from relq.pipeline.spark import is_connect


@contextmanager
def tracked(spark: Any, what: str, console: Console | None) -> Iterator[None]:
    """Show the Spark work inside the block as ``what``. Without a console (tests, scripts),
    nothing is shown."""
    if console is None:
        yield
        return
    if not is_connect(spark):
        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task(what, total=1)
            try:
                yield
            finally:
                progress.update(task, completed=1)
                progress.stop_task(task)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        handler = Stages(progress, what)
        spark.registerProgressHandler(handler)
        try:
            yield
        finally:
            spark.removeProgressHandler(handler)


class Stages:
    """A Spark Connect progress handler: one bar per stage the server reports, its tasks done."""

    def __init__(self, progress: Progress, what: str) -> None:
        self.progress, self.what = progress, what
        self.bars: dict[int, Any] = {}
        self.lock = threading.Lock()  # PySpark calls it from the thread that reads the results

    def __call__(self, stages: Iterable[Any] | None, inflight_tasks: int, operation_id: str | None,
                 done: bool) -> None:
        with self.lock:
            for stage in stages or ():
                if stage.stage_id not in self.bars:
                    self.bars[stage.stage_id] = self.progress.add_task(
                        f"{self.what}: stage {stage.stage_id}", total=stage.num_tasks)
                completed = stage.num_tasks if stage.done or done else stage.num_completed_tasks
                self.progress.update(self.bars[stage.stage_id], total=stage.num_tasks, completed=completed)
