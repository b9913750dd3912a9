"""relq's benchmarks: claim cost against backlog size, scaling with workers, batch
against single claims, claims under a purge, and the message queues.

`python -m bench` (or `invoke bench`) runs them against the SQL Server RELQ_MSSQL
or --conn names (invoke bench also reads relq.mssql in invoke.yaml), each scenario
in a throwaway database; see bench/README.md. The arithmetic (bench.stats), the
plan check (bench.plans) and the report (bench.report) need no server and are
tested offline; the harness never imports relq.worker or relq.pipeline
(bench/pipeline_bench.py, the pipeline's own benchmark, is a script that does).
"""
