"""database/queues.toml, the catalogue of the project's queues: reading and checking
it, and a new queue's entry in it."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from relq.errors import RelqError
from relq.scaffold.checks import check, check_unique
from relq.scaffold.columns import Column, alias_types, parse_column, resolve_columns
from relq.scaffold.queue import Join, Queue
from relq.scaffold.subtypes import Subtype, resolve

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CATALOGUE = "database/queues.toml"
_WORDS = {"name": "", "prefix": "", "alias": "", "shape": "job", "noun": "job"}  # an entry's strings


def load(root: Path) -> list[Queue]:
    """The queues of database/queues.toml under ``root``, checked."""
    path = root / CATALOGUE
    try:
        entries = tomllib.loads(path.read_text(encoding="utf-8")).get("queue", [])
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RelqError(f"{CATALOGUE}: {exc}") from None
    if not isinstance(entries, list):
        raise RelqError(f"{CATALOGUE}: queue is not a list of [[queue]] tables")
    queues = []
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise RelqError(f"{CATALOGUE}: queue {n} is not a [[queue]] table")
        required = ("name", "prefix", "alias")
        missing = [k for k in required if k not in entry]
        if missing:
            raise RelqError(f"{CATALOGUE}: queue {n} lacks {', '.join(missing)}")
        words = {k: entry.get(k, default) for k, default in _WORDS.items()}
        verb = entry.get("verb", ["process", "processed"])
        wrong = [f'{k} is not a string ({k} = "...")' for k, w in words.items() if not isinstance(w, str)]
        if not (isinstance(verb, list) and len(verb) == 2 and all(isinstance(v, str) for v in verb)):
            wrong.append('verb is not two strings (verb = ["process", "processed"])')
        if wrong:
            raise RelqError(f"{CATALOGUE}: queue {n}: " + "; ".join(wrong))
        try:
            queue = Queue(**words, verb=tuple(verb), types=_names(entry, "types"),
                          subtypes=_subtypes(entry.get("subtype", []), root),
                          joins=_joins(entry.get("join", []), root), history=_history(entry, root))
        except RelqError as exc:
            raise RelqError(f"{CATALOGUE}: queue {n}: {exc}") from None
        check(queue, f"{CATALOGUE}: queue {n} ({queue.name})")
        queues.append(queue)
    if not queues:
        raise RelqError(f"{CATALOGUE}: no [[queue]]: the health views need at least one")
    check_unique(queues, CATALOGUE)
    return queues


def _names(entry: dict[str, object], key: str, where: str = "") -> tuple[str, ...]:
    """A catalogue entry's list of strings (its types, a join's columns); ``where`` names
    the entry in the error."""
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problem = f'{key} is not a list of strings ({key} = ["...", ...])'
        raise RelqError(f"{where}: {problem}" if where else problem)
    return tuple(value)


def _columns(texts: Sequence[str], where: str) -> tuple[Column, ...]:
    """A join's or a subtype's columns, from their text; ``where`` names it in the error."""
    try:
        return tuple(parse_column(c) for c in texts)
    except RelqError as exc:
        raise RelqError(f"{where}: {exc}") from None


def _history(entry: dict[str, object], root: Path) -> tuple[str, ...]:
    """A catalogue entry's history: migrations of database/migrations, by their version."""
    history = _names(entry, "history")
    versions = {p.name.split("__", 1)[0] for p in (root / "database/migrations").glob("V*__*.sql")}
    unknown = [v for v in history if v not in versions]
    if unknown:
        raise RelqError(f"history: no migration {', '.join(unknown)} in database/migrations")
    return history


def _joins(entries: list[dict[str, object]], root: Path) -> tuple[Join, ...]:
    """A catalogue entry's [[queue.join]] tables: table = "...", columns = [...], channel = true."""
    if not isinstance(entries, list):
        raise RelqError("join is not a list of [[queue.join]] tables")
    parsed = []
    for n, e in enumerate(entries, 1):
        if not isinstance(e, dict):
            raise RelqError(f"[[queue.join]] {n} is not a table")
        if not isinstance(e.get("table"), str):
            raise RelqError(f'[[queue.join]] {n}: table is not a string (table = "<Queue>_Email")')
        where = f"join {e['table']}"
        wrong = []
        if not isinstance(e.get("channel", False), bool):
            wrong.append("channel is not true or false")
        if not isinstance(e.get("noun", ""), str):
            wrong.append('noun is not a string (noun = "e-mail")')
        if wrong:
            raise RelqError(f"{where}: " + "; ".join(wrong))
        parsed.append(_columns(_names(e, "columns", where), where))
    aliases = alias_types(root, [c for columns in parsed for c in columns])
    return tuple(Join(e["table"], resolve_columns(columns, aliases, f"join {e['table']}"),
                      e.get("channel", False), e.get("noun", ""))
                 for e, columns in zip(entries, parsed, strict=True))


def _subtypes(entries: list[dict[str, object]], root: Path) -> tuple[Subtype, ...]:
    """A catalogue entry's [[queue.subtype]] tables: type = "...", columns = ["Name TYPE", ...]."""
    if not isinstance(entries, list):
        raise RelqError("subtype is not a list of [[queue.subtype]] tables")
    subtypes = []
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise RelqError(f"[[queue.subtype]] {n} is not a table")
        if not isinstance(entry.get("type"), str):
            raise RelqError(f'[[queue.subtype]] {n}: type is not a string (type = "InvoicePdf")')
        where = f"subtype {entry['type']}"
        if not isinstance(entry.get("columns"), list):
            raise RelqError(f'{where}: columns is not a list (columns = ["Name TYPE", ...])')
        subtypes.append(Subtype(entry["type"], _columns(entry["columns"], where)))
    return resolve(tuple(subtypes), root)


def with_entry(root: Path, queue: Queue, where: str) -> str:
    """The text of ``root``'s catalogue with ``queue``'s entry after the others (``where``
    names it in the RelqError when the text would not be TOML any more)."""
    text = (root / CATALOGUE).read_text(encoding="utf-8") + _entry(queue)
    try:
        tomllib.loads(text)  # the entry is checked already; the file must stay TOML too
    except tomllib.TOMLDecodeError as exc:
        raise RelqError(f"{where}: {CATALOGUE} would not be TOML any more ({exc})") from None
    return text


def _entry(queue: Queue) -> str:
    """The queue's catalogue entry (its words are checked: TOML strings need no escapes)."""
    def strings(values: object) -> str:
        return ", ".join(f'"{v}"' for v in values)  # type: ignore[attr-defined]

    entry = (f'\n[[queue]]\nname = "{queue.name}"\nprefix = "{queue.prefix}"\nalias = "{queue.alias}"\n'
             f'shape = "job"\nnoun = "{queue.noun}"\nverb = [{strings(queue.verb)}]\n'
             f"types = [{strings(queue.types)}]\n")
    for subtype in queue.subtypes:
        entry += f'\n[[queue.subtype]]\ntype = "{subtype.type}"\ncolumns = [{strings(subtype.columns)}]\n'
    return entry
