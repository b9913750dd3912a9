"""Showplan XML fragments shaped as SQL Server's actual plans (SET STATISTICS XML) are,
after the documented schema (showplanxml.xsd, namespace
http://schemas.microsoft.com/sqlserver/2004/07/showplan), for the plan parser's tests."""

from __future__ import annotations

from collections.abc import Sequence

HEAD = ('<?xml version="1.0" encoding="utf-16"?>\n'
        '<ShowPlanXML xmlns="http://schemas.microsoft.com/sqlserver/2004/07/showplan" Version="1.564" '
        'Build="16.0.4135.4"><BatchSequence><Batch><Statements>')
TAIL = "</Statements></Batch></BatchSequence></ShowPlanXML>"
DATABASE = "[relq_bench_1a2b3c4d]"


def counters(rows: int, rows_read: int | None, executions: int = 1, threads: int = 1) -> str:
    """RunTimeInformation: one RunTimeCountersPerThread per thread, the rows split evenly."""
    per = []
    for thread in range(threads):
        read = "" if rows_read is None else f' ActualRowsRead="{rows_read // threads}"'
        per.append(f'<RunTimeCountersPerThread Thread="{thread}" ActualRows="{rows // threads}"{read} '
                   f'Batches="0" ActualEndOfScans="1" ActualExecutions="{executions}" '
                   f'ActualExecutionMode="Row" ActualElapsedms="0" ActualCPUms="0"/>')
    return "<RunTimeInformation>" + "".join(per) + "</RunTimeInformation>"


def _column(table: str, column: str) -> str:
    return (f'<ColumnReference Database="{DATABASE}" Schema="[dbo]" Table="{table}" Alias="[q]" '
            f'Column="{column}"/>')


def seek_predicates(table: str, equal: Sequence[str], upto: str | None = None) -> str:
    """SeekPredicates as SQL Server writes them: one SeekPredicateNew whose SeekKeys hold a
    Prefix (ScanType EQ) over the ``equal`` columns and, with ``upto``, an EndRange (ScanType
    LE) over the next column: [Type] = @t AND [Priority] = @p AND ScheduledFor <= @Now."""
    def scan_range(element: str, scan_type: str, columns: Sequence[str]) -> str:
        values = "".join(f'<ScalarOperator ScalarString="[@{c}]"><Identifier><ColumnReference Column="@{c}"/>'
                         f'</Identifier></ScalarOperator>' for c in columns)
        return (f'<{element} ScanType="{scan_type}"><RangeColumns>'
                + "".join(_column(table, c) for c in columns)
                + f'</RangeColumns><RangeExpressions>{values}</RangeExpressions></{element}>')
    keys = (scan_range("Prefix", "EQ", equal) if equal else "") + (scan_range("EndRange", "LE", [upto])
                                                                     if upto else "")
    return (f"<SeekPredicates><SeekPredicateNew><SeekKeys>{keys}</SeekKeys></SeekPredicateNew>"
            "</SeekPredicates>")


def residual(table: str, columns: Sequence[str], outer: Sequence[str] = ()) -> str:
    """A Predicate (the residual WHERE:() of a seek or scan) comparing each of ``columns`` of
    the read table with a variable, and each of ``outer`` columns of another table
    ([b], an outer reference) with a constant."""
    compares = [f'<ScalarOperator><Compare CompareOp="LE"><ScalarOperator><Identifier>{_column(table, c)}'
                f'</Identifier></ScalarOperator><ScalarOperator><Identifier><ColumnReference Column="@Now"/>'
                f'</Identifier></ScalarOperator></Compare></ScalarOperator>' for c in columns]
    compares += [f'<ScalarOperator><Compare CompareOp="EQ"><ScalarOperator><Identifier>'
                 f'<ColumnReference Table="[@Bands]" Alias="[b]" Column="{c}"/></Identifier></ScalarOperator>'
                 f'<ScalarOperator><Const ConstValue="(1)"/></ScalarOperator></Compare></ScalarOperator>'
                 for c in outer]
    body = compares[0] if len(compares) == 1 else (
        '<ScalarOperator><Logical Operation="AND">' + "".join(compares) + "</Logical></ScalarOperator>")
    return f"<Predicate>{body}</Predicate>"


