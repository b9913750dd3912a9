"""The plan check: which reads of the queue table are seeks, bounded scans or scans."""

from __future__ import annotations

import pytest

from bench import plans
from bench.scenarios import Settings
from tests.bench import showplans as sp
from tests.results import CLAIM_COLUMNS

WATCHED = ["dbo.SyncQueue"]


def test_a_seek_plan_passes() -> None:
    verdict = plans.judge("dbo.Next_SyncQueue_trx", [sp.SEEK_PLAN], WATCHED)
    assert verdict.ok
    assert verdict.kinds() == ["seek", "seek"]
    assert [(a.physical_op, a.index) for a in verdict.reads] == [
        ("Index Seek", "IX_SyncQueue_Due"), ("Clustered Index Seek", "PK_SyncQueue")]
    assert verdict.summary == "2 seeks"


def test_the_claims_update_without_a_spool_passes() -> None:
    verdict = plans.judge("dbo.Next_SyncQueue_trx", [sp.claim_update_plan()], WATCHED)
    assert plans.spools(sp.claim_update_plan()) == []
    assert verdict.ok
    assert verdict.summary == "1 seek"


@pytest.mark.parametrize("physical", ["Table Spool", "Index Spool"])
def test_a_spool_in_the_claims_update_fails_though_every_read_is_a_seek(physical: str) -> None:
    """Halloween protection: an Eager Spool between the UPDATE's read and its write, as SQL
    Server plans it while dbo.QueueNextKey_fn is not schema-bound."""
    plan = sp.claim_update_plan(physical)
    verdict = plans.judge("dbo.Next_SyncQueue_trx", [sp.SEEK_PLAN, plan], WATCHED)
    assert verdict.kinds() == ["seek", "seek", "seek"]
    assert verdict.spools == [plans.Spool(sp.CLAIM_TEXT[:200], physical, "Eager Spool")]
    assert not verdict.ok
    assert verdict.summary == f"SPOOL: {physical} (Eager Spool) in {sp.CLAIM_TEXT[:80]}"
    assert verdict.as_dict()["spools"] == [{"statement": sp.CLAIM_TEXT[:200], "op": physical,
                                            "logical_op": "Eager Spool"}]


def test_a_scan_and_a_spool_are_both_named() -> None:
    verdict = plans.judge("p", [sp.SCAN_PLAN, sp.claim_update_plan("Table Spool")], WATCHED)
    assert verdict.summary.startswith("SCAN: Clustered Index Scan of PK_SyncQueue read 100000 rows | "
                                      "SPOOL: Table Spool (Eager Spool) in WITH pick AS")


def test_a_row_count_spool_keeps_no_rows_and_passes() -> None:
    verdict = plans.judge("p", [sp.claim_update_plan("Row Count Spool")], WATCHED)
    assert verdict.spools == []
    assert verdict.ok


def test_a_clustered_index_scan_of_the_queue_table_fails_and_says_what_it_read() -> None:
    verdict = plans.judge("dbo.Next_SyncQueue_trx", [sp.SCAN_PLAN], WATCHED)
    assert not verdict.ok
    assert verdict.kinds() == ["scan"]
    assert verdict.summary == "SCAN: Clustered Index Scan of PK_SyncQueue read 100000 rows"
    assert verdict.failing[0].statement.startswith("INSERT INTO @Candidates")


def test_a_range_seek_that_reads_the_whole_table_fails() -> None:
    plan = sp.queue_read_plan("Index Seek", "[IX_SyncQueue_Status]", rows_read=100_000)
    verdict = plans.judge("dbo.Next_SyncQueue_trx", [plan], WATCHED, limit=1000)
    assert verdict.kinds() == ["unbounded seek"]
    assert not verdict.ok
    assert verdict.summary == "SCAN: Index Seek of IX_SyncQueue_Status read 100000 rows"


@pytest.mark.parametrize("physical, kind", [("Index Seek", "NonClustered"),
                                            ("Clustered Index Seek", "Clustered")])
