"""relq.schedules and the ``invoke schedule.*`` tasks: parsing, the one-line errors, and the
calls they make (offline: relq.db's calls are recorded, not sent)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from invoke import Config, Context, Exit

import tasks
from relq import db, schedules
from relq.cadence import Cadence
from relq.errors import RelqError

NOW = datetime(2026, 11, 28, 12, 0, 7, 250000)
ROW = {"Name": "nightly", "Queue": "SyncQueue", "Type": "CustomerSync", "CronExpr": "0 3 * * *",
       "IntervalSeconds": None, "Misfire": "Skip", "CatchUpMax": None,
       "NextSlotAt": datetime(2026, 11, 29, 3), "LastSlotAt": None, "PausedAt": None, "PausedBy": None}


class Calls:
    """relq.db.call and the module's reads, recorded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, one: list[tuple] | None = None) -> None:
        self.made: list[tuple[str, dict[str, Any]]] = []
        monkeypatch.setattr(schedules, "_now", lambda conn: NOW)
        monkeypatch.setattr(schedules.db, "call", self.call)
        monkeypatch.setattr(schedules.db, "query", lambda cursor, sql, *params: one or [])

    def call(self, conn: Any, procedure: str, **params: Any) -> db.CallResult:
        self.made.append((procedure, params))
        return db.CallResult(0, [[tuple(ROW.values())]], [list(ROW)])


class Conn:
    def cursor(self) -> Any:
        class Cursor:
            def close(self) -> None:
                pass

        return Cursor()


@pytest.mark.parametrize("kwargs, line", [
    ({"name": "", "queue": "SyncQueue", "type": "T", "every": 5}, "--name is required"),
    ({"name": "n", "queue": None, "type": "T", "every": 5}, "--queue is required"),
    ({"name": "n", "queue": "SyncQueue", "type": " ", "every": 5}, "--type is required"),
    ({"name": "n", "queue": "SyncQueue", "type": "T"}, "give either --cron or --every (seconds)"),
    ({"name": "n", "queue": "SyncQueue", "type": "T", "every": 5, "cron": "* * * * *"},
     "give either --cron or --every (seconds), not both or neither"),
    ({"name": "n", "queue": "SyncQueue", "type": "T", "cron": "* * * 13 *"},
     "cron expression '* * * 13 *' is not valid: bad month"),
    ({"name": "n", "queue": "SyncQueue", "type": "T", "every": 0}, "an interval must be 1 to 31,622,400"),
    ({"name": "n", "queue": "SyncQueue", "type": "T", "every": 5, "payload": "{nope"},
     "--payload is not valid JSON"),
    ({"name": "n", "queue": "SyncQueue", "type": "T", "every": 5, "priority": 40000},
     "--priority must be -32768 to 32767, not 40000"),
    ({"name": "n", "queue": "SyncQueue", "type": "T", "every": 5, "catch_up": 0},
     "catch-up must be 1 to 1000"),
])
def test_a_bad_schedule_is_refused_in_one_line_before_anything_is_sent(kwargs: dict, line: str) -> None:
    with pytest.raises(RelqError) as raised:
        schedules.new_schedule(kwargs.pop("name"), kwargs.pop("queue"), kwargs.pop("type"), **kwargs)
    assert line in str(raised.value) and "\n" not in str(raised.value)


def test_a_cron_schedule_is_sent_with_its_first_slot_from_the_servers_now(monkeypatch) -> None:
    calls = Calls(monkeypatch)
    new = schedules.new_schedule(" nightly ", "SyncQueue", "CustomerSync", cron="0 3 * * *",
                                 payload='{"full": true}', catch_up=3)
    row = schedules.add(Conn(), new)
    assert row["Name"] == "nightly"
    assert calls.made == [("dbo.Add_QueueSchedule_trx", {
        "Name": "nightly", "Queue": "SyncQueue", "Type": "CustomerSync", "Payload": '{"full": true}',
        "EntityKey": None, "Priority": None, "GroupKey": None, "CronExpr": "0 3 * * *",
        "IntervalSeconds": None, "Misfire": "CatchUp", "CatchUpMax": 3,
        "NextSlotAt": datetime(2026, 11, 29, 3)})]


def test_an_interval_schedule_leaves_its_first_slot_to_the_database(monkeypatch) -> None:
    calls = Calls(monkeypatch)
    schedules.add(Conn(), schedules.new_schedule("beat", "SyncQueue", "CustomerSync", every=30))
    params = calls.made[0][1]
    assert (params["IntervalSeconds"], params["NextSlotAt"], params["Misfire"]) == (30, None, "Skip")


def test_resume_goes_on_from_the_first_slot_from_now(monkeypatch) -> None:
    calls = Calls(monkeypatch, one=[(None, 60, datetime(2026, 11, 28, 11, 0, 0))])
    schedules.resume(Conn(), "beat")
    assert calls.made == [("dbo.Resume_QueueSchedule_trx",
                           {"Name": "beat", "NextSlotAt": datetime(2026, 11, 28, 12, 1, 0)})]


def test_resume_of_an_unknown_name_leaves_the_refusal_to_the_procedure(monkeypatch) -> None:
    calls = Calls(monkeypatch, one=[])
    schedules.resume(Conn(), "nope")
    assert calls.made == [("dbo.Resume_QueueSchedule_trx", {"Name": "nope", "NextSlotAt": None})]


