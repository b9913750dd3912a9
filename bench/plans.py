"""The plans behind a claim: does a Next_ procedure seek the queue table, or scan it? Does
it spool?

With SET STATISTICS XML ON, SQL Server sends after each statement it runs an extra
result set of one row and one column, "Microsoft SQL Server 2005 XML Showplan": the
statement's actual plan (namespace SHOWPLAN). Every operator (RelOp) that reads a
table names it in the Object element of its IndexScan or TableScan, with the rows it
read (RunTimeCountersPerThread/@ActualRowsRead, SQL Server 2016 SP1 and later).

The verdict for each read of a watched table (the queue table, dbo.<Queue>); every
read is bounded by ``limit``, seeks included (a range seek of an unfiltered index can
read the whole table):
- seek: Index Seek or Clustered Index Seek that read at most ``limit`` rows; Key
  Lookup or RID Lookup run at most ``limit`` times (ActualExecutions: a lookup reads
  one row an execution);
- bounded scan: an Index Scan of a filtered nonclustered index that read at most
  ``limit`` rows, as an ordered scan under TOP does when it stops at its batch (the
  lease index holds only the items in flight);
- unbounded seek: a seek that read more than ``limit`` rows, a lookup run more than
  ``limit`` times, or one whose rows are not known (an estimated plan): the run fails;
- scan: anything else (Table Scan, Clustered Index Scan, an Index Scan of an
  unfiltered index or one that read more than ``limit`` rows, and any operator this
  module does not know, such as a Columnstore Index Scan: it fails closed): the run fails.
Table variables (@Candidates) and temporary tables are never watched.

The claim index, IX_<Queue>_Due (``claim_index``), is held to more: it is keyed
([Type], [Priority] DESC, ScheduledFor), and the claim reads it only by seeks, the
seeks that find each type's next Priority level (TOP (1) ... ORDER BY Priority DESC,
no ScheduledFor at all) and one seek per type and level for its due items, whose
ScheduledFor <= now is a range of the seek. So every read of the claim index must be
an Index Seek; none may test ScheduledFor as a residual predicate (the Predicate
element of its IndexScan, the WHERE:() that the storage engine evaluates on every row
the SEEK:() returns, which is how not-yet-due items get read and thrown away); and at
least one must have ScheduledFor among its seek predicates (a RangeColumns column of
its SeekPredicates: the due read). The Index Seek operator's SEEK:() and WHERE:()
predicates: https://learn.microsoft.com/sql/relational-databases/showplan-logical-and-physical-operators-reference;
the elements (IndexScanType: SeekPredicates, Predicate; ScanRangeType: RangeColumns)
are those of the showplan schema, http://schemas.microsoft.com/sqlserver/2004/07/showplan.

A spool fails the run too, in any statement of the claim: a Table Spool or an Index Spool
(the physical operators of the logical Eager Spool and Lazy Spool) copies rows into tempdb
on every claim. The one to expect is the Eager Spool of Halloween protection, which SQL
Server adds to an UPDATE calling a scalar function it must assume reads data: a function
without SCHEMABINDING (dbo.QueueNextKey_fn in the claim's UPDATE ... SET UpdatedAt = ...;
https://learn.microsoft.com/archive/blogs/ianjo/make-functions-schema-bound). A Row Count
Spool keeps no rows, only their count (an EXISTS probe), and does not fail the run
(https://learn.microsoft.com/sql/relational-databases/showplan-logical-and-physical-operators-reference).

A claim reads @BatchSize + 16 candidates (dbo.Next_<Queue>_utx's @Want), so the limit
grows with the batch: ``limit_for``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from relq import db
from relq.errors import RelqError

SHOWPLAN = "http://schemas.microsoft.com/sqlserver/2004/07/showplan"
SHOWPLAN_COLUMN = "Microsoft SQL Server 2005 XML Showplan"
LOOKUPS = frozenset({"Key Lookup", "RID Lookup"})
SEEKS = frozenset({"Index Seek", "Clustered Index Seek"}) | LOOKUPS
SCANS = frozenset({"Table Scan", "Clustered Index Scan", "Index Scan"})
DEFAULT_LIMIT = 1000  # rows a read may take at small batches; the plan backlog must be far bigger
CLAIM_EXTRA = 16  # candidates a claim reads beyond its batch (@Want = @BatchSize + 16 in Next_<Queue>_utx)
FAILING = frozenset({"scan", "unbounded seek"})
DUE_COLUMN = "ScheduledFor"  # what the claim index's due read must seek, never test row by row
SPOOLS = frozenset({"Table Spool", "Index Spool"})  # physical operators that keep rows in tempdb

_NS = f"{{{SHOWPLAN}}}"
_TRUE = frozenset({"1", "true"})
_PROCEDURE = re.compile(r"dbo\.[A-Za-z_][A-Za-z0-9_]{0,127}")


@dataclass(frozen=True)
class Access:
    """One operator of a plan that reads a table."""

    statement: str  # the statement's text, shortened
    physical_op: str
    schema: str  # without brackets; "" for a table variable
    table: str  # without brackets: SyncQueue, @Candidates, #t...
    index: str  # "" for a heap
    index_kind: str  # Clustered, NonClustered, Heap, ...
    filtered: bool
    rows_read: int | None  # None in an estimated plan (no runtime counters)
    executions: int | None
    seek_columns: tuple[str, ...] = ()  # the columns of its seek predicates (RangeColumns), in order
    residual_columns: tuple[str, ...] = ()  # its own table's columns its residual Predicate tests

    def as_dict(self) -> dict[str, Any]:
        return {"statement": self.statement, "op": self.physical_op, "table": f"{self.schema}.{self.table}",
                "index": self.index, "filtered": self.filtered, "rows_read": self.rows_read,
                "executions": self.executions, "seek_columns": list(self.seek_columns),
                "residual_columns": list(self.residual_columns)}


@dataclass(frozen=True)
class Spool:
    """A spool operator of a plan: it copies rows into tempdb."""

    statement: str  # the statement's text, shortened
    physical_op: str  # Table Spool, Index Spool
    logical_op: str  # Eager Spool (all its input first: Halloween protection), Lazy Spool

    def as_dict(self) -> dict[str, Any]:
        return {"statement": self.statement, "op": self.physical_op, "logical_op": self.logical_op}


def _bare(name: str | None) -> str:
    """[dbo] -> dbo; names in showplan XML come bracketed, table variables sometimes not."""
    name = (name or "").strip()
    if name.startswith("[") and name.endswith("]"):
        return name[1:-1].replace("]]", "]")
    return name


def _counter(relop: ET.Element, name: str) -> int | None:
    """The sum of a runtime counter over the operator's threads; None when absent."""
    runtime = relop.find(f"{_NS}RunTimeInformation")
    if runtime is None:
        return None
    values = [t.get(name) for t in runtime.findall(f"{_NS}RunTimeCountersPerThread")]
    present = [int(v) for v in values if v is not None]
    return sum(present) if present else None


