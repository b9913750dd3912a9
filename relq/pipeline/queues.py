"""What the pipeline knows of each relational queue: the columns an archived item
carries (the archive layout's COMMON columns, then the queue's own, as its
Worker_<Queue>_V shows them), their Spark types, and how it is enqueued.

Two kinds. A job queue (SyncQueue, and every queue ``invoke new-queue`` makes)
has the same columns and objects whatever its name: dbo.<Queue>ItemList,
dbo.Add_<Queue>_trx, dbo.<Queue>Type and dbo.Worker_<Queue>_V. The pipeline
runs from an installed package, on a cluster too, so it cannot read the
project's database/queues.toml: any PascalCase name (relq.scaffold's rule) that
is not a custom queue is taken for a job queue, and the server refuses one it
does not have (relq.pipeline.store turns that into one line). A custom queue
(Notification) is listed here with its own columns and enqueue."""

from __future__ import annotations

import re
from dataclasses import dataclass

from relq.errors import RelqError
from relq.pipeline import layout

JOB = "job"
NOTIFICATION = "notification"
# relq.scaffold's _QUEUE_NAME, repeated: the pipeline does not import the scaffold (and
# its templates) on an executor. tests/pipeline/test_queues.py checks they agree.
QUEUE_NAME = re.compile(r"[A-Z][A-Za-z0-9]{1,13}")  # whole name: fullmatch


@dataclass(frozen=True)
class QueueSpec:
    name: str
    own: tuple[tuple[str, str], ...]  # the queue's own columns after COMMON: (name, Spark type)
    kind: str = JOB  # how it is enqueued: JOB (dbo.Add_<Queue>_trx) or NOTIFICATION

    def read_columns(self) -> tuple[str, ...]:
        """The columns read from the database, in file order: Type, COMMON (less
        ArchivedAt, which the pipeline sets), then the queue's own."""
        common = tuple(name for name, _ in layout.COMMON if name != "ArchivedAt")
        return ("Type", *common, *(name for name, _ in self.own))

    def ddl(self) -> str:
        """The Spark schema of an archived row before it is written: Queue and Type, COMMON, own."""
        return layout.ddl((("Queue", "STRING"), ("Type", "STRING"), *layout.COMMON, *self.own))


JOB_COLUMNS = (
    ("EntityKey", "STRING"),
    ("Payload", "STRING"),
    ("LockedBy", "STRING"),
    ("LeaseUntil", "TIMESTAMP"),
    ("Response", "STRING"),
)

# The queues of the custom shape: their tables are written by hand in database/tables.
CUSTOM: dict[str, QueueSpec] = {
    "Notification": QueueSpec("Notification", (
        ("LockedBy", "STRING"),
        ("LeaseUntil", "TIMESTAMP"),
        ("Response", "STRING"),
        ("UserID", "INT"),
        ("Username", "STRING"),
        ("OTP", "STRING"),
        ("EmailTo", "STRING"),
        ("PreferredLanguage", "STRING"),
        ("EmailResponse", "STRING"),
        ("EmailError", "STRING"),
        ("PhoneNumber", "STRING"),
        ("SmsResponse", "STRING"),
        ("SmsError", "STRING"),
    ), NOTIFICATION),
}


def spec(queue: str) -> QueueSpec:
    """The queue's spec: a custom queue's own, else a job queue's; a RelqError for a name
    that is not a queue name (the name goes into object names, so only names of
    letters and digits ever reach SQL)."""
    if not isinstance(queue, str):
        raise RelqError(f"unknown queue {queue!r}: a queue name is PascalCase")
    for name, custom in CUSTOM.items():
        if queue.casefold() == name.casefold():
            return custom
    if not QUEUE_NAME.fullmatch(queue):
        raise RelqError(f"unknown queue {queue!r}: a queue name is PascalCase, 2 to 14 letters and digits "
                        f"(a job queue such as SyncQueue, or {', '.join(CUSTOM)})")
    return QueueSpec(queue, JOB_COLUMNS, JOB)
