"""A subtype's or a join's column: its text in the catalogue ('Amount DECIMAL(19,4)'),
the SQL types the templates take, and an alias type's built-in type, read from its file
in database/types."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

from relq.errors import RelqError

# A subtype or join column's SQL type: one of the project's alias types, or a built-in type.
SQL_TYPE = re.compile(
    r"dbo\.(?:[A-Za-z][A-Za-z0-9]*|\[_?[A-Za-z0-9]+\])"
    r"|(?:N?VARCHAR|N?CHAR|VARBINARY|BINARY)\((?:[1-9][0-9]{0,3}|MAX)\)"
    r"|(?:DECIMAL|NUMERIC)\([1-9][0-9]?, ?[0-9][0-9]?\)"
    r"|(?:DATETIME2|DATETIMEOFFSET|TIME)\([0-7]\)"
    r"|TINYINT|SMALLINT|INT|BIGINT|BIT|DATE|UNIQUEIDENTIFIER|FLOAT|REAL|MONEY", re.IGNORECASE)
_COLUMN = re.compile(r"\s*(\S+)\s+(.+?)(\s+(?:NOT\s+)?NULL)?\s*", re.IGNORECASE)

# SQL Server's limits on a built-in type's length, precision and scale.
_LENGTH = re.compile(r"(N?)(VAR)?(?:CHAR|BINARY)\(([0-9]+|MAX)\)", re.IGNORECASE)
_PRECISION = re.compile(r"(?:DECIMAL|NUMERIC)\(([0-9]+), ?([0-9]+)\)", re.IGNORECASE)
_ALIAS_FROM = re.compile(r"CREATE TYPE dbo\.(\S+) FROM ([^;]+?)(?:\s+(?:NOT\s+)?NULL)?\s*;", re.IGNORECASE)


@dataclass(frozen=True)
class Column:
    name: str  # Amount
    type: str  # DECIMAL(19, 4), dbo.EntityKey
    null: bool = False  # NULL allowed: the column is optional when enqueueing
    base: str = ""  # the built-in type it stores (an alias type's, from database/types)

    def __str__(self) -> str:
        return f"{self.name} {self.type}" + (" NULL" if self.null else "")

    @property
    def sample(self) -> str:
        """A literal of the column's type, for the tSQLt classes to fill it with: value(1)."""
        return self.value(1)

    def value(self, n: int) -> str:
        """A literal of the column's type that is the n-th (from 1) of its own: one for each n,
        as long as the type holds that many (a BIT holds two; a CHAR(1) 9 numbers, then 26
        letters), so that the tSQLt classes can tell their columns apart. Unresolved: n."""
        base = self.base.upper() or "INT"
        size = re.match(r"\w+\s*\(\s*([0-9]+)(?:\s*,\s*([0-9]+))?", base)
        length = int(size[1]) if size else (1 if re.match(r"N?(?:VAR)?CHAR\b|(?:VAR)?BINARY\b", base) else 0)
        if re.match(r"N?(?:VAR)?CHAR\b", base):
            text = str(n)
            if "(MAX)" not in base and len(text) > length:  # letters next: A to Z, then AA, AB, ...
                letters, rest = "", n - 9
                while rest > 0:
                    rest, digit = divmod(rest - 1, 26)
                    letters = chr(ord("A") + digit) + letters
                text = letters[-length:]  # (past them no longer its own, but still a value)
            return ("N'" if base.startswith("N") else "'") + text + "'"
        if re.match(r"(?:VAR)?BINARY\b", base):  # a BINARY(n) literal of its full length
            width = length if base.startswith("BINARY") else max(1, (n.bit_length() + 7) // 8)
            return f"0x{n % 256 ** width:0{2 * width}X}"
        if base.startswith("UNIQUEIDENTIFIER"):
            return f"'00000000-0000-0000-0000-{n:012d}'"
        day = (date(2024, 1, 1) + timedelta(days=n)).isoformat()
        if re.match(r"DATE\b", base):
            return f"'{day}'"
        if base.startswith(("DATETIME", "SMALLDATETIME")):  # the T form: any language reads it alike
            return f"'{day}T00:00:00'"
        if re.match(r"TIME\b", base):
            return f"'{8 + n // 60:02d}:{n % 60:02d}:00'"
        if base.startswith("BIT"):
            return str(n % 2)
        if base.startswith(("DECIMAL", "NUMERIC")) and size:  # DECIMAL(p, s): n units of its last digit
            precision, scale = int(size[1]), int(size[2] or 0)
            return f"{Decimal(n % 10 ** precision).scaleb(-scale):f}"
        return str(n)


def parse_column(text: str) -> Column:
    """'Amount DECIMAL(19,4)' or 'Reference NVARCHAR(100) NULL' -> Column (unchecked)."""
    match = _COLUMN.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        given = text.strip() if isinstance(text, str) else text
        raise RelqError(f"the column {given!r} is not 'Name TYPE' or 'Name TYPE NULL'")
    name, sql_type, null = match.groups()
    if SQL_TYPE.fullmatch(sql_type) and not sql_type.lower().startswith("dbo."):
        sql_type = re.sub(r",\s*", ", ", sql_type.upper())
    return Column(name, sql_type, null is not None and "NOT" not in null.upper())


def out_of_range(sql_type: str) -> str:
    """Why SQL Server would refuse a built-in type's length, precision or scale ('' if it would not)."""
    length, precision = _LENGTH.fullmatch(sql_type), _PRECISION.fullmatch(sql_type)
    if length:
        unicode, varying, size = length.groups()
        if size.upper() == "MAX":
            return "" if varying else "MAX is for the VAR types only"
        limit = 4000 if unicode else 8000
        return "" if int(size) <= limit else f"the length is 1 to {limit}"
    if precision and not (1 <= int(precision[1]) <= 38 and int(precision[2]) <= int(precision[1])):
        return "the precision is 1 to 38 and the scale at most the precision"
    return ""


def resolve_columns(columns: tuple[Column, ...], aliases: dict[str, tuple[str, str]],
                    where: str) -> tuple[Column, ...]:
    """``columns`` with their built-in types (``where`` names them in an error), an alias
    type spelt as its file creates it (dbo.email -> dbo.Email: the lint wants one spelling)."""
    resolved = []
    for column in columns:
        sql_type, base = column.type, column.type
        if sql_type.lower().startswith("dbo."):
            name = sql_type[4:].strip("[]")
            spelt, base = aliases.get(name.casefold(), (name, ""))
            if not base:
                raise RelqError(f"{where}: column {column.name}'s type {column.type} "
                                f"is not an alias type of database/types")
            sql_type = f"dbo.[{spelt}]" if sql_type[4:].startswith("[") else f"dbo.{spelt}"
        resolved.append(replace(column, type=sql_type, base=base))
    return tuple(resolved)


def alias_types(root: Path, columns: list[Column]) -> dict[str, tuple[str, str]]:
    """The alias types of ``root``'s database/types: name (case-folded) -> (name as its
    file spells it, built-in type); none read when no column of ``columns`` takes one."""
    if not any(c.type.lower().startswith("dbo.") for c in columns):
        return {}
    return {m.group(1).strip("[]").casefold(): (m.group(1).strip("[]"), m.group(2))
            for f in (root / "database/types").glob("*.sql")
            for m in [_ALIAS_FROM.search(f.read_text(encoding="utf-8"))] if m}
