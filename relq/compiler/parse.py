"""Parsing with sqlfluff's tsql dialect, used as a library."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from sqlfluff.core import FluffConfig, Linter
from sqlfluff.core.parser.segments.base import BaseSegment

from relq.compiler.facts import Finding

_POSITION_PREFIX = re.compile(r"^Line \d+, Position \d+: ")


@functools.lru_cache(maxsize=4)
def linter_for(root: str) -> Linter:
    """One linter per project root, configured by the root's ``.sqlfluff``.

    The dialect is forced to tsql and the templater to raw: whatever else a
    project configures, the build reads T-SQL as SQL Server would.
    """
    config = FluffConfig.from_path(
        root, overrides={"dialect": "tsql", "templater": "raw"}, require_dialect=False
    )
    return Linter(config=config)


def parse(root: Path, path: str, text: str) -> tuple[BaseSegment | None, Finding | None]:
    """The parse tree of ``text``, or the first parse error as a finding."""
    parsed = linter_for(str(root)).parse_string(text, fname=path)
    if parsed.violations:
        first = min(parsed.violations, key=lambda v: (v.line_no, v.line_pos))
        message = _POSITION_PREFIX.sub("", first.desc())
        if len(message) > 160:
            message = message[:157] + "..."
        return None, Finding(first.line_no, "parse", f"sqlfluff (tsql) cannot parse this: {message}")
    return parsed.tree, None
