"""`invoke new-queue`: a queue of the job shape added to the catalogue, and its files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from relq.errors import RelqError
from relq.scaffold.catalogue import CATALOGUE, load, with_entry
from relq.scaffold.checks import check
from relq.scaffold.files import write_files
from relq.scaffold.names import WORDS, words
from relq.scaffold.queue import Queue
from relq.scaffold.render import ONCE, queue_renders, render_once, templates
from relq.scaffold.subtypes import Subtype, resolve


@dataclass(frozen=True)
class NewQueue:
    """What new_queue made: the queue's name and the files it wrote (paths under the project)."""

    name: str
    written: tuple[str, ...]

    @property
    def folders(self) -> list[str]:
        """The project's folders the files were written under: database/, tests_tsqlt/."""
        return sorted({path.split("/", 1)[0] + "/" for path in self.written})

    def summary(self) -> str:
        """One line for the person who asked: what was added where, and what comes next."""
        return (f"{self.name} added to {CATALOGUE}: {len(self.written)} files written under "
                f"{' and '.join(self.folders)}; next: invoke build, then invoke deploy")


def new_queue(root: Path, name: str, types: list[str], noun: str | None = None,
              verb: tuple[str, str] = ("process", "processed"),
              subtypes: tuple[Subtype, ...] = ()) -> NewQueue:
    """Add a queue of the job shape to ``root``'s catalogue and write its files and the
    files over every queue (the health views, the settings' defaults); other queues'
    files are left as they are. Nothing is written when the name, a type or an existing
    object says no."""
    queues = load(root)
    default_noun = f"{words(name)} job"
    noun = noun or (default_noun if WORDS.fullmatch(default_noun) else "job")
    where = f"new queue {name}"
    try:
        resolved = resolve(tuple(subtypes), root)
    except RelqError as exc:
        raise RelqError(f"{where}: {exc}") from None
    queue = Queue(name, name.lower(), "q", "job", noun, verb, tuple(types), resolved)
    check(queue, where, prefix_from_name=True)
    same = next((q for q in queues if q.name.casefold() == name.casefold()), None)
    if same:  # SQL Server compares names without case
        listed = "it already" if same.name == name else f"{same.name}, to SQL Server the same name"
        raise RelqError(f"{where}: {CATALOGUE} lists {listed}; pick another name")
    other = next((q for q in queues if q.prefix == queue.prefix), None)
    if other:
        raise RelqError(f"{where}: the queue {other.name} has the settings prefix {queue.prefix} already, "
                        f"which a new queue takes from its name in lower case; pick another name")
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
    return NewQueue(name, tuple(written))
