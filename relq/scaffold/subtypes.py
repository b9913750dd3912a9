"""A job queue's exclusive subtypes: `invoke new-queue --subtype`'s text, and their
columns' types resolved against the project's alias types."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from relq.errors import RelqError
from relq.scaffold.columns import Column, alias_types, parse_column, resolve_columns


@dataclass(frozen=True)
class Subtype:
    """An exclusive subtype of a job queue: the columns only items of one job type have,
    in a table of their own (dbo.<Queue>_<Type>), one row per item of that type."""

    type: str
    columns: tuple[Column, ...]


def parse_subtype(text: str) -> Subtype:
    """'CardPayment: Amount DECIMAL(19,4), Reference NVARCHAR(100) NULL' -> Subtype (unchecked):
    `invoke new-queue --subtype`'s form. Commas inside a type's parentheses stay with it."""
    job_type, colon, columns = text.partition(":")
    if not colon:
        raise RelqError(f"--subtype {text!r} has no ':' after its job type: "
                        f"give 'Type: Column TYPE, Column TYPE NULL, ...'")
    parts = re.split(r",(?![^(]*\))", columns)
    try:
        return Subtype(job_type.strip(), tuple(parse_column(c) for c in parts if c.strip()))
    except RelqError as exc:
        raise RelqError(f"--subtype {job_type.strip()}: {exc}") from None


def resolve(subtypes: tuple[Subtype, ...], root: Path) -> tuple[Subtype, ...]:
    """``subtypes`` with each column's built-in type: an alias type's from its file in
    ``root``'s database/types (a RelqError when there is none)."""
    aliases = alias_types(root, [c for s in subtypes for c in s.columns])
    return tuple(replace(s, columns=resolve_columns(s.columns, aliases, f"subtype {s.type}"))
                 for s in subtypes)
