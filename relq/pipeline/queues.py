"""What the pipeline knows of each relational queue: the columns an archived item
carries (the archive layout's COMMON columns, then the queue's own, as its
Worker_<Queue>_V shows them) and their Spark types."""

from __future__ import annotations

from dataclasses import dataclass

from relq.errors import RelqError
from relq.pipeline import layout


@dataclass(frozen=True)
class QueueSpec:
    name: str
    own: tuple[tuple[str, str], ...]  # the queue's own columns after COMMON: (name, Spark type)

    def read_columns(self) -> tuple[str, ...]:
        """The columns read from the database, in file order: Type, COMMON (less
        ArchivedAt, which the pipeline sets), then the queue's own."""
        common = tuple(name for name, _ in layout.COMMON if name != "ArchivedAt")
        return ("Type", *common, *(name for name, _ in self.own))

    def ddl(self) -> str:
        """The Spark schema of an archived row before it is written: Queue and Type, COMMON, own."""
        return layout.ddl((("Queue", "STRING"), ("Type", "STRING"), *layout.COMMON, *self.own))


QUEUES: dict[str, QueueSpec] = {
    "SyncQueue": QueueSpec("SyncQueue", (
        ("EntityKey", "STRING"),
        ("Payload", "STRING"),
        ("LockedBy", "STRING"),
        ("LeaseUntil", "TIMESTAMP"),
        ("Response", "STRING"),
    )),
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
    )),
}

# The queues pipeline.enqueue can fill (a set-based enqueue procedure exists for them).
ENQUEUE_QUEUES = ("SyncQueue",)


def spec(queue: str) -> QueueSpec:
    """The queue's spec; a RelqError naming the queues there are for any other name
    (the name goes into procedure names, so only these ever reach SQL)."""
    try:
        return QUEUES[queue]
    except KeyError:
        raise RelqError(f"unknown queue {queue!r}: the pipeline knows {', '.join(QUEUES)}") from None
