"""relq: relational queues for SQL Server.

The queue logic is T-SQL under ``database/``; this package builds, checks,
deploys and tests it, and runs the workers and the data pipeline around it.
"""

__version__ = "0.1.0"
