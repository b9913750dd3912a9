"""Progress for long work over files (a cold build's parses, a lint): a bar on a
terminal, nothing elsewhere, so that CI logs hold only the summary line the
command prints at its end."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# Called after each file: (files done, files in all, the file just done).
OnFile = Callable[[int, int, str], None]
Item = TypeVar("Item")
Done = TypeVar("Done")
# Work in worker processes only when enough files wait to pay for their start.
PARALLEL_FROM = 12


def map_files(work: Callable[[Any, Item], Done], root: Any, items: Sequence[Item], on_file: OnFile | None,
              name: Callable[[Item], str]) -> Iterator[Done]:
    """``work(root, item)`` for each item, in order, in worker processes when there are
    enough items and more than one core; ``on_file`` hears of each item done (by ``name``)."""
    with ExitStack() as stack:
        if len(items) >= PARALLEL_FROM and (os.cpu_count() or 1) > 1:
            pool = stack.enter_context(ProcessPoolExecutor())
            results = pool.map(work, [root] * len(items), items, chunksize=4)
        else:
            results = (work(root, item) for item in items)
        for done, (item, result) in enumerate(zip(items, results, strict=True), start=1):
            if on_file is not None:
                on_file(done, len(items), name(item))
            yield result


@contextmanager
def per_file(console: Console, verb: str) -> Iterator[OnFile]:
    """A bar that ``verb``s file by file, the file last done after it; the
    callback it yields advances it."""
    columns = (TextColumn(verb), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[file]}"))
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as progress:
        bar = progress.add_task(verb, total=None, file="")

        def on_file(done: int, total: int, path: str) -> None:
            progress.update(bar, completed=done, total=total, file=path.rsplit("/", 1)[-1])

        yield on_file