def test_a_seek_passes_up_to_the_limit_and_not_beyond(physical: str, kind: str) -> None:
    at = sp.queue_read_plan(physical, "[IX_SyncQueue_Due]", rows_read=1000, kind=kind)
    over = sp.queue_read_plan(physical, "[IX_SyncQueue_Due]", rows_read=1001, kind=kind)
    assert plans.judge("p", [at], WATCHED, limit=1000).kinds() == ["seek"]
    assert plans.judge("p", [over], WATCHED, limit=1000).kinds() == ["unbounded seek"]


def test_a_lookup_is_bounded_by_its_executions() -> None:
    few = sp.queue_read_plan("Key Lookup", "[PK_SyncQueue]", rows_read=None, executions=117,
                             kind="Clustered")
    many = sp.queue_read_plan("Key Lookup", "[PK_SyncQueue]", rows_read=None, executions=5000,
                              kind="Clustered")
    assert plans.accesses(many)[0].executions == 5000
    assert plans.judge("p", [few], WATCHED, limit=1000).ok
    verdict = plans.judge("p", [many], WATCHED, limit=1000)
    assert verdict.kinds() == ["unbounded seek"]
    assert verdict.summary == "SCAN: Key Lookup of PK_SyncQueue ran 5000 times"


def test_an_estimated_plan_cannot_prove_a_seek_bounded() -> None:
    plan = sp.queue_read_plan("Index Seek", "[IX_SyncQueue_Due]", rows_read=17, runtime=False)
    verdict = plans.judge("p", [plan], WATCHED)
    assert not verdict.ok
    assert verdict.summary == ("SCAN: Index Seek of IX_SyncQueue_Due read an unknown number of rows "
                               "(no runtime counters)")


def test_an_operator_the_check_does_not_know_fails_closed() -> None:
    plan = sp.queue_read_plan("Columnstore Index Scan", "[NCCI_SyncQueue]", rows_read=5)
    verdict = plans.judge("p", [plan], WATCHED, filtered=["ncci_syncqueue"])
    assert verdict.kinds() == ["scan"]
    assert not verdict.ok


@pytest.mark.parametrize("batch", [1, 100, 500, 985, 1000])
def test_the_limit_follows_the_batch_a_correct_claim_passes_a_full_read_fails(batch: int) -> None:
    """A claim reads BatchSize + 16 candidates of the claim index; at batch 985 and up that
    is over the 1,000 rows that smaller batches are held to."""
    settings = Settings(batch=batch)
    settings.check()
    claim = sp.ordered_scan_plan(batch + plans.CLAIM_EXTRA)
    assert plans.judge("p", [claim], WATCHED, settings.scan_limit).ok
    everything = sp.ordered_scan_plan(settings.plan_backlog)
    assert not plans.judge("p", [everything], WATCHED, settings.scan_limit).ok
    assert settings.scan_limit == max(1000, 2 * (batch + 16))


def test_a_scan_of_a_table_variable_does_not_count() -> None:
    every_read = plans.accesses(sp.TABLE_VARIABLE_SCAN_PLAN)
    assert [(a.physical_op, a.table) for a in every_read] == [
        ("Clustered Index Scan", "@Candidates"), ("Clustered Index Seek", "SyncQueue")]
    verdict = plans.judge("dbo.Next_SyncQueue_Batch_trx", [sp.TABLE_VARIABLE_SCAN_PLAN], WATCHED)
    assert verdict.ok
    assert verdict.kinds() == ["seek"]


def test_an_ordered_scan_of_the_filtered_claim_index_that_stops_at_its_batch_is_bounded() -> None:
    verdict = plans.judge("dbo.Next_SyncQueue_trx", [sp.ordered_scan_plan(17)], WATCHED)
    assert verdict.ok
    assert verdict.kinds() == ["bounded scan"]
    assert verdict.summary == "1 bounded scan"


def test_a_scan_of_the_filtered_index_that_reads_past_the_limit_fails() -> None:
    assert plans.judge("p", [sp.ordered_scan_plan(1000)], WATCHED, limit=1000).ok
    verdict = plans.judge("p", [sp.ordered_scan_plan(1001)], WATCHED, limit=1000)
    assert not verdict.ok
    assert verdict.summary == "SCAN: Index Scan of IX_SyncQueue_Due read 1001 rows"


