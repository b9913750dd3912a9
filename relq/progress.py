"""Progress for long work over files (a cold build's parses, a lint): a bar on a
terminal, nothing elsewhere, so that CI logs hold only the summary line the
command prints at its end."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# Called after each file: (files done, files in all, the file just done).
OnFile = Callable[[int, int, str], None]


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
