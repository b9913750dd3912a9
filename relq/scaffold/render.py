"""The relational-queue pattern, written down once: the Jinja templates under
relq/scaffold/templates, in four groups, and what they make of a queue.

- every_queue/: what every relational queue has alike: the base table, its job
  types and their data, the attempt history, the archive, the outcome list type,
  claim (Next_), report (Modify_), Extend_, the item controls, Move_, the batch
  report, purge, the worker view, the grants, and their tSQLt classes;
- job_queues/: the rest of a queue of the job shape (SyncQueue's: typed jobs on an
  entity with a JSON payload): the item list type, the types' procedures, enqueue,
  drain and their tSQLt classes;
- subtypes/: a job queue's exclusive subtypes, when its catalogue entry asks for
  them: per subtype a table of the type's own columns (dbo.<Queue>_<Type>) and its
  tSQLt class; and, for any queue with such a table, dbo.<Queue>_IsType_fn, which
  their CHECKs call. A subtype's columns also reach the list type, Add_, the worker
  view, the archive and the purge;
- all_queues/: objects over every queue at once (the health views, the attempt history view,
  the queue controls that pause, resume and limit any queue or type, and their view);
- custom/<Queue>/: a custom queue's own objects that share a moment with the templates
  (its enqueue, which locks, deduplicates and takes keys as every Add_ does): written by
  hand for that queue alone, with the shared moments from macros/.

A queue of the custom shape (Notification: the seeds' queue, a subtype and delivery
channels) gets every_queue/ and dbo.<Queue>_IsType_fn: its subtype and channel
tables, list types and enqueue are the domain's, written by hand (the enqueue under
custom/<Queue>/, so that it takes the shared moments from macros/), and its catalogue
entry names the tables its worker view joins ([[queue.join]]), with the columns the
view, the archive copy and a channel's report (Modify_) use."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from relq.scaffold.queue import SHAPES, Queue

TEMPLATES = Path(__file__).parent / "templates"
NAME = "QUEUE"  # stands for the queue's name in a template's file name
SUBTYPE = "SUBTYPE"  # and for a subtype's job type in a subtypes/ template's
GROUPS = {"every_queue": SHAPES, "job_queues": ("job",)}
SUBTYPES = "subtypes"  # a job queue's subtypes; the function their CHECKs call, for any typed table
ONCE = "all_queues"
CUSTOM = "custom"  # custom/<Queue>/: one custom queue's own templates
_LITERAL_ALIAS = re.compile(r"\bAS ([a-z])\b")  # a template's own one-letter aliases


@functools.cache
def taken_aliases(shape: str) -> frozenset[str]:
    """The one-letter aliases the templates a queue of ``shape`` gets use for other tables
    (a job queue's own alias, q, is written literally in its templates)."""
    groups = [g for g, shapes in GROUPS.items() if shape in shapes] + [ONCE, SUBTYPES]
    found = {a for g in groups for t in templates(g) for a in _LITERAL_ALIAS.findall(t.read_text())}
    return frozenset(found - {"q"} if shape == "job" else found)


def _environment() -> Environment:
    environment = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                              autoescape=False)
    environment.filters["a"] = with_article
    return environment


# An acronym's first letter read out starts with a vowel sound for these: an SMS, an HTTP call.
_VOWEL_LETTERS = frozenset("AEFHILMNORSX")
# A vowel letter read as a consonant: a user, a unit, a one-off, a euro.
_CONSONANT_SOUND = ("eu", "one", "uni", "use", "usu", "uti")


def with_article(word: str) -> str:
    """``word`` after its indefinite article, by how it starts: a sync job, an InvoicePdf,
    an SMS (an acronym is read letter by letter), a UserSync. Templates write {{ noun | a }}."""
    if len(word) > 1 and word[:2].isupper():
        vowel = word[0] in _VOWEL_LETTERS
    else:
        vowel = word[:1].lower() in "aeiou" and not word.lower().startswith(_CONSONANT_SOUND)
    return f"{'an' if vowel else 'a'} {word}"


def templates(group: str | None = None) -> list[Path]:
    folder = TEMPLATES / group if group else TEMPLATES
    return sorted(folder.rglob("*.sql.tmpl"))


def _target(template: Path, name: str | None = None, subtype: str | None = None) -> str:
    folder = template.parent.name
    file = template.name.removesuffix(".tmpl")
    if name is not None:
        file = file.replace(NAME, name)
    if subtype is not None:
        file = file.replace(SUBTYPE, subtype)
    return f"tests_tsqlt/{file}" if folder == "tests_tsqlt" else f"database/{folder}/{file}"


def render(template: Path, queue: Queue, subtype: int | None = None) -> tuple[str, str]:
    """(the file's path under the project, its text) of one queue's object; of its subtype
    number ``subtype`` (0-based) for a subtypes/ template named after one."""
    source = template.relative_to(TEMPLATES).as_posix()
    variables = queue.variables()
    if subtype is None:
        return _target(template, queue.name), _environment().get_template(source).render(variables)
    own = variables["subtypes"][subtype]  # type: ignore[index]
    return (_target(template, queue.name, own["type"]),
            _environment().get_template(source).render(variables, subtype=own))


def render_once(template: Path, queues: list[Queue]) -> tuple[str, str]:
    """(path, text) of an object over every queue (``queues`` in catalogue order)."""
    source = template.relative_to(TEMPLATES).as_posix()
    return _target(template), _environment().get_template(source).render(
        queues=[q.variables() for q in queues])


def queue_renders(queue: Queue) -> list[tuple[str, str]]:
    """One queue's own files: (path, text)."""
    own = [render(t, queue) for group, shapes in GROUPS.items() if queue.shape in shapes
           for t in templates(group)]
    for template in templates(SUBTYPES):
        if SUBTYPE in template.name:  # a subtype's table and tests: a job queue's, from the catalogue
            own += [render(template, queue, n) for n in range(len(queue.subtypes))]
        elif queue.typed_tables:  # dbo.<Queue>_IsType_fn and its tests, which their CHECKs call
            own.append(render(template, queue))
    if queue.shape == "custom":
        own += [render(t, queue) for t in templates(f"{CUSTOM}/{queue.name}")]
    return own


def renders(queues: list[Queue]) -> list[tuple[str, str]]:
    """Every templated file of the project: (path, text)."""
    own = [r for queue in queues for r in queue_renders(queue)]
    return own + [render_once(t, queues) for t in templates(ONCE)]