def test_the_rows_of_every_thread_of_a_parallel_scan_count() -> None:
    verdict = plans.judge("p", [sp.ordered_scan_plan(1200, threads=2)], WATCHED, limit=1000)
    assert verdict.reads[0].rows_read == 1200
    assert not verdict.ok


def test_a_scan_of_an_unfiltered_index_is_a_scan_however_few_rows_it_read() -> None:
    verdict = plans.judge("p", [sp.ordered_scan_plan(5, filtered=False, index="[IX_SyncQueue_Status]")],
                          WATCHED)
    assert verdict.kinds() == ["scan"]
    assert not verdict.ok


def test_an_index_known_to_be_filtered_counts_as_filtered_when_the_plan_does_not_say() -> None:
    plan = sp.ordered_scan_plan(17, filtered=False)
    assert plans.judge("p", [plan], WATCHED).kinds() == ["scan"]
    assert plans.judge("p", [plan], WATCHED, filtered=["ix_syncqueue_due"]).kinds() == ["bounded scan"]


def test_an_estimated_plan_cannot_prove_a_scan_bounded() -> None:
    verdict = plans.judge("p", [sp.ordered_scan_plan(17, runtime=False)], WATCHED)
    assert verdict.reads[0].rows_read is None
    assert verdict.kinds() == ["scan"]


def test_without_rows_read_the_rows_produced_stand_in() -> None:
    doc = sp.document(sp.statement("SELECT 1", sp.read(0, "Index Scan", "[SyncQueue]", "[IX_SyncQueue_Lease]",
                                                       filtered=True, rows=3, rows_read=None)))
    assert plans.accesses(doc)[0].rows_read == 3


def test_only_the_watched_tables_are_judged_whatever_their_case() -> None:
    doc = sp.document(sp.statement("SELECT 1", sp.read(0, "Clustered Index Scan", "[SyncQueueAttempt]",
                                                       "[PK_SyncQueueAttempt]", kind="Clustered")))
    assert plans.judge("p", [doc, sp.SEEK_PLAN], ["DBO.SYNCQUEUE"]).ok
    assert not plans.judge("p", [doc], ["dbo.SyncQueueAttempt"]).ok


def test_a_table_scan_of_a_heap_is_a_scan() -> None:
    doc = sp.document(sp.statement("DELETE TOP (@BatchSize) FROM dbo.HeapQueue", sp.read(
        0, "Table Scan", "[HeapQueue]", "", kind="Heap", rows=1, rows_read=1)))
    verdict = plans.judge("dbo.Receive_HeapQueue_trx", [doc], ["dbo.HeapQueue"])
    assert verdict.kinds() == ["scan"]
    assert verdict.reads[0].index == ""


def test_plans_that_never_read_the_queue_table_prove_nothing() -> None:
    verdict = plans.judge("dbo.Next_SyncQueue_trx", [sp.document()], WATCHED)
    assert not verdict.ok
    assert verdict.documents == 1
    assert verdict.summary == "no read of dbo.SyncQueue in the plans"


def test_documents_from_several_statements_add_up() -> None:
    verdict = plans.judge("p", [sp.SEEK_PLAN, sp.SCAN_PLAN], WATCHED)
    assert verdict.documents == 2
    assert verdict.kinds() == ["seek", "seek", "scan"]
    assert not verdict.ok


def test_the_verdict_as_json() -> None:
    shown = plans.judge("dbo.Next_SyncQueue_trx", [sp.SCAN_PLAN], WATCHED).as_dict()
    assert shown["ok"] is False and shown["procedure"] == "dbo.Next_SyncQueue_trx"
    assert shown["reads"][0] == {
        "statement": sp.CANDIDATES_TEXT, "op": "Clustered Index Scan", "table": "dbo.SyncQueue",
        "index": "PK_SyncQueue", "filtered": False, "rows_read": 100_000, "executions": 1,
        "seek_columns": [], "residual_columns": [], "kind": "scan"}
    assert shown["claim_index"] == "" and shown["due_problems"] == []
    assert shown["spools"] == []


