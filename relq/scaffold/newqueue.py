"""`invoke new-queue`: a queue of the job shape added to the catalogue, and its files."""

from __future__ import annotations

from pathlib import Path

from relq.errors import RelqError
from relq.scaffold.catalogue import CATALOGUE, load, with_entry
from relq.scaffold.checks import check
from relq.scaffold.files import write_files
from relq.scaffold.names import WORDS, words
from relq.scaffold.queue import Queue
from relq.scaffold.render import ONCE, queue_renders, render_once, templates
from relq.scaffold.subtypes import Subtype, resolve


def new_queue(root: Path, name: str, types: list[str], noun: str | None = None,
              verb: tuple[str, str] = ("process", "processed"),
              subtypes: tuple[Subtype, ...] = ()) -> list[str]:
    """Add a queue of the job shape to ``root``'s catalogue and write its files and the
    files over every queue (the health views, the settings' defaults); other queues'
    files are left as they are. Nothing is written when the name, a type or an existing
    object says no."""
    queues = load(root)
    default_noun = f"{words(name)} job"
    noun = noun or (default_noun if WORDS.fullmatch(default_noun) else "job")
    queue = Queue(name, name.lower(), "q", "job", noun, verb, tuple(types), resolve(tuple(subtypes), root))
    where = f"new queue {name}"
    check(queue, where)
    if any(q.name.casefold() == name.casefold() for q in queues):
        raise RelqError(f"{where}: {CATALOGUE} lists it already")
    if any(q.prefix == queue.prefix for q in queues):
        raise RelqError(f"{where}: another queue's settings use the prefix {queue.prefix}")
    own = queue_renders(queue)
    existing = {p.name.casefold(): p.relative_to(root).as_posix()
                for folder in ("database", "tests_tsqlt") for p in (root / folder).rglob("*.sql")}
    names = [Path(path).name.casefold() for path, _ in own]
    paths = [path.casefold() for path, _ in own]
    if len(set(paths)) != len(paths):  # two renders of one file: the checks above should prevent it
        raise RelqError(f"{where}: two of its objects would be written to one file; pick other names")
    taken = [existing[n] for n in names if n in existing]
    if taken:  # SQL Server's default collation compares names without case
        raise RelqError(f"{where}: {taken[0]} exists already; pick another name")
    catalogue = with_entry(root, queue, where)
    written = write_files(root, own + [render_once(t, [*queues, queue]) for t in templates(ONCE)])
    (root / CATALOGUE).write_text(catalogue, encoding="utf-8")
    return written
