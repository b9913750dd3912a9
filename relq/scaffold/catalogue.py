"""database/queues.toml, the catalogue of the project's queues: reading and checking
it, and a new queue's entry in it."""

from __future__ import annotations

import sys
from pathlib import Path

from relq.errors import RelqError
from relq.scaffold.checks import check, check_unique
from relq.scaffold.columns import alias_types, parse_column, resolve_columns
from relq.scaffold.queue import Join, Queue
from relq.scaffold.subtypes import Subtype, resolve

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CATALOGUE = "database/queues.toml"


def load(root: Path) -> list[Queue]:
    """The queues of database/queues.toml under ``root``, checked."""
    path = root / CATALOGUE
    try:
        entries = tomllib.loads(path.read_text(encoding="utf-8")).get("queue", [])
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RelqError(f"{CATALOGUE}: {exc}") from None
    queues = []
    for n, entry in enumerate(entries, 1):
        required = ("name", "prefix", "alias")
        missing = [k for k in required if k not in entry] if isinstance(entry, dict) else ["a table"]
        if missing:
            raise RelqError(f"{CATALOGUE}: queue {n} lacks {', '.join(missing)}")
        words = [entry[k] for k in required] + [entry.get("shape", "job"), entry.get("noun", "job")]
        verb = entry.get("verb", ["process", "processed"])
        if not all(isinstance(w, str) for w in words) or not (
                isinstance(verb, list) and len(verb) == 2 and all(isinstance(v, str) for v in verb)):
            raise RelqError(f"{CATALOGUE}: queue {n}: name, prefix, alias, shape and noun are strings, "
                            f'verb = ["process", "processed"]')
        try:
            queue = Queue(*words, tuple(verb), _names(entry, "types"),
                          _subtypes(entry.get("subtype", []), root), _joins(entry.get("join", []), root),
                          _history(entry, root))
        except RelqError as exc:
            raise RelqError(f"{CATALOGUE}: queue {n}: {exc}") from None
        check(queue, f"{CATALOGUE}: queue {n} ({queue.name})")
        queues.append(queue)
    if not queues:
        raise RelqError(f"{CATALOGUE}: no [[queue]]: the health views need at least one")
    check_unique(queues, CATALOGUE)
    return queues


def _names(entry: dict[str, object], key: str) -> tuple[str, ...]:
    """A catalogue entry's list of strings (its types, a join's columns)."""
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RelqError(f'{key} is a list of strings: {key} = ["...", ...]')
    return tuple(value)


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
    def well_formed(e: object) -> bool:
        return (isinstance(e, dict) and isinstance(e.get("table"), str)
                and isinstance(e.get("channel", False), bool) and isinstance(e.get("noun", ""), str))

    if not isinstance(entries, list) or not all(map(well_formed, entries)):
        raise RelqError('each [[queue.join]] has table = "...", columns = ["...", ...], maybe channel = true '
                        'and noun = "..."')
    parsed = [tuple(parse_column(c) for c in _names(e, "columns")) for e in entries]
    aliases = alias_types(root, [c for columns in parsed for c in columns])
    return tuple(Join(e["table"], resolve_columns(columns, aliases, f"join {e['table']}"),
                      e.get("channel", False), e.get("noun", ""))
                 for e, columns in zip(entries, parsed, strict=True))


def _subtypes(entries: list[dict[str, object]], root: Path) -> tuple[Subtype, ...]:
    """A catalogue entry's [[queue.subtype]] tables: type = "...", columns = ["Name TYPE", ...]."""
    if not isinstance(entries, list):
        raise RelqError("[[queue.subtype]] is a list of tables with type and columns")
    subtypes = []
    for entry in entries:
        columns = entry.get("columns") if isinstance(entry, dict) else None
        if not isinstance(columns, list) or not isinstance(entry.get("type"), str):
            raise RelqError("each [[queue.subtype]] has type = \"...\" and columns = [\"Name TYPE\", ...]")
        subtypes.append(Subtype(entry["type"], tuple(parse_column(c) for c in columns)))
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
