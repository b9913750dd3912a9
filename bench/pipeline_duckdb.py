"""The pipeline report's figures computed again, by DuckDB, from the same archive files: a peer
to time Spark against (bench/pipeline_bench.py) and an independent oracle for the report's
numbers (tests/pipeline/test_duckdb_check.py). DuckDB is a dev and bench dependency only,
never the pipeline's engine.

``figures(root, threads)`` returns what relq.pipeline.figures.compute returns (summary,
groups, throughput, hourly, errors), each figure written from the definitions in
relq/pipeline/figures.py as plain SQL, with DuckDB's exact quantile_cont (NumPy's "linear").
``differences(spark, duck)`` lists where two such results disagree: counts must be equal,
percentiles and rates equal up to floating-point rounding (relative 1e-9).
"""

from __future__ import annotations

import math
from typing import Any

from relq.pipeline import figures as spec

_FINISHED = ", ".join(f"'{s}'" for s in spec.FINISHED)
_ENDED = ", ".join(f"'{s}'" for s in spec.ENDED_BY_ATTEMPT)
_HOUR = spec.HOUR_US
_BY_STATUS = ", ".join(f"count(*) FILTER (WHERE Status = '{s}') AS {s}" for s in spec.FINISHED)

_ROWS = f"""
CREATE TEMP VIEW rows AS
WITH r AS (
    SELECT Queue, Type, Step, Status, AttemptNum, Error, Duration,
           epoch_us(EnqueuedAt) AS enq, epoch_us(StartedAt) AS st, epoch_us(UpdatedAt) AS upd,
           epoch_us(coalesce(ScheduledFor, EnqueuedAt)) AS sched
    FROM read_parquet($files, hive_partitioning = true, hive_types_autocast = false, union_by_name = true)
)
SELECT *,
    CASE WHEN st IS NOT NULL AND greatest(enq, sched) IS NOT NULL
              AND NOT (Status = 'Cancelled' AND sched > st)
         THEN greatest(0, st - greatest(enq, sched)) / 1000.0 END AS wait_ms,
    CASE WHEN Status = 'Failed' AND coalesce(starts_with(Error, '{spec.LEASE_EXPIRED}'), false) THEN NULL
         WHEN Duration IS NOT NULL THEN CAST(Duration AS DOUBLE)
         WHEN st IS NOT NULL AND Status IN ({_ENDED}) THEN (upd - st) / 1000.0 END AS duration_ms
FROM r
"""

_GROUPS = f"""
SELECT GROUPING(Queue, Type, Step) AS gid, Queue, Type, Step, count(*) AS items,
    count(*) FILTER (WHERE AttemptNum > 1) AS retried,
    {_BY_STATUS},
    count(wait_ms) AS wait_n, count(duration_ms) AS duration_n,
    quantile_cont(wait_ms, [0.5, 0.95, 0.99]) AS wait_p,
    quantile_cont(duration_ms, [0.5, 0.95, 0.99]) AS duration_p,
    min(enq) AS first_enqueued, min(upd) AS first_updated, max(upd) AS last_updated
FROM rows GROUP BY ROLLUP (Queue, Type, Step)
"""

_THROUGHPUT = f"""
SELECT Queue, upd // {_HOUR} AS hour, Status, count(*) AS items FROM rows
WHERE Status IN ({_FINISHED}) GROUP BY ALL ORDER BY ALL
"""

_HOURLY = f"""
WITH enqueued AS (SELECT Queue, enq // {_HOUR} AS hour, count(*) AS n FROM rows GROUP BY ALL),
finished AS (SELECT Queue, upd // {_HOUR} AS hour, count(*) AS n FROM rows WHERE Status IN ({_FINISHED})
             GROUP BY ALL),
waited AS (SELECT Queue, st // {_HOUR} AS hour, count(wait_ms) AS n, quantile_cont(wait_ms, 0.95) AS p95
           FROM rows WHERE wait_ms IS NOT NULL GROUP BY ALL)
SELECT Queue, hour, coalesce(e.n, 0) AS enqueued, coalesce(f.n, 0) AS finished,
       coalesce(w.n, 0) AS wait_count,
       w.p95 AS wait_ms_p95
FROM enqueued e FULL JOIN finished f USING (Queue, hour) FULL JOIN waited w USING (Queue, hour)
ORDER BY Queue, hour
"""

_ERRORS = f"""
WITH t AS (
    SELECT Queue, Type,
        CASE WHEN Status = 'Failed' THEN 'failed'
             WHEN AttemptNum > 1 AND trim(coalesce(Error, '')) <> '' THEN 'retried' END AS kind,
        CASE WHEN trim(coalesce(Error, '')) = '' THEN '{spec.NO_ERROR_TEXT}'
             ELSE substring(trim(coalesce(Error, '')), 1, {spec.ERROR_CHARS}) END AS shown
    FROM rows
), g AS (
    SELECT Queue, Type, kind,
        regexp_replace(regexp_replace(shown, $varying, '#', 'g'), '\\s+', ' ', 'g') AS error,
        count(*) AS items, min(shown) AS example
    FROM t WHERE kind IS NOT NULL GROUP BY ALL
)
SELECT * FROM (
    SELECT *, row_number() OVER (PARTITION BY Queue, Type, kind ORDER BY items DESC, error) AS rank,
        count(*) OVER (PARTITION BY Queue, Type, kind) AS texts,
        sum(items) OVER (PARTITION BY Queue, Type, kind) AS kind_items
    FROM g
) WHERE rank <= {spec.TOP_ERRORS} ORDER BY Queue, Type, kind, rank
"""


