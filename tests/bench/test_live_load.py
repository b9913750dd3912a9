"""The load scenarios against a real SQL Server, small: producers (2 producers, then 1 and
4 consumers, two-second arms) on the relational, FIFO and transport queues, and
transportpurge (its 4 senders, 8 receivers and purge, two-second arms, RCSI off and
on). They check that every arm moved items, accounted for all of them, read the
PAGELATCH_% waits and the lock promotions from the server, saw no promotion, no 1205
and no 1222, that every unexpired message was received once and no expired one
delivered, and the report's shape; the figures themselves are the run's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from bench import report as reports
from bench import transport
from bench.scenarios import Settings, run

pytestmark = [pytest.mark.mssql, pytest.mark.bench]

SMALL = Settings(seconds=2, warmup=0.5, producers=2, consumers=(1, 4))


def test_the_load_scenarios_account_for_every_item_and_hold_their_bounds(mssql, tmp_path: Path) -> None:
    result = run(mssql, SMALL, ["producers", "transportpurge"], console=Console(stderr=True))
    assert result.problems == []
    assert [r.name for r in result.loads] == ["producers", "transportpurge"]
    producers, purge = result.loads

    assert [(a.queue, a.clients["consumers"]) for a in producers.arms] == [
        ("SyncQueue", 1), ("SyncQueue", 4), ("FifoQueue", 1), ("FifoQueue", 4),
        ("TransportMessage", 1), ("TransportMessage", 4)]
    for arm in producers.arms:
        assert arm.failures() == [], (arm.label, arm.failures())
        assert arm.counts["produced"] > 0 and arm.counts["consumed"] > 0
        assert arm.waits.problem == "" and arm.waits.tasks is not None  # read from the server
        assert arm.promotions.total == 0
    assert len(producers.ratios) == 6 and all(r.value is not None for r in producers.ratios)

    assert [a.label.split(":")[0] for a in purge.arms] == ["RCSI OFF", "RCSI ON"]
    for arm in purge.arms:
        assert arm.failures() == [], (arm.label, arm.failures())
        assert arm.errors == {1205: 0, 1222: 0}
        assert arm.clients == {"senders": transport.SENDERS, "receivers": transport.RECEIVERS, "purge": 1}
        assert arm.counts["sent"] > 0 and arm.counts["received"] > 0 and arm.counts["purge calls"] > 0

    assert result.ok, result.failures()
    json_path, _ = reports.write(result, tmp_path)
    shown = json.loads(json_path.read_text(encoding="utf-8"))
    assert [r["name"] for r in shown["loads"]] == ["producers", "transportpurge"]
    assert all(a["ok"] for r in shown["loads"] for a in r["arms"])
    assert "producers, consumers and the transport purge" in reports.render(result, width=300)
