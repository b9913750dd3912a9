"""The relational-queue pattern, written down once. The queues are listed in
database/queues.toml; their objects are rendered from the Jinja templates under
relq/scaffold/templates, in three groups:

- every_queue/: what every relational queue has alike (the item controls, Move_,
  Extend_, the batch report, the attempt history);
- job_queues/: the rest of a queue of the job shape (SyncQueue's: typed jobs on an
  entity with a JSON payload): tables, list types, job types, enqueue, claim,
  report, purge, drain, worker view, grants and a tSQLt class;
- all_queues/: objects over every queue at once (the health views).

A queue of the custom shape (Notification: a subtype and delivery channels) gets
every_queue/ only and writes the rest by hand. The queues' files must be exactly
what the templates make (tests/test_scaffold.py compares them), so a change to a
templated object is made in its template and rendered for every queue
(`invoke render-queues`); `invoke new-queue` adds a queue of the job shape."""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from relq.errors import RelqError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TEMPLATES = Path(__file__).parent / "templates"
CATALOGUE = "database/queues.toml"
NAME = "QUEUE"  # stands for the queue's name in a template's file name
SHAPES = ("job", "custom")
GROUPS = {"every_queue": SHAPES, "job_queues": ("job",)}
ONCE = "all_queues"
# At most 14 characters: the templates' longest lines then stay within the house
# style's 120 columns (sqlfluff LT05), and every transaction name within SQL Server's 32.
_QUEUE_NAME = re.compile(r"[A-Z][A-Za-z0-9]{1,13}")
_TYPE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,49}")  # dbo.[_Type] is VARCHAR(50)
_PREFIX = re.compile(r"[a-z][a-z0-9]*")
_ALIAS = re.compile(r"[a-z]")
_WORDS = re.compile(r"[a-z][a-z -]{0,19}")  # short enough to keep the comments' lines in the style
_LITERAL_ALIAS = re.compile(r"\bAS ([a-z])\b")  # a template's own one-letter aliases


@dataclass(frozen=True)
class Queue:
    name: str  # SyncQueue
    prefix: str  # its settings' prefix in dbo.AppSettings: syncqueue
    alias: str  # the table alias its procedures use: q
    shape: str = "job"
    noun: str = "job"  # words for the comments: "sync job"
    verb: tuple[str, str] = ("process", "processed")
    types: tuple[str, ...] = ()

    def variables(self) -> dict[str, object]:
        return {"Queue": self.name, "prefix": self.prefix, "a": self.alias, "noun": self.noun,
                "nouns": self.noun + "s", "verb": self.verb[0], "verbed": self.verb[1],
                "types": list(self.types)}


def load(root: Path) -> list[Queue]:
    """The queues of database/queues.toml under ``root``, checked."""
    path = root / CATALOGUE
    try:
        entries = tomllib.loads(path.read_text(encoding="utf-8")).get("queue", [])
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RelqError(f"{CATALOGUE}: {exc}") from None
    queues = []
    for n, entry in enumerate(entries, 1):
        try:
            queue = Queue(entry["name"], entry["prefix"], entry["alias"], entry.get("shape", "job"),
                          entry.get("noun", "job"), tuple(entry.get("verb", ("process", "processed"))),
                          tuple(entry.get("types", ())))
        except (KeyError, TypeError) as exc:
            raise RelqError(f"{CATALOGUE}: queue {n} lacks {exc}") from None
        _check(queue, f"{CATALOGUE}: queue {n} ({queue.name})")
        queues.append(queue)
    if not queues:
        raise RelqError(f"{CATALOGUE}: no [[queue]]: the health views need at least one")
    _check_unique(queues, CATALOGUE)
    return queues


def _check_unique(queues: list[Queue], where: str) -> None:
    """No two queues share a name (in any case: SQL Server compares names without it) or
    a settings prefix (their dbo.AppSettings rows would be the same)."""
    names, prefixes = [q.name.casefold() for q in queues], [q.prefix for q in queues]
    for what, values in (("name", names), ("prefix", prefixes)):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise RelqError(f"{where}: two queues have the {what} {twice[0]}")


def _check(queue: Queue, where: str) -> None:
    problems = []
    if not _QUEUE_NAME.fullmatch(queue.name):
        problems.append("its name is PascalCase, 2 to 14 letters and digits")
    elif queue.name.upper() in _reserved():
        problems.append(f"{queue.name} is a T-SQL reserved word")
    if not _PREFIX.fullmatch(queue.prefix):
        problems.append("its prefix is lower-case letters and digits")
    if not _ALIAS.fullmatch(queue.alias) or queue.alias in _taken_aliases(queue.shape):
        problems.append(f"its alias is one lower-case letter the templates do not use themselves "
                        f"({', '.join(sorted(_taken_aliases(queue.shape)))})")
    if queue.shape not in SHAPES:
        problems.append(f"its shape is one of {', '.join(SHAPES)}")
    if len(queue.verb) != 2 or not all(_WORDS.fullmatch(w) for w in (queue.noun, *queue.verb)):
        problems.append("its noun and verb pair are lower-case words, 20 characters at most")
    if queue.shape == "job" and len({t.casefold() for t in queue.types}) < 2:
        # Its tSQLt classes prove that a worker of one type leaves the other types alone.
        problems.append("a job queue lists at least two job types")
    if len({t.casefold() for t in queue.types}) != len(queue.types):
        problems.append("its job types differ in more than case (SQL Server compares them without)")
    bad = [t for t in queue.types if not _TYPE_NAME.fullmatch(t)]
    if bad:
        problems.append(f"job types are 1 to 50 letters, digits and _ (not {', '.join(map(repr, bad))})")
    if problems:
        raise RelqError(f"{where}: " + "; ".join(problems))


