"""pipeline.enqueue --queue Notification against a stand-in database (fake_store):
each rule of dbo.Add_Notification_ResetPassword_Batch_utx checked in Spark with its
reason, the derived DedupKey, re-runs, and a row the database refuses after all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from relq.errors import RelqError
from relq.pipeline.enqueue import DERIVED_PREFIX, enqueue, read_input
from tests.pipeline.fake_store import FakeStore

SCHEMA = ("UserID STRING, Username STRING, OTP STRING, EmailTo STRING, PreferredLanguage STRING, "
          "PhoneNumber STRING, ScheduledFor STRING, Priority STRING, GroupKey STRING, DedupKey STRING")
GOOD = [
    ("11", "ada", "A1B2C3", "ada@example.com", None, None, None, None, None, None),
    ("12", "bob", "123456", None, None, "+14155550123", "2030-01-01T10:00:00+02:00", "5", "g1", "mine"),
    ("13", "cleo", "XYZ9", "cleo.x+tag@mail.example.de", "de-DE", "+4915112345678", None, None, None, None),
]


def bad(**changes):
    names = ("UserID", "Username", "OTP", "EmailTo", "PreferredLanguage", "PhoneNumber", "ScheduledFor",
             "Priority", "GroupKey", "DedupKey")
    row = dict(zip(names, GOOD[0], strict=True))
    return tuple((row | changes).values())


# (row, the reason it must be rejected with): every rule, and each test of dbo.EmailIsValid_fn
# and dbo.PhoneIsValid_fn.
BAD = [
    (bad(UserID=None), "UserID is required"),
    (bad(UserID="x1"), "UserID is not an integer"),
    (bad(UserID="1.5"), "UserID is not an integer"),
    (bad(UserID="0"), "UserID must be a positive integer (at most 2147483647)"),
    (bad(UserID="2147483648"), "UserID must be a positive integer (at most 2147483647)"),
    (bad(Username=None), "Username is required"),
    (bad(Username="  "), "Username is required"),
    (bad(Username="u" * 129), "Username is longer than 128 characters"),
    (bad(Username="u" * 127 + "\U0001F600"), "Username is longer than 128 characters"),
    (bad(OTP=None), "OTP must be 4 to 10 letters or digits"),
    (bad(OTP="A1B"), "OTP must be 4 to 10 letters or digits"),
    (bad(OTP="A1B2C3D4E5F"), "OTP must be 4 to 10 letters or digits"),
    (bad(OTP="A1-2C3"), "OTP must be 4 to 10 letters or digits"),
    (bad(OTP="A1B2C3 "), "OTP must be 4 to 10 letters or digits"),
    (bad(OTP="A1B2C3\n"), "OTP must be 4 to 10 letters or digits"),
    (bad(OTP="A1B2Ç3"), "OTP must be 4 to 10 letters or digits"),
    (bad(EmailTo=None), "EmailTo or PhoneNumber is required: a notification needs a channel"),
    *((bad(EmailTo=address), "EmailTo is not an e-mail address") for address in (
        "", "ada", "ada@example", "@example.com", "ada@.com", "ada@example.", "ada@@example.com",
        "ada@x@example.com", "ada example@example.com", "ada,b@example.com", "ada;b@example.com",
        "ada:b@example.com", "<ada@example.com>", "ada(x)@example.com", '"ada"@example.com',
        "ada\t@example.com", "ada@example.com\nBcc: eve@example.com", "ada\r@example.com",
        "ada..b@example.com", ".ada@example.com", "ada.@example.com", "a" * 243 + "@example.com",
        # full-width look-alikes, which a width-insensitive collation's LIKE refuses as the ASCII ones
        "ada\uff0cb@example.com", "ada\uff20x@example.com", "ada\u3000b@example.com",
        "ada\uff1bb@example.com")),
    *((bad(EmailTo=None, PhoneNumber=number), "PhoneNumber is not an E.164 number such as +14155550123")
      for number in ("", "14155550123", "+04155550123", "+1415555", "+1415555012345678", "+1415555O123",
                     "+1 4155550123", "+14155550123 ", "+14155550123\n", "+١٤١٥٥٥٥٠١٢٣")),
    (bad(PreferredLanguage="e"), "PreferredLanguage must be a language tag such as en or en-GB"),
    (bad(PreferredLanguage="en_GB"), "PreferredLanguage must be a language tag such as en or en-GB"),
    (bad(PreferredLanguage="x" * 13), "PreferredLanguage must be a language tag such as en or en-GB"),
    (bad(ScheduledFor="soon"), "ScheduledFor is not a timestamp (ISO 8601; UTC unless it says)"),
    (bad(Priority="40000"), "Priority must be -32768 to 32767"),
    (bad(GroupKey=" "), "GroupKey must not be blank: leave it empty for none"),
    (bad(DedupKey="d" * 201), "DedupKey is longer than 200 characters"),
]


@pytest.fixture
def store(tmp_path: Path) -> FakeStore:
    return FakeStore(str(tmp_path / "queue.sqlite"), blocked_email="@blocked.example").create()


def run(spark, store: FakeStore, frame, tmp_path: Path, **options):
    options = {"rejects": str(tmp_path / "rejects"), "partitions": 2} | options
    return enqueue(spark, store, "Notification", frame, **options)


def test_each_bad_notification_is_rejected_with_its_reason_and_the_good_ones_are_enqueued(
        spark, store, tmp_path) -> None:
    frame = spark.createDataFrame([*GOOD, *(row for row, _ in BAD)], SCHEMA)

    result = run(spark, store, frame, tmp_path)

    assert (result.rows, result.rejected, result.enqueued, result.duplicates) == (
        len(GOOD) + len(BAD), len(BAD), len(GOOD), 0)
    rejects = spark.read.parquet(str(tmp_path / "rejects")).collect()
    assert sorted(((tuple(r[:10]), r["Reason"]) for r in rejects), key=repr) == sorted(BAD, key=repr)
    rows = {r["UserID"]: r for r in store.rows("Notification")}
    assert sorted(rows) == [11, 12, 13]
    assert (rows[11]["EmailTo"], rows[11]["PreferredLanguage"], rows[11]["PhoneNumber"]) == (
        "ada@example.com", "en", None)
    assert (rows[12]["EmailTo"], rows[12]["PhoneNumber"], rows[12]["Priority"], rows[12]["DedupKey"]) == (
        None, "+14155550123", 5, "mine")
    assert rows[12]["ScheduledFor"].isoformat() == "2030-01-01T08:00:00"
    assert rows[13]["PreferredLanguage"] == "de-DE" and rows[13]["Type"] == "ResetPassword"
    derived = rows[11]["DedupKey"]
    assert derived.startswith(DERIVED_PREFIX) and len(derived) == len(DERIVED_PREFIX) + 64


def test_a_rerun_enqueues_no_notification_twice_and_a_new_code_is_a_new_one(spark, store, tmp_path) -> None:
    frame = spark.createDataFrame(GOOD, SCHEMA)
    run(spark, store, frame, tmp_path)

    again = run(spark, store, frame, tmp_path)
    new_code = run(spark, store, spark.createDataFrame([bad(OTP="Z9Z9Z9")], SCHEMA), tmp_path)

    assert (again.enqueued, again.duplicates) == (0, 3)
    assert (new_code.enqueued, new_code.duplicates) == (1, 0)
    assert len(store.rows("Notification")) == 4


def test_a_notification_the_database_refuses_lands_in_the_rejects_and_the_rest_goes_in(
        spark, store, tmp_path) -> None:
    frame = spark.createDataFrame([GOOD[0], bad(UserID="14", EmailTo="eve@blocked.example"), GOOD[1]], SCHEMA)

    result = run(spark, store, frame, tmp_path, partitions=1)

    assert (result.rejected, result.enqueued) == (1, 2)
    (reject,) = spark.read.parquet(str(tmp_path / "rejects")).collect()
    assert (reject["UserID"], reject["Reason"]) == (
        "14", "refused by the database: EmailTo is not an e-mail address")
    assert sorted(r["UserID"] for r in store.rows("Notification")) == [11, 12]


def test_a_notification_input_needs_its_own_columns(spark, tmp_path) -> None:
    (tmp_path / "n.csv").write_text("UserID,Username,OTP,PhoneNumber\n7,dan,D4D4D4,+14155550199\n",
                                    encoding="utf-8")
    frame = read_input(spark, str(tmp_path / "n.csv"), "csv", "Notification")
    assert frame.count() == 1
    (tmp_path / "j.csv").write_text("Type,EntityKey\nCustomerSync,C-1\n", encoding="utf-8")
    with pytest.raises(RelqError, match="no column UserID, Username, OTP"):
        read_input(spark, str(tmp_path / "j.csv"), "csv", "Notification")


def test_notifications_are_sent_from_the_driver_so_a_task_retry_cannot_send_one_twice(
        spark, store, tmp_path) -> None:
    frame = spark.createDataFrame([(str(n), f"u{n}", f"C{n:04d}", f"u{n}@example.com", None, None, None,
                                    None, None, None) for n in range(1, 31)], SCHEMA).repartition(3)

    result = run(spark, store, frame, tmp_path, partitions=3, limit=7)

    assert result.enqueued == 30 and len(store.rows("Notification")) == 30
    sizes = [size for size, _, _ in store.calls("enqueue")]
    assert sum(sizes) == 30 and max(sizes) <= 7
    assert store.pids("enqueue") == {os.getpid()}  # this process, never a Spark task's


def test_a_pandas_float64_user_id_column_is_taken_when_its_values_are_whole(spark, store, tmp_path) -> None:
    import pandas as pd

    source = tmp_path / "resets.parquet"
    pd.DataFrame({"UserID": [11.0, 12.5, None], "Username": ["ada", "bob", "cy"],
                  "OTP": ["A1B2", "B1B2", "C1C2"],
                  "EmailTo": ["ada@example.com", "bob@example.com", "cy@example.com"],
                  "Priority": [None, 3.0, None]}).to_parquet(source)

    result = run(spark, store, read_input(spark, str(source), "parquet", "Notification"), tmp_path)

    assert (result.enqueued, result.rejected) == (1, 2)
    (row,) = store.rows("Notification")
    assert (row["UserID"], row["Priority"]) == (11, 0)
    reasons = sorted(r["Reason"] for r in spark.read.parquet(str(tmp_path / "rejects")).collect())
    assert reasons == ["UserID is not an integer", "UserID is required"]