def _statement_text(element: ET.Element, parents: dict[ET.Element, ET.Element]) -> str:
    while element is not None:
        text = element.get("StatementText")
        if text is not None:
            return " ".join(text.split())[:200]
        element = parents.get(element)
    return ""


def _parse(showplan_xml: str) -> tuple[ET.Element, dict[ET.Element, ET.Element]]:
    """The document's root and each element's parent. ValueError if it is not showplan XML."""
    try:
        root = ET.fromstring(showplan_xml)
    except ET.ParseError as exc:
        raise ValueError(f"not XML: {exc}") from exc
    if root.tag != f"{_NS}ShowPlanXML":
        raise ValueError(f"not a showplan: the root element is {root.tag}")
    return root, {child: parent for parent in root.iter() for child in parent}


def spools(showplan_xml: str) -> list[Spool]:
    """Every Table Spool and Index Spool in one showplan document. ValueError if it is not
    showplan XML."""
    root, parents = _parse(showplan_xml)
    return [Spool(_statement_text(relop, parents), relop.get("PhysicalOp", ""), relop.get("LogicalOp", ""))
            for relop in root.iter(f"{_NS}RelOp") if relop.get("PhysicalOp") in SPOOLS]


def _columns(element: ET.Element | None, path: str, table: str | None = None) -> tuple[str, ...]:
    """The distinct Column names of the ColumnReferences at ``path`` under ``element``, in
    document order; ``table``: only those of that table (bracketed, as the plan names it)."""
    if element is None:
        return ()
    found: dict[str, None] = {}
    for ref in element.iterfind(path):
        if table is not None and _bare(ref.get("Table")).casefold() != table.casefold():
            continue
        found.setdefault(_bare(ref.get("Column")), None)
    return tuple(found)


