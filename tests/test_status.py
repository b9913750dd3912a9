"""`invoke status` offline: the views' rows arranged per queue, the table and the JSON."""

from __future__ import annotations

import json
from decimal import Decimal

from rich.console import Console

from relq.status import as_json, summarize, table

HEALTH = [
    ("SyncQueue", "Pending", 0, None, 0),
    ("Notification", "Pending", 12, 75, 0),
    ("Notification", "Error", 3, 400, 0),
    ("Notification", "Processing", 4, None, 1),
    ("Notification", "Completed", 120, None, 0),
    ("Notification", "Cancelled", 2, None, 0),
]
THROUGHPUT = [
    ("Notification", Decimal("8.200000"), Decimal("0.066666"), Decimal("0.2"), 130, 900),
    ("SyncQueue", Decimal("0"), Decimal("0"), Decimal("0"), None, None),
]


def test_rows_become_one_summary_per_queue_with_the_worst_due_age() -> None:
    notification, sync = summarize(HEALTH, THROUGHPUT)
    assert (notification.queue, sync.queue) == ("Notification", "SyncQueue")
    assert notification.items == {"Pending": 12, "Error": 3, "Processing": 4, "Completed": 120,
                                  "Cancelled": 2}
    assert notification.oldest_due_s == 400  # Error's oldest due waited longest
    assert notification.past_lease == 1
    assert (notification.completed_per_min, notification.p50_ms, notification.p95_ms) == (8.2, 130, 900)
    assert (sync.oldest_due_s, sync.p95_ms, sync.items) == (None, None, {"Pending": 0})


def test_the_table_shows_a_row_per_queue_and_flags_a_queue_in_trouble() -> None:
    console = Console(record=True, width=200)
    console.print(table(summarize(HEALTH, THROUGHPUT)))
    text = console.export_text()
    row = next(line for line in text.splitlines() if "Notification" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells == ["Notification", "12", "4", "3", "0", "0", "120", "2", "6m40s", "1", "8.2", "0.1",
                     "130", "900"]
    grid = table(summarize(HEALTH, THROUGHPUT))
    assert grid.rows[0].style == "red" and grid.rows[1].style is None


def test_the_json_carries_every_figure_for_scripts() -> None:
    data = json.loads(as_json(summarize(HEALTH, THROUGHPUT)))
    assert [q["queue"] for q in data] == ["Notification", "SyncQueue"]
    assert data[0]["items"]["Completed"] == 120 and data[0]["failed_per_min"] == 0.066666
    assert data[1]["p50_ms"] is None
