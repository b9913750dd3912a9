"""Small helpers over sqlfluff parse trees."""

from __future__ import annotations

from collections.abc import Iterator

from sqlfluff.core.parser.segments.base import BaseSegment

from relq.compiler.names import qualify

IDENTIFIER_TYPES = (
    "naked_identifier",
    "quoted_identifier",
    "data_type_identifier",
    "function_name_identifier",
    "hash_identifier",
    "parameter",
)
_NOISE = ("whitespace", "newline", "indent", "dedent", "comment", "inline_comment", "block_comment")


def line(seg: BaseSegment) -> int:
    return seg.pos_marker.line_no


def code(seg: BaseSegment) -> list[BaseSegment]:
    """The children that carry meaning (no whitespace, comments or meta)."""
    return [c for c in seg.segments if not c.is_meta and not c.is_type(*_NOISE)]


def walk(seg: BaseSegment, ancestors: tuple[BaseSegment, ...] = ()) -> Iterator[
    tuple[BaseSegment, tuple[BaseSegment, ...]]
]:
    """Every segment below ``seg`` in text order, with its ancestors."""
    yield seg, ancestors
    inner = (*ancestors, seg)
    for child in seg.segments:
        if not child.is_meta:
            yield from walk(child, inner)


def parts(seg: BaseSegment) -> list[str]:
    """The identifier parts of a reference: ``dbo.[Notification]`` -> [dbo, [Notification]]."""
    return [c.raw for c in seg.segments if c.is_type(*IDENTIFIER_TYPES)]


def qualified(seg: BaseSegment) -> str:
    """The qualified name a reference segment spells: ``Notification`` -> ``dbo.Notification``."""
    return qualify(parts(seg))


def words(seg: BaseSegment) -> list[str]:
    """The upper-cased keywords directly under ``seg``."""
    return [c.raw.upper() for c in seg.segments if c.is_type("keyword")]


def squash(seg: BaseSegment) -> str:
    """The segment's text on one line, single-spaced, as written."""
    return " ".join(seg.raw.split())


def flat(seg: BaseSegment) -> str:
    """The segment's text on one line, upper-cased, single-spaced."""
    return " ".join(seg.raw.upper().split())


def statements(body: BaseSegment) -> list[BaseSegment]:
    """The statements under ``body`` in text order, nested ones included.

    Each item is the statement's own segment (``update_statement``,
    ``if_then_statement``, ...), so control flow and DML read as one sequence.
    """
    found = []
    for seg, _ in walk(body):
        if seg.is_type("statement") and seg is not body:
            inner = code(seg)
            if inner:
                found.append(inner[0])
    return found