def accesses(showplan_xml: str) -> list[Access]:
    """Every table read in one showplan document. ValueError if it is not showplan XML."""
    root, parents = _parse(showplan_xml)
    found = []
    for relop in root.iter(f"{_NS}RelOp"):
        for operator in relop:
            if operator.tag not in (f"{_NS}IndexScan", f"{_NS}TableScan"):
                continue
            obj = operator.find(f"{_NS}Object")
            if obj is None:
                continue
            rows_read = _counter(relop, "ActualRowsRead")
            table = _bare(obj.get("Table"))
            found.append(Access(
                statement=_statement_text(relop, parents),
                physical_op=relop.get("PhysicalOp", ""),
                schema=_bare(obj.get("Schema")),
                table=table,
                index=_bare(obj.get("Index")),
                index_kind=obj.get("IndexKind", ""),
                filtered=(obj.get("Filtered") or "").lower() in _TRUE,
                rows_read=rows_read if rows_read is not None else _counter(relop, "ActualRows"),
                executions=_counter(relop, "ActualExecutions"),
                seek_columns=_columns(operator.find(f"{_NS}SeekPredicates"),
                                      f".//{_NS}RangeColumns/{_NS}ColumnReference"),
                # An outer reference (another table's column compared with this one's) is not
                # this read's column: only the read table's own count.
                residual_columns=_columns(operator.find(f"{_NS}Predicate"), f".//{_NS}ColumnReference",
                                          table),
            ))
    return found


def limit_for(batch: int) -> int:
    """The rows a claim of ``batch`` items may read of its queue table: at least
    DEFAULT_LIMIT, and twice its candidates (batch + CLAIM_EXTRA), so that a correct
    claim at a large batch passes and a read of the whole backlog does not."""
    return max(DEFAULT_LIMIT, 2 * (batch + CLAIM_EXTRA))


def kind(access: Access, limit: int = DEFAULT_LIMIT, filtered: frozenset[str] = frozenset()) -> str:
    """seek, bounded scan, unbounded seek or scan (see the module's docstring). ``filtered``:
    the names of the filtered indexes, for a plan whose Object elements do not say."""
    if access.physical_op in SEEKS:
        measure = access.executions if access.physical_op in LOOKUPS else access.rows_read
        return "seek" if measure is not None and measure <= limit else "unbounded seek"
    is_filtered = access.filtered or access.index.casefold() in filtered
    bounded = (access.physical_op == "Index Scan" and is_filtered and access.index_kind != "Clustered"
               and access.rows_read is not None and access.rows_read <= limit)
    return "bounded scan" if bounded else "scan"  # an operator not in SEEKS or SCANS fails closed


def _described(access: Access) -> str:
    what = f"{access.physical_op} of {access.index or access.table}"
    if access.physical_op in LOOKUPS:
        runs = access.executions if access.executions is not None else "an unknown number of"
        return f"{what} ran {runs} times"
    if access.rows_read is None:
        return f"{what} read an unknown number of rows (no runtime counters)"
    return f"{what} read {access.rows_read} rows"


