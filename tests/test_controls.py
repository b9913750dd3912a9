"""relq.controls, the controls in `invoke status`, and the `invoke pause`, `resume` and `limit`
tasks, offline: the view's rows read, the procedures called with what the user gave, bad
input refused in one line before any connection."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from invoke import MockContext
from rich.console import Console

import tasks
from relq import controls, db
from relq.controls import Control
from relq.errors import RelqError
from relq.status import as_json, controls_table, summarize, view
from tests.test_tasks import NONE_CONFIGURED, invoke

AT = datetime(2026, 11, 28, 9, 30)
# As dbo.QueueControl_V answers (its column order): a queue row and one per type.
ROWS = [
    ("SyncQueue", "InventorySync", True, True, "ann", AT, "the API is down",
     None, None, None, None, None, None, 0),
    ("SyncQueue", None, False, False, None, None, None, None, None, None, 2, "bob", AT, 5),
    ("SyncQueue", "CustomerSync", False, False, None, None, None, None, None, 3, None, "bob", AT, 2),
    ("Notification", None, False, False, None, None, None, None, None, None, 1, None, None, 0),
    ("Notification", "ResetPassword", False, False, None, None, None, "carl", AT, None, None, None, None, 1),
]


def test_the_rows_come_queue_first_then_types_by_name_and_say_what_is_set() -> None:
    found = controls.controls(ROWS)
    assert [c.target for c in found] == ["Notification", "Notification.ResetPassword", "SyncQueue",
                                         "SyncQueue.CustomerSync", "SyncQueue.InventorySync"]
    assert [c.notable for c in found] == [False, False, True, True, True]
    sync, customer, inventory = found[2:]
    assert inventory.pause_line == "paused by ann at 2026-11-28 09:30 UTC: the API is down"
    assert customer.pause_line == "" and customer.limit_line == "2 of 3 slots"
    assert sync.limit_line == "2 per group" and inventory.limit_line == ""
    assert found[0].limit_line == ""  # a group limit of 1 is the default, nothing to show


@pytest.mark.parametrize("target, parsed", [
    ("SyncQueue", ("SyncQueue", None)),
    (" SyncQueue.CustomerSync ", ("SyncQueue", "CustomerSync")),
])
def test_a_target_is_a_queue_or_a_queue_and_type(target, parsed) -> None:
    assert controls.split_target(target) == parsed


@pytest.mark.parametrize("target", ["", ".CustomerSync", "SyncQueue."])
def test_a_target_without_a_queue_or_with_an_empty_type_is_refused(target) -> None:
    with pytest.raises(RelqError, match=r"is not a queue or queue\.Type"):
        controls.split_target(target)


def test_a_reason_must_say_something_and_fit_and_a_limit_must_be_one_or_more() -> None:
    assert controls.check_reason("  relay down ") == "relay down"
    for bad in (None, "", "   "):
        with pytest.raises(RelqError, match="needs a reason"):
            controls.check_reason(bad)
    with pytest.raises(RelqError, match="401 characters; at most 400"):
        controls.check_reason("x" * 401)
    assert controls.check_limit(None) is None and controls.check_limit(32767) == 32767
    for bad in (0, -1, 32768):
        with pytest.raises(RelqError, match=f"not {bad}"):
            controls.check_limit(bad)


class Calls:
    """db.call, recording each procedure and its parameters, answering with one row."""

    def __init__(self) -> None:
        self.made: list[tuple[str, dict]] = []

    def __call__(self, conn, procedure, **params):
        self.made.append((procedure, params))
        columns = ["Queue", "Type", "IsPaused", "PausedBy", "PauseReason", "ResumedBy", "TypeLimit",
                   "GroupLimit"]
        row = (params["Queue"], params["Type"] or "", True, params.get("PausedBy") or "login",
               params.get("PauseReason"), params.get("ResumedBy"), params.get("Limit"), params.get("Limit"))
        return db.CallResult(0, [[row]], [columns])


def test_each_change_calls_its_procedure_with_the_users_values(monkeypatch) -> None:
    calls = Calls()
    monkeypatch.setattr(db, "call", calls)
    row = controls.pause(None, "SyncQueue", "CustomerSync", " quota spent ", by="ann")
    controls.resume(None, "SyncQueue", None)
    controls.limit(None, "SyncQueue", "CustomerSync", 5)
    controls.limit(None, "SyncQueue", None, None, by="bob")
    assert calls.made == [
        ("dbo.Pause_Queue_trx", {"Queue": "SyncQueue", "Type": "CustomerSync", "PauseReason": "quota spent",
                                 "PausedBy": "ann"}),
        ("dbo.Resume_Queue_trx", {"Queue": "SyncQueue", "Type": None, "ResumedBy": None}),
        ("dbo.Limit_Queue_trx", {"Queue": "SyncQueue", "Type": "CustomerSync", "Limit": 5,
                                 "LimitSetBy": None}),
        ("dbo.Limit_Queue_trx", {"Queue": "SyncQueue", "Type": None, "Limit": None, "LimitSetBy": "bob"}),
    ]
    assert row["PausedBy"] == "ann" and row["PauseReason"] == "quota spent"
    with pytest.raises(RelqError):
        controls.limit(None, "SyncQueue", "CustomerSync", 0)
    assert len(calls.made) == 4  # refused before any call


def test_the_task_lines_say_what_changed() -> None:
    assert controls.done_line("pause", "SyncQueue", {"PausedBy": "ann", "PauseReason": "deploy"}) == \
        "paused SyncQueue (by ann): deploy"
    assert controls.done_line("resume", "SyncQueue", {"ResumedBy": "ann"}) == "resumed SyncQueue (by ann)"
    assert controls.done_line("resume", "SyncQueue", {}) == "resumed SyncQueue (it was not paused)"
    assert controls.done_line("limit", "SyncQueue.CustomerSync", {"TypeLimit": 3}) == \
        "SyncQueue.CustomerSync: at most 3 in Processing at once"
    assert controls.done_line("limit", "SyncQueue.CustomerSync", {"TypeLimit": None}) == \
        "SyncQueue.CustomerSync: no limit"
    assert controls.done_line("limit", "SyncQueue", {"GroupLimit": 2}) == \
        "SyncQueue: at most 2 of one group in Processing at once"
    assert controls.done_line("limit", "SyncQueue", {"GroupLimit": None}) == \
        "SyncQueue: one of a group at a time, in order"


HEALTH = [("SyncQueue", "Pending", 7, 30, 0), ("Notification", "Pending", 1, None, 0)]
THROUGHPUT = [("SyncQueue", 1.0, 0.0, 0.0, 10, 20)]


def test_status_marks_a_paused_queue_and_lists_what_is_set() -> None:
    paused_queue = Control("Notification", None, True, True, "ann", AT, "deploy", processing=0)
    queues = summarize(HEALTH, THROUGHPUT, [paused_queue, *controls.controls(ROWS[:3])])
    notification, sync = queues
    assert notification.paused and not sync.paused
    assert [c["target"] for c in sync.controls] == ["SyncQueue", "SyncQueue.CustomerSync",
                                                    "SyncQueue.InventorySync"]
    console = Console(record=True, width=220)
    console.print(view(queues))
    text = console.export_text()
    assert "Notification (paused)" in text
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.strip("│ ").split("│")]
            for line in text.splitlines() if line.startswith("│") and "Sync" in line and "." in line}
    assert rows["SyncQueue.InventorySync"] == ["SyncQueue.InventorySync", "yes", "ann", "2026-11-28 09:30",
                                               "the API is down", "-", "0"]
    assert rows["SyncQueue.CustomerSync"][4:] == ["-", "3 at once", "2"]
    data = json.loads(as_json(queues))
    assert data[0]["paused"] is True and data[0]["controls"][0]["reason"] == "deploy"
    assert data[1]["controls"][0]["group_limit"] == 2 and data[1]["controls"][1]["type_limit"] == 3


def test_status_shows_no_controls_table_when_nothing_is_set() -> None:
    queues = summarize(HEALTH, THROUGHPUT, controls.controls(ROWS[3:]))
    assert controls_table(queues) is None
    assert not any(q.paused or q.controls for q in queues)


@pytest.mark.parametrize("argv, line", [
    (["pause"], "pause: --target is required: " + tasks.CONTROL_TARGET + " (invoke pause --help)"),
    (["pause", "--target", "SyncQueue"],
     "pause: a pause needs a reason: --reason 'why' (it is shown with the pause)"),
    (["pause", "--target", "SyncQueue.", "--reason", "x"],
     "pause: 'SyncQueue.' is not a queue or queue.Type (e.g. SyncQueue or SyncQueue.CustomerSync)"),
    (["resume"], "resume: --target is required: " + tasks.CONTROL_TARGET + " (invoke resume --help)"),
    (["limit", "--target", "SyncQueue.CustomerSync"], "limit: give either --to N (1 to 32767) or --none"),
    (["limit", "--target", "SyncQueue", "--to", "2", "--none"],
     "limit: give either --to N (1 to 32767) or --none"),
    (["limit", "--target", "SyncQueue", "--to", "two"], "limit: --to must be a whole number, not 'two'"),
    (["limit", "--target", "SyncQueue.CustomerSync", "--to", "0"],
     "limit: a limit is 1 to 32767, not 0 (use --none to remove one)"),
])
def test_bad_input_is_one_line_before_anything_connects(argv, line) -> None:
    done = invoke(*argv)
    assert (done.returncode, done.stderr.strip().splitlines(), done.stdout) == (2, [line], "")


@pytest.mark.parametrize("argv", [
    ["pause", "--target", "SyncQueue", "--reason", "deploy"],
    ["resume", "--target", "SyncQueue.CustomerSync"],
    ["limit", "--target", "SyncQueue", "--none"],
])
def test_a_control_without_a_server_says_so_in_one_line(argv) -> None:
    done = invoke(*argv)
    expected = (1, [f"{argv[0]}: {NONE_CONFIGURED}"], "")
    assert (done.returncode, done.stderr.strip().splitlines(), done.stdout) == expected


def test_a_task_prints_the_masked_target_then_what_changed(monkeypatch, capsys) -> None:
    calls = Calls()
    monkeypatch.setattr(db, "call", calls)
    monkeypatch.setattr(db, "connect", lambda conn_str: type("Conn", (), {"close": lambda self: None})())
    tasks.pause(MockContext(), target="SyncQueue.CustomerSync", reason="quota", by="ann",
                conn="DRIVER={x};SERVER=h;UID=u;PWD=hunter2")
    tasks.limit(MockContext(), target="SyncQueue.CustomerSync", to="4", conn="SERVER=h;PWD=hunter2")
    out, err = capsys.readouterr()
    assert out.splitlines() == ["paused SyncQueue.CustomerSync (by ann): quota",
                                "SyncQueue.CustomerSync: at most 4 in Processing at once"]
    assert "hunter2" not in err and err.splitlines()[0].startswith("pause: DRIVER=x;SERVER=h;UID=u;PWD=***")
    assert calls.made[1] == ("dbo.Limit_Queue_trx", {"Queue": "SyncQueue", "Type": "CustomerSync", "Limit": 4,
                                                     "LimitSetBy": None})


def test_a_refusal_from_the_server_is_one_line_naming_the_task(monkeypatch) -> None:
    def refuse(conn, procedure, **params):
        raise RelqError(f"{procedure}: SQL Server error 735717: relq: {procedure}: NoSuchQueue is not a "
                        f"relational queue or one of its job types (dbo.QueueControl_V lists them)")

    monkeypatch.setattr(db, "call", refuse)
    monkeypatch.setattr(db, "connect", lambda conn_str: type("Conn", (), {"close": lambda self: None})())
    with pytest.raises(tasks.Exit) as info:
        tasks.resume(MockContext(), target="NoSuchQueue", conn="SERVER=h")
    assert info.value.code == 1
    assert info.value.message.startswith("resume: dbo.Resume_Queue_trx: SQL Server error 735717: ")
