"""relq.cadence: slots in UTC, cron and interval, and the misfire policies (offline)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from relq.cadence import (
    Cadence,
    Fire,
    check_catch_up,
    check_cron,
    check_interval,
    first_slot,
    plan,
    resumed_slot,
)
from relq.errors import RelqError

T0 = datetime(2026, 3, 29, 0, 0, 0)  # the night Europe moves its clocks: nothing moves in UTC


def at(minutes: float = 0, seconds: float = 0) -> datetime:
    return T0 + timedelta(minutes=minutes, seconds=seconds)


@pytest.mark.parametrize("expr, reason", [
    ("61 * * * *", "bad minute"),
    ("* 24 * * *", "bad hour"),
    ("* * *", "wrong number of fields"),
    ("*/0 * * * *", "bad minute"),
    ("0 0 31 2 *", "bad day-of-month"),
    ("a b c d e", "bad minute"),
])
def test_a_bad_cron_expression_is_one_line_naming_the_field(expr: str, reason: str) -> None:
    with pytest.raises(RelqError) as raised:
        check_cron(expr)
    line = str(raised.value)
    assert "\n" not in line
    assert f"cron expression {expr!r} is not valid: {reason}" in line


def test_an_empty_cron_expression_is_refused() -> None:
    with pytest.raises(RelqError, match="is empty"):
        check_cron("   ")


def test_a_cron_expression_is_kept_with_its_spaces_tidied() -> None:
    assert check_cron("  */5   * * * * ") == "*/5 * * * *"


@pytest.mark.parametrize("seconds, ok", [(0, False), (1, True), (31_622_400, True), (31_622_401, False)])
def test_an_interval_is_1_second_to_366_days(seconds: int, ok: bool) -> None:
    if ok:
        assert check_interval(seconds) == seconds
    else:
        with pytest.raises(RelqError, match="1 to 31,622,400 seconds"):
            check_interval(seconds)


@pytest.mark.parametrize("slots, ok", [(None, True), (1, True), (1000, True), (0, False), (1001, False)])
def test_catch_up_is_1_to_1000_slots(slots: int | None, ok: bool) -> None:
    if ok:
        assert check_catch_up(slots) == slots
    else:
        with pytest.raises(RelqError, match="1 to 1000"):
            check_catch_up(slots)


def test_a_cadence_is_cron_or_interval_exactly() -> None:
    with pytest.raises(RelqError):
        Cadence()
    with pytest.raises(RelqError):
        Cadence(cron="* * * * *", interval_s=5)


def test_cron_slots_are_utc_across_a_dst_night() -> None:
    # 01:00 UTC on 2026-03-29 is when Europe springs forward; in UTC every hour exists once.
    cadence = Cadence(cron="30 * * * *")
    slots, moment = [], T0
    for _ in range(4):
        moment = cadence.after(moment, anchor=T0)
        slots.append(moment)
    assert slots == [at(30), at(90), at(150), at(210)]


def test_a_six_field_cron_expression_has_seconds_first() -> None:
    cadence = Cadence(cron="*/10 * * * * *")
    assert cadence.after(at(0, 3), anchor=T0) == at(0, 10)


def test_an_interval_keeps_its_anchor() -> None:
    cadence = Cadence(interval_s=60)
    assert cadence.after(at(0, 30), anchor=T0) == at(1)
    assert cadence.after(at(1), anchor=T0) == at(2)  # strictly after
    assert cadence.after(at(-5), anchor=T0) == T0


def test_nothing_is_fired_before_the_slot() -> None:
    assert plan(Cadence(interval_s=60), at(1), at(0, 59)) == []


def test_a_due_slot_fires_once_and_moves_to_the_next() -> None:
    assert plan(Cadence(interval_s=60), at(1), at(1, 0.5)) == [Fire(at(1), at(1), at(2))]
    assert plan(Cadence(cron="*/5 * * * *"), at(5), at(5, 1)) == [Fire(at(5), at(5), at(10))]


def test_skip_enqueues_only_the_latest_missed_slot() -> None:
    # down from 00:01 to 00:10:30: ten slots missed, only 00:10 is enqueued, the next is 00:11
    assert plan(Cadence(interval_s=60), at(1), at(10, 30)) == [Fire(at(1), at(10), at(11))]
    assert plan(Cadence(cron="*/5 * * * *"), at(5), at(31)) == [Fire(at(5), at(30), at(35))]


def test_catch_up_enqueues_the_latest_n_slots_oldest_first() -> None:
    fires = plan(Cadence(interval_s=60), at(1), at(10, 30), catch_up=3)
    assert fires == [Fire(at(1), at(8), at(9)), Fire(at(9), at(9), at(10)), Fire(at(10), at(10), at(11))]
    fires = plan(Cadence(cron="*/5 * * * *"), at(5), at(31), catch_up=2)
    assert fires == [Fire(at(5), at(25), at(30)), Fire(at(30), at(30), at(35))]


def test_catch_up_of_fewer_missed_slots_than_n_enqueues_them_all() -> None:
    fires = plan(Cadence(interval_s=60), at(1), at(3, 1), catch_up=10)
    assert [f.slot_at for f in fires] == [at(1), at(2), at(3)]
    assert [f.due_at for f in fires] == [at(1), at(2), at(3)]  # each one the previous one's next
    assert fires[-1].next_slot_at == at(4)


def test_a_next_slot_off_the_cron_cadence_still_counts_as_a_slot() -> None:
    # a schedule resumed at 00:02 (not a multiple of 5) fires that slot, then keeps to the cron
    assert plan(Cadence(cron="*/5 * * * *"), at(2), at(3), catch_up=5) == [Fire(at(2), at(2), at(5))]


def test_a_cron_every_second_catches_up_the_latest_seconds() -> None:
    fires = plan(Cadence(cron="* * * * * *"), at(0, 1), at(0, 6), catch_up=2)
    assert [f.slot_at for f in fires] == [at(0, 5), at(0, 6)]
    assert fires[-1].next_slot_at == at(0, 7)


def test_a_new_cron_schedule_starts_at_its_first_slot_after_now() -> None:
    assert first_slot(Cadence(cron="0 * * * *"), at(10)) == at(60)
    assert first_slot(Cadence(interval_s=5), at(10)) is None  # the database's now


def test_a_resumed_schedule_goes_on_from_now_keeping_its_cadence() -> None:
    assert resumed_slot(Cadence(interval_s=60), at(1), at(10, 30)) == at(11)
    assert resumed_slot(Cadence(interval_s=60), at(1), at(10)) == at(10)
    assert resumed_slot(Cadence(cron="*/5 * * * *"), at(5), at(31)) == at(35)
    assert resumed_slot(Cadence(cron="*/5 * * * *"), at(40), at(31)) == at(40)  # still ahead: kept
