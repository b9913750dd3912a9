"""Which queue names the pipeline takes, and for what."""

from __future__ import annotations

import pytest

from relq import scaffold
from relq.errors import RelqError
from relq.pipeline.queues import JOB, JOB_COLUMNS, NOTIFICATION, QUEUE_NAME, spec

NAMES = ["SyncQueue", "InvoiceExport", "Q2", "Abcdefghijklmn", "Abcdefghijklmno", "syncQueue", "Sync_Queue",
         "S", "SyncQueue\n", " SyncQueue", "Sync-Queue", "Ünicode"]


def test_the_queue_name_rule_is_the_scaffolds() -> None:
    assert [bool(QUEUE_NAME.fullmatch(n)) for n in NAMES] == [bool(scaffold._QUEUE_NAME.fullmatch(n))
                                                              for n in NAMES]


@pytest.mark.parametrize("name", ["SyncQueue", "InvoiceExport", "Q2", "Abcdefghijklmn"])
def test_a_pascal_case_name_is_a_job_queue(name: str) -> None:
    s = spec(name)
    assert (s.name, s.kind, s.own) == (name, JOB, JOB_COLUMNS)
    assert s.read_columns()[:2] == ("Type", "EnqueuedAt")


def test_notification_is_the_custom_queue_whatever_its_case() -> None:
    for name in ("Notification", "notification"):
        s = spec(name)
        assert (s.name, s.kind) == ("Notification", NOTIFICATION)
        assert {"UserID", "OTP", "EmailTo", "PhoneNumber"} <= set(s.read_columns())


@pytest.mark.parametrize("name", ["syncQueue", "Sync_Queue", "Sync Queue", "S", "Abcdefghijklmno",
                                  "X]; DROP TABLE dbo.SyncQueue;--", "SyncQueue\n", "", None])
def test_anything_else_is_refused_in_one_line(name) -> None:
    with pytest.raises(RelqError, match="unknown queue") as caught:
        spec(name)
    assert "\n" not in str(caught.value)
