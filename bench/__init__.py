"""relq's benchmarks: claim cost against backlog size, scaling with workers, batch
against single claims, claims under a purge, the message queues, what claims,
health reads and idle workers cost as the tables grow, and the enqueue path and the
transport purge under load.

`python -m bench` (or `invoke bench`) runs them against the SQL Server RELQ_MSSQL
or --conn names (invoke bench also reads relq.mssql in invoke.yaml), each scenario
in a throwaway database; see bench/README.md. The arithmetic (bench.stats,
bench.cost, bench.load), the plan check (bench.plans) and the report (bench.report)
need no server and are tested offline. The idle scenario runs relq's own worker
(relq.worker) and healthcost reads through the dashboard's own code
(relq.dashboard), so that they measure what users run; the harness never imports
relq.pipeline (bench/pipeline_bench.py, the pipeline's own benchmark, is a script
that does).
"""
