"""The relational-queue pattern, written down once: templates of the objects every
relational queue has alike (the item controls, Move_, the batch report, the
attempt history), rendered for a queue by its name, its settings prefix and the
alias its procedures use. The queues' files in database/ must be exactly what
the templates make (tests/test_scaffold.py compares them), so a change to one of
these objects is made in its template and rendered for every queue, and the
copies cannot drift apart. Objects that differ between queues (tables, enqueue,
claim, report, views) are not templates yet: that and `invoke new-queue` are the
rest of the operations issue."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template

TEMPLATES = Path(__file__).parent / "templates"
NAME = "QUEUE"  # stands for the queue's name in a template's file name


@dataclass(frozen=True)
class Queue:
    name: str  # Notification
    prefix: str  # its settings' prefix in dbo.AppSettings: notification
    alias: str  # the table alias its procedures use: n


QUEUES = (Queue("Notification", "notification", "n"), Queue("SyncQueue", "syncqueue", "q"))


def templates() -> list[Path]:
    return sorted(TEMPLATES.rglob("*.sql.tmpl"))


def render(template: Path, queue: Queue) -> tuple[str, str]:
    """(the file's path under the project, its text) for ``queue``."""
    folder = template.parent.name
    name = template.name.removesuffix(".tmpl").replace(NAME, queue.name)
    text = Template(template.read_text()).substitute(Queue=queue.name, prefix=queue.prefix, a=queue.alias)
    return f"database/{folder}/{name}", text


def write(root: Path) -> list[str]:
    """Render every template for every queue into ``root``'s database/; returns the
    paths whose text changed."""
    changed = []
    for queue in QUEUES:
        for template in templates():
            path, text = render(template, queue)
            target = root / path
            if not target.exists() or target.read_text() != text:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
                changed.append(path)
    return changed
