"""The relational-queue pattern, written down once: the queues listed in
database/queues.toml get their objects from the Jinja templates under
relq/scaffold/templates. The queues' files must be exactly what the templates make
(tests/test_scaffold.py compares them), so a change to a templated object is made in
its template and rendered for every queue (`invoke render-queues`, ``write``);
`invoke new-queue` (``new_queue``) adds a queue of the job shape.

catalogue (reading database/queues.toml), checks (the rules a queue meets), names,
columns and subtypes (their parts), render (the templates; their groups are described
there), files and newqueue (what the two commands write)."""

from relq.scaffold.catalogue import CATALOGUE, load
from relq.scaffold.columns import Column, parse_column
from relq.scaffold.files import write
from relq.scaffold.names import QUEUE_NAME as _QUEUE_NAME  # tests/pipeline compares its copy with it
from relq.scaffold.newqueue import NewQueue, new_queue
from relq.scaffold.queue import Join, Queue
from relq.scaffold.render import queue_renders, render, render_once, renders, templates, with_article
from relq.scaffold.subtypes import Subtype, parse_subtype, resolve

__all__ = ["CATALOGUE", "_QUEUE_NAME", "Column", "Join", "NewQueue", "Queue", "Subtype", "load", "new_queue",
           "parse_column", "parse_subtype", "queue_renders", "render", "render_once", "renders", "resolve",
           "templates", "with_article", "write"]
