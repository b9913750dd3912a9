"""`invoke dashboard`: a web page over the queues, for the person on call.

The overview of every queue's health (dbo.QueueHealth_V, dbo.QueueThroughput_V),
refreshed live; a queue's items paged by key, and an item with its subtype and channel
columns (its worker view) and its attempts (dbo.QueueAttempt_V); with --allow-actions,
the item controls through the _trx procedures; /metrics for Prometheus. It reads and
acts only through views and procedures, so a QueueMonitor login may look and a
QueueAdmin login may act (docs/dashboard.md).

- store.py: the database side (views, procedures, permissions), one connection, replaced when
  the server ends it (a read made again once on the new one, an action never);
- outage.py: what the pages show while the database is away (the last good read, stale);
- access.py: what each page needs, and which role grants it;
- privacy.py: columns never read (one-time codes) and shown masked (addresses);
- app.py: the Starlette application; web.py: what every page shares (settings, checks,
  formats); a module per page area: overview.py (with /metrics), items.py, item.py, bulk.py;
- chart.py: the throughput chart; metrics.py: the /metrics exposition;
- guard.py: the security headers on every answer, and the proxies whose forwarded headers
  (and user header) are believed;
- serve.py: runs it with uvicorn.
"""
