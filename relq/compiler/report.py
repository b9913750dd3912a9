"""How a build speaks to a person: one line per problem, one line of summary."""

from __future__ import annotations

from rich.console import Console

from relq.compiler import BuildResult


def stderr_console() -> Console:
    """Where a build speaks: standard error, no highlighting, long lines kept whole."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def show(result: BuildResult, console: Console | None = None) -> None:
    console = console or stderr_console()
    for d in result.diagnostics:
        console.print(str(d), markup=False)
    cached = result.files - result.parsed
    timing = (f"{result.files} files ({result.parsed} parsed, {cached} from cache) "
              f"in {result.seconds:.2f} s")
    if result.ok:
        wrote = ", ".join(p.relative_to(p.parent.parent).as_posix() for p in result.wrote)
        console.print(f"[green]build ok[/green]: {timing}" + (f" -> {wrote}" if wrote else ""))
    else:
        files = len({d.path for d in result.diagnostics})
        console.print(f"[red]build failed[/red]: {len(result.diagnostics)} problem"
                      f"{'s' if len(result.diagnostics) != 1 else ''} in {files} file"
                      f"{'s' if files != 1 else ''}; {timing}")
