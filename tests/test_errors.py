"""relq.errors.Msg names the numbers of database/messages, one for one."""

from __future__ import annotations

from pathlib import Path

from relq.errors import Msg

MESSAGES = Path(__file__).resolve().parent.parent / "database" / "messages"


def test_msg_matches_the_message_files() -> None:
    files = {int(f.name.split(".")[0]): f.name.split(".")[1] for f in MESSAGES.glob("*.sql")}
    assert files, "no message files found"
    assert {m.value: m.name for m in Msg} == files


def test_a_number_prints_as_a_number() -> None:
    assert str(Msg.KeyLock) == f"{Msg.KeyLock}" == "735709"
    assert Msg.StaleToken == 735705
