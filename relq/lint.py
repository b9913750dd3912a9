"""`invoke lint`'s SQL half: sqlfluff with the project's .sqlfluff, used as a
library one file at a time so that a terminal can show progress.

The files, the configuration and the violations are those of
`sqlfluff lint database tests_tsqlt`: the files come from sqlfluff's own
discovery (its .sqlfluffignore included) and each is linted by sqlfluff's
`Linter.lint_paths`, which reads the configuration that applies to it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from sqlfluff.core import FluffConfig, Linter
from sqlfluff.core.errors import SQLFluffUserError
from sqlfluff.core.linter.discovery import paths_from_path

from relq.errors import RelqError
from relq.progress import OnFile, map_files


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    position: int
    code: str
    description: str
    name: str = ""  # the rule's name, as .sqlfluff and noqa comments may use it
    warning: bool = False  # configured as a warning: shown, but the lint passes

    def __str__(self) -> str:
        rule = f" [{self.name}]" if self.name else ""
        warning = " (warning)" if self.warning else ""
        return f"{self.path}:{self.line}:{self.position}: {self.code} {self.description}{rule}{warning}"


@dataclass
class LintResult:
    files: int
    violations: list[Violation] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(not v.warning for v in self.violations)


@functools.lru_cache(maxsize=4)
def _linter(root: str) -> Linter:
    return Linter(config=FluffConfig.from_path(root, require_dialect=False))


def sql_files(root: Path, folders: Sequence[str]) -> list[str]:
    """The files sqlfluff would lint under ``folders``, relative to ``root``."""
    extensions = _linter(str(root)).config.get("sql_file_exts", default=".sql").lower().split(",")
    files: list[str] = []
    for folder in folders:
        if not (root / folder).is_dir():
            raise RelqError(f"no {folder}/ folder here ({root})")
        files += [Path(p).relative_to(root).as_posix()
                  for p in paths_from_path(str(root / folder), working_path=str(root),
                                           target_file_exts=extensions)]
    return files


def lint_file(root: str, path: str) -> list[Violation]:
    """One file's violations, in sqlfluff's order (line, position, code)."""
    result = _linter(root).lint_paths((str(Path(root) / path),), processes=1)
    return [Violation(path, v["start_line_no"], v["start_line_pos"], v["code"], v["description"],
                      v.get("name") or "", bool(v.get("warning")))
            for record in result.as_records() for v in record["violations"]]


def lint(root: Path, folders: Sequence[str], on_file: OnFile | None = None) -> LintResult:
    """Lint the .sql files under ``folders``; ``on_file`` hears of each file done."""
    started = time.perf_counter()
    try:
        files = sql_files(root, folders)
        result = LintResult(len(files))
        for violations in map_files(lint_file, str(root), files, on_file, str):
            result.violations += violations
    except SQLFluffUserError as exc:  # a .sqlfluff sqlfluff cannot use
        raise RelqError(f"sqlfluff: {exc}") from None
    result.seconds = time.perf_counter() - started
    return result


def show(result: LintResult, console: Console) -> None:
    """One line per violation, one line of summary."""
    for v in result.violations:
        console.print(str(v), markup=False)
    failing = [v for v in result.violations if not v.warning]
    warnings = len(result.violations) - len(failing)
    timing = f"{result.files} files in {result.seconds:.1f} s"
    noted = f", {_count(warnings, 'warning')}" if warnings else ""
    if result.ok:
        console.print(f"[green]sqlfluff ok[/green]: {timing}{noted}")
    else:
        files = len({v.path for v in failing})
        console.print(f"[red]sqlfluff failed[/red]: {_count(len(failing), 'violation')} in "
                      f"{_count(files, 'file')}{noted}; {timing}")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"
