"""The rules for the names a queue's catalogue entry gives: they become parts of SQL
Server objects' names and of the templates' lines, which have limits of their own."""

from __future__ import annotations

import functools
import re

# The job types the Add_ tSQLt classes enqueue (they fake dbo.<Queue>Type), so that
# none of them has a subtype whose columns the tests would have to fill.
TEST_TYPES = ("AddTestJobA", "AddTestJobB")
# The columns a job queue's list type, worker view and archive have already: a subtype's
# columns join them there, so they may not take one of these names.
BASE_COLUMNS = ("ItemNo", "EnqueuedAt", "Type", "EntityKey", "Payload", "Status", "Step", "AttemptNum",
                "Response", "Error", "StartedAt", "Duration", "ScheduledFor", "UpdatedAt", "Priority",
                "GroupKey", "DedupKey", "LockedBy", "LeaseUntil", "ArchivedAt")
# At most 14 characters: the templates' longest lines then stay within the house
# style's 120 columns (sqlfluff LT05), and every transaction name within SQL Server's 32.
QUEUE_NAME = re.compile(r"[A-Z][A-Za-z0-9]{1,13}")
TYPE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,49}")  # dbo.[_Type] is VARCHAR(50)
PREFIX = re.compile(r"[a-z][a-z0-9]*")
ALIAS = re.compile(r"[a-z]")
WORDS = re.compile(r"[a-z][a-z -]{0,19}")  # short enough to keep the comments' lines in the style
# "test Worker_<Queue>_V shows NULL <table without Queue_> columns when an item has no row
# there" is 64 characters and the two names: the longest tSQLt name a join's name makes.
JOIN_NAME_ROOM = 128 - 64
CHANNEL_NOUN = re.compile(r"[A-Za-z][A-Za-z -]{0,19}")  # "e-mail", "SMS"
COLUMN_NAME = re.compile(r"[A-Z][A-Za-z0-9]{0,29}")
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,127}")


@functools.cache
def reserved() -> frozenset[str]:
    """T-SQL's reserved words (sqlfluff's tsql dialect): the templates write names unbracketed."""
    from sqlfluff.core import dialect_selector

    return frozenset(dialect_selector("tsql").sets("reserved_keywords"))


def words(name: str) -> str:
    """InvoiceExport -> invoice export"""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name).lower()