def read(node: int, physical: str, table: str, index: str, *, kind: str = "NonClustered",
         filtered: bool = False, rows: int = 17, rows_read: int | None = 17, runtime: bool = True,
         threads: int = 1, schema: str | None = "[dbo]", database: str | None = DATABASE,
         executions: int = 1, seek: str | None = None, predicate: str = "") -> str:
    """A RelOp reading a table: an IndexScan element (seeks and index scans) or a TableScan.
    ``seek``: its SeekPredicates (default for a seek: EnqueuedAt = a value); ``predicate``:
    its residual Predicate."""
    logical = physical.replace("Clustered ", "")
    where = "".join(f' {name}="{value}"' for name, value in (("Database", database), ("Schema", schema))
                    if value is not None)
    obj = (f'<Object{where} Table="{table}"' + (f' Index="{index}"' if index else "")
           + (' Filtered="1"' if filtered else "") + f' Alias="[q]" IndexKind="{kind}" Storage="RowStore"/>')
    element = "TableScan" if physical == "Table Scan" else "IndexScan"
    lookup = ' Lookup="1"' if "Lookup" in physical else ""
    if seek is None:
        seek = ('<SeekPredicates><SeekPredicateNew><SeekKeys><Prefix ScanType="EQ"><RangeColumns>'
                '<ColumnReference Column="EnqueuedAt"/></RangeColumns><RangeExpressions><ScalarOperator '
                'ScalarString="[c].[EnqueuedAt]"><Identifier><ColumnReference Column="EnqueuedAt"/>'
                '</Identifier></ScalarOperator></RangeExpressions></Prefix></SeekKeys></SeekPredicateNew>'
                '</SeekPredicates>'
                if "Seek" in physical else "")
    return (f'<RelOp NodeId="{node}" PhysicalOp="{physical}" LogicalOp="{logical}" EstimateRows="17" '
            f'EstimateIO="0.003125" EstimateCPU="0.0001757" AvgRowSize="35" '
            f'EstimatedTotalSubtreeCost="0.0033" '
            f'TableCardinality="100000" Parallel="0" EstimateRebinds="0" EstimateRewinds="0" '
            f'EstimatedExecutionMode="Row"><OutputList><ColumnReference Database="{DATABASE}" Schema="[dbo]" '
            f'Table="{table}" Alias="[q]" Column="EnqueuedAt"/></OutputList>'
            + (counters(rows, rows_read, executions=executions, threads=threads) if runtime else "")
            + f'<{element}{lookup} Ordered="1" ScanDirection="FORWARD" ForcedIndex="0" ForceSeek="0" '
            f'ForceScan="0" NoExpandHint="0" Storage="RowStore"><DefinedValues><DefinedValue>'
            f'<ColumnReference Database="{DATABASE}" Schema="[dbo]" Table="{table}" Alias="[q]" '
            f'Column="EnqueuedAt"/>'
            f'</DefinedValue></DefinedValues>{obj}{seek}{predicate}</{element}></RelOp>')


def top(node: int, child: str) -> str:
    return (f'<RelOp NodeId="{node}" PhysicalOp="Top" LogicalOp="Top" EstimateRows="17" EstimateIO="0" '
            f'EstimateCPU="1.7e-06" AvgRowSize="35" EstimatedTotalSubtreeCost="0.0033" Parallel="0" '
            f'EstimateRebinds="0" EstimateRewinds="0" EstimatedExecutionMode="Row"><OutputList/>'
            f'{counters(17, None)}<Top RowCount="0" IsPercent="0" WithTies="0"><TopExpression>'
            f'<ScalarOperator ScalarString="[@Want]"><Identifier><ColumnReference Column="@Want"/>'
            f'</Identifier></ScalarOperator></TopExpression>{child}</Top></RelOp>')


def insert_into_table_variable(node: int, child: str) -> str:
    """A Clustered Index Insert into @Candidates (its Object is the table variable's)."""
    return (f'<RelOp NodeId="{node}" PhysicalOp="Clustered Index Insert" LogicalOp="Insert" '
            f'EstimateRows="17" EstimateIO="0.01" EstimateCPU="1.7e-05" AvgRowSize="9" '
            f'EstimatedTotalSubtreeCost="0.014" '
            f'Parallel="0" EstimateRebinds="0" EstimateRewinds="0" EstimatedExecutionMode="Row"><OutputList/>'
            f'{counters(17, None)}<Update DMLRequestSort="0"><Object Table="[@Candidates]" '
            f'Index="[IX_Candidates_Order]" IndexKind="Clustered" Storage="RowStore"/>{child}</Update>'
            f'</RelOp>')


def nested_loops(node: int, outer: str, inner: str) -> str:
    return (f'<RelOp NodeId="{node}" PhysicalOp="Nested Loops" LogicalOp="Inner Join" EstimateRows="1" '
            f'EstimateIO="0" EstimateCPU="4.18e-06" AvgRowSize="35" EstimatedTotalSubtreeCost="0.0066" '
            f'Parallel="0" EstimateRebinds="0" EstimateRewinds="0" EstimatedExecutionMode="Row"><OutputList/>'
            f'{counters(1, None)}<NestedLoops Optimized="0">{outer}{inner}</NestedLoops></RelOp>')


