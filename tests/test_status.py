"""`invoke status` offline: the views' rows arranged per queue, the table and the JSON; and
the unfinished states it shows are the ones the SQL side counts (the function, the health
index's filter, the view's predicate)."""

from __future__ import annotations

import json
import re
from decimal import Decimal

from rich.console import Console

from relq.status import FINISHED, STATES, UNFINISHED, as_json, summarize, table
from tests.conftest import REPO

# As dbo.QueueHealth_V answers: a row per queue and unfinished state, none for a finished one.
HEALTH = [
    ("SyncQueue", "Pending", 0, None, 0),
    ("SyncQueue", "Processing", 0, None, 0),
    ("SyncQueue", "Error", 0, None, 0),
    ("SyncQueue", "Paused", 0, None, 0),
    ("Notification", "Pending", 12, 75, 0),
    ("Notification", "Error", 3, 400, 0),
    ("Notification", "Processing", 4, None, 1),
    ("Notification", "Paused", 2, None, 0),
]
THROUGHPUT = [
    ("Notification", Decimal("8.200000"), Decimal("0.066666"), Decimal("0.2"), 130, 900),
    ("SyncQueue", Decimal("0"), Decimal("0"), Decimal("0"), None, None),
]


def test_rows_become_one_summary_per_queue_with_the_worst_due_age() -> None:
    notification, sync = summarize(HEALTH, THROUGHPUT)
    assert (notification.queue, sync.queue) == ("Notification", "SyncQueue")
    assert notification.items == {"Pending": 12, "Error": 3, "Processing": 4, "Paused": 2}
    assert notification.oldest_due_s == 400  # Error's oldest due waited longest
    assert notification.past_lease == 1
    assert (notification.completed_per_min, notification.p50_ms, notification.p95_ms) == (8.2, 130, 900)
    assert (sync.oldest_due_s, sync.p95_ms) == (None, None)
    assert sync.items == dict.fromkeys(UNFINISHED, 0)


def test_the_table_shows_the_unfinished_states_and_flags_a_queue_in_trouble() -> None:
    console = Console(record=True, width=200)
    console.print(table(summarize(HEALTH, THROUGHPUT)))
    text = console.export_text()
    head = next(line for line in text.splitlines() if "queue" in line and "pending" in line)
    assert [c.strip() for c in head.strip("┃ ").split("┃")] == [
        "queue", "pending", "processing", "error", "paused", "oldest due", "past lease", "done/min",
        "failed/min", "p50 ms", "p95 ms"]
    row = next(line for line in text.splitlines() if "Notification" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells == ["Notification", "12", "4", "3", "2", "6m40s", "1", "8.2", "0.1", "130", "900"]
    grid = table(summarize(HEALTH, THROUGHPUT))
    assert grid.rows[0].style == "red" and grid.rows[1].style is None


def test_the_json_carries_every_figure_for_scripts() -> None:
    data = json.loads(as_json(summarize(HEALTH, THROUGHPUT)))
    assert [q["queue"] for q in data] == ["Notification", "SyncQueue"]
    assert data[0]["items"]["Paused"] == 2 and data[0]["failed_per_min"] == 0.066666
    assert not set(data[0]["items"]) & set(FINISHED)
    assert data[1]["p50_ms"] is None


def _quoted(text: str) -> list[str]:
    return re.findall(r"'([A-Za-z]+)'", text)


def test_the_unfinished_states_are_the_ones_the_database_counts() -> None:
    """relq.status's split of the states is the SQL side's: dbo.QueueStatus holds them all,
    dbo.QueueIsFinished_fn calls the same ones unfinished, the health index is filtered to
    them, and the view's every branch states that filter word for word (so the optimizer can
    use the index)."""
    rows = (REPO / "database/data/dbo.QueueStatus.sql").read_text()
    assert sorted(_quoted(rows[rows.index("VALUES"):rows.index("AS source")])) == sorted(STATES)
    function = (REPO / "database/functions/dbo.QueueIsFinished_fn.sql").read_text()
    [listed] = re.findall(r"@Status NOT IN \(([^)]*)\)", function)
    assert tuple(_quoted(listed)) == UNFINISHED
    literal = "[Status] IN (" + ", ".join(f"'{s}'" for s in UNFINISHED) + ")"
    table_sql = (REPO / "relq/scaffold/templates/every_queue/tables/dbo.QUEUE.sql.tmpl").read_text()
    health_index = table_sql[table_sql.index("INDEX IX_{{ Queue }}_Status"):]
    assert f"WHERE ({literal})" in health_index[:health_index.index("GO")]
    view = (REPO / "database/views/dbo.QueueHealth_V.sql").read_text()
    body = view[view.index("CREATE OR ALTER VIEW"):]
    # Each queue is read once, in a CTE whose predicate is the filter, word for word ...
    reads = re.findall(r"(\w+) AS \(\s+SELECT.*?FROM dbo\.(\w+) AS (\w+)\s+WHERE (.*?)\n", body, re.S)
    queues = [queue for _, queue, _, _ in reads]
    assert len(queues) >= 2 and len(set(queues)) == len(queues)
    for cte, queue, alias, where in reads:
        assert (cte, where.strip()) == (f"{queue}Unfinished", f"{alias}.{literal}")
        # ... and each branch of the UNION gives every unfinished state its row from it.
        branch = re.search(rf"SELECT\s+'{queue}' AS \[Queue\].*?(?:UNION ALL|;)", body, re.S)[0]
        assert f"LEFT JOIN {cte} AS" in branch and f"WHERE s.{literal}" in branch
    assert body.count("UNION ALL") == len(queues) - 1
    assert not set(_quoted(body)) & set(FINISHED)