def connect(threads: int) -> Any:
    import duckdb

    connection = duckdb.connect()
    connection.execute(f"SET threads = {int(threads)}")
    connection.execute("SET TimeZone = 'UTC'")
    return connection


def figures(root: str, threads: int = 2) -> dict[str, Any]:
    """The report's figures of the archive under ``root``, by DuckDB on ``threads`` threads."""
    connection = connect(threads)
    try:
        connection.execute(_ROWS.replace("$files", _literal(f"{root.rstrip('/')}/**/*.parquet")))
        return _figures(connection)
    finally:
        connection.close()


def _figures(db: Any) -> dict[str, Any]:
    def rows(sql: str) -> list[dict[str, Any]]:
        cursor = db.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    groups = []
    summary: dict[str, Any] = {}
    for r in rows(_GROUPS):
        level = spec.LEVELS[r["gid"]]
        statuses = {s: r[s] for s in spec.FINISHED}
        statuses["other"] = r["items"] - sum(statuses.values())
        g = {"level": level, "queue": r["Queue"], "type": r["Type"], "step": r["Step"], "items": r["items"],
             "statuses": statuses, "retried": r["retried"], "retry_rate": r["retried"] / r["items"],
             "failed": statuses["Failed"], "failure_rate": statuses["Failed"] / r["items"],
             "wait_ms": _spread(r["wait_n"], r["wait_p"]),
             "duration_ms": _spread(r["duration_n"], r["duration_p"])}
        if level == "all":
            last_hour = r["last_updated"] // _HOUR
            summary = {**{k: v for k, v in g.items() if k not in ("level", "queue", "type", "step")},
                       "first_enqueued": spec._iso(r["first_enqueued"]),
                       "first_finished": spec._iso(r["first_updated"]),
                       "last_finished": spec._iso(r["last_updated"]),
                       "partial_hour": spec._iso(last_hour * _HOUR)}
        else:
            groups.append(g)
    throughput = [{"queue": r["Queue"], "hour": spec._iso(r["hour"] * _HOUR), "status": r["Status"],
                   "items": r["items"]} for r in rows(_THROUGHPUT)]
    hourly = [{"queue": r["Queue"], "hour": spec._iso(r["hour"] * _HOUR), "enqueued": r["enqueued"],
               "finished": r["finished"], "wait_count": r["wait_count"], "wait_ms_p95": r["wait_ms_p95"],
               "partial": r["hour"] == last_hour} for r in rows(_HOURLY)]
    errors = [{"queue": r["Queue"], "type": r["Type"], "kind": r["kind"], "rank": r["rank"],
               "error": r["error"], "example": r["example"], "items": r["items"], "texts": r["texts"],
               "kind_items": int(r["kind_items"])}
              for r in rows(_ERRORS.replace("$varying", _literal(spec._VARYING)))]
    return {"summary": summary, "groups": groups, "throughput": throughput, "hourly": hourly,
            "errors": errors}


def _literal(text: str) -> str:
    """``text`` as an SQL string literal (a view cannot take parameters)."""
    return "'" + text.replace("'", "''") + "'"


def _spread(count: int, values: list[float] | None) -> dict[str, Any]:
    values = values or [None] * len(spec.PERCENTILES)
    return {"count": count,
            **{f"p{round(p * 100)}": v for p, v in zip(spec.PERCENTILES, values, strict=True)}}


def differences(spark: dict[str, Any], duck: dict[str, Any], limit: int = 20) -> list[str]:
    """Where two figure sets disagree (at most ``limit`` lines); empty when they are the same."""
    found: list[str] = []
    _compare("summary", spark["summary"], duck["summary"], found)

    def by(rows: list[dict[str, Any]], *keys: str) -> dict[tuple, dict[str, Any]]:
        return {tuple(r[k] for k in keys): r for r in rows}

    for name, keys in (("groups", ("level", "queue", "type", "step")),
                       ("throughput", ("queue", "hour", "status")),
                       ("hourly", ("queue", "hour")), ("errors", ("queue", "type", "kind", "rank"))):
        left, right = by(spark[name], *keys), by(duck[name], *keys)
        for key in sorted(set(left) ^ set(right), key=repr):
            found.append(f"{name} {key}: only in {'Spark' if key in left else 'DuckDB'}")
        for key in sorted(set(left) & set(right), key=repr):
            _compare(f"{name} {key}", left[key], right[key], found)
    return found[:limit]


def _compare(where: str, a: Any, b: Any, found: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            _compare(f"{where}.{key}", a.get(key), b.get(key), found)
    elif isinstance(a, float) or isinstance(b, float):
        if a is None or b is None or not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9):
            found.append(f"{where}: Spark {a!r}, DuckDB {b!r}")
    elif a != b:
        found.append(f"{where}: Spark {a!r}, DuckDB {b!r}")
