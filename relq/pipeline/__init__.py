"""relq's data pipeline on Spark (PySpark): bulk enqueue, archiving finished work to
Parquet, and queue analytics. It talks to SQL Server only through relq.db and the
queues' procedures; locally it runs on ``local[*]``, on a cluster with the same code."""