@functools.cache
def _reserved() -> frozenset[str]:
    """T-SQL's reserved words (sqlfluff's tsql dialect): the templates write names unbracketed."""
    from sqlfluff.core import dialect_selector

    return frozenset(dialect_selector("tsql").sets("reserved_keywords"))


@functools.cache
def _taken_aliases(shape: str) -> frozenset[str]:
    """The one-letter aliases the templates a queue of ``shape`` gets use for other tables
    (a job queue's own alias, q, is written literally in its templates)."""
    groups = [g for g, shapes in GROUPS.items() if shape in shapes] + [ONCE]
    found = {a for g in groups for t in templates(g) for a in _LITERAL_ALIAS.findall(t.read_text())}
    return frozenset(found - {"q"} if shape == "job" else found)


def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined,
                       keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                       autoescape=False)


def templates(group: str | None = None) -> list[Path]:
    folder = TEMPLATES / group if group else TEMPLATES
    return sorted(folder.rglob("*.sql.tmpl"))


def _target(template: Path, name: str | None = None) -> str:
    folder = template.parent.name
    file = template.name.removesuffix(".tmpl")
    if name is not None:
        file = file.replace(NAME, name)
    return f"tests_tsqlt/{file}" if folder == "tests_tsqlt" else f"database/{folder}/{file}"


def render(template: Path, queue: Queue) -> tuple[str, str]:
    """(the file's path under the project, its text) of one queue's object."""
    source = template.relative_to(TEMPLATES).as_posix()
    return _target(template, queue.name), _environment().get_template(source).render(queue.variables())


def render_once(template: Path, queues: list[Queue]) -> tuple[str, str]:
    """(path, text) of an object over every queue (``queues`` in catalogue order)."""
    source = template.relative_to(TEMPLATES).as_posix()
    return _target(template), _environment().get_template(source).render(
        queues=[q.variables() for q in queues])


def queue_renders(queue: Queue) -> list[tuple[str, str]]:
    """One queue's own files: (path, text)."""
    return [render(t, queue) for group, shapes in GROUPS.items() if queue.shape in shapes
            for t in templates(group)]


def renders(queues: list[Queue]) -> list[tuple[str, str]]:
    """Every templated file of the project: (path, text)."""
    own = [r for queue in queues for r in queue_renders(queue)]
    return own + [render_once(t, queues) for t in templates(ONCE)]


def write(root: Path, queues: list[Queue] | None = None) -> list[str]:
    """Render every queue of ``root``'s catalogue into its database/ and tests_tsqlt/;
    returns the paths whose text changed (a second run changes nothing)."""
    return _write(root, renders(load(root) if queues is None else queues))


def _write(root: Path, files: list[tuple[str, str]]) -> list[str]:
    changed = []
    for path, text in files:
        target = root / path
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def new_queue(root: Path, name: str, types: list[str], noun: str | None = None,
              verb: tuple[str, str] = ("process", "processed")) -> list[str]:
    """Add a queue of the job shape to ``root``'s catalogue and write its files and the
    files over every queue (the health views, the settings' defaults); other queues'
    files are left as they are. Nothing is written when the name, a type or an existing
    object says no."""
    queues = load(root)
    default_noun = f"{_words(name)} job"
    noun = noun or (default_noun if _WORDS.fullmatch(default_noun) else "job")
    queue = Queue(name, name.lower(), "q", "job", noun, verb, tuple(types))
    where = f"new queue {name}"
    _check(queue, where)
    if any(q.name.casefold() == name.casefold() for q in queues):
        raise RelqError(f"{where}: {CATALOGUE} lists it already")
    if any(q.prefix == queue.prefix for q in queues):
        raise RelqError(f"{where}: another queue's settings use the prefix {queue.prefix}")
    own = queue_renders(queue)
    existing = {p.name.casefold(): p.relative_to(root).as_posix()
                for folder in ("database", "tests_tsqlt") for p in (root / folder).rglob("*.sql")}
    names = [Path(path).name.casefold() for path, _ in own]
    taken = [existing[n] for n in names if n in existing]
    if taken:  # SQL Server's default collation compares names without case
        raise RelqError(f"{where}: {taken[0]} exists already; pick another name")
    catalogue = (root / CATALOGUE).read_text(encoding="utf-8") + _entry(queue)
    try:
        tomllib.loads(catalogue)  # the entry is checked above; the file must stay TOML too
    except tomllib.TOMLDecodeError as exc:
        raise RelqError(f"{where}: {CATALOGUE} would not be TOML any more ({exc})") from None
    written = _write(root, own + [render_once(t, [*queues, queue]) for t in templates(ONCE)])
    (root / CATALOGUE).write_text(catalogue, encoding="utf-8")
    return written


def _words(name: str) -> str:
    """InvoiceExport -> invoice export"""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name).lower()


def _entry(queue: Queue) -> str:
    types = ", ".join(f'"{t}"' for t in queue.types)
    return (f'\n[[queue]]\nname = "{queue.name}"\nprefix = "{queue.prefix}"\nalias = "{queue.alias}"\n'
            f'shape = "job"\nnoun = "{queue.noun}"\nverb = ["{queue.verb[0]}", "{queue.verb[1]}"]\n'
            f"types = [{types}]\n")