# -- the claim index: sought by band, ScheduledFor a seek predicate -------------------------------------

DUE = "IX_SyncQueue_Due"


def test_the_seek_and_residual_columns_of_a_read_are_read_from_the_plan() -> None:
    bands, due = (plans.accesses(d) for d in sp.band_claim_plans())
    assert [(a.table, a.index, a.seek_columns, a.residual_columns) for a in bands] == [
        ("@Candidates", "IX_Candidates_Order", (), ()), ("SyncQueue", DUE, ("Type", "Priority"), ())]
    assert [(a.seek_columns, a.residual_columns) for a in due if a.table == "SyncQueue"] == [
        (("Type", "Priority", "ScheduledFor"), ("AttemptNum",))]


def test_a_claim_that_seeks_each_band_with_scheduledfor_in_the_seek_passes() -> None:
    verdict = plans.judge("dbo.Next_SyncQueue_Batch_trx", sp.band_claim_plans(), WATCHED, claim_index=DUE)
    assert verdict.due_problems == []
    assert verdict.ok
    assert verdict.summary == "2 seeks"
    assert verdict.as_dict()["claim_index"] == DUE


def test_a_due_read_that_tests_scheduledfor_row_by_row_fails() -> None:
    """The old claim's shape: the band sought by Type and Priority, ScheduledFor <= @Now a
    residual predicate, so items scheduled for later are read and thrown away."""
    plans_ = sp.band_claim_plans(sp.due_seek(4, sought=False, residual_due=True))
    verdict = plans.judge("p", plans_, WATCHED, claim_index=DUE)
    assert verdict.kinds() == ["seek", "seek"]  # bounded seeks: only the due check fails it
    assert not verdict.ok
    assert verdict.due_problems == [
        f"Index Seek of {DUE} read 17 rows and tested ScheduledFor on each row (a residual predicate, not a "
        "seek predicate)",
        f"no seek of {DUE} has ScheduledFor among its seek predicates"]
    assert verdict.summary.startswith(f"DUE READ: Index Seek of {DUE} read 17 rows and tested ScheduledFor")


def test_scheduledfor_both_sought_and_tested_again_as_a_residual_fails() -> None:
    plans_ = sp.band_claim_plans(sp.due_seek(4, residual_due=True))
    verdict = plans.judge("p", plans_, WATCHED, claim_index=DUE)
    assert len(verdict.due_problems) == 1 and "residual predicate" in verdict.due_problems[0]
    assert not verdict.ok


def test_another_tables_scheduledfor_in_the_residual_is_an_outer_reference_not_this_reads() -> None:
    verdict = plans.judge("p", sp.band_claim_plans(sp.due_seek(4, outer=["ScheduledFor"])), WATCHED,
                          claim_index=DUE)
    assert verdict.reads[-1].residual_columns == ("AttemptNum",)
    assert verdict.ok


def test_a_band_read_without_scheduledfor_in_any_seek_fails() -> None:
    verdict = plans.judge("p", sp.band_claim_plans(sp.due_seek(4, sought=False)), WATCHED, claim_index=DUE)
    assert verdict.due_problems == [f"no seek of {DUE} has ScheduledFor among its seek predicates"]
    assert not verdict.ok


def test_an_ordered_scan_of_the_claim_index_fails_as_the_claim_index_though_bounded() -> None:
    plan = sp.ordered_scan_plan(17)
    assert plans.judge("p", [plan], WATCHED).ok  # any other filtered index may be read so
    verdict = plans.judge("p", [plan], WATCHED, claim_index=DUE)
    assert verdict.kinds() == ["bounded scan"]
    assert verdict.due_problems == [f"Index Scan of {DUE} read 17 rows: the claim index must be sought, not "
                                    "scanned", f"no seek of {DUE} has ScheduledFor among its seek predicates"]
    assert not verdict.ok


def test_a_claim_whose_plans_never_read_the_claim_index_fails() -> None:
    verdict = plans.judge("p", [sp.TABLE_VARIABLE_SCAN_PLAN], WATCHED, claim_index=DUE)
    assert verdict.due_problems == [f"no read of {DUE} in the plans"]
    assert not verdict.ok


