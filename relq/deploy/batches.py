"""Splits a T-SQL script into batches at its GO lines, the way sqlcmd and SSMS do.

GO is not T-SQL but a client's batch separator, so deploy cuts each script into
batches itself and sends them to SQL Server one at a time. A line is a separator
only if it starts outside any string, quoted identifier or comment; a small
scanner follows those across lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from relq.errors import RelqError


@dataclass(frozen=True)
class Batch:
    """One batch of a script, to send to SQL Server on its own.

    `sql` is the text between two GO lines exactly as in the file (line endings
    normalised to \\n), starting with the line right after the previous GO line
    (or the file's first line), even if that line is blank. So an error that
    SQL Server reports on line `n` of the batch is on line `line + n - 1` of
    the file.
    """

    sql: str
    line: int  # 1-based line in the file of the batch's first line
    count: int = 1  # GO n: how many times to run it


class _Mode(Enum):
    CODE = "code"
    STRING = "string"  # '...' and N'...', with '' escapes
    BRACKET = "bracket"  # [...], with ]] escapes
    DQUOTE = "dquote"  # "...", with "" escapes
    BLOCK = "block comment"  # /* ... */, which nest


_OPENERS = {"'": _Mode.STRING, "[": _Mode.BRACKET, '"': _Mode.DQUOTE}
_CLOSERS = {_Mode.STRING: "'", _Mode.BRACKET: "]", _Mode.DQUOTE: '"'}


@dataclass
class _Scanner:
    """Where the text stands between lines: in code, or inside a string or comment."""

    mode: _Mode = _Mode.CODE
    depth: int = 0  # how deeply nested the block comments are

    def scan(self, line: str) -> None:
        """Moves through one line (without its newline), tracking the mode it ends in."""
        i = 0
        while i < len(line):
            char, pair = line[i], line[i : i + 2]
            if self.mode is _Mode.CODE:
                if pair == "--":
                    return  # a line comment: it ends with the line
                if pair == "/*":
                    self.mode, self.depth = _Mode.BLOCK, 1
                    i += 2
                    continue
                self.mode = _OPENERS.get(char, _Mode.CODE)
            elif self.mode is _Mode.BLOCK:
                if pair in ("/*", "*/"):
                    self.depth += 1 if pair == "/*" else -1
                    if self.depth == 0:
                        self.mode = _Mode.CODE
                    i += 2
                    continue
            elif char == _CLOSERS[self.mode]:
                if pair == char * 2:
                    i += 2  # a doubled closer is an escaped one
                    continue
                self.mode = _Mode.CODE
            i += 1


def _separator_count(line: str, number: int) -> int | None:
    """The count of a GO line (1 when it has none), or None if the line is not a GO line.

    A GO line is `GO`, then optionally whitespace and a count, then optionally a
    `--` comment. `GO;`, `GOTO x` and `GO_ON` are ordinary text.
    """
    stripped = line.lstrip()
    if stripped[:2].lower() != "go":
        return None
    rest = stripped[2:]
    if rest and not rest[0].isspace() and not rest.startswith("--"):
        return None
    count = rest.split("--", 1)[0].strip()
    if not count:
        return 1
    if count.isascii() and count.isdigit() and int(count) > 0:
        return int(count)
    raise RelqError(f"line {number}: {stripped[:2]} {count}: the count must be a positive whole number")


def split_batches(text: str) -> list[Batch]:
    """The batches of a script, in order, without their GO lines.

    A UTF-8 byte order mark is dropped and CRLF or CR line endings become \\n;
    line numbers count the file's lines either way. Batches that are only
    whitespace are dropped; the text after the last GO is the final batch. An
    unterminated string or comment is left for SQL Server to report.

    Raises RelqError for a GO whose count is not a positive whole number.
    """
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the file's last newline ends its last line; it starts no other
    batches: list[Batch] = []
    scanner = _Scanner()
    start = 0  # index of the current batch's first line

    def close(end: int, count: int) -> None:
        sql = "\n".join(lines[start:end])
        if sql.strip():
            batches.append(Batch(sql=sql, line=start + 1, count=count))

    for index, line in enumerate(lines):
        count = _separator_count(line, index + 1) if scanner.mode is _Mode.CODE else None
        if count is None:
            scanner.scan(line)
            continue
        close(index, count)
        start = index + 1
    close(len(lines), 1)
    return batches