@dataclass
class Verdict:
    """What the plans of one procedure call did to the watched tables."""

    procedure: str
    watched: list[str]  # schema.table
    reads: list[Access] = field(default_factory=list)
    limit: int = DEFAULT_LIMIT
    documents: int = 0  # showplan documents seen
    note: str = ""  # why nothing was judged, when nothing was
    filtered: frozenset[str] = frozenset()  # filtered indexes' names, casefolded (sys.indexes)
    spools: list[Spool] = field(default_factory=list)  # in any statement of the call
    claim_index: str = ""  # IX_<Queue>_Due, held to seeks with ScheduledFor sought; "" for none

    def kinds(self) -> list[str]:
        return [kind(a, self.limit, self.filtered) for a in self.reads]

    @property
    def failing(self) -> list[Access]:
        """The reads that fail the verdict: scans and unbounded seeks."""
        return [a for a in self.reads if kind(a, self.limit, self.filtered) in FAILING]

    @property
    def due_problems(self) -> list[str]:
        """What the reads of the claim index did that a claim's must not (see the module):
        a read that is not an Index Seek, a residual predicate on ScheduledFor, or no seek
        with ScheduledFor among its seek predicates. None without a claim index to judge."""
        if not self.claim_index:
            return []
        due = [a for a in self.reads if a.index.casefold() == self.claim_index.casefold()]
        if not due:
            return [f"no read of {self.claim_index} in the plans"]
        problems = [f"{_described(a)}: the claim index must be sought, not scanned"
                    for a in due if a.physical_op != "Index Seek"]
        problems += [f"{_described(a)} and tested {DUE_COLUMN} on each row (a residual predicate, "
                     f"not a seek predicate)" for a in due if DUE_COLUMN in a.residual_columns]
        if not any(DUE_COLUMN in a.seek_columns for a in due if a.physical_op == "Index Seek"):
            problems.append(f"no seek of {self.claim_index} has {DUE_COLUMN} among its seek predicates")
        return problems

    @property
    def ok(self) -> bool:
        """No scan or unbounded seek of a watched table, no spool, the claim index only sought
        and by ScheduledFor, and at least one read of a watched table seen (a procedure that
        never touched its queue table in the plans captured proves nothing)."""
        return bool(self.reads) and not self.failing and not self.spools and not self.due_problems

    @property
    def summary(self) -> str:
        if not self.reads:
            return self.note or "no read of " + ", ".join(self.watched) + " in the plans"
        problems = []
        if self.failing:
            problems.append("SCAN: " + "; ".join(_described(a) for a in self.failing))
        if self.due_problems:
            problems.append("DUE READ: " + "; ".join(self.due_problems))
        if self.spools:
            problems.append("SPOOL: " + "; ".join(f"{s.physical_op} ({s.logical_op}) in {s.statement[:80]}"
                                                  for s in self.spools))
        if problems:
            return " | ".join(problems)
        counts = {k: self.kinds().count(k) for k in ("seek", "bounded scan") if k in self.kinds()}
        return ", ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in counts.items())

    def as_dict(self) -> dict[str, Any]:
        return {"procedure": self.procedure, "watched": self.watched, "ok": self.ok, "summary": self.summary,
                "limit": self.limit, "documents": self.documents, "claim_index": self.claim_index,
                "due_problems": self.due_problems,
                "reads": [{**a.as_dict(), "kind": kind(a, self.limit, self.filtered)} for a in self.reads],
                "spools": [sp.as_dict() for sp in self.spools]}


def judge(procedure: str, documents: Iterable[str], watched: Sequence[str],
          limit: int = DEFAULT_LIMIT, filtered: Iterable[str] = (), claim_index: str = "") -> Verdict:
    """The verdict on the reads of ``watched`` tables ("dbo.SyncQueue", case-insensitive)
    in the showplan ``documents`` of one call of ``procedure``; ``filtered`` names the
    filtered indexes of those tables (from sys.indexes), whatever the plans say;
    ``claim_index`` (IX_<Queue>_Due) is held to seeks with ScheduledFor sought."""
    wanted = {w.casefold() for w in watched}
    verdict = Verdict(procedure, list(watched), limit=limit,
                      filtered=frozenset(f.casefold() for f in filtered), claim_index=claim_index)
    for document in documents:
        verdict.documents += 1
        verdict.reads += [a for a in accesses(document) if f"{a.schema}.{a.table}".casefold() in wanted]
        verdict.spools += spools(document)
    return verdict


# -- capturing (live) ---------------------------------------------------------------------------------------


def showplans(result_sets: Sequence[Sequence[tuple]], columns: Sequence[Sequence[str]]) -> list[str]:
    """The showplan documents among a batch's result sets: those of one column named SHOWPLAN_COLUMN."""
    return [str(rows[0][0]) for rows, names in zip(result_sets, columns, strict=True)
            if list(names) == [SHOWPLAN_COLUMN] and rows]


@dataclass(frozen=True)
class Captured:
    """What one call under SET STATISTICS XML ON gave: the showplan documents of every
    statement it ran, and the rows of the procedure's own result sets (a claim's items,
    which the caller must complete: left in Processing they would lengthen the next
    claim's read of the lease index)."""

    documents: list[str]
    rows: list[tuple]


def capture(conn: Any, procedure: str, **params: Any) -> Captured:
    """Call ``procedure`` once with SET STATISTICS XML ON: the showplan documents of every
    statement it ran (its nested procedures' included) and its rows. SqlError when it fails."""
    if not _PROCEDURE.fullmatch(procedure) or not all(name.isidentifier() for name in params):
        raise ValueError(f"not a procedure call to capture: {procedure} {list(params)}")
    result = db.call(conn, procedure, with_plans=True, **params)
    if result.return_code != 0:
        raise RelqError(f"{procedure}: did not return 0 while its plans were captured")
    own = [rows for rows, names in zip(result.result_sets, result.columns, strict=True)
           if list(names) != [SHOWPLAN_COLUMN]]
    return Captured(showplans(result.result_sets, result.columns), [row for rows in own for row in rows])
