"""The transportpurge scenario's checks (bench.transport), offline, against recorded
ledgers: what the senders sent (Id, Expires), what the receivers and the drain got
(with the server's clock before and after each receive), and the clients' errors."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from bench import transport
from bench.load import PromotionDelta, Run, WaitDelta
from bench.transport import Received, Sent

T0 = datetime(2026, 11, 28, 8, 0, 0)


def at(ms: float) -> datetime:
    return T0 + timedelta(milliseconds=ms)


# A run's ledgers: m1 never expires, m2 expires in an hour, m3 at 1.5 s (received at 0.2 s),
# m4 at 0.8 s (not received: expired before the drain, the purge's), m5 never (the drain got it).
SENT = [
    Sent("m1", None),
    Sent("m2", at(3_600_000)),
    Sent("m3", at(1_500)),
    Sent("m4", at(800)),
    Sent("m5", None),
]
RECEIVED = [
    Received("m1", None, at(100), at(103), "receiver 0"),
    Received("m2", at(3_600_000), at(150), at(151), "receiver 3"),
    Received("m3", at(1_500), at(200), at(202), "receiver 1"),
    Received("m5", None, at(5_000), at(5_004), "the drain"),
]
DRAINED_AT = at(5_010)  # the end of the drain's last, empty receive


def test_a_run_where_every_message_went_as_it_should_passes() -> None:
    checked = transport.deliveries(SENT, RECEIVED, DRAINED_AT)
    assert checked.failures() == []
    assert (checked.sent, checked.received, checked.expired_unreceived, checked.during_call) == (5, 4, 1, 0)


def test_a_message_received_twice_fails() -> None:
    twice = [*RECEIVED, Received("m1", None, at(300), at(302), "receiver 5")]
    checked = transport.deliveries(SENT, twice, DRAINED_AT)
    assert checked.duplicates == {"m1": 2}
    assert checked.failures() == ["1 message(s) received more than once (e.g. m1, 2 times)"]


def test_an_unexpired_message_never_received_is_lost() -> None:
    without_m2 = [r for r in RECEIVED if r.id != "m2"]  # expires in an hour: the purge must leave it
    checked = transport.deliveries(SENT, without_m2, DRAINED_AT)
    assert checked.lost == ["m2"]
    assert checked.failures() == ["1 unexpired message(s) never received (e.g. m2)"]


def test_a_short_message_still_live_when_the_drain_ended_is_lost_too() -> None:
    late = [*SENT, Sent("m6", at(5_011))]  # expires 1 ms after the drain's last receive ended
    assert transport.deliveries(late, RECEIVED, DRAINED_AT).lost == ["m6"]
    # expired within the drain's last receive: it may have been expired at the procedure's @Now
    assert transport.deliveries([*SENT, Sent("m7", at(5_010))], RECEIVED, DRAINED_AT).lost == []


def test_an_expired_message_delivered_fails_and_says_how_late() -> None:
    # m4 expired at 0.8 s; a receive that began at 0.9 s returned it.
    expired = [*RECEIVED, Received("m4", at(800), at(900), at(903), "receiver 2")]
    checked = transport.deliveries(SENT, expired, DRAINED_AT)
    assert [r.id for r in checked.expired] == ["m4"]
    assert checked.failures() == [
        "1 expired message(s) delivered (e.g. m4 to receiver 2, whose receive began "
        "100.000 ms after its expiry)"
    ]


def test_a_message_expiring_at_the_very_start_of_its_receive_is_expired() -> None:
    # Expires equal to the clock before the call: the procedure's @Now is no earlier, and a
    # message is deliverable only while Expires > @Now.
    exact = [*RECEIVED, Received("m4", at(800), at(800), at(801), "receiver 2")]
    assert len(transport.deliveries(SENT, exact, DRAINED_AT).expired) == 1


def test_a_message_expiring_during_its_receive_call_is_tolerated_and_counted() -> None:
    during = [*RECEIVED, Received("m4", at(800), at(799.999), at(800.5), "receiver 2")]
    checked = transport.deliveries(SENT, during, DRAINED_AT)
    assert checked.failures() == [] and checked.during_call == 1


def test_a_message_no_sender_sent_or_with_another_expiry_fails() -> None:
    odd = [*RECEIVED, Received("m9", None, at(10), at(11), "receiver 0")]
    assert transport.deliveries(SENT, odd, DRAINED_AT).failures() == [
        "1 message(s) received that no sender sent (e.g. m9)"
    ]
    changed = [r if r.id != "m3" else Received("m3", at(1_600), r.before, r.after, r.by) for r in RECEIVED]
    assert transport.deliveries(SENT, changed, DRAINED_AT).changed == ["m3"]


def test_two_sends_with_one_id_are_the_harness_s_bug() -> None:
    with pytest.raises(ValueError, match="m1"):
        transport.deliveries([*SENT, Sent("m1", None)], RECEIVED, DRAINED_AT)


def test_any_deadlock_or_lock_time_out_fails_the_arm() -> None:
    assert transport.errors_failures({1205: 0, 1222: 0}) == []
    assert transport.errors_failures({1205: 2, 1222: 0}) == ["2 error 1205 (deadlock victim) in the clients"]
    assert transport.errors_failures({1205: 0, 1222: 1}) == [
        "1 error 1222 (lock request time-out) in the clients"
    ]


def test_half_the_messages_expire_within_two_seconds() -> None:
    mix = [transport.expiry_ms(n) for n in range(1, 1001)]
    short = [m for m in mix if m is not None and m < transport.FAR_MS]
    assert len(short) == 500 and all(100 <= m < 2000 for m in short)
    assert mix.count(transport.FAR_MS) == 250 and mix.count(None) == 250
    assert len(set(short)) > 100  # spread over the two seconds, not one instant


def _out(role: str, items: int, ledger: list[Any], errors: dict[int, int] | None = None) -> dict[str, Any]:
    return {
        "role": role,
        "slot": 0,
        "elapsed": 2.0,
        "items": items,
        "calls": items,
        "empty": 0,
        "errors": {1205: 0, 1222: 0, **(errors or {})},
        "warmup_items": 0,
        "ledger": ledger,
    }


def _run(errors: dict[int, int] | None = None, received: list[Received] = RECEIVED) -> Run:
    outs = [
        _out("sender", len(SENT), [(s.id, s.expires) for s in SENT]),
        _out(
            "receiver",
            3,
            [(r.id, r.expires, r.before, r.after, r.by) for r in received if r.by != "the drain"],
            errors,
        ),
        _out("purge", 1, [1]),
    ]
    return Run(outs, WaitDelta({}), PromotionDelta({"TransportMessage": 0}))


def test_an_arm_puts_the_ledgers_the_drain_and_the_errors_together() -> None:
    drained = [r for r in RECEIVED if r.by == "the drain"]
    arm, checked = transport.arm_of("RCSI OFF", _run(), drained, DRAINED_AT)
    assert arm.failures() == [] and checked.received == 4
    assert arm.counts["drained"] == 1 and arm.counts["purged"] == 1
    victim, _ = transport.arm_of("RCSI ON", _run({1205: 1}), drained, DRAINED_AT)
    assert victim.failures() == ["1 error 1205 (deadlock victim) in the clients"]
    undrained, _ = transport.arm_of("RCSI ON", _run(), [], DRAINED_AT)  # m5 never received
    assert undrained.failures() == ["1 unexpired message(s) never received (e.g. m5)"]