def test_the_claim_index_is_matched_whatever_its_case_and_brackets() -> None:
    assert plans.judge("p", sp.band_claim_plans(), WATCHED, claim_index="ix_syncqueue_due").ok


@pytest.mark.parametrize("text", ["<ShowPlanXML", "<Other xmlns='x'/>"])
def test_what_is_not_showplan_xml_is_an_error(text: str) -> None:
    with pytest.raises(ValueError):
        plans.accesses(text)
    with pytest.raises(ValueError):
        plans.spools(text)


def test_showplans_are_the_result_sets_of_one_showplan_column() -> None:
    result_sets = [[("<ShowPlanXML/>",)], [(1, 2)], [("<ShowPlanXML b/>",)], [(0,)]]
    columns = [[plans.SHOWPLAN_COLUMN], ["EnqueuedAt", "UpdatedAt"], [plans.SHOWPLAN_COLUMN], ["return_code"]]
    assert plans.showplans(result_sets, columns) == ["<ShowPlanXML/>", "<ShowPlanXML b/>"]


class FakeCursor:
    """Result sets as a procedure with SET STATISTICS XML ON returns them through pyodbc."""

    def __init__(self, sets: list[tuple[list[str], list[tuple]]]) -> None:
        self.sets = sets
        self.at = 0
        self.executed: tuple | None = None
        self.closed = False

    def execute(self, sql: str, *params: object) -> None:
        self.executed = (sql, params)

    @property
    def description(self) -> list[tuple] | None:
        return [(name,) for name in self.sets[self.at][0]]

    def fetchall(self) -> list[tuple]:
        return self.sets[self.at][1]

    def nextset(self) -> bool:
        self.at += 1
        return self.at < len(self.sets)

    def close(self) -> None:
        self.closed = True


class FakeConnection:
    def __init__(self, cursor: FakeCursor) -> None:
        self._cursor = cursor

    def cursor(self) -> FakeCursor:
        return self._cursor


def test_capture_runs_the_procedure_with_statistics_xml_and_keeps_the_plans() -> None:
    cursor = FakeCursor([([plans.SHOWPLAN_COLUMN], [(sp.SEEK_PLAN,)]),
                         (CLAIM_COLUMNS, [(1, 2, 3, 1)]),
                         ([plans.SHOWPLAN_COLUMN], [(sp.SCAN_PLAN,)]), (["return_code"], [(0,)])])
    captured = plans.capture(FakeConnection(cursor), "dbo.Next_SyncQueue_Batch_trx", LockedBy="bench/plans",
                             BatchSize=100, WaitMs=0)
    assert captured.documents == [sp.SEEK_PLAN, sp.SCAN_PLAN]
    assert captured.rows == [(1, 2, 3, 1)]  # what it claimed, for the caller to complete
    sql, params = cursor.executed
    assert "SET STATISTICS XML ON; EXEC @rc = dbo.Next_SyncQueue_Batch_trx @LockedBy = ?, @BatchSize = ?, " \
           "@WaitMs = ?; SET STATISTICS XML OFF;" in sql
    assert params == ("bench/plans", 100, 0)
    assert cursor.closed


def test_capture_refuses_a_call_that_did_not_return_0() -> None:
    cursor = FakeCursor([([plans.SHOWPLAN_COLUMN], [(sp.SEEK_PLAN,)]), (["return_code"], [(1,)])])
    with pytest.raises(plans.RelqError, match="did not return 0"):
        plans.capture(FakeConnection(cursor), "dbo.Next_SyncQueue_trx", LockedBy="x")


@pytest.mark.parametrize("procedure", ["dbo.Next; DROP TABLE x", "Next_SyncQueue_trx", "dbo.[x]"])
def test_capture_refuses_a_name_that_is_not_a_plain_dbo_procedure(procedure: str) -> None:
    with pytest.raises(ValueError, match="not a procedure call"):
        plans.capture(FakeConnection(FakeCursor([])), procedure)