def test_pause_and_remove_call_their_procedures(monkeypatch) -> None:
    calls = Calls(monkeypatch)
    schedules.pause(Conn(), "nightly")
    schedules.remove(Conn(), "nightly")
    assert calls.made == [("dbo.Pause_QueueSchedule_trx", {"Name": "nightly"}),
                          ("dbo.Delete_QueueSchedule_trx", {"Name": "nightly"})]


def test_the_list_shows_cadence_misfire_and_pause() -> None:
    rows = [ROW, dict(ROW, Name="beat", CronExpr=None, IntervalSeconds=5, Misfire="CatchUp", CatchUpMax=4,
                      PausedAt=datetime(2026, 11, 28, 9), PausedBy="ops")]
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(schedules.table(rows))
    text = console.export_text()
    assert "cron 0 3 * * *" in text and "every 5 s" in text and "catch up 4" in text
    assert "2026-11-28 09:00:00 by ops" in text
    assert '"NextSlotAt": "2026-11-29T03:00:00"' in schedules.as_json([ROW])
    assert schedules.summary("added", ROW) == (
        "schedule nightly added: SyncQueue CustomerSync, cron 0 3 * * *, skip, "
        "next slot 2026-11-29 03:00:00 UTC")


def test_cadence_text_needs_one_of_cron_or_interval() -> None:
    assert schedules.cadence_text({"CronExpr": None, "IntervalSeconds": 60}) == "every 60 s"
    assert Cadence(interval_s=60).interval_s == 60


@pytest.mark.parametrize("kwargs, line", [
    ({"name": "n", "queue": "SyncQueue", "type": "T", "cron": "61 * * * *"},
     "schedule.add: cron expression '61 * * * *' is not valid: bad minute"),
    ({"name": "n", "queue": "SyncQueue", "type": "T", "every": "often"},
     "schedule.add: --every must be a whole number, not 'often'"),
    ({"name": "n", "queue": "SyncQueue", "type": "T", "every": 5, "catch_up": "all"},
     "schedule.add: --catch-up must be a whole number, not 'all'"),
])
def test_the_add_task_refuses_bad_input_in_one_line_with_exit_code_2(kwargs: dict, line: str) -> None:
    with pytest.raises(Exit) as raised:
        tasks.schedule_add(Context(Config()), **kwargs)
    assert raised.value.code == 2
    assert str(raised.value.message).startswith(line)


@pytest.mark.parametrize("task", [tasks.schedule_pause, tasks.schedule_resume, tasks.schedule_remove])
def test_the_name_tasks_require_a_name(task) -> None:
    with pytest.raises(Exit) as raised:
        task(Context(Config()))
    assert raised.value.code == 2 and "--name is required" in str(raised.value.message)


def test_a_task_masks_its_target_and_ends_a_refusal_in_one_line(monkeypatch, capsys) -> None:
    refused = db.SqlError([db.ServerMessage(735720, "relq: dbo.Pause_QueueSchedule_trx: there is no schedule "
                                                    "named nope", "42000")])

    class Refusing:  # every call on the connection is refused as the server refuses it
        def cursor(self) -> Any:
            raise refused

        def close(self) -> None:
            pass

    monkeypatch.setattr(db, "connect", lambda conn_str: Refusing())
    with pytest.raises(Exit) as raised:
        tasks.schedule_pause(Context(Config()), name="nope", conn="Driver={x};Server=s;UID=u;PWD=hunter2")
    assert raised.value.code == 1
    assert str(raised.value.message).startswith("schedule.pause: ")
    assert "there is no schedule named nope" in str(raised.value.message)
    assert "hunter2" not in capsys.readouterr().err


def test_the_fire_and_the_refusal_are_rendered_for_every_job_queue_and_refuse_a_custom_one(tmp_path) -> None:
    """`invoke new-queue` renders all_queues/ again: a new job queue gets its branch of the fire
    (its typed list and Add_<Queue>_utx, no dynamic SQL) and of the refusal function."""
    from relq.scaffold.catalogue import load
    from relq.scaffold.queue import Queue
    from relq.scaffold.render import render_once, templates
    from tests.conftest import REPO

    queues = load(REPO)
    extra = Queue(name="InvoiceRun", prefix="invoicerun", alias="i", shape="job", noun="invoice run",
                  verb=("run", "ran"), types=("MonthlyInvoice",))
    rendered = dict(render_once(t, [*queues, extra]) for t in templates("all_queues"))
    fire = rendered["database/procedures/dbo.Fire_QueueSchedule_trx.sql"]
    refusal = rendered["database/functions/dbo.QueueScheduleRefusal_fn.sql"]
    for queue in ("SyncQueue", "InvoiceRun"):
        assert f"DECLARE @{queue}Items dbo.{queue}ItemList;" in fire
        assert f"EXEC @RetCode = dbo.Add_{queue}_utx" in fire
        assert f"FROM dbo.{queue}Type AS t" in refusal
    assert "Add_Notification" not in fire and "EXEC (" not in fire and "sp_executesql" not in fire
    assert "WHEN @Queue = N'Notification'\n            THEN N'a custom queue:" in refusal