def spool(node: int, child: str, physical: str = "Table Spool", logical: str = "Eager Spool") -> str:
    """A spool over ``child``: Table Spool and Index Spool are Spool elements, a Row Count
    Spool a RowCountSpool (showplanxml.xsd)."""
    element = "RowCountSpool" if physical == "Row Count Spool" else "Spool"
    return (f'<RelOp NodeId="{node}" PhysicalOp="{physical}" LogicalOp="{logical}" EstimateRows="17" '
            f'EstimateIO="0.01" EstimateCPU="1.7e-06" AvgRowSize="35" EstimatedTotalSubtreeCost="0.0166" '
            f'Parallel="0" EstimateRebinds="0" EstimateRewinds="0" EstimatedExecutionMode="Row"><OutputList/>'
            f'{counters(17, None)}<{element}>{child}</{element}></RelOp>')


def update_queue(node: int, child: str) -> str:
    """A Clustered Index Update of dbo.SyncQueue (a write: its Object is no read)."""
    return (f'<RelOp NodeId="{node}" PhysicalOp="Clustered Index Update" LogicalOp="Update" '
            f'EstimateRows="17" EstimateIO="0.01" EstimateCPU="1.7e-05" AvgRowSize="9" '
            f'EstimatedTotalSubtreeCost="0.03" Parallel="0" EstimateRebinds="0" EstimateRewinds="0" '
            f'EstimatedExecutionMode="Row"><OutputList/>{counters(17, None)}<Update DMLRequestSort="0">'
            f'<Object Database="{DATABASE}" Schema="[dbo]" Table="[SyncQueue]" Index="[PK_SyncQueue]" '
            f'IndexKind="Clustered" Storage="RowStore"/>{child}</Update></RelOp>')


def statement(text: str, plan: str, statement_type: str = "SELECT") -> str:
    return (f'<StmtSimple StatementText="{text}" StatementId="1" StatementCompId="4" '
            f'StatementType="{statement_type}" RetrievedFromCache="true">'
            f'<StatementSetOptions QUOTED_IDENTIFIER="true" '
            f'ARITHABORT="true" CONCAT_NULL_YIELDS_NULL="true" ANSI_NULLS="true" ANSI_PADDING="true" '
            f'ANSI_WARNINGS="true" NUMERIC_ROUNDABORT="false"/><QueryPlan DegreeOfParallelism="1" '
            f'CachedPlanSize="56" CompileTime="2" CompileCPU="2" CompileMemory="544">{plan}</QueryPlan>'
            f'</StmtSimple>')


def document(*statements: str) -> str:
    return HEAD + "".join(statements) + TAIL


CANDIDATES_TEXT = "INSERT INTO @Candidates (EnqueuedAt, UpdatedAt, ClaimOrder) SELECT TOP (@Want) q.UpdatedAt"
PICK_TEXT = "WITH pick AS (SELECT TOP (@BatchSize) q.EnqueuedAt FROM @Candidates AS c INNER JOIN"


def candidates_scan(rows: int) -> str:
    """The claim's read of its own table variable, in key order."""
    return read(1, "Clustered Index Scan", "[@Candidates]", "[IX_Candidates_Order]", kind="Clustered",
                schema=None, database=None, rows=rows, rows_read=rows)

# Seeks only: the due items sought in the claim index, then each candidate's row by its key.
SEEK_PLAN = document(
    statement(CANDIDATES_TEXT, insert_into_table_variable(0, top(1, read(
        2, "Index Seek", "[SyncQueue]", "[IX_SyncQueue_Due]", filtered=True, rows=17, rows_read=17)))),
    statement(PICK_TEXT, nested_loops(0, candidates_scan(1),
                                      read(2, "Clustered Index Seek", "[SyncQueue]", "[PK_SyncQueue]",
                                           kind="Clustered", rows=1, rows_read=1))),
)

# The claim gone wrong: the queue table read from end to end.
SCAN_PLAN = document(
    statement(CANDIDATES_TEXT, insert_into_table_variable(0, top(1, read(
        2, "Clustered Index Scan", "[SyncQueue]", "[PK_SyncQueue]", kind="Clustered",
        rows=17, rows_read=100_000)))),
)

CLAIM_TEXT = ("WITH pick AS (SELECT TOP (@BatchSize) q.EnqueuedAt, q.[Status] FROM @Candidates AS c "
              "INNER JOIN dbo.SyncQueue AS q ON c.EnqueuedAt = q.EnqueuedAt) UPDATE pick SET "
              "[Status] = 'Processing', UpdatedAt = dbo.QueueNextKey_fn(UpdatedAt)")


def claim_update_plan(spooled: str = "") -> str:
    """The claim's UPDATE: each candidate's row sought by its key, then written. ``spooled``:
    the physical operator of a spool between the read and the write ("Table Spool", ...),
    as Halloween protection puts one there while the function the UPDATE calls is not
    schema-bound."""
    read_rows = top(2, nested_loops(3, candidates_scan(17), read(
        4, "Clustered Index Seek", "[SyncQueue]", "[PK_SyncQueue]", kind="Clustered", rows=17, rows_read=17)))
    logical = "Lazy Spool" if spooled == "Row Count Spool" else "Eager Spool"
    return document(statement(CLAIM_TEXT, update_queue(0, spool(1, read_rows, spooled, logical)
                                                       if spooled else read_rows), "UPDATE"))


# Only a table variable is scanned; the queue table is sought.
TABLE_VARIABLE_SCAN_PLAN = document(
    statement(PICK_TEXT, nested_loops(0, candidates_scan(116),
                                      read(2, "Clustered Index Seek", "[SyncQueue]", "[PK_SyncQueue]",
                                           kind="Clustered", rows=100, rows_read=100))),
)


def ordered_scan_plan(rows_read: int, *, filtered: bool = True, index: str = "[IX_SyncQueue_Due]",
                      runtime: bool = True, threads: int = 1) -> str:
    """A read as an ordered Index Scan under TOP of a filtered index, stopping after
    ``rows_read`` rows: bounded for any filtered index but the claim index, which is sought."""
    return document(statement(CANDIDATES_TEXT, insert_into_table_variable(0, top(1, read(
        2, "Index Scan", "[SyncQueue]", index, filtered=filtered, rows=17, rows_read=rows_read,
        runtime=runtime, threads=threads)))))


def queue_read_plan(physical: str, index: str, *, rows_read: int | None, executions: int = 1,
                    kind: str = "NonClustered", runtime: bool = True) -> str:
    """One statement reading the queue table with ``physical`` (a seek, a lookup, a scan)."""
    return document(statement("SELECT q.EnqueuedAt FROM dbo.SyncQueue AS q WHERE q.[Status] = @Status", read(
        0, physical, "[SyncQueue]", index, kind=kind, rows=rows_read or 1, rows_read=rows_read,
        executions=executions, runtime=runtime)))


DUE = "[IX_SyncQueue_Due]"
BANDS_TEXT = ("INSERT INTO @Bands ([Type], [Priority]) SELECT t.[Type], b.[Priority] "
              "FROM dbo.SyncQueueType AS t CROSS APPLY (SELECT TOP (1) q.[Priority] FROM dbo.SyncQueue AS q")
DUE_TEXT = ("INSERT INTO @Candidates (EnqueuedAt, UpdatedAt, ClaimOrder, Exhausted) SELECT TOP (@Want) "
            "d.EnqueuedAt FROM @Bands AS b CROSS APPLY (SELECT TOP (@Want) q.EnqueuedAt")


def band_seek(node: int, rows_read: int = 1, executions: int = 2) -> str:
    """A skip-scan seek of the claim index: the next (Type, Priority) band of a type, TOP (1)
    ... ORDER BY Priority DESC: [Type] = the type, Priority below the last band found."""
    return read(node, "Index Seek", "[SyncQueue]", DUE, filtered=True, rows=rows_read, rows_read=rows_read,
                executions=executions, seek=seek_predicates("[SyncQueue]", ["Type"], "Priority"))


def due_seek(node: int, rows_read: int = 17, *, sought: bool = True, residual_due: bool = False,
             outer: Sequence[str] = ()) -> str:
    """A band's due read of the claim index: [Type] = and [Priority] = as seek predicates and,
    ``sought``, ScheduledFor <= @Now as the seek's end; ``residual_due``: ScheduledFor tested
    in the residual Predicate instead (or as well); AttemptNum is always residual."""
    seek = seek_predicates("[SyncQueue]", ["Type", "Priority"], "ScheduledFor" if sought else None)
    tested = ["AttemptNum"] + (["ScheduledFor"] if residual_due else [])
    return read(node, "Index Seek", "[SyncQueue]", DUE, filtered=True, rows=rows_read, rows_read=rows_read,
                seek=seek, predicate=residual("[SyncQueue]", tested, outer))


def band_claim_plans(due: str | None = None) -> list[str]:
    """The claim's two statements that read its claim index: the bands, then the due items
    (``due``: the due read, a sought one by default)."""
    return [document(statement(BANDS_TEXT, nested_loops(0, candidates_scan(2), top(1, band_seek(2))))),
            document(statement(DUE_TEXT, insert_into_table_variable(0, top(1, nested_loops(
                2, candidates_scan(2), top(3, due if due is not None else due_seek(4)))))))]
